"""Tier-1 resolution and Tier-2 pass-through (ADR-010)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

S3_MODEL = "s3://b/m/"
ENGINES = Path(__file__).resolve().parents[3] / "engines"


def spec(**overrides: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": {"name": "vllm", "version": "0.31.0"},
        "model": {"uri": S3_MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
    }
    values.update(overrides)
    return flat_spec(**values)


def test_sglang_lora_gets_both_companion_defaults_and_nothing_else() -> None:
    resolution = resolve(spec(engine="sglang", lora=True, engine_version="0.5.21"))
    assert resolution.tier1 == (
        ("SGLANG_MODEL_PATH", "/opt/ml/model"),
        ("SGLANG_TP_SIZE", "4"),
        ("SGLANG_ENABLE_METRICS", "true"),  # eks scrapes /metrics: SGLang serves it only so
        ("SGLANG_ENABLE_LORA", "true"),
        ("SGLANG_MAX_LORA_RANK", "16"),
        ("SGLANG_LORA_TARGET_MODULES", "all"),
    )
    assert resolution.tier2 == ()
    assert resolution.skipped == ()


def test_vllm_lora_stays_bare_with_no_companion_defaults() -> None:
    resolution = resolve(spec(lora=True, model_load="mount"))
    assert resolution.env == {
        "VLLM_MODEL": "/opt/ml/model",
        "VLLM_TENSOR_PARALLEL_SIZE": "4",
        "VLLM_ENABLE_LORA": "true",
        # eks pods load adapters at runtime: vLLM serves its load route only with this
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true",
    }
    assert "--enable-lora" in resolution.argv()
    assert resolution.argv()[resolution.argv().index("--enable-lora") + 1].startswith("--")


def test_huggingface_model_is_passed_by_id() -> None:
    resolution = resolve(spec(model="meta-llama/Llama-3.1-8B-Instruct"))
    assert resolution.env["VLLM_MODEL"] == "meta-llama/Llama-3.1-8B-Instruct"


def test_tensor_parallel_defaults_to_gpus_and_a_user_value_wins() -> None:
    assert resolve(spec(instance_type="g5.48xlarge")).env["VLLM_TENSOR_PARALLEL_SIZE"] == "8"
    assert resolve(spec(tensor_parallel_degree=2)).env["VLLM_TENSOR_PARALLEL_SIZE"] == "2"
    # the env key is Tier 1 closed (tests/core/engines/test_tier1_closed.py): the spec field sets it


def test_quantization_only_when_set() -> None:
    assert "VLLM_QUANTIZATION" not in resolve(spec()).env
    assert resolve(spec(quantization="awq")).env["VLLM_QUANTIZATION"] == "awq"


def test_tier2_is_forwarded_verbatim_after_tier1_in_user_order() -> None:
    resolution = resolve(
        spec(
            engine="sglang",
            engine_version="0.5.21",
            env={"SGLANG_MAX_RUNNING_REQUESTS": "64", "SGLANG_CHUNKED_PREFILL_SIZE": "8192"},
        )
    )
    assert list(resolution.env) == [
        "SGLANG_MODEL_PATH",
        "SGLANG_TP_SIZE",
        "SGLANG_ENABLE_METRICS",
        "SGLANG_MAX_RUNNING_REQUESTS",
        "SGLANG_CHUNKED_PREFILL_SIZE",
    ]


def test_user_companion_value_overrides_the_default_via_tier2_key() -> None:
    resolution = resolve(
        spec(
            engine="sglang", lora=True, env={"SGLANG_MAX_LORA_RANK": "64"}, engine_version="0.5.21"
        )
    )
    assert resolution.env["SGLANG_MAX_LORA_RANK"] == "64"
    assert resolution.tier2 == ()


def test_plain_env_is_kept_after_engine_env() -> None:
    resolution = resolve(spec(env={"NCCL_DEBUG": "INFO", "VLLM_MAX_NUM_SEQS": "8"}))
    assert list(resolution.env)[-2:] == ["VLLM_MAX_NUM_SEQS", "NCCL_DEBUG"]
    assert "--nccl-debug" not in resolution.argv()


def test_model_b_engine_gets_no_tier1_and_keeps_tier2() -> None:
    resolution = resolve(
        spec(engine="lmi", engine_version="0.33.0", env={"OPTION_ROLLING_BATCH": "vllm"})
    )
    assert resolution.tier1 == ()
    assert resolution.env == {"OPTION_ROLLING_BATCH": "vllm"}


def no_model(engine: str, prefix: str) -> str:
    return (
        f"{engine} receives no model from the library: the image reads it from /opt/ml/model "
        f"(where an s3:// model is mounted) or from its own {prefix}* settings, and 'org/name' "
        f"is neither; stage the model in S3, or name it with --set {prefix}<the image's model "
        "setting>=..."
    )


@pytest.fixture(scope="module")
def registry_without_hub_model_env(tmp_path_factory: pytest.TempPathFactory) -> EngineRegistry:
    """The built-ins plus ``bare-image``: LMI's manifest without ``hub_model_env``."""
    folder = tmp_path_factory.mktemp("plugins") / "bare-image"
    folder.mkdir()
    document = json.loads((ENGINES / "lmi" / "manifest.json").read_text())
    document.update(engine="bare-image", env_var_prefix="BARE_")
    del document["hub_model_env"]
    (folder / "manifest.json").write_text(json.dumps(document))
    return EngineRegistry.load([folder.parent], use_env=False)


@pytest.mark.parametrize(
    ("engine", "model", "target", "tier1", "warning"),
    [
        # a Hub id on eks goes to the variable the image downloads from
        ("lmi", "org/name", "eks", (("HF_MODEL_ID", "org/name"),), None),
        ("llama-cpp", "org/name", "eks", (("SM_LLAMA_CPP_HF_REPO", "org/name"),), None),
        # mounted at /opt/ml/model, where the image looks by itself
        ("lmi", S3_MODEL, "eks", (), None),
        ("llama-cpp", S3_MODEL, "eks", (), None),
        ("lmi", "org/name", "hyperpod-eks", (), None),  # the operator stages it there
        ("vllm", "org/name", "eks", (("VLLM_MODEL", "org/name"),), None),  # the wrapper's flag
        # an image engine with no such variable: nothing reaches it, and the user is told
        ("bare-image", "org/name", "eks", (), no_model("bare-image", "BARE_")),
        ("bare-image", S3_MODEL, "eks", (), None),
    ],
)
def test_a_hub_model_reaches_an_image_engine_through_its_hub_model_env(
    registry_without_hub_model_env: EngineRegistry,
    engine: str,
    model: str,
    target: str,
    tier1: tuple[tuple[str, str], ...],
    warning: str | None,
) -> None:
    version = {"vllm": "0.31.0", "llama-cpp": "0.1.0"}.get(engine, "0.33.0")
    resolution = resolve(
        spec(
            engine=engine,
            model=model,
            engine_version=version,
            instance_type="ml.g5.xlarge",
            target=target,
        ),
        registry=registry_without_hub_model_env,
    )
    assert [(k, v) for k, v in resolution.tier1 if "MODEL" in k or "HF_REPO" in k] == list(tier1)
    assert resolution.warnings == ((warning,) if warning else ())


@pytest.mark.parametrize(
    ("engine", "key"),
    [("lmi", "HF_MODEL_ID"), ("llama-cpp", "SM_LLAMA_CPP_HF_REPO"), ("vllm", "VLLM_MODEL")],
)
def test_the_model_variable_is_tier1_and_not_set_by_hand(engine: str, key: str) -> None:
    version = {"vllm": "0.31.0", "llama-cpp": "0.1.0"}.get(engine, "0.33.0")
    with pytest.raises(MlccError) as caught:
        resolve(spec(engine=engine, engine_version=version, env={key: "org/other"}))
    assert str(caught.value) == (
        f"/engine/env/{key}: {key} sets the model, which is Tier 1: the library computes it from "
        "the "
        "model source (got 'org/other'; fix: set model.uri (--model; DeploymentSpec.model.uri) "
        "instead)"
    )


def test_unknown_version_fails_open_with_a_warning() -> None:
    resolution = resolve(spec(engine_version=None))
    assert resolution.warnings == (
        "engine version not given: min_version 0.6.0 and 'since' gates are not checked "
        "(pass --engine-version)",
    )


@pytest.mark.parametrize("given", ["nightly", "banana", "", "latest"])
def test_an_engine_version_that_is_not_a_version_is_refused(given: str) -> None:
    with pytest.raises(MlccError, match="/engine/version: engine_version is not a version number"):
        resolve(spec(engine_version=given))


def test_engine_env_settings_pass_through_as_env() -> None:
    """VLLM_PORT is vLLM's internal port setting (engine_env), not the API server's --port."""
    resolution = resolve(
        spec(env={"VLLM_PORT": "29500", "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"})
    )
    assert resolution.tier2 == (
        ("VLLM_PORT", "29500"),
        ("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True"),
    )
    assert resolution.argv()[-2:] == ["--port", "8000"]
    assert "--allow-runtime-lora-updating" not in resolution.argv()


def test_a_false_boolean_reaches_an_engine_with_an_off_form_as_off() -> None:
    """vLLM declares its off form (--no-<flag>): false means off, for Tier 1 and Tier 2."""
    resolution = resolve(
        spec(env={"VLLM_ENABLE_LORA": "false", "VLLM_ENABLE_PREFIX_CACHING": "False"})
    )
    assert resolution.env["VLLM_ENABLE_LORA"] == "false"
    assert resolution.env["VLLM_ENABLE_PREFIX_CACHING"] == "False"
    argv = resolution.argv()
    assert "--no-enable-lora" in argv and "--no-enable-prefix-caching" in argv
    assert "--enable-lora" not in argv
    # 0.31.0's parser is recorded: both flags are checked, and fit it
    assert resolution.warnings == ()


def test_a_false_boolean_the_engine_cannot_negate_passes_nothing_with_a_warning() -> None:
    """The seed rule stays the default: SGLang has no off form, a store_true vLLM flag none."""
    sglang = resolve(
        spec(
            engine="sglang",
            engine_version="0.5.21",
            env={"SGLANG_ENABLE_LORA": "false", "SGLANG_ENABLE_MIXED_CHUNK": "false"},
        )
    )
    assert "SGLANG_ENABLE_LORA" not in sglang.env  # Tier 1: omitted
    assert sglang.env["SGLANG_ENABLE_MIXED_CHUNK"] == "false"  # Tier 2: forwarded, passes nothing
    assert not any("enable" in a for a in sglang.argv() if a != "--enable-metrics")
    assert sglang.warnings == (
        "SGLANG_ENABLE_MIXED_CHUNK=false passes nothing: --enable-mixed-chunk has no off form "
        "in sglang (manifest negation.only); the engine's default applies",
        "SGLANG_ENABLE_LORA=false passes nothing: --enable-lora has no off form in sglang "
        "(manifest negation.only); the engine's default applies",
    )
    vllm = resolve(spec(engine_version="0.31.0", env={"VLLM_DISABLE_LOG_STATS": "false"}))
    assert "--no-disable-log-stats" not in vllm.argv()
    assert vllm.warnings == (
        "VLLM_DISABLE_LOG_STATS=false passes nothing: --disable-log-stats has no off form in "
        "vllm (manifest negation.except); the engine's default applies",
    )


def test_list_values_are_checked_and_spread() -> None:
    resolution = resolve(
        spec(
            engine="sglang",
            engine_version="0.5.21",
            lora=True,
            env={"SGLANG_LORA_TARGET_MODULES": '["q_proj", "v_proj"]'},
        )
    )
    argv = resolution.argv()
    index = argv.index("--lora-target-modules")
    assert argv[index : index + 3] == ["--lora-target-modules", "q_proj", "v_proj"]


def test_computed_values_lose_to_user_values_and_win_over_defaults() -> None:
    computed = {"lora_max_rank": "64"}
    fitted = resolve(spec(lora=True), computed=computed)
    assert fitted.env["VLLM_MAX_LORA_RANK"] == "64"
    user = resolve(spec(lora=True, env={"VLLM_MAX_LORA_RANK": "32"}), computed=computed)
    assert user.env["VLLM_MAX_LORA_RANK"] == "32"


# ---- bad input: each case asserts the exact error text ---------------------------------

BAD_SPECS = [
    (
        "foreign-prefix user key",
        {"env": {"SGLANG_TP_SIZE": "2"}},
        "/engine/env/SGLANG_TP_SIZE: key has the prefix SGLANG_ of engine 'sglang', but the active "
        "engine 'vllm' reads only VLLM_* (got 'SGLANG_TP_SIZE'; fix: rename it to VLLM_TP_SIZE "
        "or drop it)",
    ),
    (
        "empty value",
        {"env": {"VLLM_MAX_NUM_SEQS": ""}},
        "/engine/env/VLLM_MAX_NUM_SEQS: empty value: an engine would receive a flag with no "
        "argument "
        "(got ''; fix: remove the key to leave the setting unset, or give it a value)",
    ),
    (
        "sentinel valued capability",
        {"quantization": "none"},
        "/engine/quantization: VLLM_QUANTIZATION needs a concrete value: an empty or sentinel "
        "value "
        "makes engines reject startup (got 'none'; fix: omit the setting to leave it unset)",
    ),
    (
        "TP above GPUs",
        {"tensor_parallel_degree": 8},
        "/compute/tensor_parallel_degree: tensor-parallel degree must divide the 4 GPU(s) of "
        "ml.g5.12xlarge (got '8'; allowed: 1, 2, 4; fix: use one of the allowed degrees, or pick "
        "an instance type with more GPUs)",
    ),
    (
        "TP that does not divide the GPUs",
        {"tensor_parallel_degree": 3},
        "/compute/tensor_parallel_degree: tensor-parallel degree must divide the 4 GPU(s) of "
        "ml.g5.12xlarge (got '3'; allowed: 1, 2, 4; fix: use one of the allowed degrees, or pick "
        "an instance type with more GPUs)",
    ),
    (
        "version below minimum",  # lmi: an engine without recorded parser facts
        {
            "engine": "lmi",
            "engine_version": "0.28.0",
            "image": "registry.example.com/team/lmi:0.28.0",
        },
        "/engine/version: lmi 0.28.0 is below the engine's min_version (got '0.28.0'; "
        "allowed: >= 0.29.0; fix: use a lmi image of version 0.29.0 or later)",
    ),
    (
        "unknown engine",
        {"engine": "vlm"},
        "/engine/name: unknown engine (got 'vlm'; allowed: llama-cpp, lmi, sglang, tensorrt-llm, "
        "vllm; fix: did you mean vllm or lmi? a plugin engine needs --plugin-dir or "
        "MLCC_ENGINE_PATH)",
    ),
    (
        "unknown instance type",
        {"compute": {"instance_type": "ml.g5.12xlrge"}},
        "/compute/instance_type: unknown instance type (got 'ml.g5.12xlrge'; allowed: the types in "
        "mlcc_constructs/data/instance_catalog.json; fix: did you mean ml.g5.12xlarge or "
        "ml.g5.2xlarge or ml.g6.12xlarge?)",
    ),
    (
        "secret-like key in plain env",
        {"env": {"HF_TOKEN": "hf_abc"}},
        "/engine/env/HF_TOKEN: looks like a credential: it would be stored in plain text in a "
        "ConfigMap "
        "or the pod spec (got 'HF_TOKEN'; fix: reference a Kubernetes Secret instead "
        "(engine.secret_env={'HF_TOKEN': SecretRef(name=..., key=...)}, or --secret-env "
        "HF_TOKEN=SECRET:KEY))",
    ),
    (
        "secret-like engine key",
        {"env": {"VLLM_API_KEY": "abc"}},
        "/engine/env/VLLM_API_KEY: VLLM_API_KEY sets the API key, which is Tier 1: the library "
        "delivers it from a secret, never from env (manifest api_key) (got 'VLLM_API_KEY'; fix: "
        "remove it; set endpoint.api_key_secret (--api-key-secret; "
        "DeploymentSpec.endpoint.api_key_secret), or "
        "give VLLM_API_KEY from a Kubernetes Secret in engine.secret_env)",
    ),
    (
        "value outside allowed",
        {"env": {"VLLM_MAX_LORA_RANK": "48"}},
        "/engine/env/VLLM_MAX_LORA_RANK: value not allowed for VLLM_MAX_LORA_RANK (got '48'; "
        "allowed: "
        "1, 8, 16, 32, 64, 128, 256, 320, 512; fix: use one of the allowed values (declared in "
        "the engine manifest))",
    ),
    (
        "non-boolean for a boolean",
        {"env": {"VLLM_ENABLE_LORA": "yes"}},
        "/engine/env/VLLM_ENABLE_LORA: VLLM_ENABLE_LORA is a presence-only flag (got 'yes'; "
        "allowed: "
        "true, false)",
    ),
    (
        "LoRA on an engine without the capability",
        {"engine": "tensorrt-llm", "lora": True, "engine_version": "1.0.0"},
        "/lora/enabled: engine 'tensorrt-llm' declares no 'lora_enable' capability (declared: "
        "model, "
        "tensor_parallel_degree) (got 'true'; fix: drop lora.enabled, or pass the engine's own "
        "flag "
        "through Tier 2 (TRTLLM_<FLAG>=<value>))",
    ),
    (
        "model through the env",
        {"env": {"VLLM_MODEL": "/elsewhere"}},
        "/engine/env/VLLM_MODEL: VLLM_MODEL sets the model, which is Tier 1: the library computes "
        "it "
        "from the model source (got '/elsewhere'; fix: set model.uri (--model; "
        "DeploymentSpec.model.uri) "
        "instead)",
    ),
    (
        "port owned by the launch section",
        {"engine": "sglang", "engine_version": "0.5.21", "env": {"SGLANG_PORT": "9000"}},
        "/engine/env/SGLANG_PORT: SGLANG_PORT would set --port, which the manifest's launch "
        "section owns "
        "(port 30000 is what the probes, the Service and the IEC use) (got '9000'; fix: remove "
        "it; change launch.port in the engine manifest instead)",
    ),
    (
        "off form the engine version lacks",  # and 0.9.0's parser is not recorded
        {
            "engine_version": "0.9.0",
            "image": "vllm/vllm-openai:v0.9.0",
            "env": {"VLLM_ENABLE_PREFIX_CACHING": "false"},
        },
        "/engine/version: vllm 0.9.0 has no recorded parser facts: its flags and values cannot "
        "be checked (got '0.9.0'; allowed: a vllm release with recorded facts: 0.31.0, 0.33.0; "
        "fix: use an image of vllm 0.31.0 or 0.33.0, or record the release's parser "
        "(tools/engine_parser_facts.py writes mlcc_constructs/data/engine_parsers/vllm/"
        "0.9.0.json))\n"
        "/engine/env/VLLM_ENABLE_PREFIX_CACHING: false asks for the off form of the flag, but vllm "
        "takes --no-enable-prefix-caching only from version 0.10.0 (engine version 0.9.0) (got "
        "'false'; fix: remove the key (the engine's default applies) or use a newer image)",
    ),
    (
        "malformed list value",
        {"env": {"VLLM_IGNORE_PATTERNS": '["a", b]'}},
        "/engine/env/VLLM_IGNORE_PATTERNS: starts with '[' but is not a JSON array (Expecting "
        "value: "
        "line 1 column 7 (char 6)) (got '[\"a\", b]'; fix: write several values as a JSON "
        'array, e.g. ["a","b"])',
    ),
    (
        "empty list value",
        {"env": {"VLLM_IGNORE_PATTERNS": "[]"}},
        "/engine/env/VLLM_IGNORE_PATTERNS: is an empty JSON array: a list flag needs at least one "
        "value (got '[]'; fix: remove the key to leave the flag unset)",
    ),
    (
        "list element outside allowed",
        {"env": {"VLLM_MAX_LORA_RANK": "[16, 48]"}},
        "/engine/env/VLLM_MAX_LORA_RANK: value not allowed for VLLM_MAX_LORA_RANK (got '[16, 48]'; "
        "allowed: 1, 8, 16, 32, 64, 128, 256, 320, 512; fix: use one of the allowed values "
        "(declared in the engine manifest))",
    ),
    (
        "not a model source",
        {"model": "llama-3"},
        "/model/uri: not a model source (got 'llama-3'; allowed: s3://<bucket>/<prefix>/ or a "
        "Hugging Face id <org>/<name>; fix: stage the model to S3 or name its Hugging Face "
        "repository)",
    ),
    (
        "S3 URI without a prefix",
        {"model": "s3://bucket/"},
        "/model/uri: the S3 model URI needs a key prefix (the folder holding config.json) (got "
        "'s3://bucket/'; allowed: s3://<bucket>/<prefix>/; fix: point at the staged model "
        "folder, e.g. s3://my-bucket/models/org/name/)",
    ),
    (
        "set twice with different values",
        {"quantization": "awq", "env": {"VLLM_QUANTIZATION": "fp8"}},
        "/engine/quantization: capability 'quantization' is set twice with different values "
        "(engine.env.VLLM_QUANTIZATION='fp8') (got 'awq'; fix: set it once, either "
        "engine.env.VLLM_QUANTIZATION "
        "or engine.quantization)",
    ),
    (
        "invalid env name",
        {"env": {"1BAD": "x"}},
        "/engine/env/1BAD: not an environment variable name (got '1BAD'; allowed: letters, digits "
        "and "
        "'_', not starting with a digit, at most 253)",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "expected"), [c[1:] for c in BAD_SPECS], ids=[c[0] for c in BAD_SPECS]
)
def test_bad_spec_errors(overrides: dict[str, Any], expected: str) -> None:
    with pytest.raises(MlccError) as caught:
        resolve(spec(**overrides))
    assert str(caught.value) == expected


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(MlccError) as caught:
        resolve(spec(env={"SGLANG_X": "1", "HF_TOKEN": "t", "VLLM_Y": ""}, instance_type="zz"))
    pointers = [p.pointer for p in caught.value.problems]
    assert pointers == [
        "/compute/instance_type",
        "/engine/env/SGLANG_X",
        "/engine/env/HF_TOKEN",
        "/engine/env/VLLM_Y",
    ]


def test_hyperpod_stages_huggingface_models_at_the_mount() -> None:
    """The HyperPod operator's init container downloads the model (it alone gets the token)."""
    hub = "meta-llama/Llama-3.1-8B-Instruct"
    assert resolve(spec(model=hub, target="hyperpod-eks")).env["VLLM_MODEL"] == "/opt/ml/model"
    assert resolve(spec(model=hub, target="eks")).env["VLLM_MODEL"] == hub
