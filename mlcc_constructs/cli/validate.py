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
    from mlcc_constructs.core.engines.manifests import EngineRegistry, load_manifest
    from mlcc_constructs.core.support.errors import MlccError

    failed = False
    folders = []
    for raw in args.paths:
        path = Path(raw)
        try:
            if path.is_dir():
                folders.append(path)
            else:
                load_manifest(path)
                print(f"ok: {path}")
        except MlccError as error:
            failed = True
            for problem in error.problems:
                print(f"mlcc: error: {problem}", file=sys.stderr)
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
