"""Runtime LoRA loading turned on where adapters are delivered at runtime (issue 35, item 8).

``mlcc adapter add`` loads adapters through the engine's dynamic LoRA API, which vLLM serves
only with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` true (engines/vllm/manifest.json
``adapter_api.runtime_env``, with its source). A ``lora`` deployment on a target whose pods load
adapters at runtime (``adapter_delivery`` ``model-prefix``: eks, hyperpod-eks) renders it in the
engine's env, under either config delivery; nothing else does. The refusal of a load the switch
would have allowed is tested with stand-in pods in tests/ops/test_pod_calls.py."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
SWITCH = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


def _spec(**values: Any) -> DeploymentSpec:
    fields: dict[str, Any] = {
        "engine": "vllm",
        "model": MODEL,
        "instance_type": "ml.g5.12xlarge",
        "name": "llm",
        "namespace": "inference",
        **values,
    }
    return flat_spec(**fields)


def _engine_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    """What the engine container's env holds by value: its ConfigMap (eks, env delivery), its
    own env entries (args delivery) or the IEC worker's environment variables."""
    env: dict[str, str] = {}
    for obj in objects:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "llm-config":
            env |= obj["data"]
        elif obj["kind"] == "Deployment":
            container = obj["spec"]["template"]["spec"]["containers"][0]
            env |= {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
        elif obj["kind"] == "InferenceEndpointConfig":
            items = obj["spec"]["worker"]["environmentVariables"]
            env |= {e["name"]: e["value"] for e in items if "value" in e}
    return env


@pytest.mark.parametrize(
    ("values", "switched"),
    [
        ({"lora": True}, True),
        ({"lora": True, "config_delivery": "args"}, True),  # env, never a flag, under args too
        ({"lora": True, "target": "hyperpod-eks"}, True),
        ({"lora": True, "model_load": "mount"}, True),
        ({}, False),  # no LoRA: nothing to load
        ({"target": "hyperpod-eks"}, False),
    ],
)
def test_a_lora_deployment_that_loads_at_runtime_turns_runtime_loading_on(
    values: dict[str, Any], switched: bool
) -> None:
    rendered = render(_spec(**values), context=CONTEXT)
    env = _engine_env(list(rendered.objects))
    assert env.get(SWITCH) == ("true" if switched else None)
    # the engine reads it from its environment: it never becomes an argument
    argv = rendered.prepared.resolution.argv()
    assert not [a for a in argv if "runtime-lora" in a]


def test_a_target_with_an_inference_component_per_adapter_does_not() -> None:
    """realtime-inference: each adapter is its own inference component, none is loaded in a
    running engine."""
    resolution = resolve(_spec(lora=True, target="realtime-inference"))
    assert SWITCH not in resolution.env


def test_an_engine_that_needs_no_switch_gets_none() -> None:
    """SGLang routes its load endpoint always (engines/sglang/manifest.json adapter_api.source)."""
    sglang = next(m for m in builtin_engines() if m.engine == "sglang")
    assert dict(sglang.adapter_runtime_env) == {}
    resolution = resolve(_spec(engine="sglang", lora=True))
    assert [k for k in resolution.env if "RUNTIME" in k] == []


def test_only_the_declared_paths_are_the_adapter_api() -> None:
    vllm = next(m for m in builtin_engines() if m.engine == "vllm")
    assert dict(vllm.adapter_api or {}) == {
        "load": "/v1/load_lora_adapter",
        "unload": "/v1/unload_lora_adapter",
    }
    assert dict(vllm.adapter_runtime_env) == {SWITCH: "true"}
    # vLLM takes 1 or true (any case): vllm/envs.py, cited in the manifest
    assert vllm.adapter_runtime_env[SWITCH].strip().lower() in ("1", "true")
