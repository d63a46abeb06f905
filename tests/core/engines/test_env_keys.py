"""The one env rule (core/serving/resolve/env_rules.py): every key and value of a deployment's
``env`` passes it, whatever layer it came from (a DeploymentSpec, a spec file, ``--set``, a
cdk.json deployment), and the wrapper in the container refuses the same key shapes."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings, strategies as st

from mlcc_constructs import cli
from mlcc_constructs.core.engines import cache_dirs
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.resolve.env_rules import MAX_KEY, RESERVED
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.serving.spec.app_deployments import prepare_deployments
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.container_env import POD_ENV
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.wrapper import (
    CONTROL_ENV,
    CONTROL_PREFIX,
    KEYS_ENV,
    WrapperError,
    build_argv,
    engine_flags,
    flag_for,
)
from tests._flat import flat_spec, sectioned_doc

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
BASE: dict[str, Any] = {
    "engine": {"name": "vllm", "version": "0.31.0"},
    "model": {"uri": MODEL},
    "compute": {"instance_type": "ml.g5.12xlarge"},
}
CLI_BASE = ["--engine", "vllm", "--model", MODEL, "--instance-type", "g5.12xlarge"]
RENDER_FACTS = ["--name", "envkeys", "--account", "123456789012", "--profile", "dev"]
UPPER = "an engine key must be upper-case"
NO_FLAG = "names no vllm flag"
CONTROL = "the value holds the control character"
RESERVED_MSG = "is reserved"
NOT_A_NAME = "not an environment variable name"

# (env, the refused key's pointer, a phrase of its message, a phrase of its fix or allowed)
REFUSED: list[tuple[dict[str, str], str, str, str]] = [
    # 1. case: a key whose upper-case form has an engine prefix
    (
        {"VLLM_Tensor_Parallel_Size": "3"},
        "/engine/env/VLLM_Tensor_Parallel_Size",
        UPPER,
        "VLLM_TENSOR_PARALLEL_SIZE",
    ),
    ({"vllm_max_loras": "4"}, "/engine/env/vllm_max_loras", UPPER, "write it VLLM_MAX_LORAS"),
    ({"Vllm_MAX_LORAS": "4"}, "/engine/env/Vllm_MAX_LORAS", UPPER, "write it VLLM_MAX_LORAS"),
    ({"Sglang_X": "1"}, "/engine/env/Sglang_X", UPPER, "write it VLLM_X"),
    (
        {"VLLM_MAX_LORAS": "4", "vllm_max_loras": "4"},
        "/engine/env/vllm_max_loras",
        "VLLM_MAX_LORAS is set too",
        "(once)",
    ),
    # 2. a Tier-2 suffix must name a flag
    ({"VLLM_": "1"}, "/engine/env/VLLM_", "the bare prefix names no vllm flag", "VLLM_<FLAG_NAME>"),
    ({"VLLM__": "1"}, "/engine/env/VLLM__", NO_FLAG, "VLLM_MAX_NUM_SEQS"),
    ({"VLLM_MODEL_": "x"}, "/engine/env/VLLM_MODEL_", NO_FLAG, "words joined"),
    ({"VLLM__X": "1"}, "/engine/env/VLLM__X", NO_FLAG, "words joined"),
    ({"VLLM_A__B": "1"}, "/engine/env/VLLM_A__B", NO_FLAG, "words joined"),
    # 3. values: control characters (but tab) and line separators, on every key
    ({"VLLM_MAX_LORAS": "4\n5"}, "/engine/env/VLLM_MAX_LORAS", CONTROL, "one line"),
    ({"NCCL_DEBUG": "INFO\r"}, "/engine/env/NCCL_DEBUG", CONTROL, "one line"),
    ({"NCCL_DEBUG": "a\x00b"}, "/engine/env/NCCL_DEBUG", CONTROL, "one line"),
    ({"NCCL_DEBUG": "\x1b[31m"}, "/engine/env/NCCL_DEBUG", CONTROL, "one line"),
    ({"NCCL_DEBUG": "a\x7f"}, "/engine/env/NCCL_DEBUG", CONTROL, "one line"),
    ({"NCCL_DEBUG": "a\x85b"}, "/engine/env/NCCL_DEBUG", CONTROL, "one line"),
    ({"NCCL_DEBUG": "a\u2028b"}, "/engine/env/NCCL_DEBUG", CONTROL, "one line"),
    # 4. reserved: the wrapper's variables, the pod's, EKS Pod Identity's
    (
        {"MLCC_ENGINE_MANIFEST": "/tmp/x"},
        "/engine/env/MLCC_ENGINE_MANIFEST",
        RESERVED_MSG,
        "MLCC_*",
    ),
    ({"MLCC_ENGINE_KEYS": "VLLM_X"}, "/engine/env/MLCC_ENGINE_KEYS", RESERVED_MSG, "MLCC_*"),
    ({"MLCC_ANYTHING": "1"}, "/engine/env/MLCC_ANYTHING", RESERVED_MSG, "MLCC_*"),
    ({"HOME": "/root"}, "/engine/env/HOME", RESERVED_MSG, "HOME"),
    ({"USER": "root"}, "/engine/env/USER", RESERVED_MSG, "USER"),
    (
        {"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://x"},
        "/engine/env/AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "EKS Pod Identity sets it",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    ),
    # 5. names Kubernetes' ConfigMap keys and a process environment cannot hold
    (
        {"A" * (MAX_KEY + 1): "1"},
        "/engine/env/" + "A" * (MAX_KEY + 1),
        NOT_A_NAME,
        f"at most {MAX_KEY}",
    ),
    ({"1BAD": "1"}, "/engine/env/1BAD", NOT_A_NAME, "not starting with a digit"),
    ({"A-B": "1"}, "/engine/env/A-B", NOT_A_NAME, "letters, digits and '_'"),
    ({"A.B": "1"}, "/engine/env/A.B", NOT_A_NAME, "letters, digits and '_'"),
    ({"É": "1"}, "/engine/env/É", NOT_A_NAME, "letters, digits and '_'"),
]

ACCEPTED: list[dict[str, str]] = [
    {"VLLM_MAX_NUM_SEQS": "64"},
    {"VLLM_MAX_LORAS": "4", "VLLM_MAX_CPU_LORAS": "8"},
    {"NCCL_DEBUG": "INFO"},
    {"nccl_debug": "INFO"},  # plain env keeps its case
    {"http_proxy": "http://p:3128", "HTTP_PROXY": "http://p:3128"},  # two variables, both read
    {"NCCL_DEBUG": "a\tb"},  # a tab is an ordinary byte
    {"NCCL_DEBUG": "héllo ✓"},
    {"A" * MAX_KEY: "1"},
    {"HF_HOME": "/data/hf"},  # a cache variable the user sets wins (engine_cache)
    {"VLLM2_X": "1"},  # no engine prefix (VLLM_): plain env
]


def _problem(error: MlccError, pointer: str) -> Any:
    found = [p for p in error.problems if p.pointer == pointer]
    assert found, [str(p) for p in error.problems]
    return found[0]


@pytest.mark.parametrize(("env", "pointer", "message", "hint"), REFUSED)
def test_the_core_refuses(env: dict[str, str], pointer: str, message: str, hint: str) -> None:
    with pytest.raises(MlccError) as caught:
        resolve(flat_spec(**BASE, env=env))
    problem = _problem(caught.value, pointer)
    assert message in problem.message
    assert hint in f"{problem.allowed} {problem.fix}"


@pytest.mark.parametrize("env", ACCEPTED, ids=lambda e: ",".join(e)[:30])
def test_the_core_accepts(env: dict[str, str]) -> None:
    resolution = resolve(flat_spec(**BASE, env=env))
    assert set(env) <= set(resolution.env) | {k for k, _ in resolution.plain}


def test_the_sglang_engine_refuses_its_own_lower_case_prefix() -> None:
    with pytest.raises(MlccError) as caught:
        resolve(flat_spec(**{**BASE, "engine": "sglang"}, env={"sglang_max_loras_per_batch": "2"}))
    assert (
        "write it SGLANG_MAX_LORAS_PER_BATCH"
        in _problem(caught.value, "/engine/env/sglang_max_loras_per_batch").fix
    )


def test_a_mixed_case_tp_key_no_longer_slips_past_the_tp_check() -> None:
    """The tester's case: TP 3 on a 4-GPU instance, spelled so the TP check missed it."""
    with pytest.raises(MlccError) as caught:
        resolve(flat_spec(**BASE, env={"VLLM_Tensor_Parallel_Size": "3"}))
    assert [p.pointer for p in caught.value.problems] == ["/engine/env/VLLM_Tensor_Parallel_Size"]


# -- the same rule from a spec file and from a cdk.json deployment ---------------------------


@pytest.mark.parametrize(("env", "pointer", "message", "hint"), REFUSED[:12:3])
def test_a_cdk_json_deployment_gets_the_same_rule(
    env: dict[str, str], pointer: str, message: str, hint: str
) -> None:
    entry = sectioned_doc(
        {**BASE, "name": "ctx", "account": "123456789012", "profile": "dev", "env": env}
    )
    with pytest.raises(MlccError) as caught:
        prepare_deployments([entry], defaults={"region": "us-east-1"})
    problem = _problem(caught.value, pointer)
    assert problem.where == "cdk.json:/context/reference_deployments/0"
    assert message in problem.message


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("env", "pointer", "message", "hint"), REFUSED[::4])
def test_a_spec_file_gets_the_same_rule(
    tmp_path: Path, env: dict[str, str], pointer: str, message: str, hint: str
) -> None:
    path = tmp_path / "spec.json"
    path.write_text(
        json.dumps(sectioned_doc({**BASE, "name": "file", "env": env})), encoding="utf-8"
    )
    code, out, err = _run(["env", "-f", str(path)])
    assert (code, out) == (1, "")
    assert err.startswith(f"mlcc: error: {path}:{pointer}: ")
    assert message in err


# -- through the CLI with --set: exit 1, one clear line --------------------------------------


def _assignment(env: dict[str, str]) -> list[str]:
    return [arg for key, value in env.items() for arg in ("--set", f"{key}={value}")]


@pytest.mark.parametrize("command", ["env", "render"])
@pytest.mark.parametrize(("env", "pointer", "message", "hint"), REFUSED)
def test_set_is_refused_in_one_line(
    tmp_path: Path, command: str, env: dict[str, str], pointer: str, message: str, hint: str
) -> None:
    out_dir = tmp_path / "out"
    extra = [*RENDER_FACTS, "--out", str(out_dir)] if command == "render" else []
    code, out, err = _run([command, *CLI_BASE, *extra, *_assignment(env)])
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mlcc: error: --set:{pointer}: ")
    assert message in lines[0] and hint in lines[0]
    assert not out_dir.exists()


@pytest.mark.parametrize("env", ACCEPTED, ids=lambda e: ",".join(e)[:30])
def test_set_accepts(env: dict[str, str]) -> None:
    code, _, err = _run(["env", *CLI_BASE, *_assignment(env)])
    assert code == 0, err
    assert "mlcc: error" not in err


# -- 6. a --set key with no engine prefix is warned about; a spec file's is not --------------

NOTE = (
    "warning: --set NCCL_DEBUG has no engine prefix: it becomes plain env in the container, "
    "not a vllm flag (engine flags are VLLM_<FLAG_NAME>)"
)


def test_a_plain_set_key_is_warned_about_once() -> None:
    code, _, err = _run(["render", *CLI_BASE, *RENDER_FACTS, "--set", "NCCL_DEBUG=INFO"])
    assert code == 0, err
    assert err.splitlines().count(f"mlcc: {NOTE}") == 1


@pytest.mark.parametrize(
    "assignment", ["VLLM_MAX_NUM_SEQS=64", "vllm_max_loras=2", "NCCL_DEBUG=a\nb", "HOME=/x"]
)
def test_an_engine_key_or_a_refused_one_gets_no_plain_env_warning(assignment: str) -> None:
    _, _, err = _run(["env", *CLI_BASE, "--set", assignment])
    assert "has no engine prefix" not in err


def test_plain_env_in_a_spec_file_is_not_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(
        json.dumps(sectioned_doc({**BASE, "name": "f", "env": {"NCCL_DEBUG": "INFO"}})), "utf-8"
    )
    code, _, err = _run(["env", "-f", str(path)])
    assert code == 0, err
    assert "has no engine prefix" not in err


# -- the wrapper in the container refuses the same shapes; one source for reserved names -----


@pytest.mark.parametrize("key", ["VLLM_", "VLLM__", "VLLM_MODEL_", "VLLM__X", "VLLM_max_loras"])
def test_the_wrapper_refuses_a_suffix_that_names_no_flag(key: str) -> None:
    with pytest.raises(WrapperError, match="names no flag"):
        engine_flags({key: "1"}, "VLLM_", "kebab")


@pytest.mark.parametrize(
    ("key", "flag"), [("VLLM_MAX_LORAS", "--max-loras"), ("VLLM_A1_B2", "--a1-b2")]
)
def test_the_wrapper_takes_flag_shaped_keys(key: str, flag: str) -> None:
    assert engine_flags({key: "1"}, "VLLM_", "kebab") == [flag, "1"]


def test_reserved_names_come_from_the_data_that_places_them() -> None:
    assert all(name.startswith(CONTROL_PREFIX) for name in CONTROL_ENV)
    assert RESERVED.prefixes == (CONTROL_PREFIX,)
    assert {name for name, _ in POD_ENV} <= set(RESERVED.names)
    assert {name for name, _ in POD_ENV} == cache_dirs.RESERVED_ENV
    assert cache_dirs.WRAPPER_PREFIX == CONTROL_PREFIX


def test_every_rendered_pod_env_name_the_library_sets_is_reserved() -> None:
    """The wrapper's and the pod's own variables of a rendered Deployment are all reserved (the
    engine's cache and streaming variables are not: a user's value wins there)."""
    spec = flat_spec(**BASE, name="r", namespace="inference")
    objects = render(
        spec, context=RenderContext(account="123456789012", profile="dev", region="us-east-1")
    ).objects
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    names = [e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]]
    placed = [n for n in names if n.startswith(CONTROL_PREFIX) or n in ("HOME", "USER")]
    assert placed and all(RESERVED.reason(n) for n in placed)


# -- property: whatever the keys and values, a clean refusal or an argv without surprises ----

_PREFIXES = st.sampled_from(["VLLM_", "vllm_", "Vllm_", "VLLm_", "SGLANG_", "sglang_", "MLCC_", ""])
_SUFFIXES = st.one_of(
    st.from_regex(r"[A-Za-z0-9_]{0,12}", fullmatch=True),
    st.sampled_from(
        [
            "MAX_LORAS",
            "max_loras",
            "Tensor_Parallel_Size",
            "TENSOR_PARALLEL_SIZE",
            "_",
            "MODEL_",
            "A__B",
        ]
    ),
    st.text(max_size=6),
)
_GOOD_KEYS = ["VLLM_MAX_NUM_SEQS", "VLLM_MAX_LORAS", "VLLM_ENFORCE_EAGER", "NCCL_DEBUG", "A_b"]
_KEYS = st.one_of(
    st.sampled_from(_GOOD_KEYS),  # often a key that renders, so both outcomes are explored
    st.builds(lambda p, s: p + s, _PREFIXES, _SUFFIXES),
)
_VALUES = st.one_of(
    st.sampled_from(["1", "4", "true", "false", "64"]),
    st.text(max_size=8),  # control characters, separators and any other code point included
)
PROPERTY = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _objects(out_dir: Path) -> list[dict[str, Any]]:
    return [
        o
        for path in sorted(out_dir.glob("*.yaml"))
        for o in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if isinstance(o, dict)
    ]


@PROPERTY
@given(env=st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_any_env_renders_a_clean_argv_or_fails_cleanly(tmp_path: Path, env: dict[str, str]) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    out_dir = work / "out"
    path = work / "spec.json"  # a file: --set cannot carry every key (a '=' in it)
    path.write_text(
        json.dumps(sectioned_doc({**BASE, "name": "prop", "env": env})), encoding="utf-8"
    )
    argv = ["render", "-f", str(path), "--account", "123456789012", "--profile", "dev"]
    code, out, err = _run([*argv, "--out", str(out_dir)])
    assert "Traceback" not in err
    event("refused" if code else "rendered")
    if code != 0:
        assert code == 1 and out == "", err
        assert err.splitlines() and all(line.startswith("mlcc: ") for line in err.splitlines())
        assert not out_dir.exists()  # nothing half-written
        return
    objects = _objects(out_dir)
    config = next(
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-config")
    )
    wrapper = next(
        o for o in objects if o["kind"] == "ConfigMap" and "wrapper.py" in o.get("data", {})
    )
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    pod_env = {
        e["name"]: e.get("value", "")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    manifest = json.loads(wrapper["data"]["manifest.json"])
    keys = [k for k in pod_env[KEYS_ENV].split(",") if k]
    argv_out = build_argv(manifest, {**pod_env, **config["data"]}, keys=keys)
    prefix, style = manifest["env_var_prefix"], manifest["launch"].get("flag_style", "kebab")
    translated = [k for k in keys if k.startswith(prefix) and k in config["data"]]
    flags = [flag_for(k[len(prefix) :], style) for k in translated]
    assert len(flags) == len(set(flags))  # no flag twice
    assert all(k == k.upper() for k in translated)  # every flag from an upper-case key
    launch = [manifest["launch"].get(f) for f in ("host_flag", "port_flag")]
    assert not set(flags) & set(filter(None, launch))
    for key, value in env.items():  # each user key reached the pod as given, or as nothing
        if key.upper().startswith(("VLLM_", "SGLANG_")):
            assert key == key.upper()
        assert not key.startswith(CONTROL_PREFIX)
        assert value == config["data"].get(key, pod_env.get(key, value))
    assert argv_out[: len(manifest["launch"]["command"])] == manifest["launch"]["command"]
