"""LoRA adapter versions, promotion and delivery (seed lora-delivery §1-2).

- :class:`AdapterRecord` is the record of a version (``s3_layout.ADAPTER_RECORD``);
  :func:`parse_adapter_record` validates one, :func:`read_adapter_record` reads one from S3,
  :func:`recorded_adapters` lists every record under a model prefix (for the rank fit).
- :func:`content_hash` is deterministic over the adapter's file names and bytes and
  independent of listing order; a version directory is ``v<hash12>``.
- :func:`promote` copies a source prefix or ``.tar.gz`` to its canonical version. Identical
  content is the same version (nothing copied); an existing version is never rewritten or
  deleted.
- :func:`plan_delivery` is the delivery plan: refusals first (Hugging Face or model-package
  model source, prefetching IEC, eks without the S3 mount), the rank pre-check against the live
  limit (pod env, then IEC env, then the engine default), then load by path / promote / copy.
  :func:`apply_delivery` performs its S3 steps; :class:`PodClient` calls the engine's
  load/unload endpoints on each pod and reports per pod.
- :func:`remove_serving_copies` deletes only the versions whose record has ``serving_copy_of``.

Every S3 path comes from :mod:`mlcc_constructs.core.s3_layout`. boto3 is imported by callers
(the ``s3`` argument is a boto3 S3 client); this module never imports it, so it loads fast.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import re
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import IO, Any, Literal

from mlcc_constructs.core import s3_layout as layout
from mlcc_constructs.core.errors import MlccError, Problem, fail
from mlcc_constructs.core.lora import AdapterRank
from mlcc_constructs.core.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.targets import load_target

RECORD_FORMAT = "mlcc-adapter/1"
PEFT_CONFIG = "adapter_config.json"
_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_MODEL_PACKAGE = re.compile(r"^arn:aws[a-z-]*:sagemaker:[^:]*:[0-9]*:model-package/")
_CHUNK = 1 << 20
ADAPTER_RECORD_NAME = layout.ADAPTER_RECORD

S3Client = Any
"""A boto3 S3 client (``boto3.client("s3", ...)``)."""


# --- the record -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AdapterRecord:
    """The record of a version (``s3_layout.ADAPTER_RECORD``): what it is, where it came from."""

    project: str
    name: str
    version: str
    content_hash: str
    """sha256 hex of the adapter files (see :func:`content_hash`)."""
    source_uri: str
    r: int
    base_model: str
    """Hugging Face id of the base the adapter was trained on."""
    created_by: str
    created_at: str
    """ISO 8601, UTC."""
    source_job: str | None = None
    technique: str | None = None
    rank_pattern: Mapping[str, int] = field(default_factory=dict)
    target_modules: tuple[str, ...] = ()
    base_revision: str | None = None
    serving_copy_of: str | None = None
    """For a copy made to serve under another model prefix: the canonical version URI."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rank_pattern", MappingProxyType(dict(self.rank_pattern)))
        object.__setattr__(self, "target_modules", tuple(self.target_modules))

    def rank(self) -> AdapterRank:
        """This adapter's rank, for :func:`mlcc_constructs.core.lora.fit_max_rank`."""
        return AdapterRank(name=self.name, r=self.r, rank_pattern=self.rank_pattern)

    def to_json(self) -> dict[str, Any]:
        """The document written to S3 (stable key order)."""
        document: dict[str, Any] = {
            "format": RECORD_FORMAT,
            "project": self.project,
            "name": self.name,
            "version": self.version,
            "content_hash": self.content_hash,
            "source": {"uri": self.source_uri, "job": self.source_job},
            "technique": self.technique,
            "rank": {"r": self.r, "rank_pattern": dict(sorted(self.rank_pattern.items()))},
            "target_modules": list(self.target_modules),
            "base_model": {"id": self.base_model, "revision": self.base_revision},
            "created_by": self.created_by,
            "created_at": self.created_at,
        }
        if self.serving_copy_of is not None:
            document["serving_copy_of"] = self.serving_copy_of
        return document


def _get(document: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document


def parse_adapter_record(document: Any, *, where: str = ADAPTER_RECORD_NAME) -> AdapterRecord:
    """Validate an adapter record document; every problem is reported at once."""
    problems: list[Problem] = []

    def need_str(*path: str, optional: bool = False) -> str | None:
        value = _get(document, *path)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            problems.append(
                Problem(
                    message="missing or not a non-empty string",
                    where=where,
                    pointer="/" + "/".join(path),
                    value=value,
                )
            )
            return None
        return value

    if not isinstance(document, Mapping):
        raise fail("not a JSON object", where=where, value=type(document).__name__)
    if document.get("format") != RECORD_FORMAT:
        problems.append(
            Problem(
                message="unknown record format",
                where=where,
                pointer="/format",
                value=document.get("format"),
                allowed=RECORD_FORMAT,
            )
        )
    project, name = need_str("project"), need_str("name")
    version, digest = need_str("version"), need_str("content_hash")
    if digest is not None and not _HEX64.match(digest):
        problems.append(
            Problem(
                message="not a sha256 hex digest",
                where=where,
                pointer="/content_hash",
                value=digest,
            )
        )
    elif digest is not None and version is not None and version != layout.version_id(digest):
        problems.append(
            Problem(
                message="version does not match the content hash",
                where=where,
                pointer="/version",
                value=version,
                allowed=layout.version_id(digest),
            )
        )
    r = _get(document, "rank", "r")
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        problems.append(
            Problem(message="not a positive integer", where=where, pointer="/rank/r", value=r)
        )
    pattern = _get(document, "rank", "rank_pattern") or {}
    if not isinstance(pattern, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pattern.values()
    ):
        problems.append(
            Problem(
                message="not a map of module → positive rank",
                where=where,
                pointer="/rank/rank_pattern",
                value=pattern,
            )
        )
        pattern = {}
    modules = document.get("target_modules") or []
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        problems.append(
            Problem(
                message="not a list of module names",
                where=where,
                pointer="/target_modules",
                value=modules,
            )
        )
        modules = []
    record_fields = {
        "source_uri": need_str("source", "uri"),
        "source_job": need_str("source", "job", optional=True),
        "technique": need_str("technique", optional=True),
        "base_model": need_str("base_model", "id"),
        "base_revision": need_str("base_model", "revision", optional=True),
        "created_by": need_str("created_by"),
        "created_at": need_str("created_at"),
        "serving_copy_of": need_str("serving_copy_of", optional=True),
    }
    if problems:
        raise MlccError(problems)
    return AdapterRecord(
        project=str(project),
        name=str(name),
        version=str(version),
        content_hash=str(digest),
        r=int(r),
        rank_pattern=dict(pattern),
        target_modules=tuple(modules),
        **record_fields,  # type: ignore[arg-type]
    )


def read_adapter_record(s3: S3Client, adapter: S3Location) -> AdapterRecord | None:
    """The record of an adapter version (or home), or ``None`` when it has none."""
    record = layout.record_location(adapter)
    body = _get_bytes(s3, record)
    if body is None:
        return None
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON: {error.msg}", where=record.uri) from error
    return parse_adapter_record(document, where=record.uri)


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
    records = []
    for item in _list(s3, root):
        key = item["Key"]
        if not key.endswith("/" + layout.ADAPTER_RECORD):
            continue
        adapter = layout.parse_canonical_adapter(
            S3Location(bucket=root.bucket, key=key.rsplit("/", 1)[0] + "/").uri
        )
        if adapter is None:
            continue
        record = read_adapter_record(s3, adapter.location)
        if record is not None:
            records.append(record)
    return sorted(records, key=lambda r: (r.project, r.name, r.version))


# --- content hash -----------------------------------------------------------------------


def file_name_problem(name: str) -> Problem | None:
    """A relative POSIX file name inside an adapter, or the problem with it."""
    parts = name.split("/")
    for part in parts:
        problem = layout.component_problem(part, pointer="file name")
        if problem is not None:
            return replace(problem, value=name)
    return None


def content_hash(file_digests: Mapping[str, str]) -> str:
    """sha256 over ``name NUL sha256(bytes) LF`` for every file, sorted by name.

    ``file_digests`` maps relative names to each file's sha256 hex; the adapter record
    (``s3_layout.ADAPTER_RECORD``) is metadata and never part of the content. Listing order
    does not matter.
    """
    digest = hashlib.sha256()
    for name in sorted(file_digests):
        if name == layout.ADAPTER_RECORD:
            continue
        digest.update(f"{name}\0{file_digests[name]}\n".encode())
    return digest.hexdigest()


def hash_bytes(files: Mapping[str, bytes]) -> str:
    """:func:`content_hash` of in-memory files (tests, small adapters)."""
    return content_hash({n: hashlib.sha256(b).hexdigest() for n, b in files.items()})


# --- PEFT adapter_config.json -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PeftInfo:
    """What the record takes from a PEFT ``adapter_config.json``."""

    r: int
    rank_pattern: Mapping[str, int]
    target_modules: tuple[str, ...]
    base_model: str | None
    base_revision: str | None


def parse_peft_config(body: bytes, *, where: str) -> PeftInfo:
    """``r``, ``rank_pattern``, ``target_modules``, base model and revision of a PEFT config."""
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON: {error.msg}", where=where) from error
    r = document.get("r") if isinstance(document, dict) else None
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise fail(
            "a LoRA adapter_config.json needs a positive integer r",
            where=where,
            pointer="/r",
            value=r,
        )
    pattern = document.get("rank_pattern") or {}
    modules = document.get("target_modules") or []
    if isinstance(modules, str):
        modules = [modules]
    base = document.get("base_model_name_or_path")
    revision = document.get("revision")
    return PeftInfo(
        r=r,
        rank_pattern={str(k): int(v) for k, v in pattern.items()},
        target_modules=tuple(sorted(str(m) for m in modules)),
        base_model=base if isinstance(base, str) and base else None,
        base_revision=revision if isinstance(revision, str) and revision else None,
    )


# --- S3 helpers -------------------------------------------------------------------------


def _is_missing(error: Exception) -> bool:
    response = getattr(error, "response", None)
    code = str(_get(response, "Error", "Code") or "")
    return code in ("404", "NoSuchKey", "NotFound")


def _get_bytes(s3: S3Client, location: S3Location) -> bytes | None:
    try:
        response = s3.get_object(Bucket=location.bucket, Key=location.key)
    except Exception as error:
        if _is_missing(error):
            return None
        raise
    body: bytes = response["Body"].read()
    return body


def _list(s3: S3Client, prefix: S3Location) -> Iterator[dict[str, Any]]:
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=prefix.bucket, Prefix=prefix.key):
        yield from page.get("Contents", [])


def _stream_sha256(s3: S3Client, bucket: str, key: str) -> str:
    digest = hashlib.sha256()
    body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    for chunk in body.iter_chunks(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _put_json(s3: S3Client, location: S3Location, document: Mapping[str, Any]) -> None:
    body = (json.dumps(document, indent=2, sort_keys=False) + "\n").encode()
    s3.put_object(
        Bucket=location.bucket, Key=location.key, Body=body, ContentType="application/json"
    )


# --- sources ----------------------------------------------------------------------------


class _Source:
    """Files of a promotion source: a prefix or a ``.tar.gz`` on S3."""

    uri: str
    files: dict[str, str]
    """relative name → sha256 hex"""

    def read(self, name: str) -> bytes:
        raise NotImplementedError

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        raise NotImplementedError

    def close(self) -> None:
        return None


class _PrefixSource(_Source):
    def __init__(self, s3: S3Client, location: S3Location) -> None:
        self.uri = location.uri
        self._s3 = s3
        self._location = location
        self._keys: dict[str, str] = {}
        problems = []
        for item in _list(s3, location):
            key = item["Key"]
            name = location.relative(key)
            if key.endswith("/") or name == layout.ADAPTER_RECORD:
                continue  # a console "folder" marker, or metadata (never content)
            if (problem := file_name_problem(name)) is not None:
                problems.append(replace(problem, where=self.uri))
                continue
            self._keys[name] = key
        if problems:
            raise MlccError(problems)
        self.files = {n: _stream_sha256(s3, location.bucket, k) for n, k in self._keys.items()}

    def read(self, name: str) -> bytes:
        body = _get_bytes(self._s3, S3Location(bucket=self._location.bucket, key=self._keys[name]))
        return body or b""

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        s3.copy({"Bucket": self._location.bucket, "Key": self._keys[name]}, dest.bucket, dest.key)


class _TarSource(_Source):
    def __init__(self, s3: S3Client, location: S3Location) -> None:
        self.uri = location.uri
        self._spool: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        try:
            s3.download_fileobj(location.bucket, location.key, self._spool)
        except Exception as error:
            if _is_missing(error):
                raise fail("the source archive does not exist", value=self.uri) from error
            raise
        self._spool.seek(0)
        self._members: dict[str, tarfile.TarInfo] = {}
        try:
            self._tar = tarfile.open(fileobj=self._spool, mode="r:gz")  # noqa: SIM115
        except tarfile.TarError as error:
            raise fail(f"not a gzip-compressed tar archive: {error}", value=self.uri) from error
        problems = []
        members = [m for m in self._tar.getmembers() if not m.isdir()]
        names = [m.name.removeprefix("./") for m in members]
        # A tar of the adapter folder itself (adapter/adapter_config.json...): drop that folder.
        tops = {n.split("/", 1)[0] for n in names}
        strip = ""
        if PEFT_CONFIG not in names and len(tops) == 1 and all("/" in n for n in names):
            strip = tops.pop() + "/"
        for member, raw in zip(members, names, strict=True):
            name = raw.removeprefix(strip)
            if not member.isfile():
                problems.append(
                    Problem(
                        message="the archive may hold only regular files and folders",
                        where=self.uri,
                        value=member.name,
                    )
                )
            elif (problem := file_name_problem(name)) is not None:
                problems.append(replace(problem, where=self.uri))
            else:
                self._members[name] = member
        if problems:
            raise MlccError(problems)
        self.files = {}
        for name, member in self._members.items():
            handle = self._tar.extractfile(member)
            assert handle is not None
            digest = hashlib.sha256()
            for chunk in iter(lambda h=handle: h.read(_CHUNK), b""):  # type: ignore[misc]
                digest.update(chunk)
            self.files[name] = digest.hexdigest()

    def read(self, name: str) -> bytes:
        handle = self._tar.extractfile(self._members[name])
        return handle.read() if handle is not None else b""

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        handle = self._tar.extractfile(self._members[name])
        assert handle is not None
        s3.upload_fileobj(handle, dest.bucket, dest.key)

    def close(self) -> None:
        self._tar.close()
        self._spool.close()


def _open_source(s3: S3Client, uri: str) -> _Source:
    location = layout.parse_s3_uri(uri, pointer="source")
    if location.key.endswith((".tar.gz", ".tgz")):
        return _TarSource(s3, location)
    if not location.is_prefix:
        location = S3Location(bucket=location.bucket, key=location.key + "/")
    source = _PrefixSource(s3, location)
    if not source.files:
        raise fail(
            "the source prefix holds no files",
            pointer="source",
            value=uri,
            fix="point at the folder holding adapter_config.json and the adapter weights",
        )
    return source


def _check_peft_files(source: _Source) -> PeftInfo:
    problems = []
    if PEFT_CONFIG not in source.files:
        problems.append(
            Problem(
                message=f"no {PEFT_CONFIG} at the top of the source",
                where=source.uri,
                value=sorted(source.files)[:8],
                fix="point at the PEFT adapter folder (e.g. the job's checkpoints/hf/)",
            )
        )
    if not any(w in source.files for w in _WEIGHTS):
        problems.append(
            Problem(
                message="no adapter weights at the top of the source",
                where=source.uri,
                allowed=" or ".join(_WEIGHTS),
            )
        )
    if problems:
        raise MlccError(problems)
    return parse_peft_config(source.read(PEFT_CONFIG), where=f"{source.uri} {PEFT_CONFIG}")


# --- promotion --------------------------------------------------------------------------

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


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def resolve_base(explicit: str | None, peft: PeftInfo | None, fallback: str | None) -> str:
    """The adapter's base id: explicit, else PEFT's ``base_model_name_or_path``, else fallback.

    The result is a Hugging Face id (a mapped hub id is translated); a PEFT base that is a
    local path (``/opt/ml/model``) is not an id, so it needs ``--base-model``.
    """
    candidate = explicit or (peft.base_model if peft else None) or fallback
    if candidate is None:
        raise fail(
            "the adapter's base model is unknown",
            pointer="base_model",
            fix="pass --base-model <org>/<name> (the Hugging Face id it was trained on)",
        )
    pointer = "base_model" if explicit else f"{PEFT_CONFIG} /base_model_name_or_path"
    return layout.base_model(candidate, pointer=pointer).hf_id


def canonical_record(s3: S3Client, adapter: CanonicalAdapter) -> AdapterRecord:
    """The record of a canonical adapter; an unversioned home without one gets it synthesised
    from its ``adapter_config.json`` (pre-versioning homes and hand copies stay valid)."""
    record = read_adapter_record(s3, adapter.location)
    if record is not None:
        return record
    source = _PrefixSource(s3, adapter.location)
    files = {n: d for n, d in source.files.items() if "/" not in n or adapter.version}
    if not files:
        raise fail("no adapter at this canonical location", value=adapter.location.uri)
    peft = _check_peft_files(source)
    digest = content_hash(files)
    base = peft.base_model or (
        b.hf_id if (b := layout.base_of_model_location(adapter.model)) else None
    )
    return AdapterRecord(
        project=adapter.project,
        name=adapter.name,
        version=adapter.version or layout.version_id(digest),
        content_hash=digest,
        source_uri=adapter.location.uri,
        r=peft.r,
        rank_pattern=peft.rank_pattern,
        target_modules=peft.target_modules,
        base_model=resolve_base(None, peft, base),
        base_revision=peft.base_revision,
        created_by="unknown",
        created_at="unknown",
    )


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
    now: Callable[[], str] = _now,
    dry_run: bool = False,
) -> Promotion:
    """Promote a source prefix or ``.tar.gz`` to ``<canonical home>/v<hash12>/``.

    A canonical source (a version or an unversioned home) is used as-is (``canonical``).
    Identical content finds its version already there (``unchanged``, nothing copied). New
    content is copied file by file and the adapter record is written last, so a version
    with a record is complete. A version directory left without a record by an interrupted
    promotion is completed, never overwritten: a file there with other bytes is refused.
    ``dry_run`` reads and hashes but writes nothing (``dry-run``).
    """
    layout.check_components(project=project, name=name)
    existing = layout.parse_canonical_adapter(source_uri)
    if existing is not None:
        return Promotion(
            status="canonical", adapter=existing, record=canonical_record(s3, existing)
        )
    source = _open_source(s3, source_uri)
    try:
        peft = _check_peft_files(source)
        base_id = resolve_base(base_model, peft, None)
        base = layout.base_model(base_id)
        digest = content_hash(source.files)
        version = layout.version_id(digest)
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
            created_by=created_by or _who(),
            created_at=now(),
        )
        found = read_adapter_record(s3, adapter.location)
        if found is not None:
            if found.content_hash != digest:
                raise fail(
                    "a different adapter already holds this version (12-digit hash collision)",
                    where=adapter.location.uri,
                    value=found.content_hash,
                    fix="promote under another adapter name",
                )
            return Promotion(status="unchanged", adapter=adapter, record=found)
        if dry_run:
            return Promotion(status="dry-run", adapter=adapter, record=record)
        copied = _write_version(s3, source, adapter.location)
        _put_json(s3, layout.record_location(adapter.location), record.to_json())
        return Promotion(status="created", adapter=adapter, record=record, copied=copied)
    finally:
        source.close()


def _write_version(s3: S3Client, source: _Source, version: S3Location) -> tuple[str, ...]:
    present = {version.relative(item["Key"]): item for item in _list(s3, version)}
    problems = []
    copied = []
    for name in sorted(source.files):
        dest = S3Location(bucket=version.bucket, key=version.key + name)
        if name in present:
            if _stream_sha256(s3, dest.bucket, dest.key) != source.files[name]:
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


# --- live limits and the delivery plan --------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """The serving side of a delivery: where the model is and what the engine accepts.

    Build it with :meth:`for_engine` from an engine manifest.
    """

    target: str
    """Target name (``eks``, ``hyperpod-eks``, ``realtime-inference``)."""
    model: str
    """The deployment's model source: ``s3://bucket/prefix/``, a Hugging Face id, or a
    model-package ARN."""
    project: str
    rank_env_key: str | None
    """Env key of the engine's max LoRA rank (``VLLM_MAX_LORA_RANK``); None if it has none."""
    default_rank: int | None
    """The engine manifest's ``lora_max_rank`` default."""
    adapter_api: Mapping[str, str] = field(default_factory=dict)
    """``{"load": path, "unload": path}`` from the engine manifest."""
    base_model: str | None = None
    """Base id served. Default: read from a canonical ``models/<org>/<base>/`` model prefix."""
    base_revision: str | None = None

    @classmethod
    def for_engine(
        cls,
        manifest: Any,
        *,
        target: str,
        model: str,
        project: str,
        base_model: str | None = None,
        base_revision: str | None = None,
    ) -> Deployment:
        """From a :class:`mlcc_constructs.core.manifests.EngineManifest`."""
        capability = manifest.capability("lora_max_rank")
        default = capability.default if capability is not None else None
        return cls(
            target=target,
            model=model,
            project=project,
            rank_env_key=manifest.key(capability) if capability is not None else None,
            default_rank=int(default) if default is not None else None,
            adapter_api=dict(manifest.adapter_api or {}),
            base_model=base_model,
            base_revision=base_revision,
        )


@dataclass(frozen=True, kw_only=True)
class LiveState:
    """What the cluster says right now. ``None`` = not known (not looked up)."""

    pod_env: Mapping[str, str] | None = None
    """Env of a Running serving pod (container env + envFrom ConfigMaps)."""
    iec: Mapping[str, Any] | None = None
    """The live ``InferenceEndpointConfig`` (hyperpod-eks)."""
    s3_mount: bool | None = None
    """eks: whether the serving pods mount the model prefix through the S3 CSI driver."""


def iec_env(iec: Mapping[str, Any] | None) -> dict[str, str]:
    """``spec.worker.environmentVariables`` of an IEC as a dict."""
    items = _get(iec, "spec", "worker", "environmentVariables") or []
    return {
        str(i["name"]): str(i.get("value", ""))
        for i in items
        if isinstance(i, Mapping) and "name" in i
    }


def live_rank_limit(deployment: Deployment, live: LiveState) -> tuple[int | None, str]:
    """The max LoRA rank the pods run with, and where it came from: pod env → IEC env →
    engine default."""
    key = deployment.rank_env_key
    if key is not None:
        for origin, env in (("pod env", live.pod_env), ("IEC env", iec_env(live.iec))):
            value = (env or {}).get(key)
            if value is not None:
                try:
                    return int(value), f"{origin} {key}"
                except ValueError as error:
                    raise fail(
                        f"the live {key} is not an integer", where=origin, value=value
                    ) from error
    if deployment.default_rank is not None:
        return deployment.default_rank, "engine default"
    return None, "none (the engine has no max LoRA rank)"


def _deployment_refusals(deployment: Deployment, live: LiveState) -> list[Problem]:
    target = load_target(deployment.target)
    problems = []
    if target.adapter_delivery.strategy != "model-prefix":
        problems.append(
            Problem(
                message=f"target {target.name} does not load adapters into pods; each adapter is "
                "its own inference component",
                pointer="target",
                value=target.name,
                fix="declare the adapter in the AdapterInferenceComponents construct and deploy",
            )
        )
        return problems
    if _MODEL_PACKAGE.match(deployment.model) or not deployment.model.startswith("s3://"):
        problems.append(
            Problem(
                message="adapters are delivered through the model's S3 mount, and this "
                "deployment's model is not on S3",
                pointer="model",
                value=deployment.model,
                fix="stage the model to S3 and redeploy with model=s3://<core>/models/<org>/<base>/",
            )
        )
    source_type = _get(live.iec, "spec", "modelSourceConfig", "modelSourceType")
    if source_type not in (None, "s3"):
        problems.append(
            Problem(
                message="the live InferenceEndpointConfig does not mount an S3 model",
                pointer="spec/modelSourceConfig/modelSourceType",
                value=source_type,
                fix="stage the model to S3 and redeploy",
            )
        )
    if _get(live.iec, "spec", "modelSourceConfig", "prefetchEnabled") is True:
        problems.append(
            Problem(
                message="the live InferenceEndpointConfig prefetches the model, so adapters "
                "written after start are not visible in the pods",
                pointer="spec/modelSourceConfig/prefetchEnabled",
                value=True,
                fix="redeploy with LoRA enabled (it renders prefetchEnabled: false)",
            )
        )
    if target.name == "eks" and live.s3_mount is False:
        problems.append(
            Problem(
                message="the serving pods do not mount the model through the S3 CSI driver",
                pointer="volumes",
                value=False,
                fix="redeploy with an s3:// model so the Deployment mounts it read-only",
            )
        )
    return problems


SourceKind = Literal["canonical-version", "canonical-home", "s3-prefix", "tar.gz"]


@dataclass(frozen=True, kw_only=True)
class DeliveryPlan:
    """What ``add``/``update`` will do. Paths are ``""`` until the version is known."""

    operation: Literal["add", "update"]
    project: str
    name: str
    source: str
    source_kind: SourceKind
    steps: tuple[str, ...]
    """A subset of ``promote``, ``copy``, ``load`` (``update``: ``unload`` + ``load``)."""
    base_model: str
    rank_need: int
    rank_limit: int | None
    rank_limit_from: str
    canonical: str
    """The canonical version (or home) URI; ``""`` before promotion."""
    canonical_home: str
    serving: str
    """The URI the pods read from (the canonical one, or the serving copy)."""
    path: str
    """In-pod path loaded; ``""`` before the version is known."""
    path_home: str
    version: str
    core_bucket: str = ""
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The dry-run plan (``mlcc adapter plan``)."""
        return {
            "operation": self.operation,
            "project": self.project,
            "lora_name": self.name,
            "source": self.source,
            "source_kind": self.source_kind,
            "steps": list(self.steps),
            "base_model": self.base_model,
            "rank": {
                "need": self.rank_need,
                "limit": self.rank_limit,
                "limit_from": self.rank_limit_from,
            },
            "canonical": self.canonical,
            "canonical_home": self.canonical_home,
            "serving": self.serving,
            "version": self.version,
            "path": self.path,
            "path_home": self.path_home,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, kw_only=True)
class _Located:
    kind: SourceKind
    base: str
    base_revision: str | None
    need: int
    canonical: CanonicalAdapter | None
    home: S3Location


def _serving_model(deployment: Deployment) -> S3Location:
    location = layout.parse_s3_uri(deployment.model, pointer="model")
    return layout.model_location(location.bucket, location.key)


def _deployment_base(deployment: Deployment) -> str:
    if deployment.base_model:
        return layout.base_model(deployment.base_model).hf_id
    base = layout.base_of_model_location(_serving_model(deployment))
    if base is None:
        raise fail(
            "cannot tell which base model this deployment serves",
            pointer="model",
            value=deployment.model,
            fix="pass --base-model <org>/<name> for a model staged outside models/<org>/<base>/",
        )
    return layout.base_model(base.hf_id).hf_id


def plan_delivery(
    s3: S3Client,
    *,
    operation: Literal["add", "update"],
    deployment: Deployment,
    live: LiveState,
    name: str,
    source: str,
    core_bucket: str,
    base_model: str | None = None,
) -> DeliveryPlan:
    """The delivery plan (seed §2); reads S3, writes nothing.

    Order: (1) refusals from config and the live state; (2) the rank pre-check against the
    live limit; (3) a non-canonical source will be promoted under its base's canonical home
    (its version is unknown until then: ``path`` is ``""``); (4) canonical under this
    deployment's model prefix → load by path; (5) canonical elsewhere → copy when the base id
    (and revision, when both are known) match; a different base is refused.
    """
    project = deployment.project
    layout.check_components(project=project, name=name)
    problems = _deployment_refusals(deployment, live)
    if problems:
        raise MlccError(problems)
    serving_model = _serving_model(deployment)
    served_base = _deployment_base(deployment)
    located = _locate(s3, source, base_model, served_base, core_bucket, project, name)
    limit, limit_from = live_rank_limit(deployment, live)
    if limit is not None and located.need > limit:
        raise fail(
            f"adapter {name} needs LoRA rank {located.need}, above the live limit {limit} "
            f"({limit_from})",
            pointer="rank",
            value=located.need,
            fix=f"raise {deployment.rank_env_key} to at least {located.need} and redeploy, "
            "then add the adapter again",
        )
    if located.base != served_base or (
        located.base_revision
        and deployment.base_revision
        and located.base_revision != deployment.base_revision
    ):
        raise fail(
            f"adapter {name} was trained on another base and is incompatible with this deployment",
            pointer="base_model",
            value=f"{located.base}@{located.base_revision or '?'}",
            allowed=f"{served_base}@{deployment.base_revision or '?'}",
            fix="deliver it to a deployment of its own base",
        )
    delivery = load_target(deployment.target).adapter_delivery
    serving_home = layout.adapter_home(serving_model, project, name)
    path_home = layout.pod_adapter_path(delivery, project, name)
    steps: list[str] = []
    canonical = located.canonical
    if canonical is None:
        steps.append("promote")
        home = layout.parse_canonical_adapter(located.home.uri)
        in_place = home is not None and home.model == serving_model
        version = ""
        serving_uri = located.home.uri if in_place else serving_home.uri
        canonical_uri = ""
    else:
        in_place = canonical.model == serving_model
        version = canonical.version or ""
        canonical_uri = canonical.location.uri
        if in_place:
            serving_uri = canonical.location.uri
        elif version:
            serving_uri = layout.adapter_version(serving_home, version).uri
        else:
            serving_uri = ""  # an unversioned home is copied to its content version
    if not in_place:
        steps.append("copy")
    steps += ["unload", "load"] if operation == "update" else ["load"]
    if canonical is not None and in_place:
        path = layout.pod_adapter_path(delivery, project, name, canonical.version)
    elif version:
        path = layout.pod_adapter_path(delivery, project, name, version)
    else:
        path = ""
    return DeliveryPlan(
        operation=operation,
        project=project,
        name=name,
        source=source,
        source_kind=located.kind,
        steps=tuple(steps),
        base_model=located.base,
        rank_need=located.need,
        rank_limit=limit,
        rank_limit_from=limit_from,
        canonical=canonical_uri,
        canonical_home=located.home.uri,
        serving=serving_uri,
        path=path,
        path_home=path_home,
        version=version,
        core_bucket=core_bucket,
    )


def _locate(
    s3: S3Client,
    source: str,
    base_model: str | None,
    served_base: str,
    core_bucket: str,
    project: str,
    name: str,
) -> _Located:
    if not source.startswith("s3://"):
        raise fail(
            "adapter sources are S3 prefixes or .tar.gz archives",
            pointer="source",
            value=source,
            allowed="s3://bucket/prefix/, s3://bucket/adapter.tar.gz, or a canonical adapter",
            fix="upload the adapter to S3 (e.g. the adapters bucket) and add it from there",
        )
    canonical = layout.parse_canonical_adapter(source)
    if canonical is not None:
        if (canonical.project, canonical.name) != (project, name):
            raise fail(
                "a canonical adapter keeps its project and name",
                pointer="source",
                value=source,
                allowed=f"an adapter of project {project} named {name}",
                fix=f"add it as {canonical.name} in project {canonical.project}",
            )
        record = canonical_record(s3, canonical)
        return _Located(
            kind="canonical-version" if canonical.version else "canonical-home",
            base=record.base_model,
            base_revision=record.base_revision,
            need=record.rank().need,
            canonical=canonical,
            home=canonical.home,
        )
    opened = _open_source(s3, source)
    try:
        peft = _check_peft_files(opened)
    finally:
        opened.close()
    base = layout.base_model(resolve_base(base_model, peft, served_base))
    return _Located(
        kind="tar.gz" if source.endswith((".tar.gz", ".tgz")) else "s3-prefix",
        base=base.hf_id,
        base_revision=peft.base_revision,
        need=AdapterRank(name=name, r=peft.r, rank_pattern=peft.rank_pattern).need,
        canonical=None,
        home=layout.canonical_adapter_home(core_bucket, base, project, name),
    )


def apply_delivery(
    s3: S3Client,
    plan: DeliveryPlan,
    deployment: Deployment,
    *,
    base_model: str | None = None,
    created_by: str | None = None,
    now: Callable[[], str] = _now,
) -> DeliveryPlan:
    """Run the S3 steps of ``plan`` (promote, copy); returns the plan with the path known."""
    source = plan.source
    if "promote" in plan.steps:
        promotion = promote(
            s3,
            source_uri=plan.source,
            core_bucket=plan.core_bucket,
            project=plan.project,
            name=plan.name,
            base_model=base_model or plan.base_model,
            created_by=created_by,
            now=now,
        )
        source = promotion.adapter.location.uri
    canonical = layout.parse_canonical_adapter(source)
    assert canonical is not None
    serving_model = _serving_model(deployment)
    record = canonical_record(s3, canonical)
    version = canonical.version or record.version
    target = canonical
    if "copy" in plan.steps:
        target = _serving_copy(s3, canonical, record, serving_model, created_by, now)
    delivery = load_target(deployment.target).adapter_delivery
    return replace(
        plan,
        canonical=canonical.location.uri,
        serving=target.location.uri,
        version=version,
        path=layout.pod_adapter_path(delivery, plan.project, plan.name, target.version),
    )


def _serving_copy(
    s3: S3Client,
    canonical: CanonicalAdapter,
    record: AdapterRecord,
    serving_model: S3Location,
    created_by: str | None,
    now: Callable[[], str],
) -> CanonicalAdapter:
    home = layout.adapter_home(serving_model, canonical.project, canonical.name)
    copy = layout.parse_canonical_adapter(layout.adapter_version(home, record.version).uri)
    assert copy is not None
    found = read_adapter_record(s3, copy.location)
    if found is not None:
        if found.content_hash != record.content_hash:
            raise fail(
                "a different adapter already holds this version under the serving prefix",
                where=copy.location.uri,
                value=found.content_hash,
            )
        return copy
    source = _PrefixSource(s3, canonical.location)
    if not canonical.version:
        # an unversioned home may also hold version folders: copy only its own files
        source.files = {n: d for n, d in source.files.items() if "/" not in n}
    try:
        _write_version(s3, source, copy.location)
    finally:
        source.close()
    copied = replace(
        record,
        serving_copy_of=canonical.location.uri,
        created_by=created_by or _who(),
        created_at=now(),
    )
    _put_json(s3, layout.record_location(copy.location), copied.to_json())
    return copy


# --- removal ----------------------------------------------------------------------------


def remove_serving_copies(
    s3: S3Client, deployment: Deployment, name: str, *, dry_run: bool = False
) -> list[str]:
    """Delete the serving copies of ``name`` under this deployment's model prefix.

    Only versions whose record has ``serving_copy_of`` are deleted; canonical adapters (with
    or without a record) are never touched here. Returns the deleted version URIs, sorted.
    """
    home = layout.adapter_home(_serving_model(deployment), deployment.project, name)
    versions: dict[str, list[str]] = {}
    for item in _list(s3, home):
        head = home.relative(item["Key"]).split("/", 1)
        if len(head) == 2:
            versions.setdefault(head[0], []).append(item["Key"])
    deleted = []
    for version, keys in sorted(versions.items()):
        parsed = layout.parse_canonical_adapter(f"{home.uri}{version}/")
        if parsed is None or parsed.version is None:
            continue
        record = read_adapter_record(s3, parsed.location)
        if record is None or record.serving_copy_of is None:
            continue
        if not dry_run:
            for start in range(0, len(keys), 1000):
                batch = [{"Key": k} for k in keys[start : start + 1000]]
                s3.delete_objects(Bucket=home.bucket, Delete={"Objects": batch, "Quiet": True})
        deleted.append(parsed.location.uri)
    return deleted


# --- pods -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PodResult:
    """One pod's answer to one call."""

    pod: str
    action: Literal["load", "unload"]
    ok: bool
    status: int | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        """For the command's per-pod report."""
        return {
            "pod": self.pod,
            "action": self.action,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
        }


class PodClient:
    """Calls an engine's dynamic LoRA endpoints (``adapter_api`` of its manifest) on pods.

    ``pod`` is a base URL such as ``http://10.0.0.12:8000``. vLLM and SGLang both take
    ``{"lora_name", "lora_path"}`` to load and ``{"lora_name"}`` to unload. An unload that
    answers 404 (not loaded) counts as done: the goal, "not loaded", holds.
    """

    def __init__(self, adapter_api: Mapping[str, str], *, timeout: float = 60.0) -> None:
        if not adapter_api.get("load") or not adapter_api.get("unload"):
            raise fail(
                "the engine declares no dynamic LoRA API",
                pointer="adapter_api",
                value=dict(adapter_api),
                fix="use an engine whose manifest has adapter_api.load and adapter_api.unload",
            )
        self._api = dict(adapter_api)
        self._timeout = timeout

    def load(self, pod: str, lora_name: str, lora_path: str) -> PodResult:
        """Load ``lora_path`` as ``lora_name`` on ``pod``."""
        return self._call(pod, "load", {"lora_name": lora_name, "lora_path": lora_path})

    def unload(self, pod: str, lora_name: str) -> PodResult:
        """Unload ``lora_name`` from ``pod``."""
        return self._call(pod, "unload", {"lora_name": lora_name})

    def _call(self, pod: str, action: Literal["load", "unload"], body: dict[str, str]) -> PodResult:
        url = pod.rstrip("/") + self._api[action]
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                text = response.read().decode("utf-8", "replace").strip()
                return PodResult(
                    pod=pod, action=action, ok=True, status=response.status, detail=text
                )
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace").strip()
            ok = action == "unload" and error.code == 404
            return PodResult(pod=pod, action=action, ok=ok, status=error.code, detail=text)
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            return PodResult(pod=pod, action=action, ok=False, status=None, detail=str(reason))


def roll_out(
    client: PodClient,
    pods: Sequence[str],
    *,
    name: str,
    path: str | None,
    unload_first: bool,
) -> list[PodResult]:
    """On every pod: unload ``name`` (when ``unload_first``), then load ``path`` (unless None).

    A pod whose unload failed is not loaded. Results are in pod order.
    """
    results = []
    for pod in pods:
        if unload_first:
            unloaded = client.unload(pod, name)
            results.append(unloaded)
            if not unloaded.ok:
                continue
        if path is not None:
            results.append(client.load(pod, name, path))
    return results
