"""``mlcc env`` (the resolved engine env) and ``mlcc argv`` (the wrapper's command line)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mlcc_constructs.cli._common import add_deployment_options, registry_from, spec_from_args


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = subparsers.add_parser(
        "env", help="print the env an engine receives (Tier 1, then Tier 2)"
    )
    _add_options(env)
    env.add_argument(
        "--format",
        choices=["env", "json"],
        default="env",
        help="env: KEY=VALUE lines (default); json: env, skipped capabilities and warnings",
    )
    env.set_defaults(func=run_env)
    argv = subparsers.add_parser("argv", help="print the wrapper's argv as a JSON list")
    _add_options(argv)
    argv.set_defaults(func=run_argv)


def _add_options(parser: argparse.ArgumentParser) -> None:
    add_deployment_options(parser)
    parser.add_argument(
        "--target",
        default=None,
        help="deployment target (default: eks); on hyperpod-eks the operator stages a Hugging "
        "Face model and the engine gets the mount path",
    )


def _resolve(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The resolution ``mlcc render`` would compute (pinned engine version, LoRA rank fit,
    target), and the rank-fit warnings."""
    from mlcc_constructs.core.serving.resolve.engine_config import resolve_deployment_for_its_target
    from mlcc_constructs.core.support.errors import MlccError

    loaded = spec_from_args(args)
    try:
        _, resolution, fit_warnings = resolve_deployment_for_its_target(
            loaded.spec, registry=registry_from(args)
        )
    except MlccError as error:
        raise loaded.locate(error) from None
    return resolution, fit_warnings


def _notes(resolution: Any, fit_warnings: list[str]) -> list[str]:
    return [str(s) for s in resolution.skipped] + list(resolution.warnings) + fit_warnings


def run_env(args: argparse.Namespace) -> int:
    resolution, fit_warnings = _resolve(args)
    if args.format == "json":
        document = {
            "env": resolution.env,
            "skipped": [str(s) for s in resolution.skipped],
            "warnings": list(resolution.warnings) + fit_warnings,
        }
        print(json.dumps(document, indent=2))
        return 0
    for note in _notes(resolution, fit_warnings):
        print(f"mlcc: {note}", file=sys.stderr)
    for key, value in resolution.env.items():
        print(f"{key}={value}")
    return 0


def run_argv(args: argparse.Namespace) -> int:
    resolution, fit_warnings = _resolve(args)
    for note in _notes(resolution, fit_warnings):
        print(f"mlcc: {note}", file=sys.stderr)
    print(json.dumps(resolution.argv()))
    return 0
