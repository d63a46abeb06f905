"""Rank fit and memory cap wired into rendering (seed lora-delivery §3)."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.adapters.lora_rank import AdapterRank
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.serving.spec.files import spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
LLAMA_8B = {
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}


def _spec(**extra: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": {"name": "vllm", "version": "0.31.0"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "llama",
        "lora": {"enabled": True},
    }
    values.update(extra)
    return flat_spec(**values)


def _env(spec: DeploymentSpec) -> dict[str, str]:
    rendered = render(spec, context=CONTEXT)
    return dict(next(o for o in rendered.objects if o["kind"] == "ConfigMap")["data"])


def test_recorded_adapters_set_the_max_rank() -> None:
    adapters = (AdapterRank(name="a", r=8), AdapterRank(name="b", r=48))
    assert _env(_spec(lora_adapters=adapters))["VLLM_MAX_LORA_RANK"] == "64"


def test_without_recorded_adapters_vllm_stays_bare() -> None:
    assert "VLLM_MAX_LORA_RANK" not in _env(_spec())


def test_explicit_rank_below_need_wins_with_a_warning() -> None:
    spec = _spec(lora_adapters=(AdapterRank(name="big", r=64),), env={"VLLM_MAX_LORA_RANK": "32"})
    rendered = render(spec, context=CONTEXT)
    env = next(o for o in rendered.objects if o["kind"] == "ConfigMap")["data"]
    assert env["VLLM_MAX_LORA_RANK"] == "32"
    assert any("big (r 64) will not load" in w for w in rendered.warnings)


def test_sglang_companion_takes_the_fitted_rank() -> None:
    # SGLang declares no allowed set: any rank is accepted, so the need is used as is.
    adapters = (AdapterRank(name="a", r=100),)
    spec = _spec(engine="sglang", engine_version="0.5.21", lora_adapters=adapters)
    assert _env(spec)["SGLANG_MAX_LORA_RANK"] == "100"


def test_the_memory_cap_passes_for_a_small_buffer_and_refuses_a_large_one() -> None:
    assert _env(_spec(model_config=LLAMA_8B))["VLLM_ENABLE_LORA"] == "true"
    big = _spec(
        instance_type="ml.g5.xlarge",
        model_config=LLAMA_8B,
        env={"VLLM_MAX_LORAS": "8"},
        lora_adapters=(AdapterRank(name="wide", r=200),),
    )
    with pytest.raises(MlccError) as caught:
        render(big, context=CONTEXT)
    message = str(caught.value)
    assert message.startswith("/lora/enabled: LoRA buffer ")
    assert "max_loras 8 x rank 256" in message
    assert "adapters: wide" in message


def test_spec_file_takes_adapters() -> None:
    loaded = spec_from_mapping(
        {
            "name": "llama",
            "engine": {"name": "vllm"},
            "model": {"uri": MODEL},
            "compute": {"instance_type": "ml.g5.12xlarge"},
            "lora": {
                "enabled": True,
                "adapters": [{"name": "a", "r": 8, "rank_pattern": {"q_proj": 200}}],
            },
        },
        where="spec.yaml",
    )
    assert loaded.spec.lora.adapters == (AdapterRank(name="a", r=8, rank_pattern={"q_proj": 200}),)
    assert _env(loaded.spec)["VLLM_MAX_LORA_RANK"] == "256"


def test_the_cap_uses_the_engines_own_memory_share() -> None:
    # 16.06 GB of bf16 weights do not fit in half of a 24 GiB A10G
    half = _spec(instance_type="ml.g5.xlarge", model_config=LLAMA_8B,
                 env={"VLLM_GPU_MEMORY_UTILIZATION": "0.5"})  # fmt: skip
    with pytest.raises(MlccError, match="the model does not fit"):
        render(half, context=CONTEXT)
    both = _spec(model_config=LLAMA_8B, gpu_memory_utilization=0.8,
                 env={"VLLM_GPU_MEMORY_UTILIZATION": "0.95"})  # fmt: skip
    with pytest.raises(MlccError) as caught:
        render(both, context=CONTEXT)
    assert str(caught.value) == (
        "/engine/gpu_memory_utilization: the GPU memory share is set twice: "
        "engine.gpu_memory_utilization=0.8 "
        "and VLLM_GPU_MEMORY_UTILIZATION=0.95 (got 0.8; fix: set only "
        "VLLM_GPU_MEMORY_UTILIZATION (what the engine uses))"
    )


# -- the user's env is parsed once: every reader takes its value, at its pointer ----------------


def test_a_bad_explicit_rank_is_named_at_its_env_key_with_every_other_problem() -> None:
    spec = _spec(
        lora_adapters=(AdapterRank(name="big", r=64),),
        env={"VLLM_MAX_LORA_RANK": "48", "SGLANG_TP_SIZE": "2"},
        instance_type="ml.nope.xlarge",
    )
    with pytest.raises(MlccError) as caught:
        render(spec, context=CONTEXT)
    pointers = [p.pointer for p in caught.value.problems]
    # the rank fit's problem is located at the key the user set, and does not hide the rest
    assert pointers == [
        "/compute/instance_type",
        "/engine/env/SGLANG_TP_SIZE",
        "/engine/env/VLLM_MAX_LORA_RANK",
    ]
    rank = caught.value.problems[-1]
    assert rank.message == "the explicit max LoRA rank is not one the engine allows"
    assert rank.value == 48


def test_a_rank_above_the_largest_is_named_at_the_adapters() -> None:
    with pytest.raises(MlccError) as caught:
        render(_spec(lora_adapters=(AdapterRank(name="huge", r=600),)), context=CONTEXT)
    assert [p.pointer for p in caught.value.problems] == ["/lora/adapters"]


@pytest.mark.parametrize(
    ("engine", "key", "message"),
    [
        # vLLM records the bound on the field behind the flag: the value check refuses first.
        (
            {"name": "vllm", "version": "0.31.0"},
            "VLLM_GPU_MEMORY_UTILIZATION",
            "VLLM_GPU_MEMORY_UTILIZATION → 1.5 is out of the range of --gpu-memory-utilization "
            "in vllm 0.31.0 (got '1.5'; allowed: a number > 0 and <= 1 (vllm/config/cache.py "
            "CacheConfig.gpu_memory_utilization); fix: give a value > 0 and <= 1)",
        ),
        # SGLang's ServerArgs declares none: the share read for the LoRA fit is checked there.
        (
            {"name": "sglang", "version": "0.5.21"},
            "SGLANG_MEM_FRACTION_STATIC",
            "not a share of GPU memory (got '1.5'; allowed: a number in (0, 1])",
        ),
    ],
)
def test_the_gpu_memory_share_is_read_from_the_parsed_settings(
    engine: dict[str, str], key: str, message: str
) -> None:
    spec = _spec(engine=engine, model_config=LLAMA_8B, env={key: "1.5"})
    with pytest.raises(MlccError) as caught:
        render(spec, context=CONTEXT)
    assert [str(p) for p in caught.value.problems] == [f"/engine/env/{key}: {message}"]


def test_settings_classify_each_key_once() -> None:
    from mlcc_constructs.core.engines.manifests import EngineRegistry
    from mlcc_constructs.core.serving.resolve.settings import UserValue, read_settings

    spec = _spec(
        env={"VLLM_MAX_LORA_RANK": "32", "VLLM_MAX_NUM_SEQS": "8", "NCCL_DEBUG": "WARN"},
        tensor_parallel_degree=2,
    )
    settings = read_settings(spec, EngineRegistry.load(use_env=False))
    assert dict(settings.capabilities) == {
        "lora_max_rank": UserValue("32", "/engine/env/VLLM_MAX_LORA_RANK"),
        "tensor_parallel_degree": UserValue("2", "/compute/tensor_parallel_degree"),
        "lora_enable": UserValue("true", "/lora/enabled"),
    }
    assert settings.tier2 == (("VLLM_MAX_NUM_SEQS", "8"),)
    assert settings.plain == (("NCCL_DEBUG", "WARN"),)
    assert settings.problems == ()
    assert settings.dimension("max_num_seqs") == UserValue("8", "/engine/env/VLLM_MAX_NUM_SEQS")
