"""Every command, subcommand and option of ``mlcc`` explains itself in ``--help``."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from typing import Any

import pytest

from mlcc_constructs import __version__, cli


def _parsers(parser: argparse.ArgumentParser, path: str = "mlcc") -> list[tuple[str, Any]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{path} {name}")
    return found


def test_every_subcommand_and_option_has_help() -> None:
    missing = []
    for path, parser in _parsers(cli.build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                missing += [f"{path} {n}" for n in action.choices if n not in helped]
            elif not action.help and not isinstance(action, argparse._HelpAction):
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_render_help_describes_the_spec_file_and_points_at_the_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["render", "--help"])
    text = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))  # unwrap
    assert "examples/deployment.yaml" in text
    assert "deployment-spec.schema.json" in text


def test_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == f"mlcc {__version__}\n"
