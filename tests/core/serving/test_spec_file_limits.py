"""Spec files (``-f``): deep nesting, endless files, standard input, empty lists and repeated
single-value flags are clear errors (issue 25), never a traceback, a hang or a silent pick."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from mlcc_constructs import cli
from mlcc_constructs.core.serving.spec.files import load_spec_documents
from mlcc_constructs.core.support.documents import (
    MAX_DOCUMENT_BYTES,
    MAX_NESTING,
    check_nesting,
)
from mlcc_constructs.core.support.errors import MlccError

SPEC = "engine: vllm\nmodel: org/name\ninstance_type: ml.g5.12xlarge\n"
TOO_DEEP = f"nests mappings or lists deeper than {MAX_NESTING} levels"


def nested(depth: int) -> object:
    """A list ``depth`` levels deep."""
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def messages(error: MlccError) -> list[str]:
    return [str(p) for p in error.problems]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep.yaml", "[" * 100_000 + "]" * 100_000),
        ("deep-map.json", '{"a":' * 5_000 + "1" + "}" * 5_000),
        ("over.json", "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)),
        ("over.yaml", "- " * (MAX_NESTING + 1) + "x\n"),
        ("cycle.yaml", "&a [*a]\n"),
    ],
)
def test_deep_nesting_is_refused_naming_the_file_and_limit(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MlccError) as raised:
        load_spec_documents(path)
    (line,) = messages(raised.value)
    assert line.startswith(f"{path}: the document {TOO_DEEP}")


@pytest.mark.parametrize(
    ("document", "refused"),
    [
        (nested(MAX_NESTING), False),
        (nested(MAX_NESTING + 1), True),
        ({"a": {"b": nested(MAX_NESTING - 2)}}, False),
        ({"a": {"b": nested(MAX_NESTING - 1)}}, True),
        ("scalar", False),
    ],
)
def test_nesting_limit_boundary(document: object, refused: bool) -> None:
    if refused:
        with pytest.raises(MlccError, match=TOO_DEEP):
            check_nesting(document, where="x")
    else:
        check_nesting(document, where="x")


def test_shared_yaml_nodes_are_checked_once(tmp_path: Path) -> None:
    """A "billion laughs" document of aliases is shallow: checked quickly, not refused."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 20)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ((_, document),) = load_spec_documents(path)
    assert set(document) == {f"a{i}" for i in range(20)}


def test_an_endless_file_is_refused_at_the_limit() -> None:
    with pytest.raises(MlccError) as raised:
        load_spec_documents("/dev/zero")
    (line,) = messages(raised.value)
    assert line == (
        f"/dev/zero: the spec file is larger than 4 MiB ({MAX_DOCUMENT_BYTES} bytes), the most "
        "mlcc reads (fix: pass the YAML or JSON text file (not a device or a large data file))"
    )


@pytest.mark.parametrize(
    ("size", "refused"), [(MAX_DOCUMENT_BYTES, False), (MAX_DOCUMENT_BYTES + 1, True)]
)
def test_size_limit_boundary(tmp_path: Path, size: int, refused: bool) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(SPEC.encode() + b" " * (size - len(SPEC)))
    if refused:
        with pytest.raises(MlccError, match="larger than 4 MiB"):
            load_spec_documents(path)
    else:
        assert load_spec_documents(path)[0][1]["engine"] == "vllm"


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            SPEC.encode(),
            [
                (
                    "<stdin>",
                    {"engine": "vllm", "model": "org/name", "instance_type": "ml.g5.12xlarge"},
                )
            ],
        ),
        (
            b'[{"engine": "vllm"}, {"engine": "sglang"}]',
            [("<stdin>#0", {"engine": "vllm"}), ("<stdin>#1", {"engine": "sglang"})],
        ),
    ],
)
def test_dash_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, data: bytes, expected: list[tuple[str, dict[str, str]]]
) -> None:
    feed_stdin(monkeypatch, data)
    assert load_spec_documents("-") == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"engine: [\n", "<stdin>: not valid YAML"),
        (b"\xff", "<stdin>: the spec file is not UTF-8 text"),
        (b"[]", "<stdin>: the spec file holds no deployment"),
    ],
)
def test_standard_input_problems_name_stdin(
    monkeypatch: pytest.MonkeyPatch, data: bytes, message: str
) -> None:
    feed_stdin(monkeypatch, data)
    with pytest.raises(MlccError) as raised:
        load_spec_documents("-")
    assert messages(raised.value)[0].startswith(message)


def test_render_reads_the_same_spec_from_stdin_as_from_its_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = Path("examples/deployment.yaml")
    assert cli.main(["render", "-f", str(example)]) == 0
    from_file = capsys.readouterr().out
    feed_stdin(monkeypatch, example.read_bytes())
    assert cli.main(["render", "-f", "-"]) == 0
    assert capsys.readouterr().out == from_file


EMPTY_YAML = ["[]", "", "---\n", "# only a comment\n", "---\n---\n"]
EMPTY_JSON = ["[]", "", " \n\t\n"]


@pytest.mark.parametrize(
    ("suffix", "text"),
    [(".yaml", text) for text in EMPTY_YAML] + [(".json", text) for text in EMPTY_JSON],
)
def test_no_deployment_is_named_as_such(tmp_path: Path, suffix: str, text: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MlccError) as raised:
        load_spec_documents(path)
    (line,) = messages(raised.value)
    assert line.startswith(f"{path}: the spec file holds no deployment")
    assert "NoneType" not in line


@pytest.mark.parametrize(
    ("argv", "flags"),
    [
        (["render", "-f", "a.yaml", "-f", "b.yaml"], "-f / --file"),
        (["render", "-f", "a.yaml", "--file", "b.yaml"], "-f / --file"),
        (["render", "--name", "a", "--name", "b"], "--name"),
        (["env", "-f", "a.yaml", "-f", "b.yaml"], "-f / --file"),
        (["env", "--name", "a", "--name", "b"], "--name"),
        (["endpoint", "check", "--name", "a", "--name", "b"], "--name"),
        (["adapter", "promote", "x", "--from", "s3://a/", "--from", "s3://b/"], "--from"),
        (["adapter", "plan", "x", "--from", "s3://a/", "--from", "s3://b/"], "--from"),
        (["model", "promote", "x", "--from", "s3://a/", "--from", "s3://b/"], "--from"),
    ],
)
def test_a_repeated_single_value_flag_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], flags: str
) -> None:
    parser = cli.build_parser(argv[0])
    refusal = f"{flags} given more than once; it takes one value (fix: pass {flags} once)"
    try:
        parser.parse_args(argv)
    except SystemExit as exit_:  # every command, the JSON-reporting ones too: exit 2
        assert exit_.code == 2
        assert refusal in capsys.readouterr().err
    else:
        pytest.fail("a repeat was accepted")


@pytest.mark.parametrize(
    ("argv", "attribute", "value"),
    [
        (["render", "-f", "a.yaml"], "file", "a.yaml"),
        (["render", "--name", "a"], "name", "a"),
        (["env", "--name", "a"], "pick", "a"),
        (["endpoint", "check", "--name", "a"], "name", "a"),
    ],
)
def test_a_single_value_flag_given_once_is_stored(
    argv: list[str], attribute: str, value: str
) -> None:
    args = cli.build_parser(argv[0]).parse_args(argv)
    assert getattr(args, attribute) == value
