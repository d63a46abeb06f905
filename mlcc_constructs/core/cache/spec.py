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

from mlcc_constructs.core.cache.fields import CrdModel, CrdObject, PatternRule, crd
from mlcc_constructs.core.cache.quantity import parse_quantity
from mlcc_constructs.core.cache_adapters import RuntimeAdapter, adapter_for, mp_server, runtimes

API_VERSION = "inferencecache.io/v1alpha1"
KIND = "CacheBackend"

_TYPES = ("LMCache", "SGLangHiCache")
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
    ``valueFrom`` source."""

    name: str = field(metadata=crd(required="the env var's name"))
    value: str | None = None
    """Default: none (``valueFrom`` or the empty string)."""
    value_from: Mapping[str, Any] | None = field(default=None, metadata=crd(excludes="value"))
    """A Kubernetes ``EnvVarSource``. Default: none."""


@dataclass(frozen=True, kw_only=True)
class EngineOverrides(CrdModel):
    """The four primitives of ``spec.integration.engineOverrides`` (see the seed)."""

    CRD: ClassVar[CrdObject] = CrdObject(
        key_order={"": ("env", "suppressEnv", "args", "suppressArgs")}
    )

    args: tuple[str, ...] = ()
    """Replace an adapter flag by leading token, or append a new flag. Default: none."""
    env: tuple[EnvOverride, ...] = field(
        default=(), metadata=crd(expect="a list of {name, value} entries")
    )
    """Upsert an adapter-contributed env var by name, or append a new name. Default: none."""
    suppress_args: tuple[str, ...] = ()
    """Remove non-reserved adapter-contributed flags. Default: none."""
    suppress_env: tuple[str, ...] = ()
    """Remove non-reserved adapter-contributed env vars. Default: none."""


@dataclass(frozen=True, kw_only=True)
class Integration(CrdModel):
    """``spec.integration``: how the engine uses the cache."""

    role: str | None = field(default=None, metadata=crd(enum=_ROLES))
    """``ReadWrite``, ``ReadOnly`` or ``WriteOnly``. Default: ``ReadWrite``."""
    fail_open: bool | None = None
    """Serve uncached when the cache is down. Default: true."""
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
    """Only ``Offload`` is injected by mlcc. Default: ``Offload``."""
    engine_overrides: EngineOverrides | None = None
    """Default: no overrides."""


@dataclass(frozen=True, kw_only=True)
class PodLocalServer(CrdModel):
    """``spec.lmCache.podLocal.server``: the MP server injected next to each engine."""

    image: str = field(
        metadata=crd(required="a digest-pinned LMCache server image", rules=(DIGEST_PINNED,))
    )
    """Digest-pinned LMCache server image (``...@sha256:<64 hex>``)."""
    port: int = field(metadata=crd(required="1-65535", minimum=1, maximum=65535))
    """Loopback port the engine's connector dials."""
    l1_capacity: str | int = field(
        metadata=crd(required="host cache capacity, e.g. 4Gi", quantity=True)
    )
    """Host-memory cache capacity, a Kubernetes quantity such as ``4Gi``."""
    max_workers: int = field(metadata=crd(required="at least 1", minimum=1))
    """MP server worker pool size."""
    resources: Mapping[str, Mapping[str, str | int]] = field(
        metadata=crd(required="requests and limits", resources=True)
    )
    """``requests``/``limits``; memory must each cover l1Capacity + 1Gi."""

    @property
    def l1_bytes(self) -> Fraction:
        """``l1_capacity`` in bytes."""
        return parse_quantity(self.l1_capacity)


@dataclass(frozen=True, kw_only=True)
class LMCacheSpec(CrdModel):
    """``spec.lmCache`` for the PodLocal topology."""

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
    """Only ``PodLocal``. Default: ``PodLocal``."""
    chunk_size_tokens: int | None = field(default=None, metadata=crd(minimum=1, maximum=2**31 - 1))
    """Tokens per LMCache chunk. Default: 256."""
    server: PodLocalServer = field(metadata=crd(path="podLocal.server", required="the MP server"))
    """The MP server (``podLocal.server``)."""


@dataclass(frozen=True, kw_only=True)
class SecretKeySelector(CrdModel):
    """A key of a Secret: credentials never travel as plain values."""

    key: str = field(metadata=crd(required="the Secret's key"))
    name: str = ""
    optional: bool | None = None
    """Default: unset (required)."""


@dataclass(frozen=True, kw_only=True)
class RedisSpec(CrdModel):
    """``spec.remoteStorage.redis``."""

    CRD: ClassVar[CrdObject] = CrdObject(key_order={"authentication": ("username", "password")})

    image: str | None = None
    """Managed Redis image. Default: the operator's."""
    database: int | None = field(default=None, metadata=crd(minimum=0))
    """Default: unset (LMCache's resp adapter cannot select one)."""
    # ``authentication`` and ``tls`` are written only with their required member set.
    password: SecretKeySelector | None = field(
        default=None, metadata=crd(path="authentication.password", required=_SECRET)
    )
    """Default: none (no AUTH)."""
    username: SecretKeySelector | None = field(
        default=None, metadata=crd(path="authentication.username")
    )
    """Default: none."""
    tls_ca_certificate: SecretKeySelector | None = field(
        default=None, metadata=crd(path="tls.caCertificate", required=_SECRET)
    )
    """Default: none (LMCache's resp adapter has no TLS)."""
    tls_server_name: str | None = field(default=None, metadata=crd(path="tls.serverName"))
    """Default: none."""
    resources: Mapping[str, Mapping[str, str | int]] | None = field(
        default=None, metadata=crd(resources=True)
    )
    """Managed Redis resources. Default: the operator's."""


@dataclass(frozen=True, kw_only=True)
class RemoteStorage(CrdModel):
    """``spec.remoteStorage``: an optional Redis L3 behind the MP server."""

    CRD: ClassVar[CrdObject] = CrdObject(
        refused_keys={"workload": "managed Redis scheduling (workload) is not supported by mlcc"}
    )

    provider: str = field(default="Redis", metadata=crd(required="Redis", enum=_PROVIDERS))
    """Default: ``Redis``."""
    ownership: str = field(metadata=crd(required="Managed or External", enum=_OWNERSHIPS))
    """``Managed`` (the operator runs Redis) or ``External`` (``endpoint`` names it)."""
    endpoint: str | None = None
    """``host:port``; required for External, refused for Managed. Default: none."""
    redis: RedisSpec | None = None
    """Default: none."""


@dataclass(frozen=True, kw_only=True)
class Observation(CrdModel):
    """``spec.observation``."""

    model_id: str | None = field(default=None, metadata=crd(path="modelID"))
    """Default: none."""
    first_event_timeout: str | None = None
    """Default: the operator's (5m)."""


@dataclass(frozen=True, kw_only=True)
class CacheBackendSpec(CrdModel):
    """The typed ``spec`` of an ``inferencecache.io/v1alpha1`` CacheBackend (PodLocal LMCache).

    Unset optional fields stay ``None`` so :meth:`to_dict` emits only what was written (in
    the upstream sample's order); the ``effective_*`` properties apply the CRD defaults.
    """

    CRD: ClassVar[CrdObject] = CrdObject(
        refused_keys={
            "hiCache": "hiCache (type SGLangHiCache) is not supported by mlcc: use type LMCache"
        }
    )

    runtime: str = field(metadata=crd(required="VLLM or SGLang", enum=runtimes))
    """``VLLM`` or ``SGLang`` (case-sensitive)."""
    type: str | None = field(default=None, metadata=crd(enum=_TYPES))
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
        """Parse and admit a ``spec`` mapping; raises :class:`MlccError` with every problem.

        ``path`` is the JSON pointer of ``data`` in its document (problems are named under
        it): ``/spec`` in a CacheBackend, ``/cache_backend`` in a deployment spec file.
        """
        from mlcc_constructs.core.cache.parse import parse_spec

        return parse_spec(data, where=where, path=path)


@dataclass(frozen=True, kw_only=True)
class CacheBackendDocument:
    """A whole CacheBackend object: metadata plus the typed spec."""

    name: str
    spec: CacheBackendSpec
    namespace: str | None = None
    """Default: none (the namespace the object is applied to)."""


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
