"""``mlcc spec migrate FILE``: rewrite a deployment spec file of the flat 0.1 shape (every field
at the top level) into the sections of 0.2 (``engine``, ``model``, ``compute``...): one
mapping, a list of them or several YAML documents; to stdout, ``-o OUT`` or ``--in-place``
(written atomically). Values and the order of fields are kept; the comments before the first
field are kept, every other comment is lost (PyYAML drops comments when it reads the file):
re-add them by hand. A file already in sections is written back unchanged in content."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "spec", help="deployment spec files (migrate the flat 0.1 shape)", description=__doc__
    )
    commands = parser.add_subparsers(dest="spec_command", required=True, metavar="COMMAND")
    migrate = commands.add_parser(
        "migrate",
        help="rewrite a flat (0.1) spec file into sections (comments after the first field "
        "are lost: PyYAML drops them)",
        description=__doc__,
    )
    migrate.add_argument("file", metavar="FILE", help="the spec file (.yaml, .yml or .json)")
    where = migrate.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", default=None, metavar="OUT", help="write to OUT")
    where.add_argument(
        "--in-place", action="store_true", help="replace FILE (atomically: a rename)"
    )
    migrate.set_defaults(func=run_migrate)


def run_migrate(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.serving.spec.migrate_text import migrate_text
    from mlcc_constructs.core.support.documents import read_text

    text = read_text(args.file, what="spec file")
    migrated = migrate_text(text, where=str(args.file))
    target = Path(args.file) if args.in_place else Path(args.output) if args.output else None
    if target is None:
        sys.stdout.write(migrated)
        return 0
    _write_atomically(target, migrated)
    print(f"wrote {target}", file=sys.stderr)
    return 0


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: a reader
    sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
