"""The container-side wrapper: env → flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlcc_constructs.core.manifests import builtin_engines
from mlcc_constructs.core.wrapper import WrapperError, build_argv, engine_flags, flag_for

MANIFESTS = {m.engine: m.raw for m in builtin_engines()}


@pytest.mark.parametrize(
    ("suffix", "style", "flag"),
    [("MAX_LORA_RANK", "kebab", "--max-lora-rank"), ("TP_SIZE", "snake", "--tp_size")],
)
def test_flag_names(suffix: str, style: str, flag: str) -> None:
    assert flag_for(suffix, style) == flag


def test_true_is_bare_false_is_skipped_values_follow() -> None:
    env = {"VLLM_ENABLE_LORA": "true", "VLLM_ENFORCE_EAGER": "false", "VLLM_MAX_LORAS": "4"}
    assert engine_flags(env, "VLLM_", "kebab") == ["--enable-lora", "--max-loras", "4"]


def test_other_prefixes_are_ignored() -> None:
    assert engine_flags({"SGLANG_TP_SIZE": "2", "PATH": "/bin"}, "VLLM_", "kebab") == []


def test_empty_value_is_refused() -> None:
    with pytest.raises(WrapperError) as caught:
        engine_flags({"VLLM_MAX_LORAS": ""}, "VLLM_", "kebab")
    assert str(caught.value) == (
        "VLLM_MAX_LORAS is empty: an engine flag needs a value; remove the key to leave "
        "--max-loras unset, or set 'true' for a bare flag"
    )


def test_model_flag_vs_positional() -> None:
    sglang = build_argv(MANIFESTS["sglang"], {"SGLANG_MODEL_PATH": "/opt/ml/model"})
    assert sglang[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", "/opt/ml/model"]
    trt = build_argv(MANIFESTS["tensorrt-llm"], {"TRTLLM_MODEL": "/m", "TRTLLM_TP_SIZE": "4"})
    assert trt == ["trtllm-serve", "/m", "--tp_size", "4", "--host", "0.0.0.0", "--port", "8000"]


def test_model_b_engine_has_no_wrapper_argv() -> None:
    with pytest.raises(WrapperError, match="entrypoint 'image'"):
        build_argv(MANIFESTS["lmi"], {"OPTION_ROLLING_BATCH": "vllm"})


def test_entrypoint_prints_argv_from_the_process_env() -> None:
    env = {
        **os.environ,
        "MLCC_ENGINE": "vllm",
        "VLLM_MODEL": "org/name",
        "VLLM_ENABLE_LORA": "true",
        "HOME": "/tmp",
    }
    out = subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.core.wrapper", "--print"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == [
        "vllm", "serve", "org/name", "--enable-lora", "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip


def test_entrypoint_without_engine_exits_2() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MLCC_ENGINE"}
    out = subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.core.wrapper"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "MLCC_ENGINE is not set" in out.stderr


_suffix = st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True)
_value = st.one_of(
    st.sampled_from(["true", "false", "TRUE", "False"]),
    st.text(st.characters(codec="ascii", exclude_characters="\x00-"), min_size=1, max_size=8),
)


@given(st.dictionaries(_suffix, _value, max_size=8), st.sampled_from(["kebab", "snake"]))
def test_wrapper_never_emits_a_flag_followed_by_true(suffixes: dict[str, str], style: str) -> None:
    env = {f"VLLM_{k}": v for k, v in suffixes.items()}
    argv = engine_flags(env, "VLLM_", style)
    flags = [i for i, token in enumerate(argv) if token.startswith("--")]
    # one flag per key that is not 'false', and never a flag followed by a literal boolean
    assert len(flags) == sum(v.lower() != "false" for v in suffixes.values())
    assert not any(i + 1 < len(argv) and argv[i + 1].lower() in ("true", "false") for i in flags)


def test_container_args_follow_the_env_flags() -> None:
    """Args the pod spec adds (e.g. a CacheBackend's --kv-transfer-config) reach the engine."""
    env = {**os.environ, "MLCC_ENGINE": "vllm", "VLLM_MODEL": "org/name"}
    command = [sys.executable, "-m", "mlcc_constructs.core.wrapper", "--print"]
    command += [
        "--kv-transfer-config",
        '{"kv_role":"kv_both"}',
        "--disable-hybrid-kv-cache-manager",
    ]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)[-3:] == [
        "--kv-transfer-config",
        '{"kv_role":"kv_both"}',
        "--disable-hybrid-kv-cache-manager",
    ]


def test_engine_env_settings_stay_env() -> None:
    """vLLM reads VLLM_ALLOW_RUNTIME_LORA_UPDATING itself: a flag of that name would crash it."""
    env = {
        "VLLM_MODEL": "org/name",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
        "VLLM_LOGGING_LEVEL": "DEBUG",
        "VLLM_MAX_NUM_SEQS": "8",
    }
    argv = build_argv(MANIFESTS["vllm"], env)
    assert argv == [
        "vllm", "serve", "org/name", "--max-num-seqs", "8", "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip


def test_only_delivered_keys_become_flags() -> None:
    env = {"VLLM_MODEL": "m", "VLLM_MAX_LORAS": "2", "VLLM_USAGE_SOURCE": "image", "VLLM_X": "1"}
    argv = build_argv(MANIFESTS["vllm"], env, keys={"VLLM_MODEL", "VLLM_MAX_LORAS"})
    assert argv == ["vllm", "serve", "m", "--max-loras", "2", "--host", "0.0.0.0", "--port", "8000"]
