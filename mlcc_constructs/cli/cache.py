"""``mlcc cache``: the CacheBackend runtime adapters' reserved sets, and admission of a
CacheBackend YAML.

- ``mlcc cache reserved [--runtime VLLM|SGLang] [--format table|json|yaml]`` prints every
  adapter's reserved args and env: what ``spec.integration.engineOverrides`` may not touch.
- ``mlcc cache check FILE`` parses and admits every CacheBackend in FILE; exit 1 with every
  problem (field path, adapter, reserved token) when one is refused.
"""

from __future__ import annotations

import argparse
from typing import Any

from mlcc_constructs.cli._parser import add_format_option, emit


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from mlcc_constructs.core.cache.adapters import runtimes

    parser = subparsers.add_parser(
        "cache", help="CacheBackend (LMCache): reserved engine args/env, admission check"
    )
    actions = parser.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    reserved = actions.add_parser(
        "reserved", help="print each runtime adapter's reserved args and env"
    )
    reserved.add_argument(
        "--runtime", choices=runtimes(), help="only this runtime (case-sensitive)"
    )
    add_format_option(reserved, default="table")
    reserved.set_defaults(func=run_reserved)
    check = actions.add_parser(
        "check", help="admit every CacheBackend in a YAML file (exit 1 with every problem)"
    )
    check.add_argument("file", metavar="FILE", help="CacheBackend YAML (multi-document is fine)")
    add_format_option(check, default="table")
    check.set_defaults(func=run_check)


def run_reserved(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.cache.adapters import reserved_table

    rows = reserved_table(args.runtime)
    emit(args, {"adapters": rows}, table=lambda: _reserved_text(rows))
    return 0


def _reserved_text(rows: list[dict[str, Any]]) -> str:
    table = [("ADAPTER", "RUNTIME", "TYPE", "KIND", "RESERVED")]
    for row in rows:
        for kind, key in (("arg", "reserved_args"), ("env", "reserved_env")):
            for token in row[key]:
                table.append((row["adapter"], row["runtime"], row["type"], kind, token))
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    lines = []
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        lines.append("  ".join([*cells, line[4]]))
    return "\n".join(lines) + "\n"


def run_check(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.cache import load_cache_backends
    from mlcc_constructs.core.engines.manifests import builtin_engines
    from mlcc_constructs.core.serving.resolve.cache_fit import engine_port_problems
    from mlcc_constructs.core.support.errors import raise_if_any

    documents = load_cache_backends(args.file)
    raise_if_any(
        problem
        for document in documents
        for problem in engine_port_problems(
            document.spec, builtin_engines(), where=args.file, path="/spec"
        )
    )
    admitted = []
    for document in documents:
        adapter = document.spec.adapter
        assert adapter is not None
        admitted.append({"name": document.name, "adapter": adapter.label})
    lines = [
        f"{args.file}: CacheBackend {a['name']}: admitted ({a['adapter']})\n" for a in admitted
    ]
    emit(args, {"file": args.file, "admitted": admitted}, table=lambda: "".join(lines))
    return 0
