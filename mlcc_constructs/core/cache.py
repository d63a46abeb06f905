"""LMCache CacheBackend: the typed spec, admission and injection into an engine Deployment.

The spec mirrors the upstream ``inferencecache.io/v1alpha1`` CacheBackend (the operator in
cachebox-project/inference-cache) for the PodLocal LMCache topology. Three uses:

- :func:`parse_cache_backend` / :meth:`CacheBackendSpec.from_dict`: YAML or dicts to typed
  objects, every problem named by its field path (``spec.lmCache.chunkSizeTokens``).
- :func:`admission_problems`: the rules the operator's admission webhook applies, above all
  that ``spec.integration.engineOverrides`` may not replace or suppress a token the selected
  runtime adapter reserves. Every problem of a spec is reported at once.
- :func:`inject_cache_backend`: a pure function that wires a plain Deployment (or pod
  template) dict the way the operator's pod webhook would, so a cluster without the operator
  gets the same pods: the adapter's canonical wire, the four override primitives, the
  ``lmcache-mp-server`` native sidecar and the shared ``/dev/shm``.

Adapters are data (:mod:`mlcc_constructs.core.cache_adapters`); the rules below never
branch on a runtime name.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from mlcc_constructs.core.cache_adapters import (
    RuntimeAdapter,
    adapter_for,
    mp_server,
    runtimes,
    substitute,
    supported_pairs,
)
from mlcc_constructs.core.errors import MlccError, Problem, closest, raise_if_any

API_VERSION = "inferencecache.io/v1alpha1"
KIND = "CacheBackend"
SKIP_INJECT_ANNOTATION = "inferencecache.io/skip-inject"
INJECTED_BY_ANNOTATION = "inferencecache.io/injected-by"
OVERRIDES_PATH = "spec.integration.engineOverrides"

_TYPES = ("LMCache", "SGLangHiCache")
_TOPOLOGIES = ("PodLocal",)
_ROLES = ("ReadWrite", "ReadOnly", "WriteOnly")
_MODES = ("Offload",)
_OWNERSHIPS = ("Managed", "External")
_PROVIDERS = ("Redis",)
_OPT_OUT = 'annotate a pod template inferencecache.io/skip-inject: "true" to opt it out'

# --------------------------------------------------------------------------- quantities

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_BINARY: dict[str, int] = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_BINARY["Ei"] = 2**60
_DECIMAL: dict[str, Fraction] = {
    suffix: Fraction(10) ** exponent
    for suffix, exponent in (
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    )
}


def parse_quantity(value: str | int) -> Fraction:
    """A Kubernetes quantity (``4Gi``, ``500M``, ``1.5e9``, ``4294967296``) as an exact number.

    Raises ``ValueError`` for anything the apiserver's quantity pattern refuses.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"not a quantity: {value!r}")
    match = _QUANTITY.match(str(value))
    if not match:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(match.group("number"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        number *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= _DECIMAL[suffix]
    elif suffix:
        number *= Fraction(10) ** int(suffix[1:])
    return -number if match.group("sign") == "-" else number


def format_quantity(amount: Fraction | int) -> str:
    """The shortest exact spelling of a byte count: ``5Gi``, ``4G``, ``4954826Ki``, ``123``."""
    value = Fraction(amount)
    if value.denominator != 1 or value < 0:
        raise ValueError(f"not a whole, non-negative byte count: {amount}")
    whole = int(value)
    candidates = [str(whole)]
    units: list[tuple[str, int]] = list(_BINARY.items())
    units += [(suffix, int(unit)) for suffix, unit in _DECIMAL.items() if unit >= 1000]
    for suffix, unit in units:
        if whole % unit == 0:
            candidates.append(f"{whole // unit}{suffix}")
    # Shortest wins; ties keep the earlier (binary) spelling.
    return min(candidates, key=len)


def _gib_text(amount: Fraction) -> str:
    """``--l1-size-gb`` text: LMCache multiplies this float by 2**30."""
    gib = amount / 2**30
    if gib.denominator == 1:
        return str(int(gib))
    return repr(float(gib))


# --------------------------------------------------------------------------- the spec


@dataclass(frozen=True, kw_only=True)
class EnvOverride:
    """An ``engineOverrides.env`` entry: a plain ``value`` or a ``valueFrom`` source."""

    name: str
    value: str | None = None
    """Default: none (``valueFrom`` or the empty string)."""
    value_from: Mapping[str, Any] | None = None
    """A Kubernetes ``EnvVarSource``. Default: none."""

    def to_dict(self) -> dict[str, Any]:
        """The Kubernetes ``EnvVar``."""
        out: dict[str, Any] = {"name": self.name}
        if self.value is not None:
            out["value"] = self.value
        if self.value_from is not None:
            out["valueFrom"] = copy.deepcopy(dict(self.value_from))
        return out


@dataclass(frozen=True, kw_only=True)
class EngineOverrides:
    """The four primitives of ``spec.integration.engineOverrides`` (see the seed)."""

    env: tuple[EnvOverride, ...] = ()
    """Upsert an adapter-contributed env var by name, or append a new name. Default: none."""
    suppress_env: tuple[str, ...] = ()
    """Remove non-reserved adapter-contributed env vars. Default: none."""
    args: tuple[str, ...] = ()
    """Replace an adapter flag by leading token, or append a new flag. Default: none."""
    suppress_args: tuple[str, ...] = ()
    """Remove non-reserved adapter-contributed flags. Default: none."""

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape, empty lists omitted."""
        out: dict[str, Any] = {}
        if self.args:
            out["args"] = list(self.args)
        if self.env:
            out["env"] = [e.to_dict() for e in self.env]
        if self.suppress_args:
            out["suppressArgs"] = list(self.suppress_args)
        if self.suppress_env:
            out["suppressEnv"] = list(self.suppress_env)
        return out


@dataclass(frozen=True, kw_only=True)
class Integration:
    """``spec.integration``: how the engine uses the cache."""

    role: str | None = None
    """``ReadWrite``, ``ReadOnly`` or ``WriteOnly``. Default: ``ReadWrite``."""
    fail_open: bool | None = None
    """Serve uncached when the cache is down. Default: true."""
    mode: str | None = None
    """Only ``Offload`` is injected by mlcc. Default: ``Offload``."""
    engine_overrides: EngineOverrides | None = None
    """Default: no overrides."""

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape."""
        out: dict[str, Any] = {}
        if self.role is not None:
            out["role"] = self.role
        if self.fail_open is not None:
            out["failOpen"] = self.fail_open
        if self.mode is not None:
            out["mode"] = self.mode
        if self.engine_overrides is not None:
            out["engineOverrides"] = self.engine_overrides.to_dict()
        return out


@dataclass(frozen=True, kw_only=True)
class PodLocalServer:
    """``spec.lmCache.podLocal.server``: the MP server injected next to each engine."""

    image: str
    """Digest-pinned LMCache server image (``...@sha256:<64 hex>``)."""
    port: int
    """Loopback port the engine's connector dials."""
    l1_capacity: str | int
    """Host-memory cache capacity, a Kubernetes quantity such as ``4Gi``."""
    max_workers: int
    """MP server worker pool size."""
    resources: Mapping[str, Mapping[str, str | int]]
    """``requests``/``limits``; memory must each cover l1Capacity + 1Gi."""

    @property
    def l1_bytes(self) -> Fraction:
        """``l1_capacity`` in bytes."""
        return parse_quantity(self.l1_capacity)

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape."""
        return {
            "image": self.image,
            "port": self.port,
            "l1Capacity": self.l1_capacity,
            "maxWorkers": self.max_workers,
            "resources": {kind: dict(values) for kind, values in self.resources.items()},
        }


@dataclass(frozen=True, kw_only=True)
class LMCacheSpec:
    """``spec.lmCache`` for the PodLocal topology."""

    server: PodLocalServer
    chunk_size_tokens: int | None = None
    """Tokens per LMCache chunk. Default: 256."""
    topology: str = "PodLocal"
    """Only ``PodLocal``. Default: ``PodLocal``."""

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape."""
        out: dict[str, Any] = {"topology": self.topology}
        if self.chunk_size_tokens is not None:
            out["chunkSizeTokens"] = self.chunk_size_tokens
        out["podLocal"] = {"server": self.server.to_dict()}
        return out


@dataclass(frozen=True, kw_only=True)
class SecretKeySelector:
    """A key of a Secret: credentials never travel as plain values."""

    key: str
    name: str = ""
    optional: bool | None = None
    """Default: unset (required)."""

    def to_dict(self) -> dict[str, Any]:
        """The Kubernetes ``SecretKeySelector``."""
        out: dict[str, Any] = {"key": self.key, "name": self.name}
        if self.optional is not None:
            out["optional"] = self.optional
        return out


@dataclass(frozen=True, kw_only=True)
class RedisSpec:
    """``spec.remoteStorage.redis``."""

    image: str | None = None
    """Managed Redis image. Default: the operator's."""
    database: int | None = None
    """Default: unset (LMCache's resp adapter cannot select one)."""
    username: SecretKeySelector | None = None
    """Default: none."""
    password: SecretKeySelector | None = None
    """Default: none (no AUTH)."""
    tls_ca_certificate: SecretKeySelector | None = None
    """Default: none (LMCache's resp adapter has no TLS)."""
    tls_server_name: str | None = None
    """Default: none."""
    resources: Mapping[str, Mapping[str, str | int]] | None = None
    """Managed Redis resources. Default: the operator's."""

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape."""
        out: dict[str, Any] = {}
        if self.image is not None:
            out["image"] = self.image
        if self.database is not None:
            out["database"] = self.database
        if self.password is not None:
            auth: dict[str, Any] = {"password": self.password.to_dict()}
            if self.username is not None:
                auth["username"] = self.username.to_dict()
            out["authentication"] = auth
        if self.tls_ca_certificate is not None:
            tls: dict[str, Any] = {"caCertificate": self.tls_ca_certificate.to_dict()}
            if self.tls_server_name is not None:
                tls["serverName"] = self.tls_server_name
            out["tls"] = tls
        if self.resources is not None:
            out["resources"] = {kind: dict(values) for kind, values in self.resources.items()}
        return out


@dataclass(frozen=True, kw_only=True)
class RemoteStorage:
    """``spec.remoteStorage``: an optional Redis L3 behind the MP server."""

    ownership: str
    """``Managed`` (the operator runs Redis) or ``External`` (``endpoint`` names it)."""
    provider: str = "Redis"
    """Default: ``Redis``."""
    endpoint: str | None = None
    """``host:port``; required for External, refused for Managed. Default: none."""
    redis: RedisSpec | None = None
    """Default: none."""

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape."""
        out: dict[str, Any] = {"provider": self.provider, "ownership": self.ownership}
        if self.endpoint is not None:
            out["endpoint"] = self.endpoint
        if self.redis is not None:
            out["redis"] = self.redis.to_dict()
        return out


@dataclass(frozen=True, kw_only=True)
class Observation:
    """``spec.observation``."""

    model_id: str | None = None
    """Default: none."""
    first_event_timeout: str | None = None
    """Default: the operator's (5m)."""

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape."""
        out: dict[str, Any] = {}
        if self.model_id is not None:
            out["modelID"] = self.model_id
        if self.first_event_timeout is not None:
            out["firstEventTimeout"] = self.first_event_timeout
        return out


@dataclass(frozen=True, kw_only=True)
class CacheBackendSpec:
    """The typed ``spec`` of an ``inferencecache.io/v1alpha1`` CacheBackend (PodLocal LMCache).

    Unset optional fields stay ``None`` so :meth:`to_dict` emits only what was written; the
    ``effective_*`` properties apply the CRD defaults.
    """

    runtime: str
    """``VLLM`` or ``SGLang`` (case-sensitive)."""
    lm_cache: LMCacheSpec | None = None
    """Required for type LMCache. Default: none."""
    type: str | None = None
    """Default: ``LMCache``."""
    integration: Integration | None = None
    """Default: ReadWrite, fail-open, Offload, no overrides."""
    engine_selector: Mapping[str, str] | None = None
    """``matchLabels`` for operator mode. Default: none."""
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

    def to_dict(self) -> dict[str, Any]:
        """The CRD ``spec``, fields in the upstream sample's order."""
        out: dict[str, Any] = {"runtime": self.runtime}
        if self.type is not None:
            out["type"] = self.type
        if self.integration is not None:
            out["integration"] = self.integration.to_dict()
        if self.engine_selector is not None:
            out["engineSelector"] = {"matchLabels": dict(self.engine_selector)}
        if self.lm_cache is not None:
            out["lmCache"] = self.lm_cache.to_dict()
        if self.remote_storage is not None:
            out["remoteStorage"] = self.remote_storage.to_dict()
        if self.observation is not None:
            out["observation"] = self.observation.to_dict()
        if self.allow_cross_namespace is not None:
            out["allowCrossNamespace"] = self.allow_cross_namespace
        return out

    @classmethod
    def from_dict(cls, data: object, *, where: str = "", path: str = "spec") -> CacheBackendSpec:
        """Parse and admit a ``spec`` mapping; raises :class:`MlccError` with every problem."""
        spec, problems = _parse_spec(data, path, where)
        if spec is not None:
            problems = _merge(problems, admission_problems(spec, where=where, path=path))
        raise_if_any(problems)
        assert spec is not None
        return spec


@dataclass(frozen=True, kw_only=True)
class CacheBackendDocument:
    """A whole CacheBackend object: metadata plus the typed spec."""

    name: str
    spec: CacheBackendSpec
    namespace: str | None = None
    """Default: none (the namespace the object is applied to)."""


# --------------------------------------------------------------------------- parsing


class _Reader:
    """Reads one object, collecting problems under its field path."""

    def __init__(self, node: Mapping[str, Any], path: str, where: str, problems: list[Problem]):
        self.node, self.path, self.where, self.problems = node, path, where, problems

    def at(self, key: str | int) -> str:
        return f"{self.path}[{key}]" if isinstance(key, int) else f"{self.path}.{key}"

    def problem(self, key: str | int | None, message: str, **details: Any) -> None:
        pointer = self.path if key is None else self.at(key)
        self.problems.append(Problem(message=message, where=self.where, pointer=pointer, **details))

    def check_keys(
        self, known: Sequence[str], unsupported: Mapping[str, str] | None = None
    ) -> None:
        for key in self.node:
            if unsupported and key in unsupported:
                self.problem(key, unsupported[key])
            elif key not in known:
                near = closest(str(key), known)
                self.problem(
                    str(key),
                    "unknown field",
                    allowed=", ".join(known),
                    fix=f"did you mean {near[0]}?" if near else "remove it",
                )

    def missing(self, key: str, what: str) -> None:
        self.problem(key, "required field is missing", fix=f"set {self.at(key)} ({what})")

    def string(self, key: str, *, required: str = "", enum: Sequence[str] = ()) -> str | None:
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        if not isinstance(value, str):
            self.problem(key, "must be a string", value=value)
            return None
        if enum and value not in enum:
            near = [e for e in enum if e.lower() == value.lower()] or closest(value, enum)
            self.problem(
                key,
                "not an allowed value",
                value=value,
                allowed=", ".join(enum),
                fix=f"values are case-sensitive: use {near[0]}" if near else "",
            )
            return None
        return value

    def integer(
        self,
        key: str,
        *,
        required: str = "",
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(key, "must be an integer", value=value)
            return None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            bounds = f"{minimum if minimum is not None else '…'}..{maximum or '…'}"
            self.problem(key, "out of range", value=value, allowed=bounds)
            return None
        return value

    def boolean(self, key: str) -> bool | None:
        if key not in self.node:
            return None
        value = self.node[key]
        if not isinstance(value, bool):
            self.problem(key, "must be true or false", value=value)
            return None
        return value

    def quantity(self, key: str, *, required: str = "") -> str | int | None:
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        try:
            amount = parse_quantity(value)
        except ValueError:
            self.problem(
                key, "not a Kubernetes quantity", value=value, allowed="e.g. 4Gi, 4096Mi, 4G"
            )
            return None
        if amount <= 0:
            self.problem(key, "must be greater than zero", value=value)
            return None
        return value  # type: ignore[no-any-return]

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.node.get(key, [])
        if not isinstance(value, list):
            self.problem(key, "must be a list of strings", value=value)
            return ()
        good = True
        for index, item in enumerate(value):
            if not isinstance(item, str):
                pointer = f"{self.at(key)}[{index}]"
                self.problems.append(
                    Problem(
                        message="must be a string", where=self.where, pointer=pointer, value=item
                    )
                )
                good = False
        return tuple(value) if good else ()

    def child(self, key: str, *, required: str = "") -> _Reader | None:
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        if not isinstance(value, Mapping):
            self.problem(key, "must be an object", value=value)
            return None
        return _Reader(value, self.at(key), self.where, self.problems)

    def string_map(self, key: str) -> dict[str, str] | None:
        reader = self.child(key)
        if reader is None:
            return None
        out: dict[str, str] = {}
        for name, value in reader.node.items():
            if not isinstance(value, str):
                reader.problem(str(name), "must be a string", value=value)
            else:
                out[str(name)] = value
        return out


def _resources(
    parent: _Reader, key: str, *, required: str = ""
) -> dict[str, dict[str, Any]] | None:
    reader = parent.child(key, required=required)
    if reader is None:
        return None
    reader.check_keys(("requests", "limits"), {"claims": "resource claims are not supported"})
    out: dict[str, dict[str, Any]] = {}
    for kind in ("requests", "limits"):
        values = reader.child(kind)
        if values is None:
            continue
        out[kind] = {}
        for name in values.node:
            amount = values.quantity(str(name))
            if amount is not None:
                out[kind][str(name)] = amount
    return out


def _secret(parent: _Reader, key: str) -> SecretKeySelector | None:
    reader = parent.child(key)
    if reader is None:
        return None
    reader.check_keys(("key", "name", "optional"))
    secret_key = reader.string("key", required="the Secret's key")
    name = reader.string("name") or ""
    if secret_key is None:
        return None
    return SecretKeySelector(key=secret_key, name=name, optional=reader.boolean("optional"))


def _parse_overrides(reader: _Reader) -> EngineOverrides:
    reader.check_keys(("env", "suppressEnv", "args", "suppressArgs"))
    env: list[EnvOverride] = []
    raw_env = reader.node.get("env", [])
    if not isinstance(raw_env, list):
        reader.problem("env", "must be a list of {name, value} entries", value=raw_env)
        raw_env = []
    for index, item in enumerate(raw_env):
        entry_path = f"{reader.at('env')}[{index}]"
        if not isinstance(item, Mapping):
            reader.problems.append(
                Problem(
                    message="must be an object", where=reader.where, pointer=entry_path, value=item
                )
            )
            continue
        entry = _Reader(item, entry_path, reader.where, reader.problems)
        entry.check_keys(("name", "value", "valueFrom"))
        name = entry.string("name", required="the env var's name")
        value = entry.string("value")
        value_from = entry.child("valueFrom")
        if value and value_from is not None:
            entry.problem("valueFrom", "cannot be used together with a non-empty value")
        if name is not None:
            env.append(
                EnvOverride(
                    name=name,
                    value=value,
                    value_from=dict(value_from.node) if value_from is not None else None,
                )
            )
    return EngineOverrides(
        env=tuple(env),
        suppress_env=reader.strings("suppressEnv"),
        args=reader.strings("args"),
        suppress_args=reader.strings("suppressArgs"),
    )


def _parse_spec(
    data: object, path: str, where: str
) -> tuple[CacheBackendSpec | None, list[Problem]]:
    problems: list[Problem] = []
    if not isinstance(data, Mapping):
        problems.append(Problem(message="must be an object", where=where, pointer=path, value=data))
        return None, problems
    spec = _Reader(data, path, where, problems)
    spec.check_keys(
        (
            "runtime",
            "type",
            "integration",
            "engineSelector",
            "lmCache",
            "remoteStorage",
            "observation",
            "allowCrossNamespace",
        ),
        {"hiCache": "hiCache (type SGLangHiCache) is not supported by mlcc: use type LMCache"},
    )
    runtime = spec.string("runtime", required="VLLM or SGLang", enum=runtimes())
    cache_type = spec.string("type", enum=_TYPES)

    integration: Integration | None = None
    reader = spec.child("integration")
    if reader is not None:
        reader.check_keys(("role", "failOpen", "mode", "engineOverrides"))
        mode_reader_value = reader.node.get("mode")
        if mode_reader_value == "EventsOnly":
            reader.problem(
                "mode",
                "EventsOnly is not supported by mlcc: it injects the Offload connector",
                value="EventsOnly",
                allowed="Offload",
            )
            mode = None
        else:
            mode = reader.string("mode", enum=_MODES)
        overrides_reader = reader.child("engineOverrides")
        integration = Integration(
            role=reader.string("role", enum=_ROLES),
            fail_open=reader.boolean("failOpen"),
            mode=mode,
            engine_overrides=_parse_overrides(overrides_reader) if overrides_reader else None,
        )

    selector: dict[str, str] | None = None
    reader = spec.child("engineSelector")
    if reader is not None:
        reader.check_keys(("matchLabels",))
        selector = reader.string_map("matchLabels") or {}

    lm_cache: LMCacheSpec | None = None
    reader = spec.child("lmCache")
    if reader is not None:
        reader.check_keys(
            ("topology", "chunkSizeTokens", "podLocal"),
            {"nodeLocal": "the NodeLocal topology is not supported by mlcc: use podLocal"},
        )
        if reader.node.get("topology") == "NodeLocal":
            reader.problem(
                "topology",
                "NodeLocal is not supported by mlcc: it injects the PodLocal MP server",
                value="NodeLocal",
                allowed="PodLocal",
            )
            topology = None
        else:
            topology = reader.string("topology", required="PodLocal", enum=_TOPOLOGIES)
        chunk = reader.integer("chunkSizeTokens", minimum=1, maximum=2**31 - 1)
        pod_local = reader.child("podLocal", required="the PodLocal MP server")
        server_reader = pod_local.child("server", required="the MP server") if pod_local else None
        if pod_local is not None:
            pod_local.check_keys(("server",))
        server: PodLocalServer | None = None
        if server_reader is not None:
            server_reader.check_keys(("image", "port", "l1Capacity", "maxWorkers", "resources"))
            image = server_reader.string("image", required="a digest-pinned LMCache server image")
            port = server_reader.integer("port", required="1-65535", minimum=1, maximum=65535)
            l1 = server_reader.quantity("l1Capacity", required="host cache capacity, e.g. 4Gi")
            workers = server_reader.integer("maxWorkers", required="at least 1", minimum=1)
            resources = _resources(server_reader, "resources", required="requests and limits")
            if None not in (image, port, l1, workers, resources):
                server = PodLocalServer(
                    image=image or "",
                    port=port or 0,
                    l1_capacity=l1 or "",
                    max_workers=workers or 0,
                    resources=resources or {},
                )
        if server is not None and topology is not None:
            lm_cache = LMCacheSpec(server=server, chunk_size_tokens=chunk, topology=topology)

    remote: RemoteStorage | None = None
    reader = spec.child("remoteStorage")
    if reader is not None:
        reader.check_keys(
            ("provider", "ownership", "endpoint", "redis"),
            {"workload": "managed Redis scheduling (workload) is not supported by mlcc"},
        )
        provider = reader.string("provider", required="Redis", enum=_PROVIDERS)
        ownership = reader.string("ownership", required="Managed or External", enum=_OWNERSHIPS)
        endpoint = reader.string("endpoint")
        redis: RedisSpec | None = None
        redis_reader = reader.child("redis")
        if redis_reader is not None:
            redis_reader.check_keys(("image", "database", "authentication", "tls", "resources"))
            username = password = ca = None
            server_name = None
            auth = redis_reader.child("authentication")
            if auth is not None:
                auth.check_keys(("username", "password"))
                if "password" not in auth.node:
                    auth.missing("password", "a Secret key reference")
                username, password = _secret(auth, "username"), _secret(auth, "password")
            tls = redis_reader.child("tls")
            if tls is not None:
                tls.check_keys(("caCertificate", "serverName"))
                if "caCertificate" not in tls.node:
                    tls.missing("caCertificate", "a Secret key reference")
                ca, server_name = _secret(tls, "caCertificate"), tls.string("serverName")
            redis = RedisSpec(
                image=redis_reader.string("image"),
                database=redis_reader.integer("database", minimum=0),
                username=username,
                password=password,
                tls_ca_certificate=ca,
                tls_server_name=server_name,
                resources=_resources(redis_reader, "resources"),
            )
        if provider is not None and ownership is not None:
            remote = RemoteStorage(
                provider=provider, ownership=ownership, endpoint=endpoint, redis=redis
            )

    observation: Observation | None = None
    reader = spec.child("observation")
    if reader is not None:
        reader.check_keys(("modelID", "firstEventTimeout"))
        observation = Observation(
            model_id=reader.string("modelID"),
            first_event_timeout=reader.string("firstEventTimeout"),
        )

    allow_cross = spec.boolean("allowCrossNamespace")
    if runtime is None:
        return None, problems
    return (
        CacheBackendSpec(
            runtime=runtime,
            type=cache_type,
            integration=integration,
            engine_selector=selector,
            lm_cache=lm_cache,
            remote_storage=remote,
            observation=observation,
            allow_cross_namespace=allow_cross,
        ),
        problems,
    )


def _merge(parse: list[Problem], admission: list[Problem]) -> list[Problem]:
    """Parse problems plus the admission problems that do not restate one of them."""

    def related(a: str, b: str) -> bool:
        return a == b or a.startswith(b + ".") or b.startswith(a + ".")

    return parse + [p for p in admission if not any(related(p.pointer, q.pointer) for q in parse)]


def parse_cache_backend(document: object, *, where: str = "") -> CacheBackendDocument:
    """Parse and admit one CacheBackend object (apiVersion, kind, metadata, spec).

    Raises :class:`MlccError` holding every problem of the object.
    """
    problems: list[Problem] = []
    if not isinstance(document, Mapping):
        raise MlccError(Problem(message="not a Kubernetes object", where=where, value=document))
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        if document.get(key) != want:
            problems.append(
                Problem(
                    message=f"{key} must be {want}",
                    where=where,
                    pointer=key,
                    value=document.get(key),
                )
            )
    metadata = document.get("metadata")
    name = namespace = None
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        problems.append(
            Problem(
                message="required field is missing",
                where=where,
                pointer="metadata.name",
                fix="name the CacheBackend",
            )
        )
    else:
        name = metadata["name"]
        namespace = metadata.get("namespace")
    if "spec" not in document:
        problems.append(
            Problem(
                message="required field is missing",
                where=where,
                pointer="spec",
                fix="add spec.runtime and spec.lmCache",
            )
        )
        raise_if_any(problems)
    spec, spec_problems = _parse_spec(document["spec"], "spec", where)
    problems.extend(spec_problems)
    if spec is not None:
        problems = _merge(problems, admission_problems(spec, where=where))
    raise_if_any(problems)
    assert spec is not None and name is not None
    return CacheBackendDocument(name=name, namespace=namespace, spec=spec)


def load_cache_backends(path: str | Path) -> list[CacheBackendDocument]:
    """Every CacheBackend in a (multi-document) YAML file, parsed and admitted.

    Problems of all documents are raised together; other kinds in the file are skipped.
    """
    import yaml

    where = str(path)
    try:
        documents = [d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d]
    except (OSError, yaml.YAMLError) as error:
        raise MlccError(Problem(message=f"cannot read: {error}", where=where)) from error
    found: list[CacheBackendDocument] = []
    problems: list[Problem] = []
    for index, document in enumerate(documents):
        if isinstance(document, Mapping) and document.get("kind") != KIND:
            continue
        label = where if len(documents) == 1 else f"{where}#{index}"
        try:
            found.append(parse_cache_backend(document, where=label))
        except MlccError as error:
            problems.extend(error.problems)
    raise_if_any(problems)
    if not found:
        raise MlccError(
            Problem(
                message=f"no {KIND} object in the file",
                where=where,
                fix=f"add a document with apiVersion {API_VERSION} and kind {KIND}",
            )
        )
    return found


# --------------------------------------------------------------------------- admission


def leading_token(arg: str) -> str:
    """The flag an argument names: ``--a=b`` → ``--a``; a value (no leading dash) → ``""``."""
    if not arg.startswith("-"):
        return ""
    return arg.split("=", 1)[0]


def _reserved_problem(
    pointer: str, verb: str, kind: str, token: str, value: str, adapter: RuntimeAdapter, where: str
) -> Problem:
    reserved = adapter.reserved_args if kind == "argument" else adapter.reserved_env
    return Problem(
        message=f"{verb} reserved {kind} {token} of adapter {adapter.label}",
        where=where,
        pointer=pointer,
        value=value,
        allowed=f"any {kind} except {', '.join(reserved)}",
        fix="remove the entry: the adapter's wire owns it (tune the cache with spec.lmCache; "
        + _OPT_OUT
        + ")",
    )


def _override_problems(
    overrides: EngineOverrides, adapter: RuntimeAdapter | None, where: str, base: str
) -> list[Problem]:
    problems: list[Problem] = []

    def add(pointer: str, message: str, value: object, fix: str = "") -> None:
        problems.append(
            Problem(message=message, where=where, pointer=pointer, value=value, fix=fix)
        )

    seen: dict[str, int] = {}
    for index, entry in enumerate(overrides.env):
        pointer = f"{base}.env[{index}]"
        if not entry.name or "=" in entry.name:
            add(f"{pointer}.name", "not an env var name", entry.name)
        elif adapter and entry.name in adapter.reserved_env:
            problems.append(
                _reserved_problem(
                    pointer, "replaces", "env", entry.name, entry.name, adapter, where
                )
            )
        if entry.name in seen:
            add(f"{pointer}.name", f"duplicates env[{seen[entry.name]}]", entry.name)
        seen.setdefault(entry.name, index)
    for index, name in enumerate(overrides.suppress_env):
        pointer = f"{base}.suppressEnv[{index}]"
        if adapter and name in adapter.reserved_env:
            problems.append(
                _reserved_problem(pointer, "suppresses", "env", name, name, adapter, where)
            )
    if overrides.args and not leading_token(overrides.args[0]):
        add(
            f"{base}.args[0]",
            "the first argument must be a flag: a value needs the flag it belongs to",
            overrides.args[0],
            fix="put the flag first, e.g. [--max-model-len, '32768']",
        )
    for index, arg in enumerate(overrides.args):
        token = leading_token(arg)
        if token and adapter and token in adapter.reserved_args:
            problems.append(
                _reserved_problem(
                    f"{base}.args[{index}]", "replaces", "argument", token, arg, adapter, where
                )
            )
    for index, arg in enumerate(overrides.suppress_args):
        pointer = f"{base}.suppressArgs[{index}]"
        token = leading_token(arg)
        if not token or token != arg:
            add(pointer, "must be a bare flag name", arg, fix="e.g. --some-flag (no value)")
        elif adapter and token in adapter.reserved_args:
            problems.append(
                _reserved_problem(pointer, "suppresses", "argument", token, arg, adapter, where)
            )
    return problems


def admission_problems(
    spec: CacheBackendSpec, *, where: str = "", path: str = "spec"
) -> list[Problem]:
    """Every admission problem of ``spec`` (empty when it is admitted)."""
    problems: list[Problem] = []
    adapter = spec.adapter
    if adapter is None:
        problems.append(
            Problem(
                message=f"no runtime adapter supports {spec.runtime} + {spec.effective_type}",
                where=where,
                pointer=f"{path}.runtime",
                value=spec.runtime,
                allowed=supported_pairs(),
            )
        )
    elif spec.effective_role not in adapter.roles:
        problems.append(
            Problem(
                message=f"adapter {adapter.label} does not support this role",
                where=where,
                pointer=f"{path}.integration.role",
                value=spec.effective_role,
                allowed=", ".join(adapter.roles),
            )
        )
    base = f"{path}.integration.engineOverrides"
    problems.extend(_override_problems(spec.overrides, adapter, where, base))

    if spec.effective_type == "LMCache" and spec.lm_cache is None:
        problems.append(
            Problem(
                message="required for type LMCache",
                where=where,
                pointer=f"{path}.lmCache",
                fix="set lmCache.topology PodLocal and lmCache.podLocal.server",
            )
        )
    if spec.lm_cache is not None:
        problems.extend(
            _server_problems(spec.lm_cache.server, where, f"{path}.lmCache.podLocal.server")
        )
    if spec.remote_storage is not None:
        problems.extend(_remote_problems(spec.remote_storage, where, f"{path}.remoteStorage"))
    return problems


_DIGEST = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")


def _server_problems(server: PodLocalServer, where: str, path: str) -> list[Problem]:
    problems: list[Problem] = []
    mp = mp_server()
    if not _DIGEST.match(server.image.strip()):
        problems.append(
            Problem(
                message="the LMCache server image must be pinned by digest",
                where=where,
                pointer=f"{path}.image",
                value=server.image,
                allowed="<repository>@sha256:<64 hex digits>",
                fix="resolve the tag to its digest (docker buildx imagetools inspect IMAGE)",
            )
        )
    if server.port == mp.http_port:
        problems.append(
            Problem(
                message=f"collides with the MP server's HTTP health port {mp.http_port}",
                where=where,
                pointer=f"{path}.port",
                value=server.port,
                fix="pick another port, e.g. 5555",
            )
        )
    budget = server.l1_bytes + parse_quantity(mp.shm_headroom)
    for kind in ("requests", "limits"):
        pointer = f"{path}.resources.{kind}.memory"
        raw = server.resources.get(kind, {}).get("memory")
        fix = f"set {kind}.memory to at least {format_quantity(budget)}"
        if raw is None:
            problems.append(
                Problem(
                    message="required: the MP server's memory must cover l1Capacity + 1Gi",
                    where=where,
                    pointer=pointer,
                    fix=fix,
                )
            )
        elif parse_quantity(raw) < budget:
            problems.append(
                Problem(
                    message=(
                        f"does not cover l1Capacity + 1Gi ({format_quantity(budget)}): "
                        "/dev/shm holds the whole L1"
                    ),
                    where=where,
                    pointer=pointer,
                    value=raw,
                    fix=fix,
                )
            )
    return problems


def _split_endpoint(endpoint: str) -> tuple[str, int] | None:
    host, sep, port = endpoint.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    return host, int(port)


def _remote_problems(remote: RemoteStorage, where: str, path: str) -> list[Problem]:
    problems: list[Problem] = []
    if remote.ownership == "External":
        if remote.endpoint is None:
            problems.append(
                Problem(
                    message="required for External ownership",
                    where=where,
                    pointer=f"{path}.endpoint",
                    fix="set endpoint to the Redis host:port",
                )
            )
        elif _split_endpoint(remote.endpoint) is None:
            problems.append(
                Problem(
                    message="not host:port",
                    where=where,
                    pointer=f"{path}.endpoint",
                    value=remote.endpoint,
                    allowed="e.g. redis.cache.svc.cluster.local:6379",
                )
            )
    elif remote.endpoint is not None:
        problems.append(
            Problem(
                message="refused for Managed ownership: the operator observes the endpoint",
                where=where,
                pointer=f"{path}.endpoint",
                value=remote.endpoint,
                fix="remove endpoint, or set ownership External",
            )
        )
    redis = remote.redis
    if redis is not None and redis.tls_ca_certificate is not None:
        problems.append(
            Problem(
                message="LMCache's resp adapter does not support TLS",
                where=where,
                pointer=f"{path}.redis.tls",
                fix="remove tls (keep Redis on the cluster network)",
            )
        )
    if redis is not None and redis.database is not None:
        problems.append(
            Problem(
                message="LMCache's resp adapter cannot select a database",
                where=where,
                pointer=f"{path}.redis.database",
                value=redis.database,
                fix="remove database (LMCache uses database 0)",
            )
        )
    return problems


def admit(spec: CacheBackendSpec, *, where: str = "") -> None:
    """Raise :class:`MlccError` with every admission problem of ``spec``."""
    raise_if_any(admission_problems(spec, where=where))


# --------------------------------------------------------------------------- injection


def cache_config_map_name(workload_name: str) -> str:
    """Name of the ConfigMap holding an adapter's client config for ``workload_name``."""
    return f"{workload_name}-lmcache-mp"


def render_cache_config_maps(
    spec: CacheBackendSpec, *, workload_name: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    """The ConfigMap the injected pod mounts (SGLang's client config), or ``[]``.

    Its name is :func:`cache_config_map_name` of ``workload_name``, which is what
    :func:`inject_cache_backend` mounts by default.
    """
    admit(spec)
    adapter = spec.adapter
    assert adapter is not None
    if adapter.client_config is None:
        return []
    metadata: dict[str, Any] = {"name": cache_config_map_name(workload_name)}
    if namespace is not None:
        metadata["namespace"] = namespace
    content = substitute(adapter.client_config.content, _render_values(spec, adapter))
    data = {adapter.client_config.file: content}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}]


def _render_values(spec: CacheBackendSpec, adapter: RuntimeAdapter) -> dict[str, str]:
    assert spec.lm_cache is not None
    server = spec.lm_cache.server
    mp = mp_server()
    return {
        "mp_port": str(server.port),
        "kv_role": adapter.roles[spec.effective_role],
        "fail_open": "true" if spec.effective_fail_open else "false",
        "client_config_path": adapter.client_config.path if adapter.client_config else "",
        "chunk_size": str(spec.effective_chunk_size_tokens),
        "http_port": str(mp.http_port),
        "l1_size_gb": _gib_text(server.l1_bytes),
        "max_workers": str(server.max_workers),
    }


def _group_args(args: Sequence[str]) -> list[list[str]]:
    """Split argv into groups: a flag plus the values that follow it (leading values alone)."""
    groups: list[list[str]] = []
    for arg in args:
        if leading_token(arg) or not groups:
            groups.append([arg])
        else:
            groups[-1].append(arg)
    return groups


def _upsert_arg_group(args: list[str], group: Sequence[str]) -> list[str]:
    """Put the adapter's ``group`` into the template argv: replace the same flag, else append.

    A valued flag replaces ``--flag value`` or ``--flag=value``; a bare flag is added once.
    """
    flag, values = group[0], list(group[1:])
    for index, arg in enumerate(args):
        if arg == flag:
            end = index + 1 + (len(values) if index + len(values) < len(args) else 0)
            return [*args[:index], *group, *args[end:]]
        if values and arg.startswith(flag + "="):
            return [*args[:index], *group, *args[index + 1 :]]
    return [*args, *group]


def _pod_template(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        template: dict[str, Any] = spec["template"]
        return template
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        return obj
    raise MlccError(
        Problem(
            message="not a workload or pod template: no spec.template or spec.containers",
            pointer="spec",
            fix="pass a Deployment (or any object with spec.template) or a pod template",
        )
    )


def _check_free(
    pod: Mapping[str, Any],
    engine: Mapping[str, Any],
    spec: CacheBackendSpec,
    adapter: RuntimeAdapter,
) -> list[Problem]:
    mp = mp_server()
    problems: list[Problem] = []
    assert spec.lm_cache is not None
    all_containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
    if any(c.get("name") == mp.container for c in all_containers):
        problems.append(
            Problem(
                message=f"the pod already has a container named {mp.container}",
                pointer="spec.template.spec",
                fix="rename that container: the name is reserved for the LMCache MP sidecar",
            )
        )
    names = {v.get("name") for v in pod.get("volumes", [])}
    wanted = [mp.shm_volume] + ([adapter.client_config.volume] if adapter.client_config else [])
    for volume in wanted:
        if volume in names:
            problems.append(
                Problem(
                    message=f"the pod already has a volume named {volume}",
                    pointer="spec.template.spec.volumes",
                    fix="rename that volume: the name is reserved for the LMCache MP wire",
                )
            )
    ports = {
        p.get("containerPort"): c.get("name") for c in all_containers for p in c.get("ports", [])
    }
    for port in (spec.lm_cache.server.port, mp.http_port):
        if port in ports:
            problems.append(
                Problem(
                    message=f"port {port} is already used by container {ports[port]}",
                    pointer="spec.template.spec",
                    fix="the LMCache MP server listens there: change one of the two ports",
                )
            )
    if adapter.client_config is not None:
        for mount in engine.get("volumeMounts", []):
            if mount.get("mountPath") == adapter.client_config.mount_path:
                problems.append(
                    Problem(
                        message=(
                            f"the engine already mounts {adapter.client_config.mount_path}: "
                            "the path is reserved for the LMCache client config"
                        ),
                        pointer="spec.template.spec.containers",
                    )
                )
    if spec.remote_storage is not None and spec.remote_storage.ownership == "Managed":
        problems.append(
            Problem(
                message="Managed remote storage needs the operator (it observes the endpoint)",
                pointer="spec.remoteStorage.ownership",
                value="Managed",
                fix="use ownership External with endpoint host:port, or emit the CacheBackend CR",
            )
        )
    return problems


def _shm(
    pod: dict[str, Any], engine: dict[str, Any], budget: Fraction
) -> tuple[dict[str, Any], list[Problem]]:
    """Mount a memory ``/dev/shm`` of ``budget`` into the engine; reuse one it already has.

    An existing writable memory emptyDir grows by ``budget`` (the engine still needs its
    own share, e.g. for NCCL); anything else mounted there cannot hold the cache.
    """
    mp = mp_server()
    volumes: list[dict[str, Any]] = pod.setdefault("volumes", [])
    mounts: list[dict[str, Any]] = engine.setdefault("volumeMounts", [])
    existing = next((m for m in mounts if m.get("mountPath") == mp.shm_mount_path), None)
    if existing is None:
        volumes.append(
            {
                "name": mp.shm_volume,
                "emptyDir": {"medium": "Memory", "sizeLimit": format_quantity(budget)},
            }
        )
        mount = {"name": mp.shm_volume, "mountPath": mp.shm_mount_path}
        mounts.append(dict(mount))
        return mount, []
    volume = next((v for v in volumes if v.get("name") == existing.get("name")), None)
    empty_dir = volume.get("emptyDir") if volume else None
    if (
        existing.get("readOnly")
        or existing.get("subPathExpr")
        or not isinstance(empty_dir, dict)
        or empty_dir.get("medium") != "Memory"
    ):
        return {}, [
            Problem(
                message=(
                    f"the engine mounts {mp.shm_mount_path} from volume {existing.get('name')}, "
                    "which is not a writable memory emptyDir"
                ),
                pointer="spec.template.spec.volumes",
                fix="mount /dev/shm from an emptyDir with medium Memory, or drop that mount",
            )
        ]
    if "sizeLimit" in empty_dir:
        empty_dir["sizeLimit"] = format_quantity(parse_quantity(empty_dir["sizeLimit"]) + budget)
    mount = {"name": existing["name"], "mountPath": mp.shm_mount_path}
    if existing.get("subPath"):
        mount["subPath"] = existing["subPath"]
    return mount, []


def _sidecar(
    spec: CacheBackendSpec,
    values: Mapping[str, str],
    shm_mount: Mapping[str, Any],
    engine: Mapping[str, Any],
) -> dict[str, Any]:
    mp = mp_server()
    assert spec.lm_cache is not None
    server = spec.lm_cache.server
    args = [substitute(a, values) for a in mp.args]
    env: list[dict[str, Any]] = [
        {"name": name, "value": substitute(value, values)} for name, value in mp.env
    ]
    env.append({"name": mp.managed_env[0], "value": mp.managed_env[1]})
    remote = spec.remote_storage
    if remote is not None and remote.endpoint is not None:
        host_port = _split_endpoint(remote.endpoint)
        assert host_port is not None
        l2 = {"type": "resp", "host": host_port[0], "port": host_port[1]}
        args += [mp.l2_adapter_flag, json.dumps(l2, separators=(",", ":"))]
        redis = remote.redis
        for role, secret in (
            ("username", redis.username if redis else None),
            ("password", redis.password if redis else None),
        ):
            if secret is not None:
                env.append(
                    {
                        "name": mp.resp_auth_env[role],
                        "valueFrom": {"secretKeyRef": secret.to_dict()},
                    }
                )
    security: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # Same identity as the engine: the two processes share /dev/shm segments.
    for key in ("runAsNonRoot", "runAsUser", "runAsGroup"):
        if key in engine.get("securityContext", {}):
            security[key] = engine["securityContext"][key]

    def probe(name: str) -> dict[str, Any]:
        return {
            "httpGet": {"path": mp.health_path, "port": mp.http_port_name, "scheme": "HTTP"},
            "timeoutSeconds": 2,
            **mp.probes[name],
        }

    return {
        "name": mp.container,
        "image": server.image.strip(),
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "command": list(mp.command),
        "args": args,
        "env": env,
        "ports": [
            {"name": mp.port_name, "containerPort": server.port, "protocol": "TCP"},
            {"name": mp.http_port_name, "containerPort": mp.http_port, "protocol": "TCP"},
        ],
        "resources": {kind: dict(v) for kind, v in server.resources.items()},
        "volumeMounts": [dict(shm_mount)],
        "startupProbe": probe("startupProbe"),
        "readinessProbe": probe("readinessProbe"),
        "livenessProbe": probe("livenessProbe"),
        "securityContext": security,
    }


def _env_entry(
    name: str, value: str | None, value_from: Mapping[str, Any] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if value_from is not None:
        entry["valueFrom"] = copy.deepcopy(dict(value_from))
    else:
        entry["value"] = value if value is not None else ""
    return entry


def inject_cache_backend(
    obj: Mapping[str, Any],
    spec: CacheBackendSpec,
    *,
    engine_container: str,
    config_map_name: str | None = None,
) -> dict[str, Any]:
    """A copy of ``obj`` (a Deployment, any workload with ``spec.template``, or a pod
    template) wired to ``spec``'s CacheBackend; ``obj`` is not modified.

    The engine container is the one named ``engine_container``. A pod template annotated
    ``inferencecache.io/skip-inject: "true"`` is returned unchanged. The override
    primitives act exactly as the seed defines them:

    - ``env`` upserts an adapter-contributed variable by name or appends a new name; a
      name the pod template already sets (and the adapter does not) is left alone;
    - ``suppressEnv`` / ``suppressArgs`` drop non-reserved adapter contributions;
    - ``args`` replaces an adapter flag group by leading token, or appends a flag absent
      from both the adapter and the template (a template flag is left alone).

    ``config_map_name`` names the ConfigMap holding an adapter's client config (SGLang);
    default :func:`cache_config_map_name` of the object's ``metadata.name``. Raises
    :class:`MlccError` with every problem.
    """
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    template = _pod_template(result)
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get(SKIP_INJECT_ANNOTATION) == "true":
        return result
    admit(spec)
    adapter = spec.adapter
    assert adapter is not None and spec.lm_cache is not None
    pod: dict[str, Any] = template["spec"]
    containers: list[dict[str, Any]] = pod.get("containers", [])
    engine = next((c for c in containers if c.get("name") == engine_container), None)
    if engine is None:
        raise MlccError(
            Problem(
                message=f"no container named {engine_container}",
                pointer="spec.template.spec.containers",
                value=[c.get("name") for c in containers],
                fix="pass engine_container= the engine container's name",
            )
        )
    if INJECTED_BY_ANNOTATION in annotations:
        # Everything below would restate this one problem (sidecar, volumes, ports taken).
        raise MlccError(
            Problem(
                message=f"already injected by {annotations[INJECTED_BY_ANNOTATION]}",
                pointer=f"spec.template.metadata.annotations.{INJECTED_BY_ANNOTATION}",
                fix="inject into the un-injected template",
            )
        )
    problems: list[Problem] = []
    if adapter.client_config is not None and config_map_name is None:
        workload_name = (result.get("metadata") or {}).get("name")
        if not workload_name:
            problems.append(
                Problem(
                    message=f"adapter {adapter.label} mounts a client config ConfigMap",
                    pointer="metadata.name",
                    fix="pass config_map_name=, or inject into a named workload",
                )
            )
        else:
            config_map_name = cache_config_map_name(workload_name)
    problems.extend(_check_free(pod, engine, spec, adapter))
    raise_if_any(problems)

    values = _render_values(spec, adapter)
    overrides = spec.overrides
    template_args: list[str] = list(engine.get("args", []))
    template_flags = {leading_token(a) for a in template_args} - {""}
    template_env = {e.get("name") for e in engine.get("env", [])}

    # The adapter's canonical contribution, minus suppressions, with overrides merged in.
    suppressed_args = set(overrides.suppress_args)
    groups = [list(g) for g in adapter.render_args(values) if g[0] not in suppressed_args]
    appended_groups: list[list[str]] = []
    for group in _group_args(overrides.args):
        token = leading_token(group[0])
        owned = next((i for i, g in enumerate(groups) if g[0] == token), None)
        if owned is not None:
            groups[owned] = group
        elif token not in template_flags:
            appended_groups.append(group)
    suppressed_env = set(overrides.suppress_env)
    env_entries = [
        _env_entry(name, value, None)
        for name, value in adapter.render_env(values)
        if name not in suppressed_env
    ]
    appended_env: list[dict[str, Any]] = []
    for override in overrides.env:
        entry = _env_entry(override.name, override.value, override.value_from)
        owned = next((i for i, e in enumerate(env_entries) if e["name"] == override.name), None)
        if owned is not None:
            env_entries[owned] = entry
        elif override.name not in template_env:
            appended_env.append(entry)

    args = template_args
    for group in groups:
        args = _upsert_arg_group(args, group)
    for group in appended_groups:
        args = [*args, *group]
    engine["args"] = args
    env: list[dict[str, Any]] = list(engine.get("env", []))
    for entry in env_entries:
        index = next((i for i, e in enumerate(env) if e.get("name") == entry["name"]), None)
        if index is None:
            env.append(entry)
        else:
            env[index] = entry
    engine["env"] = env + appended_env

    budget = spec.lm_cache.server.l1_bytes + parse_quantity(mp_server().shm_headroom)
    shm_mount, shm_problems = _shm(pod, engine, budget)
    raise_if_any(shm_problems)
    if adapter.client_config is not None:
        assert config_map_name is not None
        client = adapter.client_config
        pod.setdefault("volumes", []).append(
            {"name": client.volume, "configMap": {"name": config_map_name}}
        )
        engine.setdefault("volumeMounts", []).append(
            {"name": client.volume, "mountPath": client.mount_path, "readOnly": True}
        )
    pod.setdefault("initContainers", []).append(_sidecar(spec, values, shm_mount, engine))
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("annotations", {})[INJECTED_BY_ANNOTATION] = f"mlcc/{adapter.name}"
    return result


__all__ = (
    "API_VERSION",
    "KIND",
    "SKIP_INJECT_ANNOTATION",
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
    "render_cache_config_maps",
)
