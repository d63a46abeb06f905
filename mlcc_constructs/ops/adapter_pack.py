"""Pack a canonical adapter version into one ``.tar.gz`` beside its folder (``mlcc adapter
pack``): the ``ArtifactUrl`` of a SageMaker adapter inference component (target
``realtime-inference``) must name a single gzip tar archive, while pods load the loose files.

The archive holds the version's files (not its record) at its top, sorted, with fixed
owners, modes and times and a gzip header without a name or time, so packing the same
version gives the same bytes on any machine. A version is immutable, so an archive that
exists is kept (``unchanged``); only a complete version (its record written) whose files are
what the record says is packed, and the archive is uploaded in one PUT, so a reader never
sees half an archive.
"""

from __future__ import annotations

import gzip
import hashlib
import tarfile
import tempfile
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.integrity import content_damage, damage_problems, size_damage
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.support.errors import MlccError, fail
from mlcc_constructs.ops.integrity import require_intact, version_sizes
from mlcc_constructs.ops.promotion import read_adapter_record
from mlcc_constructs.ops.s3 import S3Client, is_missing

SPOOL = 64 << 20
"""Archives up to this size stay in memory while they are built; larger ones use a temp file."""

PackStatus = Literal["created", "unchanged", "dry-run"]


@dataclass(frozen=True, kw_only=True)
class Packed:
    """The outcome of packing one version."""

    status: PackStatus
    adapter: CanonicalAdapter
    files: tuple[str, ...]
    """The archive's members, in order."""
    bytes: int | None = None
    """The archive's size (``None`` for a dry run)."""

    @property
    def location(self) -> S3Location:
        """The archive."""
        return self.adapter.packed

    def to_json(self) -> dict[str, Any]:
        """For the ``mlcc adapter pack`` report."""
        return {
            "status": self.status,
            "version": self.adapter.location.uri,
            "artifact_url": self.location.uri,
            "files": list(self.files),
            "bytes": self.bytes,
        }


def pack_version(s3: S3Client, version_uri: str, *, dry_run: bool = False) -> Packed:
    """Pack the canonical version at ``version_uri`` into ``<home>/v<hash12>.tar.gz``.

    The version must be what its record says: its sizes are checked first, and every file's
    sha256 as it is packed (or, when the archive exists or for a dry run, read on its own);
    a damaged version is refused, naming its files, and no archive is written.
    """
    adapter = layout.parse_adapter_version(version_uri)
    location = adapter.location
    record = read_adapter_record(s3, location)
    if record is None:
        raise fail(
            "the adapter version has no record: it is incomplete (a promotion was interrupted)",
            value=version_uri,
            fix="promote the same source again (it completes the version), then pack it",
        )
    sizes = version_sizes(s3, adapter)
    files = tuple(sorted(sizes))
    damage = size_damage(record, sizes)
    if damage:
        raise MlccError(damage_problems(location.uri, damage, doing="not packed"))
    if not files:
        raise fail("the adapter version holds no files", value=version_uri)
    if dry_run or _exists(s3, adapter.packed):
        require_intact(s3, adapter, record, doing="not packed")
        return Packed(status="dry-run" if dry_run else "unchanged", adapter=adapter, files=files)
    digests: dict[str, str] = {}
    with tempfile.SpooledTemporaryFile(max_size=SPOOL) as spool:
        with (
            gzip.GzipFile(filename="", mode="wb", fileobj=spool, mtime=0) as zipped,
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for name in files:
                body = s3.get_object(Bucket=location.bucket, Key=location.key + name)
                reader = _Hashing(body["Body"])
                try:
                    tar.addfile(_member(name, sizes[name]), reader)
                except OSError as error:  # shorter than listed: it changed meanwhile
                    raise fail(
                        f"damaged adapter version, not packed: file {name} changed while it "
                        f"was packed ({error})",
                        where=location.uri,
                        fix="check who writes to the version (versions are never rewritten)",
                    ) from error
                digests[name] = reader.hexdigest()
        damage = content_damage(record, digests, sizes)
        if damage:  # changed since it was listed, or damaged in a way sizes do not show
            raise MlccError(damage_problems(location.uri, damage, doing="not packed"))
        size = spool.tell()
        spool.seek(0)
        target = adapter.packed
        s3.put_object(
            Bucket=target.bucket,
            Key=target.key,
            Body=spool,
            ContentLength=size,
            ContentType="application/gzip",
        )
    return Packed(status="created", adapter=adapter, files=files, bytes=size)


class _Hashing:
    """A readable body that hashes what is read from it (tarfile reads a member's size)."""

    def __init__(self, body: Any) -> None:
        self._body = body
        self._digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        chunk: bytes = self._body.read(size)
        self._digest.update(chunk)
        return chunk

    def hexdigest(self) -> str:
        # what tarfile did not read (the object grew since it was listed) counts too
        for chunk in iter(lambda: self._body.read(1 << 20), b""):
            self._digest.update(chunk)
        return self._digest.hexdigest()


def _member(name: str, size: int) -> tarfile.TarInfo:
    """A regular file owned by root, readable by all, dated 1970: the same on every machine."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _exists(s3: S3Client, location: S3Location) -> bool:
    try:
        s3.head_object(Bucket=location.bucket, Key=location.key)
    except Exception as error:
        if is_missing(error):
            return False
        raise
    return True
