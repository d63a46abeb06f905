"""``mlcc env`` (the resolved engine env) and ``mlcc argv`` (the wrapper's command line)."""

from __future__ import annotations

import argparse
import json
import sys

from mlcc_constructs.cli._common import add_deployment_options, registry_from, spec_from_args


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = subparsers.add_parser(
        "env", help="print the env an engine receives (Tier 1, then Tier 2)"
    )
    add_deployment_options(env)
    env.add_argument(
        "--format",
        choices=["env", "json"],
        default="env",
        help="env: KEY=VALUE lines (default); json: env, skipped capabilities and warnings",
    )
    env.set_defaults(func=run_env)
    argv = subparsers.add_parser("argv", help="print the wrapper's argv as a JSON list")
    add_deployment_options(argv)
    argv.set_defaults(func=run_argv)


def _resolve(args: argparse.Namespace) -> object:
    from mlcc_constructs.core.errors import MlccError
    from mlcc_constructs.core.resolve import resolve

    loaded = spec_from_args(args)
    try:
        return resolve(loaded.spec, registry=registry_from(args))
    except MlccError as error:
        raise loaded.locate(error) from None


def _report(resolution: object) -> None:
    for note in (*resolution.skipped, *resolution.warnings):  # type: ignore[attr-defined]
        print(f"mlcc: {note}", file=sys.stderr)


def run_env(args: argparse.Namespace) -> int:
    resolution = _resolve(args)
    if args.format == "json":
        document = {
            "env": resolution.env,  # type: ignore[attr-defined]
            "skipped": [str(s) for s in resolution.skipped],  # type: ignore[attr-defined]
            "warnings": list(resolution.warnings),  # type: ignore[attr-defined]
        }
        print(json.dumps(document, indent=2))
        return 0
    _report(resolution)
    for key, value in resolution.env.items():  # type: ignore[attr-defined]
        print(f"{key}={value}")
    return 0


def run_argv(args: argparse.Namespace) -> int:
    resolution = _resolve(args)
    _report(resolution)
    print(json.dumps(resolution.argv()))  # type: ignore[attr-defined]
    return 0
