"""Where a deployment's ``routing`` and ``kv_cache`` apply: their values
(:mod:`mlcc_constructs.core.serving.spec.cache_routing`), a target whose manifest says
``managed_cache_routing`` (the HyperPod inference operator renders them), and an engine whose
manifest says ``managed_cache_routing`` (AWS documents both for vLLM-based containers only:
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-caching-routing.html).
Targets and engines differ in their manifests only.
"""

from __future__ import annotations

from collections.abc import Iterable

from mlcc_constructs.core.engines.manifests import EngineManifest
from mlcc_constructs.core.platform.targets import TargetDescriptor, load_target, target_names
from mlcc_constructs.core.serving.spec.cache_routing import (
    kv_cache_problems,
    kv_cache_warnings,
    routing_problems,
)
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import Problem

DOCS = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-model-deployment-caching-routing.html"
)
TIERED_STORAGE_WARNING = (
    "kv_cache.l2 tieredstorage uses HyperPod's managed tiered storage, which must be enabled on "
    "the HyperPod cluster (AWS::SageMaker::Cluster TieredStorageConfig, Mode Enable); the "
    "library's HyperPod cluster does not enable it, so enable it on the cluster or use l2: redis"
)

_LABELS = {"routing": "intelligent routing", "kv_cache": "managed tiered KV cache"}


def cache_routing_problems(
    spec: DeploymentSpec,
    target: TargetDescriptor | None,
    manifest: EngineManifest,
    engines: Iterable[EngineManifest],
) -> tuple[list[Problem], list[str]]:
    """Every problem of ``spec.cache.routing`` and ``spec.cache.kv_cache`` on ``target``
    (``None``: not loaded, its own problem) with ``manifest``'s engine (one of the registry's
    ``engines``), and the warnings of valid ones."""
    problems: list[Problem] = []
    warnings: list[str] = []
    given = [
        (field, value)
        for field, value in (("routing", spec.cache.routing), ("kv_cache", spec.cache.kv_cache))
        if value is not None
    ]
    if spec.cache.routing is not None:
        problems += routing_problems(spec.cache.routing)
    if spec.cache.kv_cache is not None:
        problems += kv_cache_problems(spec.cache.kv_cache)
        warnings += kv_cache_warnings(spec.cache.kv_cache)
        if spec.cache.kv_cache.l2 == "tieredstorage":
            warnings.append(TIERED_STORAGE_WARNING)
    for field, _ in given:
        if target is not None and not target.managed_cache_routing:
            problems.append(_target_problem(field, target))
        if manifest.managed_cache_routing is None:
            problems.append(_engine_problem(field, manifest.engine, engines))
    return problems, warnings


def _supported_targets() -> list[str]:
    return [name for name in target_names() if load_target(name).managed_cache_routing]


def _target_problem(field: str, target: TargetDescriptor) -> Problem:
    allowed = _supported_targets()
    reason = target.notes.get(field)
    return Problem(
        message=f"target {target.name} renders no {field}: "
        + (reason or f"the {_LABELS[field]} is the HyperPod inference operator's"),
        pointer=f"/cache/{field}",
        value=target.name,
        allowed="targets " + ", ".join(allowed),
        fix=f"drop cache.{field}, or deploy to {' or '.join(allowed)}",
    )


def _engine_problem(field: str, engine: str, engines: Iterable[EngineManifest]) -> Problem:
    """The reason is the supported engines' own (their manifests cite AWS)."""
    supported = {e.engine: e.managed_cache_routing for e in engines if e.managed_cache_routing}
    sources = "; ".join(str(source) for _, source in sorted(supported.items()))
    return Problem(
        message=f"the HyperPod inference operator's {_LABELS[field]} does not support engine "
        f"{engine!r} (its engine manifest declares no managed_cache_routing): "
        + (sources or f"see {DOCS}"),
        pointer=f"/cache/{field}",
        value=engine,
        allowed=", ".join(sorted(supported))
        or "engines whose manifest declares managed_cache_routing",
        fix=f"drop cache.{field}"
        + (f", or serve the model with {' or '.join(sorted(supported))}" if supported else ""),
    )
