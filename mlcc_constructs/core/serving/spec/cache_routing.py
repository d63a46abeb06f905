"""``routing`` and ``kv_cache``: the HyperPod inference operator's intelligent routing and
managed tiered KV cache for one deployment (:class:`Routing`, :class:`KvCache`), and the checks
of their values (:func:`routing_problems`, :func:`kv_cache_problems`), each naming its field.

Facts: AWS, "KV caching and intelligent routing"
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-caching-routing.html,
read 2026-12-02) and the v1 InferenceEndpointConfig CRD (aws/sagemaker-hyperpod-cli, chart
2.2.2):

* the routing strategies are ``prefixaware`` (the default), ``kvaware``, ``session`` and
  ``roundrobin`` (the CRD's ``intelligentRoutingSpec.routingStrategy`` enum);
* the L1 cache is CPU memory on the node; the L2 backend is ``redis`` or ``tieredstorage``
  (the CRD's ``l2CacheBackend`` pattern). Redis needs the Redis cluster's URL in
  ``l2CacheLocalUrl``; tiered storage does not (HyperPod's managed tiered storage, which must be
  enabled on the cluster);
* ``cacheConfigFile``, when given, overrides the other KV cache settings;
* both features are supported for vLLM-based inference containers only (engine manifests say
  so: ``managed_cache_routing``), on targets whose manifest says ``managed_cache_routing``.

Which targets and engines take them is checked where the target and the engine are known
(:mod:`mlcc_constructs.core.serving.prepare.cache_routing`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlcc_constructs.core.support.errors import Problem, closest
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields

ROUTING_STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")
"""The v1 CRD's ``intelligentRoutingSpec.routingStrategy`` enum, in its order."""
DEFAULT_STRATEGY = "prefixaware"
"""The CRD's and the docs' default strategy."""
L2_URL_REQUIRED = {"redis": True, "tieredstorage": False}
"""The L2 backends (the CRD's ``l2CacheBackend``) and whether each needs ``l2_url``: Redis is
reached at its cluster URL; HyperPod's tiered storage runs on the nodes (the docs: the URL is
"not required" for it)."""
_REDIS_URL = re.compile(r"^rediss?://[^\s/:]+(:[0-9]{1,5})?(/.*)?$")


@dataclass(frozen=True, kw_only=True)
class Routing:
    """The operator's intelligent routing (hyperpod-eks: the IEC's ``intelligentRoutingSpec``).

    It cannot be added to, changed on or removed from an existing endpoint (the CRD: such an
    update is rejected): turning it on replaces the endpoint (README, *Routing and KV cache*)."""

    strategy: str = field(default=DEFAULT_STRATEGY, metadata=meta(enum=list(ROUTING_STRATEGIES)))
    """``prefixaware`` (requests with the same prompt prefix go to the same instance),
    ``kvaware`` (to the instance with the best KV cache hit rate), ``session`` (a user session
    stays on one instance) or ``roundrobin``. Default: prefixaware."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, kw_only=True)
class KvCache:
    """The operator's managed tiered KV cache (hyperpod-eks: the IEC's ``kvCacheSpec``)."""

    l1: bool = True
    """Offload the KV cache to the node's CPU memory (``enableL1Cache``). Default: true."""
    l2: str | None = field(default=None, metadata=meta(enum=list(L2_URL_REQUIRED)))
    """The shared L2 tier: ``redis`` (needs ``l2_url``) or ``tieredstorage`` (HyperPod's managed
    tiered storage, enabled on the cluster). Default: none (no L2 tier)."""
    l2_url: str | None = field(default=None, metadata=meta(minLength=1))
    """The Redis cluster's URL, ``redis://host:port`` or ``rediss://host:port``
    (``l2CacheSpec.l2CacheLocalUrl``). Default: none."""
    config_file: str | None = field(default=None, metadata=meta(minLength=1))
    """An absolute path, in the container, of a KV cache configuration file
    (``cacheConfigFile``): it overrides ``l1`` and ``l2``. Default: none."""

    def __post_init__(self) -> None:
        check_fields(self)


def routing_problems(routing: Routing, *, pointer: str = "/cache/routing") -> list[Problem]:
    """A strategy the operator does not know."""
    if routing.strategy in ROUTING_STRATEGIES:
        return []
    near = closest(routing.strategy, ROUTING_STRATEGIES)
    return [
        Problem(
            message="the inference operator has no such routing strategy",
            pointer=f"{pointer}/strategy",
            value=routing.strategy,
            allowed=", ".join(ROUTING_STRATEGIES),
            fix=f"did you mean {', '.join(near)}?"
            if near
            else f"leave strategy unset for {DEFAULT_STRATEGY}, or name an allowed one",
        )
    ]


def kv_cache_problems(kv_cache: KvCache, *, pointer: str = "/cache/kv_cache") -> list[Problem]:
    """An unknown L2 backend, a backend without the settings it needs, a URL without a
    backend, and a config file that is not an absolute path."""
    problems: list[Problem] = []
    backend, url = kv_cache.l2, kv_cache.l2_url
    if backend is not None and backend not in L2_URL_REQUIRED:
        problems.append(
            Problem(
                message="the inference operator has no such L2 cache backend",
                pointer=f"{pointer}/l2",
                value=backend,
                allowed=", ".join(L2_URL_REQUIRED),
                fix="use redis (with l2_url) or tieredstorage, or drop l2",
            )
        )
    elif backend is not None and L2_URL_REQUIRED[backend] and url is None:
        problems.append(
            Problem(
                message=f"the L2 backend {backend} is reached at its cluster's URL, and none "
                "is given",
                pointer=f"{pointer}/l2_url",
                value=None,
                allowed="redis://host:port or rediss://host:port",
                fix="set kv_cache.l2_url to the Redis cluster's endpoint, e.g. "
                "redis://redis.my-namespace.svc.cluster.local:6379, or use l2: tieredstorage",
            )
        )
    if url is not None and backend is None:
        problems.append(
            Problem(
                message="l2_url names the L2 cache, but no L2 backend is chosen",
                pointer=f"{pointer}/l2_url",
                value=url,
                fix="set kv_cache.l2: redis, or drop l2_url",
            )
        )
    elif url is not None and backend == "redis" and not _REDIS_URL.match(url):
        problems.append(
            Problem(
                message="not a Redis URL",
                pointer=f"{pointer}/l2_url",
                value=url,
                allowed="redis://host:port or rediss://host:port",
                fix="give the Redis cluster's endpoint, e.g. "
                "redis://redis.my-namespace.svc.cluster.local:6379",
            )
        )
    path = kv_cache.config_file
    if path is not None and (not path.startswith("/") or any(c.isspace() for c in path)):
        problems.append(
            Problem(
                message="the KV cache config file is a path inside the worker container",
                pointer=f"{pointer}/config_file",
                value=path,
                allowed="an absolute path without spaces",
                fix="name the file where the image or the mounted model has it, e.g. "
                "/opt/ml/model/kv-cache.yaml",
            )
        )
    return problems


def kv_cache_warnings(kv_cache: KvCache) -> list[str]:
    """What a valid ``kv_cache`` leaves for the user to know: a config file wins over ``l2``."""
    if kv_cache.config_file is None or kv_cache.l2 is None:
        return []
    return [
        f"kv_cache.config_file {kv_cache.config_file} takes precedence over kv_cache.l2 and "
        "kv_cache.l1 (the v1 CRD's cacheConfigFile overrides the other kvCacheSpec settings): "
        "the file must configure the L2 tier itself"
    ]
