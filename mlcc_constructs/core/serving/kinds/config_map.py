"""``ConfigMap``: the engine env (``env`` delivery), the wrapper and the engine manifest it
reads (``env`` delivery of a wrapper engine where pods take volumes), and a CacheBackend
adapter's client config."""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, exists
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's ConfigMaps, each with its construct id."""
    box = facts.container
    entries: list[RenderedObject] = []
    if box.delivers_env:  # Tier 1, then Tier 2
        engine = _config_map(facts, facts.names.config_map, dict(box.engine_env))
        entries.append(RenderedObject("ConfigMap", engine))
    if box.wrapper_files is not None:  # mounted read-only at WRAPPER_MOUNT
        wrapper = _config_map(facts, facts.names.wrapper, dict(box.wrapper_files))
        entries.append(RenderedObject("WrapperConfigMap", wrapper))
    if facts.cache is not None:
        from mlcc_constructs.core.cache import render_cache_config_maps

        entries += [
            RenderedObject("CacheConfigMap", obj)
            for obj in render_cache_config_maps(
                facts.cache, workload_name=facts.names.base, namespace=facts.names.namespace
            )
        ]
    return entries


def _config_map(facts: DeploymentFacts, name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(facts, name),
        "data": data,
    }


KIND = Kind(
    kind="ConfigMap",
    api_version="v1",
    plural="configmaps",
    namespaced=True,
    apply_phase=20,
    validate=core_object_problems,
    readiness=exists,
    render=render,
)
