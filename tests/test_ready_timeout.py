"""The ready timeout: the formula (table-driven), its override and range check, and where the
number lands (the Deployment's progress deadline, the IEC's maxDeployTimeInSeconds)."""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

import pytest

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.serving.kinds.registry import of_kind
from mlcc_constructs.core.serving.prepare import ready_timeout as rt
from mlcc_constructs.core.serving.prepare.deployment import prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
G5_12X = lookup("ml.g5.12xlarge")  # 4 x 24 GiB
# An 8B Llama-style config.json (num_parameters given: 8_030_261_248 x 2 bytes of bfloat16).
LLAMA_8B: dict[str, Any] = {
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "torch_dtype": "bfloat16",
    "num_parameters": 8_030_261_248,
}
GPU_BYTES = 4 * 24 * rt.GIB
LLAMA_BYTES = 8_030_261_248 * 2
MIB = rt.MIB


def _formula(size: int, throughput_mib: int, *, node: bool, replicas: int = 1) -> int:
    per_pod = (300 if node else 0) + 300 + 300 + math.ceil(size / (throughput_mib * MIB))
    return min(3300, max(600, math.ceil(1.5 * per_pod * replicas)))


CASES = [
    # (model_config, load path, launches nodes, replicas, seconds, basis)
    (LLAMA_8B, "s3-stream", True, 1, _formula(LLAMA_BYTES, 200, node=True), "model_config"),
    (LLAMA_8B, "s3-prefetch", False, 1, _formula(LLAMA_BYTES, 200, node=False), "model_config"),
    (LLAMA_8B, "huggingface", True, 1, _formula(LLAMA_BYTES, 50, node=True), "model_config"),
    (None, "s3-stream", True, 1, _formula(GPU_BYTES, 200, node=True), "gpu-memory"),
    (None, "huggingface", False, 1, _formula(GPU_BYTES, 50, node=False), "gpu-memory"),
    # Rolling updates start one pod at a time: two replicas, twice the time (under the cap).
    (LLAMA_8B, "s3-stream", False, 2, _formula(LLAMA_BYTES, 200, node=False, replicas=2),
     "model_config"),
    # Capped below CloudFormation's hour, whatever the replicas.
    (None, "huggingface", True, 4, 3300, "gpu-memory"),
    # A config the geometry cannot read falls back to the GPU-memory bound.
    ({"torch_dtype": "bfloat16"}, "s3-stream", True, 1, _formula(GPU_BYTES, 200, node=True),
     "gpu-memory"),
]  # fmt: skip


@pytest.mark.parametrize(("config", "path", "nodes", "replicas", "seconds", "basis"), CASES)
def test_the_formula(
    config: dict[str, Any] | None,
    path: rt.LoadPath,
    nodes: bool,
    replicas: int,
    seconds: int,
    basis: str,
) -> None:
    got = rt.ready_timeout(
        model_config=config, instance=G5_12X, path=path, launches_nodes=nodes, replicas=replicas
    )
    assert (got.seconds, got.weights_basis, got.source, got.load_path) == (
        seconds,
        basis,
        "formula",
        path,
    )


def test_the_numbers_of_the_formula_cases() -> None:
    # Pinned, so a change of a constant shows here: 8B bf16 over Mountpoint with a new node is
    # 1.5 x (300 + 300 + 300 + 77) s.
    assert _formula(LLAMA_BYTES, 200, node=True) == 1466
    assert (
        rt.ready_timeout(
            model_config=LLAMA_8B,
            instance=G5_12X,
            path="s3-stream",
            launches_nodes=True,
            replicas=1,
        ).seconds
        == 1466
    )
    # A tiny model still gets the image pull and the engine start: 1.5 x (300 + 300 + 1).
    tiny = {**LLAMA_8B, "num_parameters": 1000}
    assert (
        rt.ready_timeout(
            model_config=tiny, instance=G5_12X, path="s3-prefetch", launches_nodes=False, replicas=1
        ).seconds
        == 902
    )


def test_an_override_wins() -> None:
    got = rt.ready_timeout(
        model_config=None,
        instance=G5_12X,
        path="s3-stream",
        launches_nodes=True,
        replicas=9,
        override=120,
    )
    assert (got.seconds, got.source) == (120, "spec")


@pytest.mark.parametrize(
    ("source_kind", "platform_mounts", "prefetch", "path"),
    [
        ("s3", False, True, "s3-stream"),  # eks: Mountpoint, whatever the IEC would do
        ("s3", True, True, "s3-prefetch"),  # HyperPod operator prefetch
        ("s3", True, False, "s3-stream"),  # HyperPod with LoRA: prefetch off, mounted
        ("huggingface", False, True, "huggingface"),
        ("huggingface", True, True, "huggingface"),
    ],
)
def test_the_load_path(source_kind: str, platform_mounts: bool, prefetch: bool, path: str) -> None:
    assert (
        rt.load_path(source_kind=source_kind, platform_mounts=platform_mounts, prefetch=prefetch)
        == path
    )


def test_the_waiter_fits_under_cloudformations_hour() -> None:
    longest = rt.waiter_timing(rt.MAX_S)
    assert longest.deadline_s < rt.PROVIDER_TOTAL_TIMEOUT_S <= 3600
    assert longest.deadline_s < longest.service_timeout_s <= 3600
    short = rt.waiter_timing(600)
    assert (short.deadline_s, short.service_timeout_s) == (660, 780)


def _prepared(**fields: Any) -> Any:
    spec = DeploymentSpec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="m", **fields
    )
    return prepare(spec, context=CONTEXT)


def test_the_workload_deadline_is_the_ready_timeout() -> None:
    eks = _prepared(model_config=LLAMA_8B)
    (deployment,) = of_kind([e.object for e in eks.objects], "Deployment")
    assert deployment["spec"]["progressDeadlineSeconds"] == eks.ready_timeout.seconds == 1466
    hyperpod = _prepared(target="hyperpod-eks", model_config=LLAMA_8B)
    (iec,) = of_kind([e.object for e in hyperpod.objects], "InferenceEndpointConfig")
    # No GPU node to launch, the operator prefetches: 1.5 x (300 + 300 + 77).
    assert hyperpod.ready_timeout.load_path == "s3-prefetch"
    assert iec["spec"]["maxDeployTimeInSeconds"] == hyperpod.ready_timeout.seconds == 1016
    lora = _prepared(target="hyperpod-eks", model_config=LLAMA_8B, lora=True)
    assert lora.ready_timeout.load_path == "s3-stream"  # prefetch is off for LoRA + S3


def test_the_spec_field_overrides_the_formula() -> None:
    prepared = _prepared(ready_timeout_seconds=900)
    (deployment,) = of_kind([e.object for e in prepared.objects], "Deployment")
    assert deployment["spec"]["progressDeadlineSeconds"] == 900


@pytest.mark.parametrize("value", [59, 3301, 0, -5])
def test_an_out_of_range_timeout_is_refused_naming_the_field(value: int) -> None:
    with pytest.raises(MlccError) as caught:
        _prepared(ready_timeout_seconds=value)
    (problem,) = [p for p in caught.value.problems if p.pointer == "/ready_timeout_seconds"]
    assert problem.value == value
    assert problem.allowed == "60..3300"
    assert "leave it unset" in str(problem.fix)


def test_the_schema_range_is_the_checks_range() -> None:
    schema = json.loads(
        resources.files("mlcc_constructs")
        .joinpath("data/deployment-spec.schema.json")
        .read_text(encoding="utf-8")
    )
    field = schema["properties"]["ready_timeout_seconds"]
    assert (field["type"], field["minimum"], field["maximum"]) == (
        "integer",
        rt.MIN_OVERRIDE_S,
        rt.MAX_S,
    )
