"""``mlcc engines``: list the registered engines; ``mlcc engines show NAME``: one engine's
manifest (JSON by default)."""

from __future__ import annotations

import argparse
from typing import Any

from mlcc_constructs.cli._common import add_registry_options, registry_from
from mlcc_constructs.cli._parser import UsageError, add_format_option, emit
from mlcc_constructs.core.support.errors import Problem


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("engines", help="list engines (built-in and plugins)")
    add_registry_options(parser)
    parser.add_argument("action", nargs="?", choices=["show"], help="show one engine")
    parser.add_argument("name", nargs="?", help="engine name (with 'show')")
    add_format_option(parser, default=None)  # the list: table; show: json
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    registry = registry_from(args)
    if args.action == "show":
        if not args.name:
            raise UsageError(
                Problem(
                    message="show needs an engine name",
                    where="engines",
                    fix="mlcc engines show NAME (mlcc engines lists them)",
                )
            )
        manifest = registry.get(args.name)
        args.format = args.format or "json"
        emit(args, {**manifest.raw, "source": manifest.source})
        return 0
    args.format = args.format or "table"
    engines = [
        {
            "engine": m.engine,
            "prefix": m.env_var_prefix,
            "entrypoint": m.entrypoint,
            "capabilities": [c.name for c in m.capabilities],
        }
        for m in registry
    ]
    emit(args, {"engines": engines}, table=lambda: _table(engines))
    return 0


def _table(engines: list[dict[str, Any]]) -> str:
    rows = [("ENGINE", "PREFIX", "ENTRYPOINT", "CAPABILITIES")]
    for e in engines:
        names = ", ".join(e["capabilities"]) or "-"
        rows.append((str(e["engine"]), str(e["prefix"]), str(e["entrypoint"]), names))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        + "  "
        + row[3]
        + "\n"
        for row in rows
    )
