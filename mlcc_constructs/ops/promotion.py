"""Adapter versions on S3: promote a source to its canonical version, read records.

- :func:`promote` copies a source prefix or ``.tar.gz`` to its canonical version. Identical
  content is the same version (nothing copied, once every file there is checked against the
  record); an existing version is never rewritten or deleted. The record lists each file's
  size and sha256.
- :func:`read_adapter_record` reads a version's record, :func:`canonical_record` also
  synthesises one for an unversioned home without it, :func:`recorded_adapters` lists every
  record under a model prefix (for the rank fit).

Every S3 path comes from :mod:`mlcc_constructs.core.adapters.s3_layout`; the record's rules are
:mod:`mlcc_constructs.core.adapters.record`'s. Who and when a record is written is decided
here (the user's login, the clock), never in the core.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from mlcc_constructs.core.adapters import path_names, s3_layout as layout
from mlcc_constructs.core.adapters.integrity import record_path_problems
from mlcc_constructs.core.adapters.record import (
    AdapterRecord,
    RecordedFile,
    adapter_files,
    content_hash,
    parse_record_json,
    recorded_locations,
    resolve_base,
    synthesised_record,
)
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.support.errors import MlccError, Problem, fail
from mlcc_constructs.ops.adapter_sources import PrefixSource, check_peft_files, open_source
from mlcc_constructs.ops.integrity import require_intact, version_sizes
from mlcc_constructs.ops.publish import now_utc, publish, who
from mlcc_constructs.ops.s3 import S3Client, get_bytes, list_objects

PromotionStatus = Literal["created", "unchanged", "canonical", "dry-run"]


@dataclass(frozen=True, kw_only=True)
class Promotion:
    """The outcome of :func:`promote`. ``copied`` lists the file names written (sorted)."""

    status: PromotionStatus
    adapter: CanonicalAdapter
    record: AdapterRecord
    copied: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """For ``mlcc adapter promote`` output."""
        return {
            "status": self.status,
            "uri": self.adapter.location.uri,
            "home": self.adapter.home.uri,
            "version": self.adapter.version or "",
            "copied": list(self.copied),
            "record": self.record.to_json(),
        }


# --- records ----------------------------------------------------------------------------


def read_adapter_record(s3: S3Client, adapter: S3Location) -> AdapterRecord | None:
    """The record of an adapter version (or home), or ``None`` when it has none; a record
    whose project, name or version is not its path's is refused."""
    record = layout.record_location(adapter)
    body = get_bytes(s3, record)
    if body is None:
        return None
    parsed = parse_record_json(body, where=record.uri)
    placed = layout.parse_canonical_adapter(adapter.uri)
    if placed is not None:
        problems = record_path_problems(parsed, placed, where=record.uri)
        if problems:
            raise MlccError(problems)
    return parsed


def recorded_adapters(
    s3: S3Client, model: S3Location, *, project: str | None = None
) -> list[AdapterRecord]:
    """Every adapter version with a record under a staged model prefix (all projects, or one).

    For the rank fit: ``fit_max_rank([r.rank() for r in recorded_adapters(...)], ...)``.
    Serving copies are included (they serve here too). Sorted by project, name, version.
    """
    root = (
        layout.project_adapters(model, project)
        if project is not None
        else layout.adapters_root(model)
    )
    keys = (item["Key"] for item in list_objects(s3, root))
    records = []
    for adapter in recorded_locations(root, keys):
        record = read_adapter_record(s3, adapter.location)
        if record is not None:
            records.append(record)
    return sorted(records, key=lambda r: (r.project, r.name, r.version))


def canonical_record(
    s3: S3Client, adapter: CanonicalAdapter, *, verify: str | None = None
) -> AdapterRecord:
    """The record of a canonical adapter; an unversioned home without one gets it synthesised
    from its ``adapter_config.json`` (pre-versioning homes and hand copies stay valid).

    ``verify``: also read every file of a recorded adapter and refuse it, saying ``verify``
    (what is refused, e.g. ``"not served"``), when it is not what its record says."""
    record = read_adapter_record(s3, adapter.location)
    if record is not None:
        if verify:
            require_intact(s3, adapter, record, doing=verify)
        return record
    source = PrefixSource(s3, adapter.location)
    files = adapter_files(adapter, source.files)
    if not files:
        raise fail("no adapter at this canonical location", value=adapter.location.uri)
    return synthesised_record(adapter, files, check_peft_files(source))


# --- promotion --------------------------------------------------------------------------


def promote(
    s3: S3Client,
    *,
    source_uri: str,
    core_bucket: str,
    project: str,
    name: str,
    base_model: str | None = None,
    base_revision: str | None = None,
    technique: str | None = None,
    source_job: str | None = None,
    created_by: str | None = None,
    now: Callable[[], str] = now_utc,
    dry_run: bool = False,
) -> Promotion:
    """Promote a source prefix or ``.tar.gz`` to ``<canonical home>/v<hash12>/``.

    A canonical source (a version or an unversioned home) is used as-is (``canonical``).
    Identical content finds its version already there (``unchanged``, nothing copied), once
    every file there is read and found to be what its record says (a damaged version is
    refused, naming its files; so is a damaged canonical source). New content is copied file
    by file and the adapter record (with each file's size and sha256) is written last, so a
    version with a record is complete. A version directory left without a record by an interrupted
    promotion is completed, never overwritten: a file there with other bytes is refused.
    ``dry_run`` reads and hashes but writes nothing (``dry-run``).
    """
    path_names.check_components(project=project, name=name)
    existing = layout.parse_canonical_adapter(source_uri)
    if existing is not None:
        record = canonical_record(s3, existing, verify="not promoted")
        return Promotion(status="canonical", adapter=existing, record=record)
    source = open_source(s3, source_uri)
    try:
        peft = check_peft_files(source)
        base_id = resolve_base(base_model, peft, None)
        base = layout.base_model(base_id)
        digest = content_hash(source.files)
        version = path_names.version_id(digest)
        home = layout.canonical_adapter_home(core_bucket, base, project, name)
        adapter = layout.parse_canonical_adapter(layout.adapter_version(home, version).uri)
        assert adapter is not None
        record = AdapterRecord(
            project=project,
            name=name,
            version=version,
            content_hash=digest,
            source_uri=source.uri,
            source_job=source_job,
            technique=technique,
            r=peft.r,
            rank_pattern=peft.rank_pattern,
            target_modules=peft.target_modules,
            base_model=base.hf_id,
            base_revision=base_revision or peft.base_revision,
            created_by=created_by or who(),
            created_at=now(),
        )
        published = publish(
            s3,
            lambda: source,
            adapter.location,
            record_at=layout.record_location(adapter.location),
            found=read_adapter_record(s3, adapter.location),
            planned=record,
            taken=lambda found: Problem(
                message="a different adapter already holds this version (12-digit hash collision)",
                where=adapter.location.uri,
                value=found.content_hash,
                fix="promote under another adapter name",
            ),
            verify=lambda found: require_intact(s3, adapter, found, doing="not reported unchanged"),
            written=lambda: replace(record, files=written_files(s3, adapter, source.files)),
            dry_run=dry_run,
        )
        return Promotion(
            status=published.status,
            adapter=adapter,
            record=published.record,
            copied=published.copied,
        )
    finally:
        source.close()


def written_files(
    s3: S3Client, adapter: CanonicalAdapter, digests: Mapping[str, str]
) -> dict[str, RecordedFile]:
    """The record's file facts of a version just written: each file's size as S3 lists it and
    the sha256 of the source's bytes; a file missing there is refused (the record is not
    written, so the version stays incomplete and the next promotion completes it)."""
    sizes = version_sizes(s3, adapter)
    missing = sorted(set(digests) - set(sizes))
    if missing:
        raise fail(
            "files copied to the version are not listed there",
            where=adapter.location.uri,
            value=missing,
            fix="promote the same source again: it completes the version",
        )
    return {n: RecordedFile(size=sizes[n], sha256=d) for n, d in digests.items()}
