"""Pack a canonical adapter version into one ``.tar.gz`` beside its folder (``mlcc adapter
pack``): the ``ArtifactUrl`` of a SageMaker adapter inference component (target
``realtime-inference``) must name a single gzip tar archive, while pods load the loose files.

The archive holds the version's files (not its record) at its top, sorted, with fixed
owners, modes and times and a gzip header without a name or time, so packing the same
version gives the same bytes on any machine. A version is immutable, so an archive that
exists is kept (``unchanged``); only a complete version (its record written) is packed, and
the archive is uploaded in one PUT, so a reader never sees half an archive.
"""

from __future__ import annotations

import gzip
import tarfile
import tempfile
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.ops.promotion import read_adapter_record
from mlcc_constructs.ops.s3 import S3Client, is_missing, list_objects

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
    """Pack the canonical version at ``version_uri`` into ``<home>/v<hash12>.tar.gz``."""
    adapter = layout.parse_adapter_version(version_uri)
    location = adapter.location
    if read_adapter_record(s3, location) is None:
        raise fail(
            "the adapter version has no record: it is incomplete (a promotion was interrupted)",
            value=version_uri,
            fix="promote the same source again (it completes the version), then pack it",
        )
    sizes = {
        location.relative(str(item["Key"])): int(item["Size"])
        for item in list_objects(s3, location)
        if str(item["Key"]) != adapter.record.key
    }
    files = tuple(sorted(sizes))
    if not files:
        raise fail("the adapter version holds no files", value=version_uri)
    if _exists(s3, adapter.packed):
        return Packed(status="unchanged", adapter=adapter, files=files)
    if dry_run:
        return Packed(status="dry-run", adapter=adapter, files=files)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL) as spool:
        with (
            gzip.GzipFile(filename="", mode="wb", fileobj=spool, mtime=0) as zipped,
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for name in files:
                body = s3.get_object(Bucket=location.bucket, Key=location.key + name)
                tar.addfile(_member(name, sizes[name]), body["Body"])
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
