"""The typed CacheBackend spec: frozen dataclasses mirroring ``inferencecache.io/v1alpha1``.

The upstream CacheBackend (the operator in cachebox-project/inference-cache) for the
PodLocal LMCache topology. Each field declares its CRD path and parse checks
(:func:`~mlcc_constructs.core.cache.fields.crd`); field order is the order ``to_dict``
writes keys in, which is the upstream sample's. Every field is keyword-only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from mlcc_constructs.core.cache.adapters import (
    RuntimeAdapter,
    adapter_for,
    cache_types,
    mp_server,
    runtimes,
)
from mlcc_constructs.core.cache.fields import CrdModel, CrdObject, PatternRule, crd, read_crd
from mlcc_constructs.core.support.errors import Problem, raise_if_any
from mlcc_constructs.core.support.quantity import parse_quantity

API_VERSION = "inferencecache.io/v1alpha1"
KIND = "CacheBackend"

_TOPOLOGIES = ("PodLocal",)
_ROLES = ("ReadWrite", "ReadOnly", "WriteOnly")
_MODES = ("Offload",)
_OWNERSHIPS = ("Managed", "External")
_PROVIDERS = ("Redis",)
_SECRET = "a Secret key reference"

DIGEST_PINNED = PatternRule(
    pattern=re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$"),
    message="the LMCache server image must be pinned by digest",
    allowed="<repository>@sha256:<64 hex digits>",
    fix="resolve the tag to its digest (docker buildx imagetools inspect IMAGE)",
)
"""Admission rule of ``lmCache.podLocal.server.image``."""


@dataclass(frozen=True, kw_only=True)
class EnvOverride(CrdModel):
    """An ``engineOverrides.env`` entry (a Kubernetes ``EnvVar``): a plain ``value`` or a
    ``valueFrom`` source.

    Fields:

    ``name``
    ``value``: Default: none (``valueFrom`` or the empty string).
    ``value_from``: A Kubernetes ``EnvVarSource``. Default: none.
    """

    name: str = field(metadata=crd(required="the env var's name"))
    value: str | None = None
    value_from: Mapping[str, Any] | None = field(default=None, metadata=crd(excludes="value"))


@dataclass(frozen=True, kw_only=True)
class EngineOverrides(CrdModel):
    """The four primitives of ``spec.integration.engineOverrides`` (see the seed).

    Fields:

    ``args``: Replace an adapter flag by leading token, or append a new flag. Default: none.
    ``env``: Upsert an adapter-contributed env var by name, or append a new name. Default: none.
    ``suppress_args``: Remove non-reserved adapter-contributed flags. Default: none.
    ``suppress_env``: Remove non-reserved adapter-contributed env vars. Default: none.
    """

    CRD: ClassVar[CrdObject] = CrdObject(
        key_order={"": ("env", "suppressEnv", "args", "suppressArgs")}
    )

    args: tuple[str, ...] = ()
    env: tuple[EnvOverride, ...] = field(
        default=(), metadata=crd(expect="a list of {name, value} entries")
    )
    suppress_args: tuple[str, ...] = ()
    suppress_env: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Integration(CrdModel):
    """``spec.integration``: how the engine uses the cache.

    Fields:

    ``role``: ``ReadWrite``, ``ReadOnly`` or ``WriteOnly``. Default: ``ReadWrite``.
    ``fail_open``: Serve uncached when the cache is down. Default: true.
    ``mode``: Only ``Offload`` is injected by mlcc. Default: ``Offload``.
    ``engine_overrides``: Default: no overrides.
    """

    role: str | None = field(default=None, metadata=crd(enum=_ROLES))
    fail_open: bool | None = None
    mode: str | None = field(
        default=None,
        metadata=crd(
            enum=_MODES,
            refused={
                "EventsOnly": "EventsOnly is not supported by mlcc: it injects the Offload "
                "connector"
            },
        ),
    )
    engine_overrides: EngineOverrides | None = None


@dataclass(frozen=True, kw_only=True)
class PodLocalServer(CrdModel):
    """``spec.lmCache.podLocal.server``: the MP server injected next to each engine.

    Fields:

    ``image``: Digest-pinned LMCache server image (``...@sha256:<64 hex>``).
    ``port``: Loopback port the engine's connector dials.
    ``l1_capacity``: Host-memory cache capacity, a Kubernetes quantity such as ``4Gi``.
    ``max_workers``: MP server worker pool size.
    ``resources``: ``requests``/``limits``; memory must each cover l1Capacity + 1Gi.
    """

    image: str = field(
        metadata=crd(required="a digest-pinned LMCache server image", rules=(DIGEST_PINNED,))
    )
    port: int = field(metadata=crd(required="1-65535", minimum=1, maximum=65535))
    l1_capacity: str | int = field(
        metadata=crd(required="host cache capacity, e.g. 4Gi", quantity=True)
    )
    max_workers: int = field(metadata=crd(required="at least 1", minimum=1))
    resources: Mapping[str, Mapping[str, str | int]] = field(
        metadata=crd(required="requests and limits", resources=True)
    )

    @property
    def l1_bytes(self) -> Fraction:
        """``l1_capacity`` in bytes."""
        return parse_quantity(self.l1_capacity)


@dataclass(frozen=True, kw_only=True)
class LMCacheSpec(CrdModel):
    """``spec.lmCache`` for the PodLocal topology.

    Fields:

    ``topology``: Only ``PodLocal``. Default: ``PodLocal``.
    ``chunk_size_tokens``: Tokens per LMCache chunk. Default: 256.
    ``server``: The MP server (``podLocal.server``).
    """

    CRD: ClassVar[CrdObject] = CrdObject(
        refused_keys={"nodeLocal": "the NodeLocal topology is not supported by mlcc: use podLocal"},
        required_groups={"podLocal": "the PodLocal MP server"},
    )

    topology: str = field(
        default="PodLocal",
        metadata=crd(
            required="PodLocal",
            enum=_TOPOLOGIES,
            refused={
                "NodeLocal": "NodeLocal is not supported by mlcc: it injects the PodLocal MP server"
            },
        ),
    )
    chunk_size_tokens: int | None = field(default=None, metadata=crd(minimum=1, maximum=2**31 - 1))
    server: PodLocalServer = field(metadata=crd(path="podLocal.server", required="the MP server"))


@dataclass(frozen=True, kw_only=True)
class SecretKeySelector(CrdModel):
    """A key of a Secret: credentials never travel as plain values.

    Fields:

    ``key``
    ``name``
    ``optional``: Default: unset (required).
    """

    key: str = field(metadata=crd(required="the Secret's key"))
    name: str = ""
    optional: bool | None = None


@dataclass(frozen=True, kw_only=True)
class RedisSpec(CrdModel):
    """``spec.remoteStorage.redis``.

    Fields:

    ``image``: Managed Redis image. Default: the operator's.
    ``database``: Default: unset (LMCache's resp adapter cannot select one).
    ``password``: Default: none (no AUTH).
    ``username``: Default: none.
    ``tls_ca_certificate``: Default: none (LMCache's resp adapter has no TLS).
    ``tls_server_name``: Default: none.
    ``resources``: Managed Redis resources. Default: the operator's.
    """

    CRD: ClassVar[CrdObject] = CrdObject(key_order={"authentication": ("username", "password")})

    image: str | None = None
    database: int | None = field(default=None, metadata=crd(minimum=0))
    # ``authentication`` and ``tls`` are written only with their required member set.
    password: SecretKeySelector | None = field(
        default=None, metadata=crd(path="authentication.password", required=_SECRET)
    )
    username: SecretKeySelector | None = field(
        default=None, metadata=crd(path="authentication.username")
    )
    tls_ca_certificate: SecretKeySelector | None = field(
        default=None, metadata=crd(path="tls.caCertificate", required=_SECRET)
    )
    tls_server_name: str | None = field(default=None, metadata=crd(path="tls.serverName"))
    resources: Mapping[str, Mapping[str, str | int]] | None = field(
        default=None, metadata=crd(resources=True)
    )


@dataclass(frozen=True, kw_only=True)
class RemoteStorage(CrdModel):
    """``spec.remoteStorage``: an optional Redis L3 behind the MP server.

    Fields:

    ``provider``: Default: ``Redis``.
    ``ownership``: ``Managed`` (the operator runs Redis) or ``External`` (``endpoint`` names it).
    ``endpoint``: ``host:port``; required for External, refused for Managed. Default: none.
    ``redis``: Default: none.
    """

    CRD: ClassVar[CrdObject] = CrdObject(
        refused_keys={"workload": "managed Redis scheduling (workload) is not supported by mlcc"}
    )

    provider: str = field(default="Redis", metadata=crd(required="Redis", enum=_PROVIDERS))
    ownership: str = field(metadata=crd(required="Managed or External", enum=_OWNERSHIPS))
    endpoint: str | None = None
    redis: RedisSpec | None = None


@dataclass(frozen=True, kw_only=True)
class Observation(CrdModel):
    """``spec.observation``.

    Fields:

    ``model_id``: Default: none.
    ``first_event_timeout``: Default: the operator's (5m).
    """

    model_id: str | None = field(default=None, metadata=crd(path="modelID"))
    first_event_timeout: str | None = None


@dataclass(frozen=True, kw_only=True)
class CacheBackendSpec(CrdModel):
    """The typed ``spec`` of an ``inferencecache.io/v1alpha1`` CacheBackend (PodLocal LMCache).

    Unset optional fields stay ``None`` so :meth:`to_dict` emits only what was written (in
    the upstream sample's order); the ``effective_*`` properties apply the CRD defaults.
    """

    CRD: ClassVar[CrdObject] = CrdObject(
        refused_keys={"hiCache": "hiCache is not supported by mlcc: use type LMCache"}
    )

    runtime: str = field(metadata=crd(required=lambda: " or ".join(runtimes()), enum=runtimes))
    """``VLLM`` or ``SGLang`` (case-sensitive)."""
    type: str | None = field(default=None, metadata=crd(enum=cache_types))
    """Default: ``LMCache``."""
    integration: Integration | None = None
    """Default: ReadWrite, fail-open, Offload, no overrides."""
    engine_selector: Mapping[str, str] | None = field(
        default=None,
        # ``engineSelector: {}`` reads as empty labels, not as no selector.
        metadata=crd(path="engineSelector.matchLabels", empty_in_parent=True),
    )
    """``matchLabels`` for operator mode. Default: none."""
    lm_cache: LMCacheSpec | None = None
    """Required for type LMCache. Default: none."""
    remote_storage: RemoteStorage | None = None
    """Default: none (host-only hierarchy)."""
    observation: Observation | None = None
    """Default: none."""
    allow_cross_namespace: bool | None = None
    """Default: unset (false)."""

    @property
    def effective_type(self) -> str:
        """``type`` or its default."""
        return self.type or "LMCache"

    @property
    def effective_role(self) -> str:
        """``integration.role`` or its default."""
        return (self.integration.role if self.integration else None) or "ReadWrite"

    @property
    def effective_fail_open(self) -> bool:
        """``integration.failOpen`` or its default (true)."""
        value = self.integration.fail_open if self.integration else None
        return True if value is None else value

    @property
    def overrides(self) -> EngineOverrides:
        """``integration.engineOverrides`` or none."""
        found = self.integration.engine_overrides if self.integration else None
        return found or EngineOverrides()

    @property
    def effective_chunk_size_tokens(self) -> int:
        """``lmCache.chunkSizeTokens`` or its default (256)."""
        chunk = self.lm_cache.chunk_size_tokens if self.lm_cache else None
        return chunk if chunk is not None else mp_server().default_chunk_size_tokens

    @property
    def adapter(self) -> RuntimeAdapter | None:
        """The runtime adapter this spec selects, or none."""
        return adapter_for(self.runtime, self.effective_type)

    @classmethod
    def from_dict(cls, data: object, *, where: str = "", path: str = "/spec") -> CacheBackendSpec:
        """Read a ``spec`` mapping into the typed spec; raises :class:`MlccError` with every
        problem of its shape and values.

        ``path`` is the JSON pointer of ``data`` in its document (problems are named under
        it): ``/spec`` in a CacheBackend, ``/cache_backend`` in a deployment spec file. The
        admission rules run where the spec is used (:func:`~mlcc_constructs.core.cache.admit`,
        once per spec object: :func:`~mlcc_constructs.core.serving.prepared.prepare`,
        the ``CacheBackend`` construct); :func:`~mlcc_constructs.core.cache.parse_spec` reads
        and admits in one step.
        """
        problems: list[Problem] = []
        spec = read_crd(cls, data, pointer=path, where=where, problems=problems)
        raise_if_any(problems)
        assert spec is not None
        return spec


@dataclass(frozen=True, kw_only=True)
class CacheBackendDocument:
    """A whole CacheBackend object: metadata plus the typed spec.

    Fields:

    ``name``
    ``spec``
    ``namespace``: Default: none (the namespace the object is applied to).
    """

    name: str
    spec: CacheBackendSpec
    namespace: str | None = None


__all__ = (
    "API_VERSION",
    "DIGEST_PINNED",
    "KIND",
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
)
