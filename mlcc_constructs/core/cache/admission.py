"""CacheBackend admission: the rules the operator's admission webhook applies, once per spec.

Above all, ``spec.integration.engineOverrides`` may not replace or suppress a token the
selected runtime adapter reserves. Every problem of a spec is reported at once. Adapters
are data (:mod:`mlcc_constructs.core.cache.adapters`); the rules never branch on a runtime
name.

:func:`admit` returns an :class:`Admission` (the spec, its adapter, the values the adapter's
templates are filled with) and remembers it on the spec, so injection, the client-config
ConfigMaps and the construct share one admission of one spec object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mlcc_constructs.core.cache.adapters import RuntimeAdapter, mp_server, supported_pairs
from mlcc_constructs.core.cache.fields import rule_problems
from mlcc_constructs.core.cache.spec import (
    CacheBackendSpec,
    EngineOverrides,
    LMCacheSpec,
    PodLocalServer,
    RemoteStorage,
)
from mlcc_constructs.core.support.errors import Problem, json_pointer, raise_if_any
from mlcc_constructs.core.support.quantity import format_quantity, gib_text, parse_quantity

_OPT_OUT = 'annotate a pod template inferencecache.io/skip-inject: "true" to opt it out'
# Not a dataclass field, so equality, repr and dataclasses.replace() never see it.
_MEMO = "_mlcc_admission"


@dataclass(frozen=True, kw_only=True)
class Admission:
    """An admitted CacheBackend spec with what injection needs from admission.

    Built by :func:`admit`; pass it (or the spec) to
    :func:`~mlcc_constructs.core.cache.inject_cache_backend` and
    :func:`~mlcc_constructs.core.cache.render_cache_config_maps`.

    Fields:

    ``spec``: The admitted spec.
    ``adapter``: The runtime adapter it selects.
    ``values``: The adapter templates' placeholder values (``{mp_port}``, ``{kv_role}``, ...).
    """

    spec: CacheBackendSpec
    adapter: RuntimeAdapter
    values: Mapping[str, str]

    @property
    def lm_cache(self) -> LMCacheSpec:
        """``spec.lmCache`` (admission requires it)."""
        assert self.spec.lm_cache is not None
        return self.spec.lm_cache

    @property
    def remote_port(self) -> int | None:
        """The port of the external Redis behind the MP server (``remoteStorage.endpoint``),
        which the engine pod connects to; ``None`` without one."""
        remote = self.spec.remote_storage
        found = split_endpoint(remote.endpoint) if remote and remote.endpoint else None
        return found[1] if found else None

    @property
    def server(self) -> PodLocalServer:
        """``spec.lmCache.podLocal.server``."""
        return self.lm_cache.server


def leading_token(arg: str) -> str:
    """The flag an argument names: ``--a=b`` → ``--a``; a value (no leading dash) → ``""``."""
    if not arg.startswith("-"):
        return ""
    return arg.split("=", 1)[0]


def split_endpoint(endpoint: str) -> tuple[str, int] | None:
    """``host:port`` (IPv6 hosts in brackets) as ``(host, port)``, or ``None``."""
    host, sep, port = endpoint.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    return host, int(port)


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

    def at(*parts: str | int) -> str:
        return base + json_pointer(*parts)

    def add(pointer: str, message: str, value: object, fix: str = "") -> None:
        problems.append(
            Problem(message=message, where=where, pointer=pointer, value=value, fix=fix)
        )

    seen: dict[str, int] = {}
    for index, entry in enumerate(overrides.env):
        if not entry.name or "=" in entry.name:
            add(at("env", index, "name"), "not an env var name", entry.name)
        elif adapter and entry.name in adapter.reserved_env:
            problems.append(
                _reserved_problem(
                    at("env", index), "replaces", "env", entry.name, entry.name, adapter, where
                )
            )
        if entry.name in seen:
            add(at("env", index, "name"), f"duplicates env[{seen[entry.name]}]", entry.name)
        seen.setdefault(entry.name, index)
    for index, name in enumerate(overrides.suppress_env):
        if adapter and name in adapter.reserved_env:
            problems.append(
                _reserved_problem(
                    at("suppressEnv", index), "suppresses", "env", name, name, adapter, where
                )
            )
    if overrides.args and not leading_token(overrides.args[0]):
        add(
            at("args", 0),
            "the first argument must be a flag: a value needs the flag it belongs to",
            overrides.args[0],
            fix="put the flag first, e.g. [--max-model-len, '32768']",
        )
    for index, arg in enumerate(overrides.args):
        token = leading_token(arg)
        if token and adapter and token in adapter.reserved_args:
            problems.append(
                _reserved_problem(
                    at("args", index), "replaces", "argument", token, arg, adapter, where
                )
            )
    for index, arg in enumerate(overrides.suppress_args):
        token = leading_token(arg)
        if not token or token != arg:
            add(
                at("suppressArgs", index),
                "must be a bare flag name",
                arg,
                fix="e.g. --some-flag (no value)",
            )
        elif adapter and token in adapter.reserved_args:
            problems.append(
                _reserved_problem(
                    at("suppressArgs", index), "suppresses", "argument", token, arg, adapter, where
                )
            )
    return problems


def request_limit_problems(
    resources: Mapping[str, Mapping[str, str | int]], where: str, path: str
) -> list[Problem]:
    """A request above its limit, per resource: the apiserver refuses such a pod ("must be less
    than or equal to ... limit"; a request is what the scheduler reserves, a limit the cap,
    https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/)."""
    problems: list[Problem] = []
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    for name in sorted(set(requests) & set(limits)):
        try:
            request, limit = parse_quantity(requests[name]), parse_quantity(limits[name])
        except ValueError:  # not a quantity: the field check reports it
            continue
        if request > limit:
            problems.append(
                Problem(
                    message=f"requests.{name} is above limits.{name} ({limits[name]}): "
                    "Kubernetes refuses a container whose request exceeds its limit",
                    where=where,
                    pointer=path + json_pointer("resources", "requests", name),
                    value=requests[name],
                    allowed=f"at most limits.{name}, {limits[name]}",
                    fix=f"lower requests.{name} or raise limits.{name}",
                )
            )
    return problems


def _server_problems(server: PodLocalServer, where: str, path: str) -> list[Problem]:
    problems = rule_problems(server, pointer=path, where=where)  # the image's digest pin
    problems += request_limit_problems(server.resources, where, path)
    mp = mp_server()
    if server.port == mp.http_port:
        problems.append(
            Problem(
                message=f"collides with the MP server's HTTP health port {mp.http_port}",
                where=where,
                pointer=f"{path}/port",
                value=server.port,
                fix="pick another port, e.g. 5555",
            )
        )
    budget = server.l1_bytes + parse_quantity(mp.shm_headroom)
    for kind in ("requests", "limits"):
        pointer = path + json_pointer("resources", kind, "memory")
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


def _remote_problems(remote: RemoteStorage, where: str, path: str) -> list[Problem]:
    problems: list[Problem] = []
    if remote.ownership == "External":
        if remote.endpoint is None:
            problems.append(
                Problem(
                    message="required for External ownership",
                    where=where,
                    pointer=f"{path}/endpoint",
                    fix="set endpoint to the Redis host:port",
                )
            )
        elif split_endpoint(remote.endpoint) is None:
            problems.append(
                Problem(
                    message="not host:port",
                    where=where,
                    pointer=f"{path}/endpoint",
                    value=remote.endpoint,
                    allowed="e.g. redis.cache.svc.cluster.local:6379",
                )
            )
    elif remote.endpoint is not None:
        problems.append(
            Problem(
                message="refused for Managed ownership: the operator observes the endpoint",
                where=where,
                pointer=f"{path}/endpoint",
                value=remote.endpoint,
                fix="remove endpoint, or set ownership External",
            )
        )
    redis = remote.redis
    if redis is not None and redis.resources is not None:
        problems += request_limit_problems(redis.resources, where, f"{path}/redis")
    if redis is not None and redis.tls_ca_certificate is not None:
        problems.append(
            Problem(
                message="LMCache's resp adapter does not support TLS",
                where=where,
                pointer=f"{path}/redis/tls",
                fix="remove tls (keep Redis on the cluster network)",
            )
        )
    if redis is not None and redis.database is not None:
        problems.append(
            Problem(
                message="LMCache's resp adapter cannot select a database",
                where=where,
                pointer=f"{path}/redis/database",
                value=redis.database,
                fix="remove database (LMCache uses database 0)",
            )
        )
    return problems


def admission_problems(
    spec: CacheBackendSpec, *, where: str = "", path: str = "/spec"
) -> list[Problem]:
    """Every admission problem of ``spec`` (empty when it is admitted).

    ``path`` is the JSON pointer of the spec in its document: ``/spec`` in a CacheBackend,
    ``/cache_backend`` in a deployment spec file. This always runs the rules; :func:`admit`
    runs them once per spec object.
    """
    problems: list[Problem] = []
    adapter = spec.adapter
    if adapter is None:
        problems.append(
            Problem(
                message=f"no runtime adapter supports {spec.runtime} + {spec.effective_type}",
                where=where,
                pointer=f"{path}/runtime",
                value=spec.runtime,
                allowed=supported_pairs(),
            )
        )
    elif spec.effective_role not in adapter.roles:
        problems.append(
            Problem(
                message=f"adapter {adapter.label} does not support this role",
                where=where,
                pointer=f"{path}/integration/role",
                value=spec.effective_role,
                allowed=", ".join(adapter.roles),
            )
        )
    base = f"{path}/integration/engineOverrides"
    problems.extend(_override_problems(spec.overrides, adapter, where, base))

    if spec.effective_type == "LMCache" and spec.lm_cache is None:
        problems.append(
            Problem(
                message="required for type LMCache",
                where=where,
                pointer=f"{path}/lmCache",
                fix="set lmCache.topology PodLocal and lmCache.podLocal.server",
            )
        )
    if spec.lm_cache is not None:
        problems.extend(
            _server_problems(spec.lm_cache.server, where, f"{path}/lmCache/podLocal/server")
        )
    if spec.remote_storage is not None:
        problems.extend(_remote_problems(spec.remote_storage, where, f"{path}/remoteStorage"))
    return problems


def _values(spec: CacheBackendSpec, adapter: RuntimeAdapter) -> dict[str, str]:
    """The placeholder values of the adapter's and the MP server's templates."""
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
        "l1_size_gb": gib_text(server.l1_bytes),
        "max_workers": str(server.max_workers),
    }


def remember(spec: CacheBackendSpec) -> Admission:
    """Record that ``spec`` passed the rules (the caller just ran them) and return its
    :class:`Admission`."""
    adapter = spec.adapter
    assert adapter is not None
    admission = Admission(spec=spec, adapter=adapter, values=_values(spec, adapter))
    # The spec is frozen; the memo is derived data, set once, like a cached property.
    object.__setattr__(spec, _MEMO, admission)
    return admission


def admit(spec: CacheBackendSpec, *, where: str = "", path: str = "/spec") -> Admission:
    """Admit ``spec``: its :class:`Admission`, or :class:`MlccError` with every problem
    (``where`` names the spec's file or object in them, ``path`` is the JSON pointer of the
    spec in that document).

    The rules run once per spec object: a successful admission is remembered on the spec
    (as is one by :meth:`CacheBackendSpec.from_dict`), and later calls return it. A refused
    spec is not remembered.
    """
    found = vars(spec).get(_MEMO)
    if isinstance(found, Admission):
        return found
    raise_if_any(admission_problems(spec, where=where, path=path))
    return remember(spec)


def as_admission(spec_or_admission: CacheBackendSpec | Admission) -> Admission:
    """An :class:`Admission` as is; a spec admitted (once: see :func:`admit`)."""
    if isinstance(spec_or_admission, Admission):
        return spec_or_admission
    return admit(spec_or_admission)


__all__ = (
    "Admission",
    "admission_problems",
    "admit",
    "as_admission",
    "leading_token",
    "remember",
    "request_limit_problems",
    "split_endpoint",
)
