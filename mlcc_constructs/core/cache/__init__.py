"""LMCache CacheBackend: the typed spec, admission and injection into an engine Deployment.

The spec mirrors the upstream ``inferencecache.io/v1alpha1`` CacheBackend (the operator in
cachebox-project/inference-cache) for the PodLocal LMCache topology. One module per job:

- :mod:`.quantity`: Kubernetes quantities (``4Gi``) as exact numbers and back.
- :mod:`.fields`: the one generic camelCase ↔ dataclass mapping (``to_dict``, field reading).
- :mod:`.spec`: the frozen dataclasses, each field declaring its CRD path and checks.
- :mod:`.parse`: :func:`parse_cache_backend`, :meth:`CacheBackendSpec.from_dict` and
  :func:`load_cache_backends`: dicts or YAML to typed objects, every problem named by its
  JSON pointer (``/spec/lmCache/chunkSizeTokens``).
- :mod:`.admission`: :func:`admission_problems`, the rules the operator's admission webhook
  applies (above all: ``engineOverrides`` may not touch a token the runtime adapter
  reserves), and :func:`admit`, which runs them once per spec and returns an
  :class:`Admission`.
- :mod:`.inject` and :mod:`.pod`: :func:`inject_cache_backend`, a pure function wiring a
  plain Deployment the way the operator's pod webhook would (the adapter's wire, the four
  override primitives, the native sidecar, ``/dev/shm``), and
  :func:`render_cache_config_maps`.

Adapters are data (:mod:`mlcc_constructs.core.cache.adapters`); the rules never branch on a
runtime name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers; at run time they load on first use
    from mlcc_constructs.core.cache.admission import (
        Admission,
        admission_problems,
        admit,
        leading_token,
    )
    from mlcc_constructs.core.cache.inject import (
        INJECTED_BY_ANNOTATION,
        SKIP_INJECT_ANNOTATION,
        cache_config_map_name,
        inject_cache_backend,
        render_cache_config_maps,
    )
    from mlcc_constructs.core.cache.parse import (
        load_cache_backends,
        parse_cache_backend,
        parse_spec,
    )
    from mlcc_constructs.core.cache.spec import (
        API_VERSION,
        KIND,
        CacheBackendDocument,
        CacheBackendSpec,
        EngineOverrides,
        EnvOverride,
        Integration,
        LMCacheSpec,
        Observation,
        PodLocalServer,
        RedisSpec,
        RemoteStorage,
        SecretKeySelector,
    )
    from mlcc_constructs.core.support.quantity import format_quantity, parse_quantity

# Public name -> the module defining it. Loaded on first use (PEP 562): a DeploymentSpec needs
# only the spec's dataclasses, and the pure ``mlcc`` commands start faster without the rest.
_LAZY: dict[str, str] = {
    "Admission": "mlcc_constructs.core.cache.admission",
    "admission_problems": "mlcc_constructs.core.cache.admission",
    "admit": "mlcc_constructs.core.cache.admission",
    "leading_token": "mlcc_constructs.core.cache.admission",
    "INJECTED_BY_ANNOTATION": "mlcc_constructs.core.cache.inject",
    "SKIP_INJECT_ANNOTATION": "mlcc_constructs.core.cache.inject",
    "cache_config_map_name": "mlcc_constructs.core.cache.inject",
    "inject_cache_backend": "mlcc_constructs.core.cache.inject",
    "render_cache_config_maps": "mlcc_constructs.core.cache.inject",
    "load_cache_backends": "mlcc_constructs.core.cache.parse",
    "parse_cache_backend": "mlcc_constructs.core.cache.parse",
    "parse_spec": "mlcc_constructs.core.cache.parse",
    "format_quantity": "mlcc_constructs.core.support.quantity",
    "parse_quantity": "mlcc_constructs.core.support.quantity",
    "API_VERSION": "mlcc_constructs.core.cache.spec",
    "KIND": "mlcc_constructs.core.cache.spec",
    "CacheBackendDocument": "mlcc_constructs.core.cache.spec",
    "CacheBackendSpec": "mlcc_constructs.core.cache.spec",
    "EngineOverrides": "mlcc_constructs.core.cache.spec",
    "EnvOverride": "mlcc_constructs.core.cache.spec",
    "Integration": "mlcc_constructs.core.cache.spec",
    "LMCacheSpec": "mlcc_constructs.core.cache.spec",
    "Observation": "mlcc_constructs.core.cache.spec",
    "PodLocalServer": "mlcc_constructs.core.cache.spec",
    "RedisSpec": "mlcc_constructs.core.cache.spec",
    "RemoteStorage": "mlcc_constructs.core.cache.spec",
    "SecretKeySelector": "mlcc_constructs.core.cache.spec",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = (
    "API_VERSION",
    "INJECTED_BY_ANNOTATION",
    "KIND",
    "SKIP_INJECT_ANNOTATION",
    "Admission",
    "CacheBackendDocument",
    "CacheBackendSpec",
    "EngineOverrides",
    "EnvOverride",
    "Integration",
    "LMCacheSpec",
    "Observation",
    "PodLocalServer",
    "RedisSpec",
    "RemoteStorage",
    "SecretKeySelector",
    "admission_problems",
    "admit",
    "cache_config_map_name",
    "format_quantity",
    "inject_cache_backend",
    "leading_token",
    "load_cache_backends",
    "parse_cache_backend",
    "parse_quantity",
    "parse_spec",
    "render_cache_config_maps",
)
