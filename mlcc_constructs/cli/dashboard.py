"""``mlcc dashboard``: the Grafana dashboard of the engines' metrics (TTFT, inter-token latency,
queue depth, KV-cache usage, replicas), generated from the engine manifests; to stdout or
``-o FILE``. The wheel ships the built-in engines' copy (``mlcc_constructs/data/
grafana-dashboard.json``); plugin engines (``$MLCC_ENGINE_PATH``) join with their metrics."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="write the Grafana dashboard of the engines' metrics (JSON)",
        description=__doc__,
    )
    parser.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write to FILE (default: stdout)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.engines.manifests import EngineRegistry
    from mlcc_constructs.core.serving.dashboard import dashboard_json

    text = dashboard_json(EngineRegistry.load())
    if args.output is None:
        sys.stdout.write(text)
        return 0
    from mlcc_constructs.ops.render_output import replace_files

    path = Path(args.output)
    replace_files(path.parent, {path.name: text})  # whole or not at all
    print(f"wrote {path}", file=sys.stderr)
    return 0
