"""Deterministic deployment specs spread over every engine, target, LoRA and cache option."""

from __future__ import annotations

import itertools
from typing import Any

from mlcc_constructs.core.manifests import builtin_engines
from mlcc_constructs.core.spec import DeploymentSpec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
LLAMA_CPP_IMAGE = "registry.example.com/sagemaker-llama-cpp:bench"
INSTANCES = ("ml.g5.12xlarge", "ml.g6e.xlarge", "ml.p5.48xlarge")
# The seed's PodLocal LMCache example (cachebackend-engine-overrides), runtime filled in.
CACHE_SPEC: dict[str, Any] = {
    "type": "LMCache",
    "lmCache": {
        "topology": "PodLocal",
        "chunkSizeTokens": 256,
        "podLocal": {
            "server": {
                "image": "docker.io/lmcache/standalone@sha256:"
                "b813bf0bb616d1012b6a6edcbd4a44f1576dbbdaa857962e56d48b9f7c127d13",
                "port": 5555,
                "l1Capacity": "4Gi",
                "maxWorkers": 4,
                "resources": {
                    "requests": {"cpu": "1", "memory": "5Gi"},
                    "limits": {"cpu": "2", "memory": "6Gi"},
                },
            }
        },
    },
}


def combinations(*, cache: bool) -> list[dict[str, Any]]:
    """Every renderable (engine, target, lora, cache) combination. LMCache is injected into
    eks Deployments of engines whose manifest names a ``cache_runtime``."""
    combos = []
    for manifest in builtin_engines():
        lora_options = [False, True] if manifest.capability("lora_enable") else [False]
        runtime = manifest.raw.get("cache_runtime")
        for target, lora in itertools.product(("eks", "hyperpod-eks"), lora_options):
            cache_options = [None, runtime] if cache and runtime and target == "eks" else [None]
            for cache_runtime in cache_options:
                combos.append(
                    {"engine": manifest.engine, "target": target, "lora": lora,
                     "cache_runtime": cache_runtime}
                )  # fmt: skip
    return combos


def deployment_specs(count: int, *, cache: bool) -> list[DeploymentSpec]:
    """``count`` specs cycling through :func:`combinations` and a few instance types."""
    from mlcc_constructs.core.cache import CacheBackendSpec

    backends = {
        runtime: CacheBackendSpec.from_dict({"runtime": runtime, **CACHE_SPEC})
        for runtime in {c["cache_runtime"] for c in combinations(cache=cache)} - {None}
    }
    combos = combinations(cache=cache)
    specs = []
    for index in range(count):
        combo = combos[index % len(combos)]
        specs.append(
            DeploymentSpec(
                engine=combo["engine"],
                model=MODEL,
                instance_type=INSTANCES[index % len(INSTANCES)],
                name=f"bench-{index}",
                namespace="bench",
                target=combo["target"],
                lora=combo["lora"],
                env={"NCCL_DEBUG": "WARN"},
                engine_version="9.0.0",
                cache_backend=backends.get(combo["cache_runtime"]),
                # llama.cpp has no pinned default image: name a SageMaker llama.cpp container
                image=LLAMA_CPP_IMAGE if combo["engine"] == "llama-cpp" else None,
            )
        )
    return specs
