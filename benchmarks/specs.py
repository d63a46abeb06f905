"""Deterministic deployments for the benchmarks: the same vLLM deployment under N names (the
shape a GitOps user would template with helm), as spec-file entries."""

from __future__ import annotations

from typing import Any

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
NAMESPACE = "bench"


def deployment_entries(
    count: int, *, name: str = "bench", targets: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """``count`` deployment spec entries (``mlcc render -f`` / cdk.json schema), one name each;
    on the default target (eks), or on ``targets`` taken in turn."""
    entries: list[dict[str, Any]] = [
        {
            "engine": {"name": "vllm", "env": {"VLLM_MAX_NUM_SEQS": "64"}},
            "model": {"uri": MODEL},
            "compute": {"instance_type": "ml.g5.12xlarge"},
            "name": f"{name}-{index}",
            "namespace": NAMESPACE,
            "lora": {"enabled": True},
            "profile": "dev",
        }
        for index in range(count)
    ]
    for index, entry in enumerate(entries if targets else ()):
        entry["target"] = targets[index % len(targets)]
    return entries
