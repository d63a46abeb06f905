"""``mlcc`` turns file-system and S3 failures into one-line errors (exit 1), not tracebacks;
a genuine bug still raises."""

from __future__ import annotations

import argparse
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlcc_constructs import cli
from mlcc_constructs.cli import render as render_command

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
RENDER = ["render", "--engine", "vllm", "--model", MODEL, "--instance-type", "ml.g5.12xlarge"]
RENDER += ["--name", "llama", "--account", "123456789012", "--profile", "dev"]
PLAN = ["adapter", "plan", "bot", "--project", "acme", "--account", "123456789012"]
PLAN += ["--region", "us-east-1", "--profile", "test", "--model", MODEL]
SOURCE = "s3://mlcc-adapters-x/acme/bot/"
CREDENTIALS_FIX = (
    "configure AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
    "or `aws configure`)"
)
NETWORK_FIX = "check the network, or --endpoint-url when using an S3-compatible endpoint"
CLIENT_FIX = "check that the bucket exists and that your credentials may use it (or --endpoint-url)"


def adapter_report(command: str, line: str) -> str:
    """The JSON failure report an adapter command prints on stdout (the stderr line, unprefixed)."""
    return json.dumps({"command": command, "ok": False, "errors": [line]}, indent=2) + "\n"


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "x.yaml"
    path.write_text("", encoding="utf-8")
    return path


OUT_CASES = [
    (
        "{file}",
        "mlcc: error: {file}: --out must be a folder, not a file (fix: pass a folder (created "
        "when missing) or omit --out to print the YAML)\n",
    ),
    (
        "{file}/sub",
        "mlcc: error: {file}/sub: cannot write --out: File exists (fix: pass a folder you may "
        "create and write)\n",
    ),
    (
        "/proc/nope",
        "mlcc: error: /proc/nope: cannot write --out: No such file or directory (fix: pass a "
        "folder you may create and write)\n",
    ),
]


@pytest.mark.parametrize(("out", "message"), OUT_CASES)
def test_render_out_errors(
    out: str, message: str, a_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, stderr = run(capsys, [*RENDER, "--out", out.format(file=a_file)])
    assert (code, stdout, stderr) == (1, "", message.format(file=a_file))
    assert a_file.read_text(encoding="utf-8") == ""  # the file is left alone


@pytest.fixture
def fresh_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No AWS credentials anywhere and a new boto3 default session (it caches credentials)."""
    import boto3  # type: ignore[import-untyped]

    for key in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    return monkeypatch


def test_no_credentials(fresh_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*PLAN, "--endpoint-url", "http://127.0.0.1:1", "--from", SOURCE]
    line = f"S3: Unable to locate credentials (fix: {CREDENTIALS_FIX})"
    assert run(capsys, argv) == (1, adapter_report("adapter plan", line), f"mlcc: error: {line}\n")


def test_endpoint_unreachable(
    fresh_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh_aws.setenv("AWS_ACCESS_KEY_ID", "testing")
    fresh_aws.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    argv = [*PLAN, "--endpoint-url", "http://127.0.0.1:1", "--from", SOURCE]
    url = "http://127.0.0.1:1/mlcc-adapters-x?list-type=2&prefix=acme%2Fbot%2F&encoding-type=url"
    line = f'S3: Could not connect to the endpoint URL: "{url}" (fix: {NETWORK_FIX})'
    assert run(capsys, argv) == (1, adapter_report("adapter plan", line), f"mlcc: error: {line}\n")


def test_client_error(
    moto_s3: str, fresh_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh_aws.setenv("AWS_ACCESS_KEY_ID", "testing")
    fresh_aws.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    urllib.request.urlopen(urllib.request.Request(f"{moto_s3}/moto-api/reset", method="POST"))
    argv = [*PLAN, "--endpoint-url", moto_s3, "--from", SOURCE]
    line = (
        "S3: An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation: The "
        "specified bucket does not exist (bucket mlcc-adapters-x) (fix: the bucket does not "
        "exist: deploy the buckets stack, or check --account, --region and --profile (they name "
        "the buckets) and --endpoint-url)"
    )
    assert run(capsys, argv) == (1, adapter_report("adapter plan", line), f"mlcc: error: {line}\n")


def _client_error(code: str, message: str, **fields: str) -> Exception:
    from botocore.exceptions import ClientError  # type: ignore[import-untyped]

    return ClientError({"Error": {"Code": code, "Message": message, **fields}}, "GetObject")  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("code", "fields", "where", "fix"),
    [
        ("NoSuchKey", {"Key": "a/b.json"}, " (key a/b.json)", "the object is not there"),
        ("404", {}, "", "the object is not there"),
        ("AccessDenied", {}, "", "your credentials may not do this"),
        ("403", {}, "", "your credentials may not do this"),
        ("ExpiredToken", {}, "", "the session has expired"),
        ("InvalidAccessKeyId", {}, "", "the access key is not valid"),
        ("SlowDown", {}, "", "S3 is throttling"),
        ("PermanentRedirect", {"BucketName": "b"}, " (bucket b)", "the bucket is in another"),
        ("InternalError", {}, "", CLIENT_FIX),
    ],
)
def test_an_s3_fault_gets_its_own_fix(
    code: str, fields: dict[str, str], where: str, fix: str
) -> None:
    """The fix names the fault S3 reported (it used to blame the bucket or the credentials
    whatever the fault was), and the line names the bucket or key S3 names."""
    text = cli.aws_error_text(_client_error(code, "what S3 said", **fields))
    said = f"S3: An error occurred ({code}) when calling the GetObject operation: what S3 said"
    assert text.startswith(f"{said}{where} (fix: {fix}"), text


class _Bug(Exception):
    pass


@pytest.mark.parametrize("error", [KeyError("spec"), _Bug("boom"), ValueError("bad")])
def test_a_bug_keeps_its_traceback(
    error: Exception, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_: object) -> int:
        raise error

    monkeypatch.setattr(render_command, "run_render", broken)
    with pytest.raises(type(error)) as caught:
        cli.main(RENDER)
    assert caught.value is error
    assert capsys.readouterr().err == ""


OS_ERRORS = [
    (FileNotFoundError(2, "No such file or directory", "/a"), "/a: No such file or directory"),
    (PermissionError(13, "Permission denied"), "Permission denied"),
    (
        OSError(18, "Invalid cross-device link", "/a", None, "/b"),
        "/a -> /b: Invalid cross-device link",
    ),
    (TimeoutError("timed out"), "timed out"),
]


@pytest.mark.parametrize(("error", "text"), OS_ERRORS)
def test_os_error_text(error: OSError, text: str) -> None:
    assert cli.os_error_text(error) == text


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield path, parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from _leaves(sub, (*path, name))


def test_a_bad_flag_value_exits_1_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    """The same mistake, one exit code: a value a flag's type or choices refuse is a bad value
    (1), as a value the checks after parsing refuse (``--tp 0``) is; 2 stays for usage (an
    unknown flag or command, a missing or repeated one). It used to be 2 from argparse's
    conversion and 1 from the checks (``--tp abc`` 2, ``--tp 0`` 1)."""
    cases = [
        (path, max(action.option_strings, key=len))
        for path, leaf in _leaves(cli.build_parser())
        for action in leaf._actions
        if action.option_strings
        and (action.type in (int, float) or action.choices is not None)
        and action.nargs in (None, "?")
    ]
    assert len(cases) >= 30, cases  # every command that has a typed or chosen flag
    wrong = []
    for path, flag in cases:
        capsys.readouterr()
        try:
            code = cli.main([*path, flag, "abc!"])
        except SystemExit as stop:
            code = int(stop.code or 0)
        lines = capsys.readouterr().err.splitlines()
        if code != 1 or not lines or not lines[0].startswith(f"mlcc: error: {flag}: "):
            wrong.append((" ".join(path), flag, code, lines[:1]))
    assert wrong == []
    assert run_exit(capsys, ["render", "--tp", "0"]) == run_exit(capsys, ["render", "--tp", "x"])


def run_exit(capsys: pytest.CaptureFixture[str], argv: list[str]) -> int:
    capsys.readouterr()
    try:
        return cli.main([*argv, "--engine", "vllm", "--model", "org/m", "--name", "x"])
    except SystemExit as stop:
        return int(stop.code or 0)
