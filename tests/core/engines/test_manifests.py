"""Engine manifests: the built-ins' facts, the schema + loader rules, and the registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.engines.manifests import EngineRegistry, builtin_engines, load_manifest
from mlcc_constructs.core.support.errors import MlccError

BUILTINS = {m.engine: m for m in builtin_engines()}


def test_builtin_engines_are_the_five_documented_ones() -> None:
    assert sorted(BUILTINS) == ["llama-cpp", "lmi", "sglang", "tensorrt-llm", "vllm"]


@pytest.mark.parametrize(
    ("engine", "prefix", "entrypoint", "min_version"),
    [
        ("vllm", "VLLM_", "wrapper", "0.6.0"),
        ("sglang", "SGLANG_", "wrapper", "0.5.0"),
        ("tensorrt-llm", "TRTLLM_", "wrapper", "0.17.0"),
        ("lmi", "OPTION_", "image", "0.29.0"),
        ("llama-cpp", "SM_LLAMA_CPP_", "image", "0.1.0"),
    ],
)
def test_builtin_identity(engine: str, prefix: str, entrypoint: str, min_version: str) -> None:
    manifest = BUILTINS[engine]
    assert (manifest.env_var_prefix, manifest.entrypoint, manifest.min_version) == (
        prefix,
        entrypoint,
        min_version,
    )


def _suffixes(engine: str) -> dict[str, str]:
    return {c.name: c.suffix for c in BUILTINS[engine].capabilities}


def test_vllm_capabilities() -> None:
    assert _suffixes("vllm") == {
        "model": "MODEL",
        "tensor_parallel_degree": "TENSOR_PARALLEL_SIZE",
        "pipeline_parallel_degree": "PIPELINE_PARALLEL_SIZE",
        "quantization": "QUANTIZATION",
        "served_model_name": "SERVED_MODEL_NAME",
        "lora_enable": "ENABLE_LORA",
        "lora_max": "MAX_LORAS",
        "lora_max_rank": "MAX_LORA_RANK",
    }
    lora_enable = BUILTINS["vllm"].capability("lora_enable")
    rank = BUILTINS["vllm"].capability("lora_max_rank")
    assert lora_enable is not None and rank is not None
    assert (lora_enable.value_type, lora_enable.groups) == ("boolean", ())
    assert rank.default == "16"
    assert rank.allowed == ("1", "8", "16", "32", "64", "128", "256", "320", "512")


def test_sglang_declares_the_dynamic_lora_group_only() -> None:
    assert _suffixes("sglang")["model"] == "MODEL_PATH"
    assert _suffixes("sglang")["tensor_parallel_degree"] == "TP_SIZE"
    assert _suffixes("sglang")["pipeline_parallel_degree"] == "PP_SIZE"
    assert _suffixes("sglang")["served_model_name"] == "SERVED_MODEL_NAME"
    lora_enable = BUILTINS["sglang"].capability("lora_enable")
    assert lora_enable is not None
    assert lora_enable.value_type == "boolean"
    assert lora_enable.groups == (("lora_max_rank", "lora_target_modules"),)


def test_tensorrt_llm_is_snake_positional_and_has_no_lora_flags() -> None:
    manifest = BUILTINS["tensorrt-llm"]
    assert manifest.launch["flag_style"] == "snake"
    assert manifest.launch["model"] == "positional"
    assert not any(c.name.startswith("lora") for c in manifest.capabilities)


@pytest.mark.parametrize("engine", ["lmi", "llama-cpp"])
def test_model_b_engines_declare_no_capabilities(engine: str) -> None:
    assert BUILTINS[engine].capabilities == ()


# ---- bad manifests: every case asserts the exact error text ---------------------------

VALID: dict[str, Any] = {
    "engine": "myengine",
    "env_var_prefix": "MYENG_",
    "entrypoint": "wrapper",
    "min_version": "1.0.0",
    "launch": {"command": ["myengine"], "model": "flag", "port": 9000, "health_path": "/health"},
    "capability_map": {
        "model": {"suffix": "MODEL", "value_type": "valued"},
        "lora_enable": {"suffix": "LORA", "value_type": "boolean", "requires": ["lora_rank"]},
        "lora_rank": {"suffix": "LORA_RANK", "value_type": "valued", "default": 8},
    },
}


def _with(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(VALID))
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        target = document
        for part in parents:
            target = target[part]
        if value is _DELETE:
            del target[leaf]
        else:
            target[leaf] = value
    return document


_DELETE = object()

BAD_MANIFESTS = [
    (
        "wrapper engine without a model capability",
        _with(capability_map={"tp": {"suffix": "TP", "value_type": "valued"}}),
        [
            "{F}:/capability_map: a wrapper engine must declare a 'model' capability: the "
            "wrapper passes the model to the engine through it (got ['tp']; fix: add \"model\": "
            '{"suffix": "MODEL", "value_type": "valued"} (the env suffix the engine\'s model '
            "flag is named after))"
        ],
    ),
    (
        "wrapper engine with a hub_model_env",
        _with(hub_model_env="HF_MODEL_ID"),
        [
            "{F}:/hub_model_env: hub_model_env is for image engines: a wrapper engine is told "
            "its model through its 'model' capability (got 'HF_MODEL_ID'; fix: remove "
            "hub_model_env)"
        ],
    ),
    (
        "hub_model_env that is no variable name",
        _with(entrypoint="image", capability_map={}, hub_model_env="hf-model"),
        ["{F}:/hub_model_env: 'hf-model' does not match '^[A-Z_][A-Z0-9_]*$'"],
    ),
    (
        "missing field",
        _with(min_version=_DELETE),
        ["{F}:/: 'min_version' is a required property"],
    ),
    (
        "bad prefix",
        _with(env_var_prefix="myeng"),
        [
            "{F}:/env_var_prefix: env_var_prefix must be upper-case and end with '_' "
            "(got 'myeng'; allowed: ^[A-Z][A-Z0-9_]*_$, e.g. MYENGINE_)"
        ],
    ),
    (
        "Model-B with capabilities",
        _with(entrypoint="image"),
        [
            "{F}:/capability_map: entrypoint 'image' (Model-B) must declare an empty "
            "capability_map: the image owns its env contract, so MLCC injects nothing "
            "(got ['lora_enable', 'lora_rank', 'model']; "
            'fix: set "capability_map": {} or use "entrypoint": "wrapper")'
        ],
    ),
    (
        "unknown value_type",
        _with(capability_map__model__value_type="string"),
        [
            "{F}:/capability_map/model/value_type: value not allowed "
            "(got 'string'; allowed: valued, boolean)"
        ],
    ),
    (
        "companion naming a missing capability",
        _with(capability_map__lora_enable__requires=["lora_rank", "lora_modules"]),
        [
            "{F}:/capability_map/lora_enable/requires/1: companion is not declared in this "
            "capability_map (got 'lora_modules'; allowed: model, lora_enable, lora_rank; "
            "fix: declare capability_map.lora_modules or remove it from the group)"
        ],
    ),
    (
        "both requires forms",
        _with(capability_map__lora_enable__requires_any_of=[["lora_rank"]]),
        [
            "{F}:/capability_map/lora_enable: declares both 'requires' and 'requires_any_of' "
            "(fix: 'requires' is sugar for one requires_any_of group: keep only one form)"
        ],
    ),
    (
        "default outside allowed",
        _with(capability_map__lora_rank__allowed=[16, 32]),
        [
            "{F}:/capability_map/lora_rank/default: default is not one of the allowed values "
            "(got 8; allowed: 16, 32)"
        ],
    ),
    (
        "sentinel default",
        _with(capability_map__lora_rank__default="none"),
        [
            "{F}:/capability_map/lora_rank/default: a default must be a concrete value "
            "(absent is safer than empty) (got 'none'; fix: remove the default)"
        ],
    ),
    (
        "duplicate suffix",
        _with(capability_map__lora_rank__suffix="MODEL"),
        [
            "{F}:/capability_map/lora_rank/suffix: suffix also used by capability 'model' "
            "(got 'MODEL'; fix: give every capability its own env suffix)"
        ],
    ),
    (
        "wrapper engine without a command",
        _with(launch__command=_DELETE),
        ["{F}:/launch: 'command' is a required property"],
    ),
    (
        "capability suffix listed in engine_env",
        _with(engine_env=["LORA_RANK"]),
        [
            "{F}:/capability_map/lora_rank/suffix: a capability's suffix is also listed in "
            "engine_env: it cannot be both a flag and the engine's own env setting (got "
            "'LORA_RANK'; fix: remove it from engine_env or rename the capability's suffix)"
        ],
    ),
    (
        "unknown list form",
        _with(list_values={"default": "spread", "flags": {"NAMES": "comma"}}),
        [
            "{F}:/list_values/flags/NAMES: value not allowed (got 'comma'; allowed: spread, "
            "repeat, verbatim)"
        ],
    ),
    (
        "off-form prefix without a separator",
        _with(negation={"prefix": "no"}),
        ["{F}:/negation/prefix: 'no' does not match '^[a-z][a-z0-9]*[-_]$'"],
    ),
    (
        "engine_env suffix declared a list flag and a flag without off form",
        _with(
            engine_env=["LOG_LEVEL"],
            list_values={"default": "spread", "flags": {"LOG_LEVEL": "repeat"}},
            negation={"prefix": "no-", "except": ["LOG_LEVEL"]},
        ),
        [
            "{F}:/list_values/flags/LOG_LEVEL: names a flag, but the suffix is listed in "
            "engine_env (the engine's own env settings, never flags) (got 'LOG_LEVEL'; fix: "
            "remove it here or from engine_env)",
            "{F}:/negation/except/0: names a flag, but the suffix is listed in engine_env (the "
            "engine's own env settings, never flags) (got 'LOG_LEVEL'; fix: remove it here or "
            "from engine_env)",
        ],
    ),
    (
        "unknown field",
        _with(capabilities={}),
        [
            "{F}:/: Additional properties are not allowed ('capabilities' was unexpected)",
        ],
    ),
]


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in BAD_MANIFESTS], ids=[c[0] for c in BAD_MANIFESTS]
)
def test_bad_manifest_errors(tmp_path: Path, document: Any, expected: list[str]) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(document))
    with pytest.raises(MlccError) as caught:
        load_manifest(path)
    assert [str(p) for p in caught.value.problems] == [
        e.replace("{F}", str(path)) for e in expected
    ]


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text('{"engine": "x",\n  "env_var_prefix": }')
    with pytest.raises(MlccError) as caught:
        load_manifest(path)
    assert str(caught.value) == (
        f"{path}: not valid JSON: Expecting value at line 2 column 21 "
        "(fix: fix the JSON syntax (a trailing comma or a missing quote is typical))"
    )


def test_the_valid_fixture_loads(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(VALID))
    manifest = load_manifest(path)
    assert manifest.capability("lora_enable") is not None
    assert manifest.capability("lora_enable").groups == (("lora_rank",),)  # type: ignore[union-attr]


# ---- registry ---------------------------------------------------------------------------


def _plugin(root: Path, name: str, prefix: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    document = {**VALID, "engine": name, "env_var_prefix": prefix}
    (folder / "manifest.json").write_text(json.dumps(document))
    return root


def test_plugin_shadowing_a_builtin_is_refused_unless_asked(tmp_path: Path) -> None:
    _plugin(tmp_path, "vllm", "MYVLLM_")
    with pytest.raises(MlccError) as caught:
        EngineRegistry.load([tmp_path], use_env=False)
    assert str(caught.value) == (
        f"{tmp_path / 'vllm' / 'manifest.json'}:/engine: plugin shadows the built-in engine "
        "'vllm' (got 'vllm'; fix: rename the plugin, or override it explicitly "
        "(--override-builtin vllm / allow_override=['vllm']))"
    )
    registry = EngineRegistry.load([tmp_path], use_env=False, allow_override=["vllm"])
    assert registry.get("vllm").env_var_prefix == "MYVLLM_"


def test_plugin_reusing_a_prefix_is_refused(tmp_path: Path) -> None:
    _plugin(tmp_path, "other", "SGLANG_")
    with pytest.raises(MlccError) as caught:
        EngineRegistry.load([tmp_path], use_env=False)
    assert "env_var_prefix is the prefix SGLANG_ of engine 'sglang'" in str(caught.value)


def test_plugins_from_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plugin(tmp_path, "myengine", "MYENG_")
    monkeypatch.setenv("MLCC_ENGINE_PATH", str(tmp_path))
    assert "myengine" in EngineRegistry.load().names()
    assert "myengine" not in EngineRegistry.load(use_env=False).names()


def test_missing_plugin_folder(tmp_path: Path) -> None:
    with pytest.raises(MlccError) as caught:
        EngineRegistry.load([tmp_path / "nope"], use_env=False)
    assert str(caught.value) == (
        f"{tmp_path / 'nope'}: plugin folder does not exist (fix: pass a folder holding "
        "<engine>/manifest.json (or one engine's manifest.json))"
    )


def test_a_key_belongs_to_the_engine_of_its_prefix(tmp_path: Path) -> None:
    # Overlapping prefixes (VLLM_X_ against VLLM_) are refused:
    # tests/core/engines/test_plugin_validate.py.
    _plugin(tmp_path, "myengine", "MYENG_")
    registry = EngineRegistry.load([tmp_path], use_env=False)
    assert registry.owner_of("MYENG_FOO").engine == "myengine"  # type: ignore[union-attr]
    assert registry.owner_of("VLLM_FOO").engine == "vllm"  # type: ignore[union-attr]
    assert registry.owner_of("NCCL_DEBUG") is None


def test_duplicate_json_keys_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text('{"engine": "a", "engine": "b"}')
    with pytest.raises(MlccError) as caught:
        load_manifest(path)
    assert str(caught.value) == (
        f"{path}: duplicate key 'engine': JSON keeps only the last one (fix: keep the key once)"
    )


def test_override_builtin_must_name_a_builtin(tmp_path: Path) -> None:
    _plugin(tmp_path, "mine", "MINE_")
    with pytest.raises(MlccError) as caught:
        EngineRegistry.load([tmp_path], use_env=False, allow_override=["nosuch"])
    assert str(caught.value) == (
        "--override-builtin: --override-builtin names no built-in engine: 'nosuch' (got "
        "'nosuch'; allowed: llama-cpp, lmi, sglang, tensorrt-llm, vllm; fix: name the built-in "
        "engine the plugin replaces, or drop the option)"
    )
