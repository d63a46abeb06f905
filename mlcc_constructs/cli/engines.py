"""``mlcc engines``: list the registered engines; ``mlcc engines show NAME``: one as JSON."""

from __future__ import annotations

import argparse
import json

from mlcc_constructs.cli._common import add_registry_options, registry_from


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("engines", help="list engines (built-in and plugins)")
    add_registry_options(parser)
    parser.add_argument("action", nargs="?", choices=["show"], help="show one engine")
    parser.add_argument("name", nargs="?", help="engine name (with 'show')")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    registry = registry_from(args)
    if args.action == "show":
        if not args.name:
            print("mlcc engines show: give an engine name", flush=True)
            return 2
        manifest = registry.get(args.name)
        print(json.dumps({**manifest.raw, "source": manifest.source}, indent=2))
        return 0
    rows = [("ENGINE", "PREFIX", "ENTRYPOINT", "CAPABILITIES")]
    for manifest in registry:
        names = ", ".join(c.name for c in manifest.capabilities) or "-"
        rows.append((manifest.engine, manifest.env_var_prefix, manifest.entrypoint, names))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[3]
        )
    return 0
