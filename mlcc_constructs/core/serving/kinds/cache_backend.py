"""``CacheBackend`` (``inferencecache.io/v1alpha1``): the CR itself, for clusters that run the
inference-cache operator (the cdk8s ``CacheBackend`` construct emits it; a deployment's own
``cache_backend`` is wired into its pods instead, with no operator). Validated by the same
parse and admission rules as every CacheBackend input; applied before the engine pods, so the
operator's webhook sees it when they start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.serving.kinds.registry import Kind, ready_condition
from mlcc_constructs.core.support.errors import MlccError, Problem

API_VERSION = "inferencecache.io/v1alpha1"


def problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Parse and admission problems of the object
    (:func:`~mlcc_constructs.core.cache.parse_cache_backend`)."""
    from mlcc_constructs.core.cache.parse import parse_cache_backend

    name = (obj.get("metadata") or {}).get("name", "?")
    try:
        parse_cache_backend(obj, where=f"CacheBackend/{name}")
    except MlccError as error:
        return list(error.problems)
    return []


KIND = Kind(
    kind="CacheBackend",
    api_version=API_VERSION,
    plural="cachebackends",
    namespaced=True,
    apply_phase=45,
    validate=problems,
    readiness=ready_condition,
)
