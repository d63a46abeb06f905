"""Reading what an adapter version holds on S3, to check it against its record (the rules are
:mod:`mlcc_constructs.core.adapters.integrity`'s).

:func:`version_sizes` lists a version's files with their sizes (one listing: the cheap
check); :func:`version_digests` reads every file (the full check); :func:`require_intact`
refuses a version whose files are not what its record says (``promote``, ``pack`` and the
load path of ``add``/``update`` call it before they report, pack or serve a version).
"""

from __future__ import annotations

from mlcc_constructs.core.adapters.integrity import (
    Damage,
    content_damage,
    damage_problems,
    own_files,
)
from mlcc_constructs.core.adapters.record import AdapterRecord
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.s3 import S3Client, list_objects, stream_sha256


def version_sizes(s3: S3Client, adapter: CanonicalAdapter) -> dict[str, int]:
    """The version's files (relative name → size), from one listing."""
    listed = {str(i["Key"]): int(i.get("Size", 0)) for i in list_objects(s3, adapter.location)}
    return own_files(adapter, listed)


def version_digests(s3: S3Client, adapter: CanonicalAdapter, names: list[str]) -> dict[str, str]:
    """sha256 of each named file of the version (every byte read)."""
    location = adapter.location
    return {
        name: stream_sha256(s3, S3Location(bucket=location.bucket, key=location.key + name))
        for name in names
    }


def full_damage(
    s3: S3Client, adapter: CanonicalAdapter, record: AdapterRecord
) -> tuple[Damage, ...]:
    """How the version's files differ from ``record``, every byte read."""
    sizes = version_sizes(s3, adapter)
    return content_damage(record, version_digests(s3, adapter, sorted(sizes)), sizes)


def require_intact(
    s3: S3Client, adapter: CanonicalAdapter, record: AdapterRecord, *, doing: str
) -> None:
    """Refuse (``doing``: what is refused, e.g. ``"not packed"``) a version whose files are
    not those of its record, naming each damaged file."""
    damage = full_damage(s3, adapter, record)
    if damage:
        raise MlccError(damage_problems(adapter.location.uri, damage, doing=doing))
