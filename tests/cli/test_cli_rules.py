"""Every ``mlcc`` command follows one set of rules (``mlcc_constructs/cli/_parser.py``), checked
over the real argparse tree, so a new command cannot escape them: usage errors exit 2 with one
``mlcc: error:`` line (no doubled prefix), a repeated single-value option is refused, data
commands take ``--format json|table|yaml`` and their JSON/YAML reports carry ``command`` and
``ok``, on success and on failure."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.cli._parser import FORMAT_EXEMPT, FORMATS, Once, is_leaf, walk
from mlcc_constructs.core.engines.manifests import builtin_manifest_files

ROOT = Path(__file__).resolve().parents[2]
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    return [(path, p) for path, p in walk(cli.build_parser()) if is_leaf(p)]


COMMANDS = _commands()
NAMES = [path.removeprefix("mlcc ") for path, _ in COMMANDS]
PARSERS = dict(zip(NAMES, (p for _, p in COMMANDS), strict=True))


def _value(action: argparse.Action) -> str:
    return str(next(iter(action.choices))) if action.choices else "1"


def _minimal(command: str) -> list[str]:
    """The command with every required option and positional given a parseable value."""
    argv = command.split()
    for action in PARSERS[command]._actions:
        if action.option_strings and action.required:
            argv += [action.option_strings[0], _value(action)]
        elif not action.option_strings and action.nargs in (None, "+"):
            argv.append(_value(action))
    return argv


def _single_value_options() -> list[tuple[str, str]]:
    return [
        (command, action.option_strings[0])
        for command, parser in PARSERS.items()
        for action in parser._actions
        if isinstance(action, Once) and action.option_strings
    ]


def _usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], *, code: int = 2
) -> tuple[str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == code
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("mlcc: error: ")
    assert not lines[0].removeprefix("mlcc: error: ").startswith("mlcc"), lines[0]
    return out, lines[0]


def _reported(command: str, out: str) -> None:
    """A JSON-reporting command's usage error: its failure report on stdout too."""
    if isinstance(PARSERS[command], cli._parser.ReportingParser):
        report = json.loads(out)
        assert (report["command"], report["ok"]) == (command, False)
        assert len(report["errors"]) == 1
    else:
        assert out == ""


def test_the_tree_has_every_command() -> None:
    assert {"render", "env", "argv", "adapter list", "model promote", "rollout apply"} <= set(NAMES)
    assert len(NAMES) >= 20


@pytest.mark.parametrize("command", NAMES)
def test_every_single_value_option_refuses_a_repeat(command: str) -> None:
    """No option keeps argparse's silent last-one-wins ``store``."""
    stores = [
        "/".join(a.option_strings)
        for a in PARSERS[command]._actions
        if a.option_strings and type(a) is argparse._StoreAction
    ]
    assert stores == []


@pytest.mark.parametrize("command", NAMES)
def test_an_unknown_flag_is_a_usage_error(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    out, line = _usage_error(capsys, [*_minimal(command), "--no-such-flag"])
    assert "unrecognized arguments: --no-such-flag" in line
    assert line.startswith(f"mlcc: error: {command}: ")
    _reported(command, out)


@pytest.mark.parametrize("command", NAMES)
def test_a_missing_argument_is_a_usage_error(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if _minimal(command) == command.split():
        pytest.skip("nothing required")
    out, line = _usage_error(capsys, command.split())
    assert "required" in line
    _reported(command, out)


@pytest.mark.parametrize(("command", "flag"), _single_value_options())
def test_a_repeated_single_value_option_is_a_usage_error(
    command: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    action = next(a for a in PARSERS[command]._actions if flag in a.option_strings)
    value = _value(action)
    out, line = _usage_error(capsys, [*command.split(), flag, value, flag, value])
    assert "given more than once; it takes one value" in line
    _reported(command, out)


def test_a_bad_choice_is_a_bad_value(capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 1, as every bad value (test_cli_errors walks the tree); its report names the flag."""
    out, line = _usage_error(capsys, ["adapter", "list", "--format", "xml"], code=1)
    assert line == (
        "mlcc: error: --format: not a valid value (got 'xml'; allowed: json, table, yaml; "
        "fix: see mlcc adapter list --help)"
    )
    _reported("adapter list", out)


@pytest.mark.parametrize(
    "argv", [["engines", "show"], ["diff-guard"], ["diff-guard", "a", "b", "--chain", "x"]]
)
def test_a_usage_error_found_by_the_command_exits_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlcc: error: ")
    assert not lines[0].removeprefix("mlcc: error: ").startswith("mlcc")


def test_format_exemptions_are_real_commands_without_format() -> None:
    for command, reason in FORMAT_EXEMPT.items():
        assert command in PARSERS and reason
        assert not any("--format" in a.option_strings for a in PARSERS[command]._actions)


@pytest.mark.parametrize("command", [n for n in NAMES if n not in FORMAT_EXEMPT])
def test_every_data_command_takes_the_formats(command: str) -> None:
    (option,) = [a for a in PARSERS[command]._actions if "--format" in a.option_strings]
    assert option.choices is not None and set(FORMATS) <= set(option.choices)


MANIFEST = str(builtin_manifest_files()[0])
ENV = ["env", "--engine", "vllm", "--model", MODEL, "--instance-type", "ml.g5.12xlarge"]
SUCCESSES = [
    ["engines"],
    ["engines", "show", "vllm"],
    ["validate", MANIFEST],
    ENV,
    ["plan", "-f", str(ROOT / "examples/deployment.yaml")],
    ["cache", "reserved"],
    ["cache", "check", str(ROOT / "examples/cachebackend.yaml")],
]
BUCKET = ["--account", "123456789012", "--region", "us-east-1", "--profile", "dev"]
FAILURES = [
    ["adapter", "list", *BUCKET, "--project", "Bad Name"],
    ["adapter", "promote", "bot", "--project", "acme", *BUCKET, "--from", "ftp://x"],
    ["adapter", "pack", "s3://not-a-version"],
    ["model", "promote", "ft", "--project", "acme", *BUCKET, "--from", "ftp://x"],
    ["endpoint", "check", "--url", "ftp://x", "--model", "m"],
    ["rollout", "check", "--cluster", "not a cluster", "--engine", "vllm"],
    ["validate", "/no/such/manifest.json"],
    ["diff-guard", "/no/a.json", "/no/b.json", "--expect", "/no/e.json"],
    ["cache", "check", "/no/such.yaml"],
    ["plan", "-f", "/no/such.yaml"],
    ["env", "--engine", "vllm"],
    ["engines", "show", "no-such-engine"],
]


def _parse(fmt: str, text: str) -> Any:
    return json.loads(text) if fmt == "json" else yaml.safe_load(text)


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("argv", SUCCESSES, ids=" ".join)
def test_a_report_carries_command_and_ok(
    argv: list[str], fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, [*argv, "--format", fmt])
    report = _parse(fmt, out)
    command = cli._parser.command_of("mlcc " + " ".join(argv[:2]))
    assert code == 0
    assert command.startswith(report["command"]) and report["ok"] is True
    assert list(report)[:2] == ["command", "ok"]


@pytest.mark.parametrize("argv", SUCCESSES, ids=" ".join)
def test_a_table_is_text(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, [*argv, "--format", "table"])
    assert code == 0 and out.strip()
    with pytest.raises(ValueError):
        json.loads(out)


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("argv", FAILURES, ids=" ".join)
def test_a_failure_report_carries_command_and_ok(
    argv: list[str], fmt: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, [*argv, "--format", fmt])
    report = _parse(fmt, out)
    assert code == 1
    assert report["ok"] is False and report["command"] in NAMES
    assert " ".join(argv).startswith(report["command"])
    lines = err.splitlines()
    assert lines and all(line.startswith("mlcc: ") for line in lines)
    assert not any(line.removeprefix("mlcc: error: ").startswith("mlcc") for line in lines)
    assert report["errors"]
