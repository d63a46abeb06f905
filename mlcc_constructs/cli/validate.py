"""``mlcc validate PATH...``: check engine manifests or plugin folders; exit 1 with every error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mlcc_constructs.cli._parser import add_format_option, emit


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("validate", help="check engine manifest files or plugin folders")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest.json or plugin folder")
    add_format_option(parser, default="table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.engines.manifests import (
        EngineRegistry,
        load_manifest,
        prefix_problems_with_builtins,
    )
    from mlcc_constructs.core.support.errors import MlccError

    checked: list[dict[str, Any]] = []
    errors: list[str] = []
    folders = []
    files = []
    for raw in args.paths:
        path = Path(raw)
        try:
            if path.is_dir():
                folders.append(path)
            else:
                files.append(load_manifest(path))
        except MlccError as error:
            errors += [str(p) for p in error.problems]
    # Files are checked together with the built-ins, as a plugin folder is: their env prefixes
    # must not overlap.
    overlapping = prefix_problems_with_builtins(files)
    errors += [str(p) for p in overlapping]
    refused = {problem.where for problem in overlapping}
    checked += [
        {"path": str(m.source), "ok": True, "note": ""} for m in files if m.source not in refused
    ]
    if folders:
        # Folders are checked together: shadowing and duplicate prefixes span folders.
        try:
            registry = EngineRegistry.load(folders, use_env=False)
            note = f"{len(registry)} engines in the registry"
            checked += [{"path": str(f), "ok": True, "note": note} for f in folders]
        except MlccError as error:
            errors += [str(p) for p in error.problems]
    for line in errors:
        print(f"mlcc: error: {line}", file=sys.stderr)
    lines = [f"ok: {c['path']}" + (f" ({c['note']})" if c["note"] else "") for c in checked]
    emit(
        args,
        {"checked": checked, "errors": errors},
        ok=not errors,
        table=lambda: "".join(f"{line}\n" for line in lines),
    )
    return 1 if errors else 0
