"""The ``mlcc`` process entry (console script and ``python -m``): it exits without teardown yet
loses nothing (output, exit code, a closed pipe, atexit hooks), and the pure commands import
none of the heavy modules start-up was trimmed of. No timing here: ``make bench`` times it."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mlcc_constructs import cli
from mlcc_constructs.cli import _exit
from mlcc_constructs.cli._parser import terminal_columns

HF = "meta-llama/Llama-3.1-8B-Instruct"
S3 = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
DEPLOYMENT = ["--instance-type", "ml.g5.12xlarge", "--lora"]
ENV = ["env", "--engine", "vllm", "--model", HF, *DEPLOYMENT]
ARGV = ["argv", "--engine", "sglang", "--model", S3, *DEPLOYMENT]
RENDER_HF = ["render", "--engine", "vllm", "--model", HF, "--name", "x", *DEPLOYMENT]
RENDER_S3 = ["render", "--engine", "vllm", "--model", S3, "--name", "x", *DEPLOYMENT]

SCRIPT = Path(sys.executable).parent / "mlcc"
ENTRIES = {
    "python -m": [sys.executable, "-m", "mlcc_constructs.cli"],
    "console script": [str(SCRIPT)],
}

# What the pure commands must not import (each was on, or one import away from, their path):
# the AWS SDK and the jsii runtime, the messages-only validator, and stdlib modules only
# argparse's width (shutil) or a fallback (importlib.resources, tempfile) pulled in.
DENIED = frozenset(
    {
        "boto3",
        "botocore",
        "s3transfer",
        "jsii",
        "aws_cdk",
        "cdk8s",
        "cdk8s_plus_28",
        "constructs",
        "jsonschema",
        "kubernetes_validate",
        "shutil",
        "tempfile",
        "importlib.resources",
        "logging",
        "threading",
    }
)
# ...and `env`/`argv` print no YAML and validate no Kubernetes object.
DENIED_RESOLVE = DENIED | {"yaml", "jsonschema_rs", "datetime"}


def process_env() -> dict[str, str]:
    """The environment a user's shell gives: stdout block-buffered when it is a pipe."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def entry(form: str, argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    if form == "console script" and not SCRIPT.exists():  # pragma: no cover
        pytest.skip("no console script next to the interpreter (not pip-installed)")
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*ENTRIES[form], *argv], env=process_env(), check=False, **kwargs
    )


def in_process(
    argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]
) -> tuple[int, bytes, bytes]:
    capsysbinary.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as stop:  # argparse: usage errors, --help, --version
        code = _exit.exit_code(stop)
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err


def imported(form: str, argv: list[str]) -> set[str]:
    """Every module the real entry imports for ``argv`` (``-X importtime`` lists each once)."""
    prefix = ENTRIES[form]
    if form == "console script":
        prefix = [sys.executable, "-X", "importtime", *prefix]
    else:
        prefix = [prefix[0], "-X", "importtime", *prefix[1:]]
    done = subprocess.run([*prefix, *argv], capture_output=True, env=process_env(), check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    rows = [line for line in done.stderr.decode().splitlines() if line.startswith("import time:")]
    return {row.rsplit("|", 1)[1].strip() for row in rows[1:]}


@pytest.mark.parametrize("form", sorted(ENTRIES))
@pytest.mark.parametrize(
    ("argv", "denied"),
    [
        (ENV, DENIED_RESOLVE),
        (ARGV, DENIED_RESOLVE),
        (RENDER_HF, DENIED),
        (RENDER_S3, DENIED),
    ],
    ids=["env", "argv", "render hf", "render s3"],
)
def test_pure_commands_import_no_denied_module(
    form: str, argv: list[str], denied: frozenset[str]
) -> None:
    modules = imported(form, argv)
    assert "mlcc_constructs.cli" in modules  # the listing is real
    assert sorted(m for m in modules if m in denied or m.split(".")[0] in denied) == []


CASES = {
    "env": ENV,
    "env yaml": [*ENV, "--format", "yaml"],
    "argv": ARGV,
    "render hf": RENDER_HF,
    "render s3": RENDER_S3,
    "bad engine (1)": ["env", "--engine", "nope", "--model", HF, *DEPLOYMENT],
    "bad engine, json report (1)": ["env", "--engine", "nope", "--model", HF, "--format", "json"],
    "unknown flag (2)": [*ENV, "--bogus"],
    "no command (2)": [],
    "version (0)": ["--version"],
    "help (0)": ["env", "--help"],
}


@pytest.mark.parametrize("form", sorted(ENTRIES))
@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_the_entry_prints_and_exits_as_main_does(
    form: str,
    argv: list[str],
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # help wraps the same in both
    done = entry(form, argv, capture_output=True)
    code, out, err = in_process(argv, capsysbinary)
    assert (done.returncode, done.stdout, done.stderr) == (code, out, err)
    if code:
        assert err.startswith(b"mlcc: error: ")
    else:
        assert out


@pytest.mark.parametrize("form", sorted(ENTRIES))
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (ENV, 0),  # buffered: the write fails at the final flush
        (RENDER_S3, 0),  # over the buffer: the write fails in the command
        (["env", "--engine", "nope", "--model", HF, "--format", "json"], 1),
    ],
    ids=["env", "render", "error"],
)
def test_a_closed_pipe_is_no_error(form: str, argv: list[str], code: int) -> None:
    """``mlcc ... | head -1``: the reader is gone; no traceback, no "Exception ignored", and
    the command's own code (the old teardown printed BrokenPipeError and exited 120)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = entry(form, argv, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert done.returncode == code
    expected = b"" if code == 0 else b"mlcc: error: "
    assert done.stderr.startswith(expected)
    assert b"BrokenPipe" not in done.stderr and b"Traceback" not in done.stderr


def _size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child: writes past ``limit`` bytes fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


STDOUT_LOST = b"mlcc: error: stdout: %s (the output is incomplete; fix: free space, or write "


@pytest.mark.parametrize("form", sorted(ENTRIES))
@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (ENV, b"No space left on device"),  # buffered: the write fails at the final flush
        (RENDER_S3, b"No space left on device"),  # over the buffer: it fails in the command
        (
            ["plan", "--engine", "vllm", "--model", HF, "--name", "x", *DEPLOYMENT],
            b"No space left on device",
        ),
    ],
    ids=["env", "render", "plan"],
)
def test_output_to_a_full_disk_is_an_error(form: str, argv: list[str], reason: bytes) -> None:
    """``mlcc ... > FILE`` on a full disk (/dev/full): one error line and exit 1, no traceback
    (the failure report, itself written to stdout, is not tried again)."""
    with open("/dev/full", "wb") as full:
        done = entry(form, argv, stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(STDOUT_LOST % reason), line


def test_output_cut_short_by_the_disk_is_an_error(tmp_path: Path) -> None:
    """A disk that fills up part-way: the OS writes part of a buffer, and Python's buffered
    writer used to drop the rest silently (exit 0 with 64 KiB of 146 KiB). Each write is now
    whole or an error."""
    whole = entry("python -m", RENDER_S3, capture_output=True)
    assert whole.returncode == 0 and len(whole.stdout) > 16_384  # more than two buffers
    limit = len(whole.stdout) // 2
    out = tmp_path / "out.yaml"
    with out.open("wb") as handle:
        done = entry(
            "python -m",
            RENDER_S3,
            stdout=handle,
            stderr=subprocess.PIPE,
            preexec_fn=_size_limit(limit),
        )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(STDOUT_LOST % b"File too large"), line
    assert out.stat().st_size <= limit


def test_written_files_are_complete(tmp_path: Path) -> None:
    """``render --out``: every file the command wrote is there after the fast exit."""
    out = tmp_path / "out"
    done = entry("python -m", [*RENDER_HF, "--out", str(out)], capture_output=True)
    assert done.returncode == 0, done.stderr
    expected = tmp_path / "expected"
    assert cli.main([*RENDER_HF, "--out", str(expected)]) == 0
    names = sorted(p.name for p in expected.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    for name in names:
        assert (out / name).read_bytes() == (expected / name).read_bytes()


EXIT_NOW = "from mlcc_constructs.cli._exit import exit_now\n"


@pytest.mark.parametrize(
    ("code", "stdout", "returncode"),
    [
        # buffered output is flushed, the code kept
        ("print('x', end=''); exit_now(5)", b"x", 5),
        # an atexit hook keeps teardown: the hook runs
        (
            "import atexit; atexit.register(lambda: print('hook')); print('x'); exit_now(3)",
            b"x\nhook\n",
            3,
        ),
        # a running thread keeps teardown: it is joined and finishes its output
        (
            "import threading, time\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.2), print('thread')))\n"
            "t.start(); print('x'); exit_now(0)",
            b"x\nthread\n",
            0,
        ),
    ],
    ids=["buffered", "atexit", "thread"],
)
def test_exit_now_keeps_what_teardown_would_do(code: str, stdout: bytes, returncode: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EXIT_NOW + code], capture_output=True, env=process_env(), check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (returncode, stdout, b"")


def test_a_profiler_still_writes_its_results(tmp_path: Path) -> None:
    """``python -m cProfile -o FILE -m mlcc_constructs.cli``: the profile is written after the
    module returns, so the entry leaves through teardown when a profiler watches."""
    profile = tmp_path / "env.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "mlcc_constructs.cli", *ENV],
        capture_output=True,
        env=process_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0


@pytest.mark.parametrize(
    ("stop", "code", "stderr"),
    [(None, 0, ""), (0, 0, ""), (2, 2, ""), ("bad thing", 1, "bad thing\n")],
)
def test_exit_code_reads_system_exit_as_the_interpreter_does(
    stop: object, code: int, stderr: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit.exit_code(SystemExit(stop)) == code
    assert capsys.readouterr().err == stderr


@pytest.mark.parametrize("columns", [None, "0", "-3", "wide", "57", "140"])
def test_terminal_columns_matches_shutil(
    columns: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
