"""The ``mlcc`` command. Each command group lives in ``mlcc_constructs/commands/<group>.py``
and exposes ``register(subparsers)``; handlers import heavy modules (jsii) only when run, so
the pure commands start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mlcc_constructs.core.errors import MlccError

# Order is the order of `mlcc --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "engines",
    "validate",
    "resolve",
    "render",
    "diff_guard",
    "cache",
    "adapter",
)


# Command → the module that registers it. Running one command builds only its module's parser
# (start-up time); `mlcc --help` builds them all. A test keeps this table in step.
COMMAND_OWNERS: dict[str, str] = {
    "engines": "engines",
    "validate": "validate",
    "env": "resolve",
    "argv": "resolve",
    "render": "render",
    "diff-guard": "diff_guard",
    "cache": "cache",
    "adapter": "adapter",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``mlcc`` parser: every command group, or only the one that owns ``command``."""
    parser = argparse.ArgumentParser(
        prog="mlcc",
        description="Engine-aware configuration for serving LLMs on EKS and SageMaker HyperPod.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    owner = COMMAND_OWNERS.get(command or "")
    modules = [owner] if owner in COMMAND_MODULES else COMMAND_MODULES
    for name in modules:
        importlib.import_module(f"mlcc_constructs.commands.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mlcc``; returns the exit code (0 ok, 1 bad input or failed check, 2 usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except MlccError as error:
        for problem in error.problems:
            print(f"mlcc: error: {problem}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `mlcc ... | head`
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
