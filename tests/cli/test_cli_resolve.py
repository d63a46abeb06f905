"""``mlcc engines``, ``validate``, ``env`` and ``argv`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MLCC = [sys.executable, "-m", "mlcc_constructs.cli"]
SGLANG_LORA = [
    "--engine",
    "sglang",
    "--model",
    "s3://b/m/",
    "--instance-type",
    "ml.g5.12xlarge",
    "--lora",
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MLCC, *args], capture_output=True, text=True)


def test_env_sglang_lora_prints_tier1_exactly() -> None:
    out = run("env", *SGLANG_LORA)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "SGLANG_MODEL_PATH=/opt/ml/model",
        "SGLANG_TP_SIZE=4",
        "SGLANG_ENABLE_METRICS=true",
        "SGLANG_ENABLE_LORA=true",
        "SGLANG_MAX_LORA_RANK=16",
        "SGLANG_LORA_TARGET_MODULES=all",
    ]
    # as `mlcc render`: the pinned image's engine version is checked when none is given
    assert out.stderr == ""


def test_env_and_argv_gate_on_the_pinned_engine_version() -> None:
    """vLLM's off form (--no-<flag>) exists from 0.10.0: checked against the pinned image's
    version, or the one given."""
    vllm = ["--engine", "vllm", *SGLANG_LORA[2:6], "--set", "VLLM_ENABLE_PREFIX_CACHING=false"]
    pinned = run("argv", *vllm)
    assert pinned.returncode == 0, pinned.stderr
    assert "--no-enable-prefix-caching" in json.loads(pinned.stdout)
    old = run("argv", *vllm, "--engine-version", "0.9.0")
    assert old.returncode == 1
    assert "takes --no-enable-prefix-caching only from version 0.10.0" in old.stderr
    unknown = run("env", *vllm, "--engine-version", "nightly")
    assert unknown.returncode == 1
    assert "engine_version is not a version number (got 'nightly'" in unknown.stderr


def test_target_sets_where_a_hugging_face_model_is_read() -> None:
    hub = ["--engine", "vllm", "--model", "org/name", "--instance-type", "g6e.xlarge"]
    assert json.loads(run("argv", *hub).stdout)[2] == "org/name"
    staged = run("argv", *hub, "--target", "hyperpod-eks")
    assert json.loads(staged.stdout)[2] == "/opt/ml/model"
    bad = run("argv", *hub, "--target", "gke")
    assert bad.returncode == 1
    assert bad.stderr == (
        "mlcc: error: --target:/target: 'gke' is not one of ['eks', 'hyperpod-eks'] (fix: see "
        "mlcc_constructs/data/deployment-spec.schema.json for the fields)\n"
    )


def test_env_vllm_lora_has_no_companion_defaults_and_argv_has_bare_flag() -> None:
    vllm = ["--engine", "vllm", *SGLANG_LORA[2:]]
    out = run("env", *vllm)
    model = vllm[vllm.index("--model") + 1]
    assert out.stdout.splitlines() == [
        f"VLLM_MODEL={model}",  # eks streams the s3:// model (model_load's default)
        "VLLM_TENSOR_PARALLEL_SIZE=4",
        "VLLM_ENABLE_LORA=true",
        "VLLM_LOAD_FORMAT=runai_streamer",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=true",  # eks pods load adapters at runtime
    ]
    argv = json.loads(run("argv", *vllm).stdout)
    assert "--enable-lora" in argv
    assert argv[argv.index("--enable-lora") + 1] != "true"


def test_env_json_format_and_tier2() -> None:
    out = run("env", *SGLANG_LORA, "--set", "SGLANG_MAX_RUNNING_REQUESTS=32", "--format", "json")
    document = json.loads(out.stdout)
    assert list(document) == ["command", "ok", "env", "skipped", "warnings"]
    assert (document["command"], document["ok"]) == ("env", True)
    assert list(document["env"])[-1] == "SGLANG_MAX_RUNNING_REQUESTS"
    assert document["skipped"] == []


def test_bad_input_exits_1_with_every_problem_on_its_own_line() -> None:
    out = run("env", *SGLANG_LORA, "--set", "VLLM_X=1", "--set", "HF_TOKEN=x")
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    # each problem names the flag the value came from and the field's JSON pointer
    assert [line.split(":")[2:4] for line in lines] == [
        [" --set", "/engine/env/VLLM_X"],
        [" --set", "/engine/env/HF_TOKEN"],
    ]
    assert out.stdout == ""


def test_engines_table_and_show() -> None:
    table = run("engines").stdout.splitlines()
    assert table[0].split() == ["ENGINE", "PREFIX", "ENTRYPOINT", "CAPABILITIES"]
    assert [row.split()[0] for row in table[1:]] == [
        "llama-cpp",
        "lmi",
        "sglang",
        "tensorrt-llm",
        "vllm",
    ]
    shown = json.loads(run("engines", "show", "sglang").stdout)
    assert shown["env_var_prefix"] == "SGLANG_"


def test_validate_reports_every_error_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad" / "manifest.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"engine": "bad", "env_var_prefix": "bad", "entrypoint": "image",
                               "min_version": "1", "launch": {"port": 1, "health_path": "/"},
                               "capability_map": {}}))  # fmt: skip
    out = run("validate", str(bad))
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        f"mlcc: error: {bad}:/env_var_prefix: env_var_prefix must be upper-case and end with '_' "
        "(got 'bad'; allowed: ^[A-Z][A-Z0-9_]*_$, e.g. MYENGINE_)",
        f"mlcc: error: {bad}:/min_version: '1' does not match '^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$'",
    ]
    builtin = Path(__file__).resolve().parents[2] / "engines" / "vllm" / "manifest.json"
    assert run("validate", str(builtin)).returncode == 0
