"""One promotion path for everything published to S3 with a record: adapter versions, their
serving copies and full fine-tunes.

:func:`publish` holds the integrity rules all three share (seed lora-delivery §1): a location
that already has a record keeps it (the same content is ``unchanged``; other content there is
refused, never overwritten); new content is copied file by file and its record is written
last, so a location with a record is complete; a location left without one by an interrupted
copy is completed, and a file there with other bytes is refused. What differs per kind (where
the content goes, what its record holds, how an existing copy is verified) is passed in.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.support.errors import MlccError, Problem
from mlcc_constructs.ops.s3 import S3Client, list_objects, put_json, stream_sha256
from mlcc_constructs.ops.source import Source


class _Record(Protocol):
    @property
    def content_hash(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_Record)

PublishStatus = Literal["created", "unchanged", "dry-run"]


@dataclass(frozen=True, kw_only=True)
class Published(Generic[R]):
    """The outcome of :func:`publish`: what the location holds now (or would, on a dry run)."""

    status: PublishStatus
    record: R
    copied: tuple[str, ...] = ()
    """The file names copied (sorted); empty unless ``created``."""


def now_utc() -> str:
    """The current time, ISO 8601 in UTC to the second (a record's ``created_at``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def who() -> str:
    """The login name (a record's ``created_by``), or ``unknown``."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def publish(
    s3: S3Client,
    source: Callable[[], Source],
    location: S3Location,
    *,
    record_at: S3Location,
    found: R | None,
    planned: R,
    taken: Callable[[R], Problem],
    verify: Callable[[R], None] | None = None,
    before_copy: Callable[[], None] | None = None,
    written: Callable[[], R] | None = None,
    dry_run: bool = False,
) -> Published[R]:
    """Publish the files of ``source()`` at ``location`` with their record at ``record_at``.

    ``source``: the content's files, asked for only when they are copied (the caller closes
    what it opened).
    ``found``: the record already at ``record_at`` (``None``: none). ``planned``: the record of
    ``source`` (its ``content_hash`` decides whether ``found`` is the same content).
    ``taken(found)``: the problem when ``found`` holds other content. ``verify(found)``: reads an
    identical location's files and raises when they are not what its record says.
    ``before_copy``: a last check before anything is written (e.g. files at the location that
    the source lacks). ``written()``: the record to write once the files are there (default:
    ``planned``), for records that list what was written.
    """
    if found is not None:
        if found.content_hash != planned.content_hash:
            raise MlccError(taken(found))
        if verify is not None:
            verify(found)
        return Published(status="unchanged", record=found)
    if before_copy is not None:
        before_copy()
    if dry_run:
        return Published(status="dry-run", record=planned)
    copied = write_version(s3, source(), location)
    record = written() if written is not None else planned
    put_json(s3, record_at, record.to_json())
    return Published(status="created", record=record, copied=copied)


def write_version(s3: S3Client, source: Source, version: S3Location) -> tuple[str, ...]:
    """Copy the source's files into ``version``; returns the names copied (sorted).

    A file already there is kept when its bytes match (an interrupted copy is completed) and
    refused when they differ: versions are never overwritten. The record is the caller's.
    """
    present = {version.relative(item["Key"]): item for item in list_objects(s3, version)}
    problems = []
    copied = []
    for name in sorted(source.files):
        dest = S3Location(bucket=version.bucket, key=version.key + name)
        if name in present:
            if stream_sha256(s3, dest) != source.files[name]:
                problems.append(
                    Problem(
                        message="an incomplete version holds this file with other bytes; "
                        "versions are never overwritten",
                        where=dest.uri,
                        fix="inspect and delete the incomplete version by hand, then retry",
                    )
                )
            continue
        source.copy_to(s3, name, dest)
        copied.append(name)
    if problems:
        raise MlccError(problems)
    return tuple(copied)
