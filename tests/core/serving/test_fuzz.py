"""Fuzzing the input paths (hypothesis): spec files, CacheBackend files, engine manifests and the
CLI's flags. Whatever the input, ``mlcc`` ends in exit 0 with valid output, exit 1 with
``mlcc: error:`` lines, or exit 2 (usage) with argparse's usage and an ``mlcc: error:`` line —
never a traceback, never a partial write."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from mlcc_constructs import cli
from mlcc_constructs.core.serving.kinds.registry import object_problems
from mlcc_constructs.core.serving.spec.files import schema
from tests.core.cache.test_cache_admission import seed_safe_spec
from tests.core.engines.test_manifests import VALID as VALID_MANIFEST

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
VALID_SPEC: dict[str, Any] = {
    "engine": {"name": "vllm", "env": {"VLLM_MAX_NUM_SEQS": "64"}},
    "model": {"uri": MODEL},
    "compute": {"instance_type": "ml.g5.12xlarge"},
    "name": "fuzzed",
    "namespace": "inference",
    "lora": {"enabled": True},
    "account": "123456789012",
    "profile": "dev",
}
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["", "eks", "hyperpod-eks", "args", "vllm", "sglang", "0.9", "Bad_Name", "none"]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=5,
)
EXAMPLES = settings(
    max_examples=int(os.environ.get("MLCC_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _mutate(document: Any, path: list[Any], value: Any) -> Any:
    """``document`` with the node at ``path`` (indexes wrap) replaced by ``value``."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    copy = json.loads(json.dumps(document))
    keys = list(copy) if isinstance(copy, dict) else list(range(len(copy)))
    key = keys[path[0] % len(keys)] if isinstance(path[0], int) else path[0]
    copy[key] = _mutate(copy[key] if key in keys else None, path[1:], value)
    return copy


MUTATIONS = st.tuples(
    st.lists(
        st.integers(min_value=0, max_value=20) | st.sampled_from(sorted(schema()["properties"])),
        max_size=4,
    ),
    VALUES,
)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:  # argparse usage errors and --help
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def _assert_clean_failure(code: int, out: str, err: str) -> None:
    assert code in (1, 2), (code, err)
    lines = [line for line in err.splitlines() if line.startswith("mlcc: error:")]
    assert lines, err
    assert "Traceback" not in err
    if code == 1:
        assert out == ""
        assert all(line.startswith(("mlcc: error:", "mlcc: ")) for line in err.splitlines())


def _text(document: Any, form: str) -> bytes:
    if form == "json":
        return json.dumps(document, allow_nan=True).encode()
    if form == "yaml":
        return yaml.safe_dump(document, allow_unicode=True).encode()
    return yaml.safe_dump(document).encode()[: len(form)] + form.encode("utf-8", "replace")


FORMS = st.sampled_from(["json", "yaml"]) | st.text(max_size=6)


@EXAMPLES
@given(mutation=MUTATIONS, form=FORMS, raw=st.binary(max_size=8))
def test_spec_files(tmp_path: Path, mutation: tuple[list[Any], Any], form: str, raw: bytes) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per example
    document = _mutate(VALID_SPEC, *mutation)
    suffix = ".json" if form == "json" else ".yaml"
    path = work / f"spec{suffix}"
    path.write_bytes(_text(document, form) + (raw if form not in ("json", "yaml") else b""))
    out_dir = work / "out"
    code, out, err = _run(["render", "-f", str(path), "--out", str(out_dir)])
    if code == 0:
        written = sorted(p.name for p in out_dir.iterdir())
        assert written[0] == ".mlcc-render.json" and len(written) > 1
        for name in written[1:]:
            for obj in yaml.safe_load_all((out_dir / name).read_text()):
                assert object_problems(obj) == []
    else:
        _assert_clean_failure(code, out, err)
        assert not out_dir.exists()  # nothing half-written
        assert [p.name for p in work.iterdir()] == [path.name]


@EXAMPLES
@given(mutation=st.tuples(st.lists(st.integers(min_value=0, max_value=20), max_size=5), VALUES))
def test_cache_backend_files(tmp_path: Path, mutation: tuple[list[int], Any]) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))
    document = {
        "apiVersion": "inferencecache.io/v1alpha1",
        "kind": "CacheBackend",
        "metadata": {"name": "fuzzed"},
        "spec": _mutate(seed_safe_spec(), *mutation),
    }
    path = tmp_path / "cachebackend.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    code, out, err = _run(["cache", "check", str(path)])
    if code != 0:
        _assert_clean_failure(code, out, err)


@EXAMPLES
@given(mutation=st.tuples(st.lists(st.integers(min_value=0, max_value=20), max_size=4), VALUES))
def test_engine_manifests(tmp_path: Path, mutation: tuple[list[int], Any]) -> None:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))
    folder = tmp_path / "plugins" / "myengine"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(
        json.dumps(_mutate(VALID_MANIFEST, *mutation), allow_nan=True), encoding="utf-8"
    )
    code, out, err = _run(["validate", str(tmp_path / "plugins")])
    if code != 0:
        _assert_clean_failure(code, out, err)
        return
    code, out, err = _run(
        ["argv", "--plugin-dir", str(tmp_path / "plugins"), "--engine", "myengine",
         "--model", "org/name", "--instance-type", "g5.xlarge"]
    )  # fmt: skip
    if code == 0:
        assert isinstance(json.loads(out), list)
    else:
        _assert_clean_failure(code, out, err)


FLAG_VALUES = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["vllm", "sglang", "lmi", MODEL, "org/name", "ml.g5.12xlarge", "g5.xlarge"]),
    st.sampled_from(["-1", "0", "3", "99999999999999999999", "eks", "hyperpod-eks", "args"]),
    st.sampled_from(["VLLM_X=1", "HF_TOKEN=x", "=", "A=B", "HF_TOKEN=s:k", "X=Bad_Name:k"]),
)
FLAGS = [
    "--engine", "--model", "--instance-type", "--tp", "--quantization", "--set", "--name",
    "--namespace", "--target", "--image", "--replicas", "--config-delivery", "--secret-env",
    "--region", "--account", "--profile", "--role-arn", "--engine-version",
]  # fmt: skip


@EXAMPLES
@given(
    command=st.sampled_from(["env", "argv", "render"]),
    pairs=st.lists(st.tuples(st.sampled_from(FLAGS), FLAG_VALUES), max_size=6),
    lora=st.booleans(),
)
def test_cli_flags(command: str, pairs: list[tuple[str, str]], lora: bool) -> None:
    argv = [command, "--engine", "vllm", "--model", MODEL, "--instance-type", "g5.12xlarge"]
    argv += ["--name", "fuzzed"] if command == "render" else []
    for flag, value in pairs:
        argv += [flag, value]
    argv += ["--lora"] if lora else []
    code, out, err = _run(argv)
    if code == 0:
        # an empty env is an engine that gets no variable: only said with the reason
        assert out or (command == "env" and "receives no model from the library" in err)
        if command == "render":
            assert all(object_problems(o) == [] for o in yaml.safe_load_all(out))
    else:
        _assert_clean_failure(code, out, err)
