"""The API key options of the commands that call an engine (``mlcc endpoint check``, ``mlcc
adapter``): the key comes from the environment variable ``--api-key-env`` names, never from a
flag value (shell history, process lists), and is never printed."""

from __future__ import annotations

import argparse
import os
import re

from mlcc_constructs.core.support.errors import Problem

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOWN_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def add_api_key_options(parser: argparse.ArgumentParser) -> None:
    """``--api-key-env NAME`` and the refused ``--api-key``."""
    parser.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help="the environment variable holding the API key (sent as Authorization: Bearer); "
        "the key itself is never a flag, and never printed",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        metavar="KEY",
        help="refused (a flag value ends up in shell history and process lists): use --api-key-env",
    )


def api_key_problems(args: argparse.Namespace) -> tuple[str | None, list[Problem]]:
    """The API key from the variable ``--api-key-env`` names (its value is never shown)."""
    name = args.api_key_env
    if args.api_key is not None:
        return None, [
            Problem(  # no value: it is the key
                message="the API key is never a flag value",
                where="--api-key",
                fix="export NAME=<the API key> and pass --api-key-env NAME",
            )
        ]
    if name is None:
        return None, []
    if not _ENV_NAME.match(name):
        return None, [
            Problem(  # no value: a key passed here by mistake must not be printed
                message="not an environment variable name",
                where="--api-key-env",
                allowed="letters, digits and '_', not starting with a digit",
                fix="export NAME=<the API key> and pass --api-key-env NAME (the key is never "
                "a flag value)",
            )
        ]
    key = os.environ.get(name)
    if not key:
        state = "not set" if key is None else "empty"
        # a conventional name is shown; anything else may be a key given here by mistake
        shown = name if _SHOWN_NAME.match(name) else "NAME"
        return None, [
            Problem(
                message=f"the variable {shown} is {state}",
                where="--api-key-env",
                fix=f"export {shown}=<the endpoint's API key>",
            )
        ]
    return key, []
