"""LMCache wiring through the renderer: DeploymentSpec.cache_backend → injected eks Deployment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.cache import CacheBackendSpec
from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec, sectioned_doc
from tests.core.cache.test_cache_admission import seed_safe_spec
from tests.engine_process import engine_process

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
CLIENT_CONFIG = "/var/run/inference-cache/lmcache/client.yaml"


def _spec(engine: str, runtime: str, **extra: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": {"name": engine, "version": "0.31.0" if engine == "vllm" else "0.5.21"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "cached",
        "cache": {"backend": CacheBackendSpec.from_dict(seed_safe_spec(runtime))},
    }
    values.update(extra)
    return flat_spec(**values)


def _kind(objects: Any, kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


@pytest.mark.parametrize("delivery", ["env", "args"])
def test_vllm_deployment_carries_the_adapter_wire_and_sidecar(delivery: str) -> None:
    rendered = render(_spec("vllm", "VLLM", config_delivery=delivery), context=CONTEXT)
    (deployment,) = _kind(rendered.objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    engine = next(c for c in pod["containers"] if c["name"] == ENGINE_CONTAINER)
    argv = engine["command"] + engine.get("args", [])
    assert "--disable-hybrid-kv-cache-manager" in argv
    kv = json.loads(argv[argv.index("--kv-transfer-config") + 1])
    assert kv["kv_connector"] == "LMCacheMPConnector"
    assert argv[argv.index("--max-model-len") + 1] == "32768"
    env = {e["name"]: e.get("value") for e in engine["env"]}
    assert env["PYTHONHASHSEED"] == "0"
    assert env["LMCACHE_LOG_LEVEL"] == "DEBUG"
    (sidecar,) = pod["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    if delivery == "args":  # the engine argv from the resolver still leads
        assert argv[:3] == ["vllm", "serve", MODEL]  # streamed (model_load's default)


def test_sglang_gets_its_client_config_map() -> None:
    rendered = render(_spec("sglang", "SGLang"), context=CONTEXT)
    kinds = [o["kind"] for o in rendered.objects]
    names = [o["metadata"]["name"] for o in rendered.objects if o["kind"] == "ConfigMap"]
    assert len(names) == 3  # engine env, wrapper, LMCache client config
    assert "cached-config" in names and "cached-wrapper" in names
    assert max(i for i, k in enumerate(kinds) if k == "ConfigMap") < kinds.index("Deployment")


def test_env_delivery_passes_the_injected_args_through_the_wrapper(tmp_path: Path) -> None:
    """What the pod runs: the mounted wrapper, the ConfigMap env and the container's own args."""
    rendered = render(_spec("vllm", "VLLM"), context=CONTEXT)
    config_maps = {o["metadata"]["name"]: o for o in rendered.objects if o["kind"] == "ConfigMap"}
    for name, text in config_maps["cached-wrapper"]["data"].items():
        (tmp_path / name).write_text(text)
    (deployment,) = _kind(rendered.objects, "Deployment")
    engine = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in engine["env"] if "value" in e}
    env["MLCC_ENGINE_MANIFEST"] = str(tmp_path / "manifest.json")
    command = [sys.executable, "-I", "-S", str(tmp_path / "wrapper.py"), "--print", *engine["args"]]
    out = subprocess.run(
        command,
        env={**config_maps["cached-config"]["data"], **env},
        capture_output=True,
        text=True,
        check=True,
    )
    argv = json.loads(out.stdout)
    assert argv[:3] == ["vllm", "serve", MODEL]  # streamed (model_load's default)
    assert argv[-len(engine["args"]) :] == engine["args"]


@pytest.mark.parametrize(
    ("engine", "runtime", "target", "expected"),
    [
        (
            "vllm",
            "SGLang",
            "eks",
            "/cache/backend/runtime: engine 'vllm' serves CacheBackend runtime VLLM (got 'SGLang'; "
            "allowed: VLLM; fix: pick the CacheBackend runtime of this engine, or another engine)",
        ),
        (
            "vllm",
            "VLLM",
            "hyperpod-eks",
            "/cache/backend: LMCache injection applies to target eks; the HyperPod inference "
            "operator wires its own KV cache (InferenceEndpointConfig kvCacheSpec) (got "
            "'hyperpod-eks'; allowed: eks; fix: drop cache.backend, or render for target eks)",
        ),
    ],
)
def test_mismatches_are_refused(engine: str, runtime: str, target: str, expected: str) -> None:
    with pytest.raises(MlccError) as caught:
        render(_spec(engine, runtime, target=target), context=CONTEXT)
    assert str(caught.value) == expected


def test_engine_without_a_cache_runtime_is_refused() -> None:
    with pytest.raises(MlccError) as caught:
        render(_spec("tensorrt-llm", "VLLM", engine_version="1.0.0"), context=CONTEXT)
    assert "engine 'tensorrt-llm' serves CacheBackend runtime (none)" in str(caught.value)


def test_spec_file_takes_a_cache_backend(tmp_path: Path) -> None:
    document = {
        "name": "cached",
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "cache": {"backend": seed_safe_spec("VLLM")},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(sectioned_doc(document)))
    out = subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.cli", "render", "-f", str(path)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    deployment = next(d for d in yaml.safe_load_all(out.stdout) if d["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["initContainers"][0]["restartPolicy"] == "Always"


@pytest.mark.parametrize(
    ("field", "tokens", "index", "flag", "owner"),
    [
        ("args", ["--port", "9000"], 0, "--port", "the engine manifest's launch.port_flag"),
        (
            "args",
            ["--tensor-parallel-size=2"],
            0,
            "--tensor-parallel-size",
            "the spec field compute.tensor_parallel_degree",  # Tier 1: not through its env key
        ),
        # the wrapper adds the multi-node launch at pod start: still the library's (nodes)
        ("args", ["--headless"], 0, "--headless", "the spec field compute.nodes"),
        ("suppressArgs", ["--nnodes"], 0, "--nnodes", "the spec field compute.nodes"),
        ("args", ["--api-key", "k"], 0, "--api-key", "the spec field endpoint.api_key_secret"),
        ("args", ["--load-format", "pt"], 0, "--load-format", "the spec field model.load"),
        ("suppressArgs", ["--enable-lora"], 0, "--enable-lora", "VLLM_ENABLE_LORA"),
        (
            "args",
            ["--no-enable-prefix-caching"],
            0,
            "--no-enable-prefix-caching",
            "VLLM_ENABLE_PREFIX_CACHING",
        ),
    ],
)
def test_overrides_may_not_touch_flags_the_config_sets(
    field: str, tokens: list[str], index: int, flag: str, owner: str
) -> None:
    document = seed_safe_spec("VLLM")
    document["integration"]["engineOverrides"] = {field: tokens}
    spec = _spec(
        "vllm",
        "VLLM",
        lora=True,
        env={"VLLM_ENABLE_PREFIX_CACHING": "false"},  # the off form: --no-enable-prefix-caching
        cache_backend=CacheBackendSpec.from_dict(document),
    )
    with pytest.raises(MlccError) as caught:
        render(spec, context=CONTEXT)
    assert str(caught.value) == (
        f"/cache/backend/integration/engineOverrides/{field}/{index}: overrides {flag}, which "
        f"{owner} sets: an override would conflict with it (the probes, Service and GPU requests "
        f"follow the config) (got {tokens[index]!r}; fix: set it through {owner} instead, or drop "
        "the override)"
    )


@pytest.mark.parametrize(
    ("name", "field", "sets", "extra"),
    [
        (
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING",
            "lora.enabled",
            "runtime adapter loading",
            {"lora": True},
        ),
        ("AWS_REGION", "region", "the model bucket's region", {}),  # eks streams the model
        ("VLLM_API_KEY", "endpoint.api_key_secret", "the API key", {}),
    ],
)
def test_overrides_may_not_set_a_variable_the_library_computes(
    name: str, field: str, sets: str, extra: dict[str, Any]
) -> None:
    document = seed_safe_spec("VLLM")
    document["integration"]["engineOverrides"] = {"env": [{"name": name, "value": "x"}]}
    spec = _spec("vllm", "VLLM", cache_backend=CacheBackendSpec.from_dict(document), **extra)
    with pytest.raises(MlccError) as caught:
        render(spec, context=CONTEXT)
    assert str(caught.value) == (
        f"/cache/backend/integration/engineOverrides/env/0: overrides {name}, which the spec "
        f"field {field} sets (Tier 1: {sets}) (got {name!r}; fix: set it through the spec field "
        f"{field} instead, or drop the override)"
    )


ADAPTER_WIRE = "tune the cache with the CacheBackend's spec.lmCache, or drop cache_backend"


@pytest.mark.parametrize(
    ("engine", "runtime", "key", "value", "flag", "own"),
    [
        pytest.param(
            "vllm", "VLLM", "VLLM_KV_TRANSFER_CONFIG", '{"kv_connector":"Mine"}',
            "--kv-transfer-config", None, id="vllm-connector",
        ),
        pytest.param(
            "vllm", "VLLM", "VLLM_DISABLE_HYBRID_KV_CACHE_MANAGER", "false",
            "--disable-hybrid-kv-cache-manager", "true", id="vllm-bare-flag-false",
        ),
        pytest.param(
            "sglang", "SGLang", "SGLANG_ENABLE_LMCACHE", "false",
            "--enable-lmcache", "true", id="sglang-off-without-off-form",
        ),
        pytest.param(
            "sglang", "SGLang", "SGLANG_LMCACHE_CONFIG_FILE", "/x.yaml",
            "--lmcache-config-file", "'/var/run/inference-cache/lmcache/client.yaml'",
            id="sglang-config-file",
        ),
        pytest.param(
            "vllm", "VLLM", "PYTHONHASHSEED", "7", "PYTHONHASHSEED", "'0'", id="vllm-env",
        ),
        pytest.param(
            "sglang", "SGLang", "LMCACHE_USE_EXPERIMENTAL", "False",
            "LMCACHE_USE_EXPERIMENTAL", "'True'", id="sglang-env",
        ),
    ],
)  # fmt: skip
def test_deployment_env_may_not_set_what_the_cache_adapter_reserves(
    engine: str, runtime: str, key: str, value: str, flag: str, own: str | None
) -> None:
    """The adapter's wire would replace the value without a word: refused, naming both."""
    spec = _spec(engine, runtime, env={key: value})
    with pytest.raises(MlccError) as caught:
        render(spec, context=CONTEXT)
    (problem,) = caught.value.problems
    label = f"{engine}-lmcache-mp ({runtime} + LMCache)"
    assert problem.pointer == f"/engine/env/{key}"
    assert problem.value == value
    assert problem.message == (
        f"sets {flag}, which the CacheBackend's adapter {label} reserves: its wire would "
        "replace this value"
    )
    assert problem.fix == f"remove {key}: {ADAPTER_WIRE}"
    if own is not None:
        assert problem.allowed == f"only the adapter's own value, {own}"


@pytest.mark.parametrize("delivery", ["env", "args"])
@pytest.mark.parametrize(
    ("engine", "runtime", "key", "value", "setting"),
    [
        ("sglang", "SGLang", "SGLANG_ENABLE_METRICS", "true", ["--enable-metrics"]),
        ("sglang", "SGLang", "SGLANG_ENABLE_METRICS", "True", ["--enable-metrics"]),
        (
            "sglang", "SGLang", "SGLANG_LMCACHE_CONFIG_FILE", CLIENT_CONFIG,
            ["--lmcache-config-file", CLIENT_CONFIG],
        ),
        ("vllm", "VLLM", "VLLM_MAX_NUM_SEQS", "64", ["--max-num-seqs", "64"]),  # not reserved
    ],
)  # fmt: skip
def test_deployment_env_equal_to_the_adapters_own_flag_is_passed_once(
    tmp_path: Path, engine: str, runtime: str, key: str, value: str, setting: list[str],
    delivery: str,
) -> None:  # fmt: skip
    rendered = render(
        _spec(engine, runtime, env={key: value}, config_delivery=delivery), context=CONTEXT
    )
    argv, _ = engine_process(list(rendered.objects), tmp_path)
    at = argv.index(setting[0])
    assert argv[at : at + len(setting)] == setting
    assert argv.count(setting[0]) == 1


def test_deployment_env_equal_to_the_adapters_own_variable_is_set_once(tmp_path: Path) -> None:
    rendered = render(_spec("vllm", "VLLM", env={"PYTHONHASHSEED": "0"}), context=CONTEXT)
    (deployment,) = _kind(rendered.objects, "Deployment")
    engine = next(
        c for c in deployment["spec"]["template"]["spec"]["containers"]
        if c["name"] == ENGINE_CONTAINER
    )  # fmt: skip
    assert [e for e in engine["env"] if e["name"] == "PYTHONHASHSEED"] == [
        {"name": "PYTHONHASHSEED", "value": "0"}
    ]
    assert engine_process(list(rendered.objects), tmp_path)[1]["PYTHONHASHSEED"] == "0"
