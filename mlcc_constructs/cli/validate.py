"""``mlcc validate PATH...``: check engine manifests or plugin folders; exit 1 with every error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("validate", help="check engine manifest files or plugin folders")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest.json or plugin folder")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.engines.manifests import (
        EngineRegistry,
        load_manifest,
        prefix_problems_with_builtins,
    )
    from mlcc_constructs.core.support.errors import MlccError

    failed = False
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
            failed = True
            for problem in error.problems:
                print(f"mlcc: error: {problem}", file=sys.stderr)
    # Files are checked together with the built-ins, as a plugin folder is: their env prefixes
    # must not overlap.
    overlapping = prefix_problems_with_builtins(files)
    for problem in overlapping:
        print(f"mlcc: error: {problem}", file=sys.stderr)
    refused = {problem.where for problem in overlapping}
    for manifest in files:
        if manifest.source not in refused:
            print(f"ok: {manifest.source}")
    failed = failed or bool(overlapping)
    if folders:
        # Folders are checked together: shadowing and duplicate prefixes span folders.
        try:
            registry = EngineRegistry.load(folders, use_env=False)
            for folder in folders:
                print(f"ok: {folder} ({len(registry)} engines in the registry)")
        except MlccError as error:
            failed = True
            for problem in error.problems:
                print(f"mlcc: error: {problem}", file=sys.stderr)
    return 1 if failed else 0
