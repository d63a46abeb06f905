"""The record of an adapter version and the rules over an adapter's files (seed lora-delivery §1).

Pure: every function here works on values already read (documents, bytes, digests, file
names, listed keys); reading and writing S3 is :mod:`mlcc_constructs.ops`' job.

- :class:`AdapterRecord` is the record of a version (``s3_layout.ADAPTER_RECORD``):
  :func:`parse_adapter_record` validates one document, :func:`parse_record_json` one body,
  :meth:`AdapterRecord.to_json` is the document written.
- :func:`content_hash` is deterministic over the adapter's file names and file digests and
  independent of listing order; a version directory is ``v<hash12>``.
- :func:`parse_peft_config` and :func:`peft_files_problems` read a PEFT adapter folder;
  :func:`resolve_base` names the base it was trained on (a ``--base-model`` that contradicts the
  config's is refused).
- :func:`file_name_problem`, :func:`archive_root`, :func:`adapter_files` and
  :func:`recorded_locations` are the file-name rules of sources, homes and listings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.adapters import path_names, s3_layout as layout
from mlcc_constructs.core.adapters.lora_rank import AdapterRank
from mlcc_constructs.core.adapters.record_fields import (
    HEX64,
    dig,
    header_problems,
    provenance_fields,
    text_field,
)
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

RECORD_FORMAT = "mlcc-adapter/1"
PEFT_CONFIG = "adapter_config.json"
WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
"""File names of PEFT adapter weights; one of them must be at the top of a source."""
ADAPTER_RECORD_NAME = layout.ADAPTER_RECORD


# --- the record -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecordedFile:
    """What a record says of one of its version's files."""

    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        """The record's ``files`` entry."""
        return {"size": self.size, "sha256": self.sha256}


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
    files: Mapping[str, RecordedFile] = field(default_factory=dict)
    """Each file's size and sha256 (relative name → facts), so a damaged version is found by
    its sizes alone; empty in records written before it was recorded (then only the content
    hash can be checked)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rank_pattern", MappingProxyType(dict(self.rank_pattern)))
        object.__setattr__(self, "target_modules", tuple(self.target_modules))
        object.__setattr__(self, "files", MappingProxyType(dict(sorted(self.files.items()))))

    def rank(self) -> AdapterRank:
        """This adapter's rank, for :func:`mlcc_constructs.core.adapters.lora.fit_max_rank`."""
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
        if self.files:
            document["files"] = {n: f.to_json() for n, f in self.files.items()}
        return document


def parse_adapter_record(document: Any, *, where: str = ADAPTER_RECORD_NAME) -> AdapterRecord:
    """Validate an adapter record document; every problem is reported at once."""
    problems: list[Problem] = []

    def need_str(*path: str, optional: bool = False) -> str | None:
        return text_field(document, *path, where=where, problems=problems, optional=optional)

    if not isinstance(document, Mapping):
        raise fail("not a JSON object", where=where, value=type(document).__name__)
    problems += header_problems(document, record_format=RECORD_FORMAT, where=where)
    project, name = need_str("project"), need_str("name")
    version, digest = need_str("version"), need_str("content_hash")
    if (
        digest is not None
        and HEX64.match(digest)
        and version is not None
        and version != path_names.version_id(digest)
    ):
        problems.append(
            Problem(
                message="version does not match the content hash",
                where=where,
                pointer="/version",
                value=version,
                allowed=path_names.version_id(digest),
            )
        )
    r = dig(document, "rank", "r")
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        problems.append(
            Problem(message="not a positive integer", where=where, pointer="/rank/r", value=r)
        )
    pattern = dig(document, "rank", "rank_pattern") or {}
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
    files = _recorded_files(document.get("files"), digest, where=where, problems=problems)
    record_fields = {
        **provenance_fields(document, where=where, problems=problems),
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
        files=files,
        **record_fields,  # type: ignore[arg-type]
    )


def _recorded_files(
    value: Any, digest: str | None, *, where: str, problems: list[Problem]
) -> dict[str, RecordedFile]:
    """A record's ``files`` map (absent in older records: empty); its digests must give the
    record's content hash."""
    if value is None:
        return {}
    entries = value.items() if isinstance(value, Mapping) else [(None, None)]
    files = {
        name: RecordedFile(size=dig(entry, "size"), sha256=dig(entry, "sha256"))
        for name, entry in entries
        if isinstance(name, str) and file_name_problem(name) is None
        and isinstance(dig(entry, "size"), int) and not isinstance(dig(entry, "size"), bool)
        and dig(entry, "size") >= 0 and HEX64.match(str(dig(entry, "sha256")))
    }  # fmt: skip
    if len(files) != len(entries):
        problems.append(
            Problem(
                message="not a map of file name → {size, sha256}",
                where=where,
                pointer="/files",
                value=value,
                allowed='{"adapter_model.safetensors": {"size": <bytes>, "sha256": "<64 hex>"}}',
            )
        )
    elif digest and HEX64.match(digest) and content_hash(_digests(files)) != digest:
        problems.append(
            Problem(
                message="the files' digests do not give the content hash",
                where=where,
                pointer="/files",
                allowed=digest,
            )
        )
    return files


def _digests(files: Mapping[str, RecordedFile]) -> dict[str, str]:
    return {n: f.sha256 for n, f in files.items()}


def parse_record_json(body: bytes, *, where: str) -> AdapterRecord:
    """:func:`parse_adapter_record` of a stored record's bytes (``where``: its location)."""
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON: {error.msg}", where=where) from error
    return parse_adapter_record(document, where=where)


def recorded_locations(root: S3Location, keys: Iterable[str]) -> list[CanonicalAdapter]:
    """The adapter versions (or homes) whose record is among ``keys`` (listed under ``root``)."""
    adapters = []
    for key in keys:
        if not key.endswith("/" + layout.ADAPTER_RECORD):
            continue
        adapter = layout.parse_canonical_adapter(
            S3Location(bucket=root.bucket, key=key.rsplit("/", 1)[0] + "/").uri
        )
        if adapter is not None:
            adapters.append(adapter)
    return adapters


# --- file names and the content hash ----------------------------------------------------


def file_name_problem(name: str, *, where: str = "") -> Problem | None:
    """A relative POSIX file name inside an adapter, or the problem with it (at ``where``:
    the file's S3 URI, or the archive holding it)."""
    parts = name.split("/")
    for part in parts:
        problem = path_names.component_problem(part, where=where)
        if problem is not None:
            return replace(problem, value=name)
    return None


def archive_root(names: Collection[str]) -> str:
    """The folder to strip from an archive's member names: a tar of the adapter folder itself
    (``adapter/adapter_config.json``...) holds everything under one top folder."""
    tops = {n.split("/", 1)[0] for n in names}
    if PEFT_CONFIG not in names and len(tops) == 1 and all("/" in n for n in names):
        return tops.pop() + "/"
    return ""


def adapter_files(adapter: CanonicalAdapter, files: Mapping[str, str]) -> dict[str, str]:
    """The files of ``adapter`` among those listed under its location: an unversioned home
    may also hold version folders, so only its top-level files are its own."""
    return {n: d for n, d in files.items() if adapter.version or "/" not in n}


def content_hash(
    file_digests: Mapping[str, str], *, metadata: Collection[str] = (layout.ADAPTER_RECORD,)
) -> str:
    """sha256 over ``name NUL sha256(bytes) LF`` for every file, sorted by name.

    ``file_digests`` maps relative names to each file's sha256 hex; the record (``metadata``:
    ``s3_layout.ADAPTER_RECORD`` for an adapter, ``s3_layout.MODEL_RECORD`` for a full
    fine-tune) is metadata and never part of the content. Listing order does not matter.
    """
    digest = hashlib.sha256()
    for name in sorted(file_digests):
        if name in metadata:
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
    where: str = ""
    """The config's location (for errors about its fields)."""


def parse_peft_config(body: bytes, *, where: str) -> PeftInfo:
    """``r``, ``rank_pattern``, ``target_modules``, base model and revision of a PEFT config
    (``where``: its location)."""
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
        where=where,
    )


def peft_files_problems(names: Collection[str], *, where: str) -> list[Problem]:
    """What a PEFT adapter folder lacks at its top (``names``: its relative file names)."""
    problems = []
    if PEFT_CONFIG not in names:
        problems.append(
            Problem(
                message=f"no {PEFT_CONFIG} at the top of the source",
                where=where,
                value=sorted(names)[:8],
                fix="point at the PEFT adapter folder (e.g. the job's checkpoints/hf/)",
            )
        )
    if not any(w in names for w in WEIGHTS):
        problems.append(
            Problem(
                message="no adapter weights at the top of the source",
                where=where,
                allowed=" or ".join(WEIGHTS),
            )
        )
    return problems


def resolve_base(explicit: str | None, peft: PeftInfo | None, fallback: str | None) -> str:
    """The adapter's base id: explicit, else PEFT's ``base_model_name_or_path``, else fallback.

    The result is a Hugging Face id (a mapped hub id is translated); a PEFT base that is a
    local path (``/opt/ml/model``) is not an id, so it needs ``--base-model``.
    """
    if explicit:
        given = layout.base_model(explicit, pointer="/base_model").hf_id
        trained = _peft_base_id(peft)
        if trained is not None and trained != given:
            assert peft is not None
            raise fail(
                f"the adapter was trained on {trained}, not on the base given, {given}: "
                "it would be filed (and served) under a base it does not fit",
                where=peft.where,
                pointer="/base_model_name_or_path",
                value=peft.base_model,
                fix=f"drop --base-model (the config names the base) or pass --base-model "
                f"{trained}; if the config is wrong, correct it in the source",
            )
        return given
    if peft is not None and peft.base_model:
        return layout.base_model(
            peft.base_model, where=peft.where, pointer="/base_model_name_or_path"
        ).hf_id
    if fallback is None:
        raise fail(
            "the adapter's base model is unknown",
            pointer="/base_model",
            fix="pass --base-model <org>/<name> (the Hugging Face id it was trained on)",
        )
    return layout.base_model(fallback, pointer="/base_model").hf_id


def _peft_base_id(peft: PeftInfo | None) -> str | None:
    """The Hugging Face id the PEFT config names as its base, or ``None`` when it names none or
    a local path (``/opt/ml/model``: nothing to compare)."""
    if peft is None or not peft.base_model:
        return None
    try:
        return layout.base_model(peft.base_model).hf_id
    except MlccError:
        return None


def synthesised_record(
    adapter: CanonicalAdapter, files: Mapping[str, str], peft: PeftInfo
) -> AdapterRecord:
    """The record of a canonical adapter that has none (a pre-versioning home or a hand copy),
    from its own files' digests and its PEFT config."""
    digest = content_hash(files)
    base = peft.base_model or (
        b.hf_id if (b := layout.base_of_model_location(adapter.model)) else None
    )
    return AdapterRecord(
        project=adapter.project,
        name=adapter.name,
        version=adapter.version or path_names.version_id(digest),
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
