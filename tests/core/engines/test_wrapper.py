"""The container-side wrapper: env → flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.wrapper import (
    WrapperError,
    build_argv,
    engine_flags,
    flag_for,
    merge_args,
)

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


# Flag-shaped suffixes (wrapper FLAG_SUFFIX): 'A_' or 'A__B' name no flag and are refused.
_suffix = st.from_regex(r"[A-Z][A-Z0-9]{0,5}(_[A-Z0-9]{1,5}){0,2}", fullmatch=True)
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


# -- the off form of booleans, list values, merging container args --------------------------


def test_false_is_the_off_form_where_the_manifest_declares_one() -> None:
    env = {
        "VLLM_MODEL": "m",
        "VLLM_ENABLE_PREFIX_CACHING": "false",
        "VLLM_DISABLE_LOG_STATS": "False",  # store_true in vLLM: negation.except
        "VLLM_ENFORCE_EAGER": "true",
    }
    argv = build_argv(MANIFESTS["vllm"], env)
    assert argv[3:-4] == ["--no-enable-prefix-caching", "--enforce-eager"]
    sglang = build_argv(MANIFESTS["sglang"], {"SGLANG_MODEL_PATH": "m", "SGLANG_X": "false"})
    assert "--x" not in " ".join(sglang) and "--no-x" not in sglang  # no off form: nothing


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ("spread", ["--lora-modules", "a=/p", "b=/q"]),
        ("repeat", ["--lora-modules", "a=/p", "--lora-modules", "b=/q"]),
        ("verbatim", ["--lora-modules", '["a=/p", "b=/q"]']),
    ],
)
def test_a_json_array_is_several_values_in_the_declared_form(
    form: str, expected: list[str]
) -> None:
    manifest = {"list_values": {"default": "spread", "flags": {"LORA_MODULES": form}}}
    env = {"VLLM_LORA_MODULES": '["a=/p", "b=/q"]'}
    assert engine_flags(env, "VLLM_", "kebab", manifest=manifest) == expected


def test_list_elements_that_are_not_strings_travel_as_compact_json() -> None:
    manifest = {"list_values": {"default": "spread"}}
    env = {"VLLM_LORA_MODULES": '[{"name": "a", "path": "/p"}, 3]'}
    assert engine_flags(env, "VLLM_", "kebab", manifest=manifest) == [
        "--lora-modules",
        '{"name":"a","path":"/p"}',
        "3",
    ]


def test_without_list_values_a_bracketed_value_is_one_argument() -> None:
    trt = build_argv(MANIFESTS["tensorrt-llm"], {"TRTLLM_MODEL": "/m", "TRTLLM_X": '["a","b"]'})
    assert trt[2:4] == ["--x", '["a","b"]']


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "[a, b]",
            "VLLM_SERVED_MODEL_NAME starts with '[' but is not a JSON array (Expecting value: line "
            '1 column 2 (char 1)); write several values as a JSON array, e.g. ["a","b"]',
        ),
        (
            "[]",
            "VLLM_SERVED_MODEL_NAME is an empty JSON array: a list flag needs at least one value; "
            "remove the key to leave the flag unset",
        ),
        (
            '["a", ""]',
            "VLLM_SERVED_MODEL_NAME holds an empty string; give every list element a value, or "
            "remove it",
        ),
    ],
)
def test_malformed_lists_are_refused(value: str, message: str) -> None:
    with pytest.raises(WrapperError) as caught:
        build_argv(MANIFESTS["vllm"], {"VLLM_MODEL": "m", "VLLM_SERVED_MODEL_NAME": value})
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("argv", "extra", "merged"),
    [
        (["--a", "--b", "1"], ["--b", "2"], ["--a", "--b", "2"]),
        (["--a", "--b=1"], ["--b", "2"], ["--a", "--b", "2"]),
        (["--t", "q", "v", "--z"], ["--t", "all"], ["--t", "all", "--z"]),
        (["m", "--metrics"], ["--metrics", "--x", "1"], ["m", "--metrics", "--x", "1"]),
        (["--n", "-1"], ["--n", "2"], ["--n", "2"]),
    ],
)
def test_container_args_replace_a_flag_group_in_place_or_follow(
    argv: list[str], extra: list[str], merged: list[str]
) -> None:
    assert merge_args(argv, extra) == merged


def _wrapper(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mlcc_constructs.core.wrapper", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True)


def test_the_engine_environment_holds_no_translated_key() -> None:
    delivered = {
        "VLLM_MODEL": "org/name",
        "VLLM_ENABLE_LORA": "true",
        "VLLM_MAX_NUM_SEQS": "8",
        "VLLM_ENABLE_PREFIX_CACHING": "false",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",  # the engine's own (engine_env)
    }
    env = {
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",  # else Python's locale coercion adds LC_CTYPE
        "HOME": "/tmp",
        "NCCL_DEBUG": "WARN",
        "VLLM_USAGE_SOURCE": "production-docker-image",  # the image's own, not delivered
        "MLCC_ENGINE": "vllm",
        "MLCC_ENGINE_KEYS": ",".join(k for k in delivered if "RUNTIME" not in k),
        **delivered,
    }
    exec_env = json.loads(_wrapper(env, "--print-env").stdout)
    assert exec_env == {
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",
        "HOME": "/tmp",
        "NCCL_DEBUG": "WARN",
        "VLLM_USAGE_SOURCE": "production-docker-image",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
    }


def test_the_wrapper_execs_the_engine_with_that_environment(tmp_path: Path) -> None:
    """A plugin engine whose command dumps what it was started with."""
    dump = "import json, os, sys; print(json.dumps([sys.argv[1:], dict(os.environ)]))"
    manifest = {
        "engine": "dumper",
        "env_var_prefix": "DUMP_",
        "entrypoint": "wrapper",
        "min_version": "1.0.0",
        "launch": {"command": [sys.executable, "-c", dump], "model": "flag", "port": 9,
                   "port_flag": "--port", "health_path": "/"},
        "engine_env": ["LOG_LEVEL"],
        "negation": {"prefix": "no-"},
        "list_values": {"default": "spread"},
        "capability_map": {"model": {"suffix": "MODEL", "value_type": "valued"}},
    }  # fmt: skip
    env = {
        "PATH": os.environ["PATH"],
        "MLCC_ENGINE": "dumper",
        "MLCC_ENGINE_MANIFEST_JSON": json.dumps(manifest),
        "MLCC_ENGINE_KEYS": "DUMP_MODEL,DUMP_NAMES,DUMP_CACHE",
        "DUMP_MODEL": "/m",
        "DUMP_NAMES": '["a","b"]',
        "DUMP_CACHE": "false",
        "DUMP_LOG_LEVEL": "debug",
    }
    argv, engine_env = json.loads(_wrapper(env, "--extra", "1").stdout)
    assert argv == [
        "--no-cache",
        "--model",
        "/m",
        "--names",
        "a",
        "b",
        "--port",
        "9",
        "--extra",
        "1",
    ]
    assert {k for k in engine_env if k.startswith(("DUMP_", "MLCC_"))} == {"DUMP_LOG_LEVEL"}


def _manifest_keys_read(source: str) -> set[str]:
    """The string keys the wrapper's code reads from a variable called ``manifest``
    (``manifest["k"]`` and ``manifest.get("k")``)."""
    import ast

    tree = ast.parse(source)
    # pod_manifest reads by MANIFEST_KEYS itself: what is read elsewhere is the question.
    tree.body = [n for n in tree.body if getattr(n, "name", None) != "pod_manifest"]
    keys = set()
    for node in ast.walk(tree):
        target, key = None, None
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            target, key = node.func.value, node.args[0]
        if isinstance(target, ast.Name) and target.id == "manifest":
            assert isinstance(key, ast.Constant), ast.unparse(node)  # a key the test can see
            keys.add(key.value)
    return keys


def test_the_pods_get_every_manifest_key_the_wrapper_reads() -> None:
    from mlcc_constructs.core import wrapper

    read = _manifest_keys_read(Path(wrapper.__file__).read_text())
    assert read and read <= {*wrapper.MANIFEST_KEYS, "capability_map"}
    # capability_map: only its model entry is read (model_key), and only that travels.
    for manifest in builtin_engines():
        shipped = wrapper.pod_manifest(manifest.raw)
        model = manifest.raw.get("capability_map", {}).get("model")
        assert set(shipped) - {"capability_map"} == {k for k in read if k in manifest.raw} - {
            "capability_map"
        }
        assert shipped.get("capability_map") == ({"model": model} if model else None)


def test_a_field_only_the_library_reads_changes_no_pod() -> None:
    from mlcc_constructs.core import wrapper

    vllm = next(m for m in builtin_engines() if m.engine == "vllm")
    changed = {**vllm.raw, "description": "another text", "api_paths": ["/v2"]}
    assert wrapper.pod_manifest(changed) == wrapper.pod_manifest(vllm.raw)
