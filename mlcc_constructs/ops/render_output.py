"""``mlcc render --out DIR``: the rendered files, swapped into a folder the command owns.

The files are written into a fresh temporary folder beside ``DIR`` and swapped in only when
every one is written, so a failure leaves ``DIR`` as it was. ``DIR`` holds exactly the latest
render: an earlier render's files (a PersistentVolume the new spec no longer has, say) are gone,
so ``kubectl apply -f DIR`` applies what was rendered and nothing else. A marker file lists what
the command wrote; a non-empty folder without it, or with files it does not list, is refused
instead of being replaced.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from mlcc_constructs.core.support.errors import fail

MARKER = ".mlcc-render.json"
"""Lists the files ``mlcc render --out`` wrote into the folder."""


def _owned(out: Path) -> None:
    """Refuse ``out`` unless it is missing, empty, or holds only what a render wrote."""
    if not out.exists():
        return
    if not out.is_dir():
        raise fail(
            "--out must be a folder, not a file",
            where=str(out),
            fix="pass a folder (created when missing) or omit --out to print the YAML",
        )
    present = sorted(p.name for p in out.iterdir())
    if not present:
        return
    marker = out / MARKER
    try:
        written = set(json.loads(marker.read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        raise fail(
            "--out names a folder mlcc render did not write; it is not replaced",
            where=str(out),
            value=present[:5],
            fix="pass a new or empty folder (the command replaces only its own earlier output)",
        ) from None
    foreign = [name for name in present if name != MARKER and name not in written]
    if foreign:
        raise fail(
            "--out holds files an earlier render did not write; the folder is not replaced",
            where=str(out),
            value=foreign,
            fix="move those files elsewhere, or pass another folder",
        )


def write_folder(out: Path, files: Mapping[str, str]) -> list[Path]:
    """Replace folder ``out`` by ``files`` (name → text) atomically; the paths written."""
    _owned(out)
    try:
        return _swap_in(out, files)
    except OSError as error:
        raise fail(
            f"cannot write --out: {error.strerror or error}",
            where=str(out),
            fix="pass a folder you may create and write",
        ) from error


def _swap_in(out: Path, files: Mapping[str, str]) -> list[Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    previous: Path | None = None
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        listing = {"files": sorted(files)}
        (staging / MARKER).write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
        os.chmod(staging, 0o755)  # mkdtemp makes it owner-only; a render folder is not secret
        if out.exists():
            previous = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, previous / "render")
        os.replace(staging, out)
    except BaseException:
        if previous is not None and not out.exists():
            os.replace(previous / "render", out)  # put the earlier render back
        shutil.rmtree(staging, ignore_errors=True)
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        raise
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)
    return [out / name for name in files]


def replace_files(
    folder: Path, files: Mapping[str, str], *, stale: Iterable[Path] = ()
) -> list[Path]:
    """Write ``files`` (name → text) into ``folder`` all or nothing (``dist/``, ``mlcc dashboard
    -o``): each is first written in full to a temporary file beside its place, and only when
    every one is written are they renamed into place (each rename atomic) and ``stale`` files
    removed. A failure (a full disk) leaves the folder as it was: no file half-written, none
    of the set updated, no temporary file left."""
    folder.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    try:
        for name, text in files.items():
            handle, staging = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
            staged[name] = Path(staging)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(staging, 0o644)  # mkstemp makes it owner-only; these files are not secret
    except BaseException:
        for path in staged.values():
            path.unlink(missing_ok=True)
        raise
    for name, path in staged.items():
        os.replace(path, folder / name)
    for path in stale:
        if path.name not in files:
            path.unlink(missing_ok=True)
    return [folder / name for name in files]
