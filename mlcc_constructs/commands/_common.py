"""Options shared by several commands (engine selection, plugin folders, deployment facts)."""

from __future__ import annotations

import argparse
from typing import Any

from mlcc_constructs.core.errors import fail


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="folder of engine plugins (<engine>/manifest.json); repeatable; "
        "$MLCC_ENGINE_PATH adds more",
    )
    parser.add_argument(
        "--override-builtin",
        action="append",
        default=[],
        metavar="ENGINE",
        help="let a plugin replace the built-in engine of this name",
    )


def registry_from(args: argparse.Namespace) -> Any:
    from mlcc_constructs.core.manifests import EngineRegistry

    return EngineRegistry.load(args.plugin_dir, allow_override=args.override_builtin)


def add_deployment_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The engine facts of a deployment (the resolver's inputs)."""
    parser.add_argument("--engine", required=required, help="engine name, e.g. vllm or sglang")
    parser.add_argument(
        "--model", required=required, help="s3://bucket/prefix/ or a Hugging Face org/name"
    )
    parser.add_argument(
        "--instance-type", required=required, help="e.g. ml.g5.12xlarge or g5.12xlarge"
    )
    parser.add_argument(
        "--tp", type=int, default=None, help="tensor-parallel degree (default: the GPU count)"
    )
    parser.add_argument("--quantization", default=None, help="quantization method, e.g. awq")
    parser.add_argument("--lora", action="store_true", help="serve LoRA adapters")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine env: <PREFIX>* keys (Tier 2, or Tier-1 overrides) or plain env; repeatable",
    )
    parser.add_argument("--engine-version", default=None, help="engine version for version gates")
    add_registry_options(parser)


def parse_assignments(items: list[str], option: str = "--set") -> dict[str, str]:
    """``["A=1", "B=x=y"]`` → ``{"A": "1", "B": "x=y"}``; a malformed item is an error."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fail(
                f"{option} takes KEY=VALUE",
                where=option,
                value=item,
                fix=f"write {option} NAME=value (an empty value is refused later)",
            )
        if key in result:
            raise fail(f"{option} sets {key} twice", where=option, value=item)
        result[key] = value
    return result
