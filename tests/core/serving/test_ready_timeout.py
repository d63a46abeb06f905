"""The ready timeout: the formula (table-driven), its override and range check, and where the
number lands (the Deployment's progress deadline, the IEC's maxDeployTimeInSeconds)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.serving.kinds.registry import of_kind
from mlcc_constructs.core.serving.prepare import cold_start as cs, ready_timeout as rt
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.resolve import model_size as ms
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
G5_12X = lookup("ml.g5.12xlarge")
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
LLAMA_BYTES = 8_030_261_248 * 2


def _cold(size: int | None, path: cs.LoadPath = "mount", *, nodes: bool = True) -> cs.ColdStart:
    return cs.cold_start(
        size=ms.ModelSize(bytes=size, source=None if size is None else "spec"),
        instances=(G5_12X,),
        path=path,
        launches_nodes=nodes,
    )


CASES = [
    # (size, load path, launches nodes, replicas, seconds)
    # 8B over Mountpoint on a new node: 300 + 300 + 1.5 x (519 + 300) rounded to the period.
    (LLAMA_BYTES, "mount", True, 1, 300 + 300 + 1230),
    (LLAMA_BYTES, "mount", False, 1, 300 + 1230),
    # Without a size, the startup probe's 30 minutes after the node and the pull.
    (None, "mount", True, 1, 300 + 300 + 1800),
    (None, "prefetch", False, 1, 300 + 1800),
    # Streamed (9 s) and prefetched (77 s): the startup floor of 600 s.
    (LLAMA_BYTES, "stream", True, 1, 300 + 300 + 600),
    (LLAMA_BYTES, "prefetch", False, 1, 300 + 600),
    # Rolling updates start one pod at a time: two replicas, twice the time (under the cap).
    (LLAMA_BYTES, "stream", False, 2, 2 * (300 + 600)),
    # Capped below CloudFormation's hour, whatever the replicas.
    (None, "huggingface", True, 4, 3300),
    # 8B from the Hub: 307 s at 50 MiB/s, 1.5 x (307 + 300) = 911 -> 920 (the probe's period).
    (LLAMA_BYTES, "huggingface", True, 1, 300 + 300 + 920),
]


@pytest.mark.parametrize(("size", "path", "nodes", "replicas", "seconds"), CASES)
def test_the_formula(
    size: int | None, path: cs.LoadPath, nodes: bool, replicas: int, seconds: int
) -> None:
    cold = _cold(size, path, nodes=nodes)
    got = rt.ready_timeout(cold, replicas=replicas)
    assert (got.seconds, got.source, got.load_path, got.cold_start) == (
        seconds,
        "formula",
        path,
        cold,
    )
    assert got.seconds == min(rt.MAX_S, max(rt.MIN_S, cold.launch_s * replicas))


def test_an_override_wins() -> None:
    got = rt.ready_timeout(_cold(None), replicas=9, override=120)
    assert (got.seconds, got.source) == (120, "spec")


def test_a_pod_the_deploy_cannot_wait_for_is_warned_about() -> None:
    # A 70B bf16 model from the Hub: 141 GB at 50 MiB/s is ~2690 s of load alone.
    late = rt.ready_timeout(_cold(141_000_000_000, "huggingface"), replicas=1)
    note = rt.ready_timeout_warning("chat", late)
    assert late.seconds == rt.MAX_S
    assert note is not None and f"up to {late.cold_start.launch_s} s" in note
    assert "past the 3300 s the deploy waits" in note
    for quiet in (
        rt.ready_timeout(_cold(LLAMA_BYTES), replicas=1),  # fits
        rt.ready_timeout(_cold(None, "huggingface"), replicas=1),  # size unknown
        rt.ready_timeout(_cold(141_000_000_000, "huggingface"), replicas=1, override=900),
    ):
        assert rt.ready_timeout_warning("chat", quiet) is None


def test_the_waiter_fits_under_cloudformations_hour() -> None:
    longest = rt.waiter_timing(rt.MAX_S)
    assert longest.deadline_s < rt.PROVIDER_TOTAL_TIMEOUT_S <= 3600
    assert longest.deadline_s < longest.service_timeout_s <= 3600
    short = rt.waiter_timing(600)
    assert (short.deadline_s, short.service_timeout_s) == (660, 780)


def _prepared(**fields: Any) -> Any:
    spec = flat_spec(engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="m", **fields)
    return prepare(spec, context=CONTEXT)


def test_the_workload_deadline_is_the_ready_timeout() -> None:
    eks = _prepared(model_config=LLAMA_8B, model_load="mount")
    (deployment,) = of_kind([e.object for e in eks.objects], "Deployment")
    assert eks.cold_start.size == ms.ModelSize(bytes=LLAMA_BYTES, source="model_config")
    assert deployment["spec"]["progressDeadlineSeconds"] == eks.ready_timeout.seconds == 1830
    # Streamed (the default for an s3:// vLLM model on eks): the weights take seconds, and the
    # 600 s startup floor with the node start and image pull make the deadline.
    streamed = _prepared(model_config=LLAMA_8B)
    assert streamed.ready_timeout.load_path == "stream"
    assert streamed.ready_timeout.seconds == 300 + 300 + 600
    hyperpod = _prepared(target="hyperpod-eks", model_config=LLAMA_8B)
    (iec,) = of_kind([e.object for e in hyperpod.objects], "InferenceEndpointConfig")
    # No GPU node to launch, the operator prefetches: 300 + the 600 s startup floor.
    assert hyperpod.ready_timeout.load_path == "prefetch"
    assert iec["spec"]["maxDeployTimeInSeconds"] == hyperpod.ready_timeout.seconds == 900
    lora = _prepared(target="hyperpod-eks", model_config=LLAMA_8B, lora=True)
    assert lora.ready_timeout.load_path == "mount"  # prefetch is off for LoRA + S3


def test_the_spec_field_overrides_the_formula() -> None:
    prepared = _prepared(ready_timeout_seconds=900)
    (deployment,) = of_kind([e.object for e in prepared.objects], "Deployment")
    assert deployment["spec"]["progressDeadlineSeconds"] == 900


@pytest.mark.parametrize("value", [59, 3301, 0, -5])
def test_an_out_of_range_timeout_is_refused_naming_the_field(value: int) -> None:
    with pytest.raises(MlccError) as caught:
        _prepared(ready_timeout_seconds=value)
    (problem,) = [p for p in caught.value.problems if p.pointer == "/rollout/ready_timeout_seconds"]
    assert problem.value == value
    assert problem.allowed == "60..3300"
    assert "leave it unset" in str(problem.fix)


def test_the_schema_range_is_the_checks_range() -> None:
    schema = json.loads(
        resources.files("mlcc_constructs")
        .joinpath("data/deployment-spec.schema.json")
        .read_text(encoding="utf-8")
    )
    field = schema["properties"]["rollout"]["properties"]["ready_timeout_seconds"]
    assert (field["type"], field["minimum"], field["maximum"]) == (
        "integer",
        rt.MIN_OVERRIDE_S,
        rt.MAX_S,
    )
