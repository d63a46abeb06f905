"""What adapters a project has, and which version each pod serves (``mlcc adapter list``).

Pure: the functions here work on listed keys (with sizes), records and pod model lists that
:mod:`mlcc_constructs.ops.inventory` read. Every key is placed by the S3 layout's own
functions (:mod:`mlcc_constructs.core.adapters.s3_layout`):

- :func:`group_adapter_keys` sorts the keys under a model prefix's adapter folder into
  adapter versions, unversioned homes and stray keys (under the folder, in no adapter);
- :func:`inventory` orders the adapters and their versions (newest first, by the record's
  creation time) with what each pod has loaded (:func:`loaded_adapters`), each recorded
  version checked against its record (:mod:`.integrity`) and a record that cannot be read
  reported on its own version (the others are still listed);
- :func:`inventory_table` is the ``--format table`` text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mlcc_constructs.core.adapters import path_names, s3_layout as layout
from mlcc_constructs.core.adapters.integrity import (
    Checked,
    Damage,
    content_damage,
    own_files,
    size_damage,
)
from mlcc_constructs.core.adapters.lora_rank import AdapterRank
from mlcc_constructs.core.adapters.record import AdapterRecord, PeftInfo
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.platform.targets import AdapterDelivery
from mlcc_constructs.core.support.errors import MlccError

VersionState = Literal["complete", "incomplete", "unrecorded", "damaged", "unreadable"]


@dataclass(frozen=True, kw_only=True)
class AdapterKeys:
    """The keys of one adapter version (or unversioned home), with their sizes."""

    adapter: CanonicalAdapter
    keys: Mapping[str, int]
    """key → size in bytes"""

    @property
    def record_key(self) -> str:
        """The key of this version's record (present or not)."""
        return self.adapter.record.key

    @property
    def bytes(self) -> int:
        """Total size."""
        return sum(self.keys.values())

    @property
    def packed(self) -> S3Location | None:
        """The version's packed archive when it is among the keys (``mlcc adapter pack``)."""
        if self.adapter.version is None or self.adapter.packed.key not in self.keys:
            return None
        return self.adapter.packed


@dataclass(frozen=True, kw_only=True)
class AdapterListing:
    """The keys under one model prefix's adapter folder (all projects, or one), grouped."""

    model: S3Location
    adapters: tuple[AdapterKeys, ...]
    """Sorted by project, name, version (an unversioned home first)."""
    stray: Mapping[str, int] = field(default_factory=dict)
    """Keys under the folder that belong to no adapter (key → size)."""


def _version_of(home: S3Location, part: str) -> S3Location | None:
    try:
        return layout.adapter_version(home, part)
    except MlccError:
        return None


def group_adapter_keys(
    root: S3Location, model: S3Location, keys: Mapping[str, int]
) -> AdapterListing:
    """Group ``keys`` (key → size, listed under ``root``: the model's adapter folder or one
    project's folder in it) by the adapter they belong to.

    ``<project>/<name>/v<hash12>/...`` is a version, and ``<project>/<name>/v<hash12>.tar.gz``
    its packed archive; any other key under
    ``<project>/<name>/`` belongs to the unversioned home (a pre-versioning adapter, or a
    hand copy); a key above an adapter folder is stray.
    """
    base = layout.adapters_root(model)
    groups: dict[tuple[str, str, str | None], dict[str, int]] = {}
    stray: dict[str, int] = {}
    for key, size in keys.items():
        if not key.startswith(root.key) or not key.startswith(base.key):
            continue
        parts = base.relative(key).split("/")
        if (
            len(parts) < 3
            or path_names.component_problem(parts[0])
            or path_names.component_problem(parts[1])
        ):
            stray[key] = size
            continue
        home = layout.adapter_home(model, parts[0], parts[1])
        version = parts[2] if len(parts) > 3 and _version_of(home, parts[2]) else None
        packed = parts[2].removesuffix(layout.PACKED)
        if len(parts) == 3 and packed != parts[2] and _version_of(home, packed):
            version = packed  # the version's packed archive goes (and is cleaned) with it
        groups.setdefault((parts[0], parts[1], version), {})[key] = size
    adapters = []
    for (project, name, version), found in sorted(
        groups.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] or "")
    ):
        adapter = CanonicalAdapter(model=model, project=project, name=name, version=version)
        adapters.append(AdapterKeys(adapter=adapter, keys=dict(sorted(found.items()))))
    return AdapterListing(model=model, adapters=tuple(adapters), stray=dict(sorted(stray.items())))


# --- what pods serve --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LoadedAdapter:
    """An adapter a pod reports loaded (its model list entry), placed in the layout."""

    pod: str
    lora_name: str
    path: str
    project: str
    name: str
    version: str | None


def loaded_adapters(
    delivery: AdapterDelivery, pod: str, entries: Iterable[Mapping[str, Any]]
) -> list[LoadedAdapter]:
    """The canonical adapters among a pod's model list entries (``{"id", "root", ...}``):
    those whose ``root`` is an in-pod adapter path of the layout."""
    found = []
    for entry in entries:
        placed = layout.parse_pod_adapter_path(delivery, entry.get("root"))
        if placed is not None:
            found.append(
                LoadedAdapter(
                    pod=pod,
                    lora_name=str(entry.get("id", "")),
                    path=str(entry.get("root")),
                    project=placed[0],
                    name=placed[1],
                    version=placed[2],
                )
            )
    return found


# --- the inventory ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class VersionEntry:
    """One version (or unversioned home) of an adapter, as listed."""

    keys: AdapterKeys
    record: AdapterRecord | None
    peft: PeftInfo | None = None
    """The PEFT config of an unversioned home without a record (its rank), when readable."""
    loaded_on: tuple[str, ...] = ()
    checked: Checked = "none"
    """How far its files were checked against the record (``sizes``: from the listing)."""
    damage: tuple[Damage, ...] = ()
    """How its files differ from its record."""
    errors: tuple[str, ...] = ()
    """Why its record could not be read (the version is then ``unreadable``)."""

    @property
    def state(self) -> VersionState:
        """``complete`` (recorded, and its files as far as checked are the record's),
        ``damaged`` (recorded, but its files are not the record's), ``unreadable`` (its record
        is not a valid record of this path), ``incomplete`` (a version folder without its
        record: a promotion or a clean was interrupted) or ``unrecorded`` (an unversioned home
        without a record: a pre-versioning adapter or hand copy, still valid)."""
        if self.errors:
            return "unreadable"
        if self.damage:
            return "damaged"
        if self.record is not None:
            return "complete"
        return "unrecorded" if self.keys.adapter.version is None else "incomplete"

    def to_json(self) -> dict[str, Any]:
        """For ``mlcc adapter list``."""
        record = self.record
        rank: dict[str, Any] | None = None
        if record is not None:
            rank = _rank(record.rank())
        elif self.peft is not None:
            rank = _rank(AdapterRank(name="", r=self.peft.r, rank_pattern=self.peft.rank_pattern))
        modules = record.target_modules if record else ()
        if record is None and self.peft is not None:
            modules = self.peft.target_modules
        return {
            "version": self.keys.adapter.version,
            "uri": self.keys.adapter.location.uri,
            "state": self.state,
            "created_at": record.created_at if record else None,
            "created_by": record.created_by if record else None,
            "rank": rank,
            "target_modules": list(modules),
            "technique": record.technique if record else None,
            "source": {"uri": record.source_uri, "job": record.source_job} if record else None,
            "serving_copy": bool(record and record.serving_copy_of),
            "serving_copy_of": record.serving_copy_of if record else None,
            "packed": self.keys.packed.uri if self.keys.packed else None,
            "objects": len(self.keys.keys),
            "bytes": self.keys.bytes,
            "loaded_on": list(self.loaded_on),
            "checked": self.checked,
            "damage": [d.to_json() for d in self.damage],
            "errors": list(self.errors),
        }


def _rank(rank: AdapterRank) -> dict[str, Any]:
    return {"r": rank.r, "rank_pattern": dict(sorted(rank.rank_pattern.items())), "need": rank.need}


@dataclass(frozen=True, kw_only=True)
class AdapterEntry:
    """One adapter (project and name under one model prefix) with its versions."""

    project: str
    name: str
    model: S3Location
    base_model: str | None
    versions: tuple[VersionEntry, ...]
    """Newest first."""

    def to_json(self) -> dict[str, Any]:
        """For ``mlcc adapter list``."""
        return {
            "project": self.project,
            "name": self.name,
            "base_model": self.base_model,
            "model": self.model.uri,
            "home": layout.adapter_home(self.model, self.project, self.name).uri,
            "versions": [v.to_json() for v in self.versions],
        }


def _newest_first(entry: VersionEntry) -> tuple[int, str, str]:
    created = entry.record.created_at if entry.record else ""
    known = 1 if created and created != "unknown" else 0
    return (known, created if known else "", entry.keys.adapter.version or "")


def inventory(
    listings: Sequence[AdapterListing],
    records: Mapping[str, AdapterRecord],
    *,
    peft: Mapping[str, PeftInfo] | None = None,
    loaded: Sequence[LoadedAdapter] = (),
    unreadable: Mapping[str, Sequence[str]] | None = None,
    digests: Mapping[str, Mapping[str, str]] | None = None,
) -> list[AdapterEntry]:
    """Every adapter of the listings, its versions newest first by the record's creation time
    (versions without a known time last, then by version), with the pods that loaded each.

    ``records``, ``peft``, ``unreadable`` (the errors of a record that could not be read) and
    ``digests`` (each file's sha256, read for ``--verify``) are keyed by a version's (or
    home's) URI. Every recorded version is checked against its record: by its listed sizes,
    and by its digests where they were read.
    """
    on: dict[tuple[str, str, str | None], list[str]] = {}
    for item in loaded:
        on.setdefault((item.project, item.name, item.version), []).append(item.pod)
    grouped: dict[tuple[str, str, str], list[VersionEntry]] = {}
    models: dict[str, S3Location] = {}
    for listing in listings:
        models[listing.model.uri] = listing.model
        for keys in listing.adapters:
            adapter = keys.adapter
            uri = adapter.location.uri
            record = records.get(uri)
            checked, damage = _checked(keys, record, (digests or {}).get(uri))
            grouped.setdefault((listing.model.uri, adapter.project, adapter.name), []).append(
                VersionEntry(
                    keys=keys,
                    record=record,
                    peft=(peft or {}).get(uri),
                    loaded_on=tuple(
                        sorted(on.get((adapter.project, adapter.name, adapter.version), []))
                    ),
                    checked=checked,
                    damage=damage,
                    errors=tuple((unreadable or {}).get(uri, ())),
                )
            )
    entries = []
    for (model_uri, project, name), versions in sorted(
        grouped.items(), key=lambda item: (item[0][1], item[0][2], item[0][0])
    ):
        model = models[model_uri]
        ordered = tuple(sorted(versions, key=_newest_first, reverse=True))
        base = layout.base_of_model_location(model)
        recorded = next((v.record.base_model for v in ordered if v.record), None)
        entries.append(
            AdapterEntry(
                project=project,
                name=name,
                model=model,
                base_model=base.hf_id if base else recorded,
                versions=ordered,
            )
        )
    return entries


def _checked(
    keys: AdapterKeys, record: AdapterRecord | None, digests: Mapping[str, str] | None
) -> tuple[Checked, tuple[Damage, ...]]:
    if record is None:
        return "none", ()
    sizes = own_files(keys.adapter, keys.keys)
    if digests is not None:
        return "content", content_damage(record, digests, sizes)
    damage = size_damage(record, sizes)
    return ("none", ()) if damage is None else ("sizes", damage)


def damaged_versions(entries: Sequence[AdapterEntry]) -> list[VersionEntry]:
    """The versions listed ``damaged`` or ``unreadable`` (``mlcc adapter list`` fails)."""
    return [v for e in entries for v in e.versions if v.state in ("damaged", "unreadable")]


_COLUMNS: tuple[str, ...] = (
    *("PROJECT", "NAME", "VERSION", "STATE", "CREATED", "RANK", "MODULES", "TECHNIQUE"),
    *("SOURCE", "COPY", "LOADED ON"),
)


def inventory_table(entries: Sequence[AdapterEntry]) -> str:
    """The inventory as aligned text columns, one line per version (``-``: unknown)."""
    rows = [list(_COLUMNS)]
    for entry in entries:
        for version in entry.versions:
            data = version.to_json()
            rank = data["rank"]
            rows.append(
                [
                    entry.project,
                    entry.name,
                    data["version"] or "(home)",
                    data["state"],
                    data["created_at"] or "-",
                    str(rank["need"]) if rank else "-",
                    ",".join(data["target_modules"]) or "-",
                    data["technique"] or "-",
                    data["source"]["uri"] if data["source"] else "-",
                    "yes" if data["serving_copy"] else "no",
                    ",".join(data["loaded_on"]) or "-",
                ]
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    return (
        "\n".join(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        )
        + "\n"
    )
