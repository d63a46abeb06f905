"""Is an adapter version still what its record says (``mlcc adapter list|promote|pack`` and the
load path)?

Pure: the functions here compare a record with facts already read (listed sizes, file
digests); reading S3 is :mod:`mlcc_constructs.ops.integrity`'s job.

- :func:`own_files` — a version's files among listed keys;
- :func:`size_damage` — the cheap check, from a listing alone: every recorded file there with
  its recorded size, nothing else (a record written before sizes were recorded cannot be
  checked so: ``None``);
- :func:`content_damage` — the full check, from every file's sha256: the record's files and
  digests, or (an older record) its content hash;
- :func:`damage_problems` turns what was found into errors naming the version, the file,
  what the record expects and what was found;
- :func:`record_path_problems` — a record's project, name and version are its path's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.adapters.record import AdapterRecord, adapter_files, content_hash
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter
from mlcc_constructs.core.support.errors import Problem

Checked = Literal["none", "sizes", "content"]
"""How far a version was checked: not at all (no file facts in its record and no full
check), its listed sizes, or every file's bytes."""

_FIX = (
    "the version's files changed after its record was written (versions are never rewritten): "
    "promote the original source again under a new adapter name, or delete the damaged version "
    "by hand and promote the source again"
)


@dataclass(frozen=True, kw_only=True)
class Damage:
    """One way a version differs from its record: ``file`` (relative name; ``""`` for the
    whole version), what the record expects and what was found."""

    file: str
    expected: str
    found: str

    def to_json(self) -> dict[str, Any]:
        """For the ``damage`` list of a report."""
        return {"file": self.file, "expected": self.expected, "found": self.found}


def _facts(size: int | None, sha256: str | None = None) -> str:
    parts = [] if size is None else [f"{size} bytes"]
    if sha256 is not None:
        parts.append(f"sha256 {sha256}")
    return ", ".join(parts) or "present"


def own_files(adapter: CanonicalAdapter, listed: Mapping[str, int]) -> dict[str, int]:
    """The version's (or home's) files among keys listed under it (key → size): relative
    names, its record and folder markers left out, an unversioned home's version folders
    too."""
    location = adapter.location
    sizes = {
        location.relative(key): size
        for key, size in listed.items()
        if key.startswith(location.key) and not key.endswith("/") and key != adapter.record.key
    }
    return {n: sizes[n] for n in adapter_files(adapter, dict.fromkeys(sizes, ""))}


def size_damage(record: AdapterRecord, sizes: Mapping[str, int]) -> tuple[Damage, ...] | None:
    """How the listed files (relative name → size, the record itself left out) differ from
    the record's files by name and size; ``None`` when the record holds no file facts."""
    if not record.files:
        return None
    damage = []
    for name, recorded in record.files.items():
        if name not in sizes:
            damage.append(Damage(file=name, expected=_facts(recorded.size), found="absent"))
        elif sizes[name] != recorded.size:
            damage.append(
                Damage(file=name, expected=_facts(recorded.size), found=_facts(sizes[name]))
            )
    damage += [
        Damage(file=name, expected="absent (not in the record)", found=_facts(size))
        for name, size in sorted(sizes.items())
        if name not in record.files
    ]
    return tuple(damage)


def content_damage(
    record: AdapterRecord, digests: Mapping[str, str], sizes: Mapping[str, int]
) -> tuple[Damage, ...]:
    """How the files read (relative name → sha256, and their sizes) differ from the record:
    file by file when the record lists its files, else by the content hash."""
    if not record.files:
        found = content_hash(digests)
        if found == record.content_hash:
            return ()
        return (
            Damage(
                file="",
                expected=f"content hash {record.content_hash}",
                found=f"content hash {found} over {len(digests)} files "
                f"({', '.join(sorted(digests)) or 'none'})",
            ),
        )
    damage = list(size_damage(record, sizes) or ())
    damaged = {d.file for d in damage}
    for name, recorded in record.files.items():
        if name in digests and name not in damaged and digests[name] != recorded.sha256:
            damage.append(
                Damage(
                    file=name,
                    expected=_facts(recorded.size, recorded.sha256),
                    found=_facts(sizes.get(name), digests[name]),
                )
            )
    return tuple(sorted(damage, key=lambda d: d.file))


def damage_problems(location: str, damage: tuple[Damage, ...], *, doing: str = "") -> list[Problem]:
    """One error per damaged file of the version at ``location`` (``doing``: what is refused,
    e.g. ``"not packed"``; empty when nothing is)."""
    return [
        Problem(
            message="damaged adapter version"
            + (f", {doing}" if doing else "")
            + ": "
            + (f"file {d.file}" if d.file else "its files")
            + f" should be {d.expected}, found {d.found}",
            where=location,
            fix=_FIX,
        )
        for d in damage
    ]


def record_path_problems(
    record: AdapterRecord, adapter: CanonicalAdapter, *, where: str
) -> list[Problem]:
    """A record filed under another project, name or version than its own path's (a record
    copied by hand, or edited): it would be listed, served and cleaned as what it is not."""
    expected = {"project": adapter.project, "name": adapter.name}
    if adapter.version is not None:
        expected["version"] = adapter.version
    found = {"project": record.project, "name": record.name, "version": record.version}
    return [
        Problem(
            message=f"the record's {field} does not match its path",
            where=where,
            pointer="/" + field,
            value=found[field],
            allowed=value,
            fix="a record belongs beside the files it describes: move the version to the "
            "path of its record's project and name, or promote its source again",
        )
        for field, value in expected.items()
        if found[field] != value
    ]
