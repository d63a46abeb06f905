"""Deterministic deployment specs spread over every engine x target x LoRA option."""

from __future__ import annotations

import itertools

from mlcc_constructs.core.manifests import builtin_engines
from mlcc_constructs.core.spec import DeploymentSpec

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
INSTANCES = ("ml.g5.12xlarge", "ml.g6e.xlarge", "ml.p5.48xlarge")


def combinations(*, cache: bool) -> list[dict[str, object]]:
    """Every renderable (engine, target, lora, cache) combination."""
    combos = []
    for manifest in builtin_engines():
        lora_options = [False, True] if manifest.capability("lora_enable") else [False]
        # LMCache wiring exists for engines whose cache adapter the core knows (vLLM, SGLang).
        cache_options = [False, True] if cache else [False]
        for target, lora, cached in itertools.product(
            ("eks", "hyperpod-eks"), lora_options, cache_options
        ):
            combos.append(
                {"engine": manifest.engine, "target": target, "lora": lora, "cache": cached}
            )
    return combos


def deployment_specs(count: int, *, cache: bool) -> list[DeploymentSpec]:
    """``count`` specs cycling through :func:`combinations` and a few instance types."""
    combos = [c for c in combinations(cache=cache) if not c["cache"]]
    specs = []
    for index in range(count):
        combo = combos[index % len(combos)]
        specs.append(
            DeploymentSpec(
                engine=str(combo["engine"]),
                model=MODEL,
                instance_type=INSTANCES[index % len(INSTANCES)],
                name=f"bench-{index}",
                namespace="bench",
                target=str(combo["target"]),
                lora=bool(combo["lora"]),
                env={"NCCL_DEBUG": "WARN"},
                engine_version="9.0.0",
            )
        )
    return specs
