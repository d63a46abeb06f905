"""A deployment's CacheBackend: admitted once, then checked against the engine that serves it
and the target it is rendered for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mlcc_constructs.core.cache import Admission, CacheBackendSpec, admit, leading_token
from mlcc_constructs.core.engines.manifests import EngineManifest
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.targets import TargetDescriptor, load_target, target_names
from mlcc_constructs.core.serving.resolve.computed_keys import (
    ComputedKey,
    computed_keys,
    runtime_adapter_keys,
    stream_keys,
)
from mlcc_constructs.core.serving.resolve.resolution import Resolution
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer
from mlcc_constructs.core.support.quantity import format_quantity, parse_quantity
from mlcc_constructs.core.wrapper import flag_for, negation_prefix, off_flag

POINTER = "/cache/backend"


def admit_for_deployment(
    backend: CacheBackendSpec, resolution: Resolution, target: TargetDescriptor
) -> tuple[list[Problem], Admission | None]:
    """Every problem of injecting ``backend`` into this deployment, and the admission when
    there is none: admission (once per spec object), argument overrides that would touch a flag
    the engine config or launch section owns, deployment env that would set what the adapter
    reserves (its wire would silently replace the value), a target without cache injection,
    and a runtime the engine does not serve."""
    problems: list[Problem] = []
    admission: Admission | None = None
    try:
        admission = admit(backend, path=POINTER)
    except MlccError as error:
        problems.extend(error.problems)
    if admission is not None:
        problems.extend(reserved_conflicts(admission, resolution))
    owned = configured_flags(resolution)
    overrides = backend.overrides
    for field, tokens in (("args", overrides.args), ("suppressArgs", overrides.suppress_args)):
        for index, token in enumerate(tokens):
            flag = leading_token(token)
            if flag in owned:
                problems.append(
                    Problem(
                        message=f"overrides {flag}, which {owned[flag]} sets: an override would "
                        "conflict with it (the probes, Service and GPU requests follow the config)",
                        pointer=POINTER
                        + json_pointer("integration", "engineOverrides", field, index),
                        value=token,
                        fix=f"set it through {owned[flag]} instead, or drop the override",
                    )
                )
    problems += _env_override_problems(backend, resolution)
    if not target.cache_injection:
        injecting = " or ".join(n for n in target_names() if load_target(n).cache_injection)
        note = target.notes.get("cache_backend")
        problems.append(
            Problem(
                message=f"LMCache injection applies to target {injecting}"
                + (f"; {note}" if note else ""),
                pointer=POINTER,
                value=target.name,
                allowed=injecting,
                fix=f"drop cache.backend, or render for target {injecting}",
            )
        )
    manifest = resolution.manifest
    problems += engine_port_problems(backend, [manifest])
    served = manifest.raw.get("cache_runtime")
    if served != backend.runtime:
        problems.append(
            Problem(
                message=f"engine {manifest.engine!r} serves CacheBackend runtime "
                f"{served or '(none)'}",
                pointer=f"{POINTER}/runtime",
                value=backend.runtime,
                allowed=served or "no runtime: the engine manifest declares no cache_runtime",
                fix="pick the CacheBackend runtime of this engine, or another engine",
            )
        )
    return problems, (admission if not problems else None)


def reserved_conflicts(admission: Admission, resolution: Resolution) -> list[Problem]:
    """Deployment env keys that set a flag or variable the cache adapter reserves to a value
    other than the adapter's own: the injected wire would replace it, so the engine would not
    run with what the user asked for. The same value (``SGLANG_ENABLE_METRICS=true`` beside an
    adapter passing ``--enable-metrics``) is passed once and is no conflict."""
    adapter, values = admission.adapter, admission.values
    manifest = resolution.manifest
    groups = {group[0]: group for group in adapter.render_args(values)}
    env = dict(adapter.render_env(values))
    reserved = {flag: groups[flag] for flag in adapter.reserved_args if flag in groups}
    style = manifest.launch.get("flag_style", "kebab")
    prefix = manifest.env_var_prefix
    resolved = resolution.env
    # (env key, its value, what it sets, the adapter's own value)
    conflicts: list[tuple[str, str, str, str]] = []
    for key in resolution.flag_keys:
        value, flag = resolved[key], flag_for(key[len(prefix) :], style)
        group = reserved.get(flag)
        if group is not None and not _same_setting(value, group):
            own = "true" if len(group) == 1 else " ".join(repr(v) for v in group[1:])
            conflicts.append((key, value, flag, own))
    conflicts += [
        (key, value, key, repr(env[key]))
        for key, value in resolution.plain
        if key in adapter.reserved_env and key in env and env[key] != value
    ]
    return [
        Problem(
            message=f"sets {what}, which the CacheBackend's adapter {adapter.label} reserves: "
            "its wire would replace this value",
            pointer=json_pointer("engine", "env", key),
            value=value,
            allowed=f"only the adapter's own value, {own}",
            fix=f"remove {key}: tune the cache with the CacheBackend's spec.lmCache, or drop "
            "cache_backend",
        )
        for key, value, what, own in conflicts
    ]


def _same_setting(value: str, group: tuple[str, ...]) -> bool:
    """Whether an env value gives the engine exactly ``group``: ``true`` for a bare flag, the
    one value for a valued flag."""
    if len(group) == 1:
        return value.lower() == "true"
    return len(group) == 2 and value == group[1]


def configured_flags(resolution: Resolution) -> dict[str, str]:
    """Engine flags the deployment's own config sets → who sets them (env key or launch)."""
    manifest = resolution.manifest
    if manifest.entrypoint != "wrapper":
        return {}
    style = manifest.launch.get("flag_style", "kebab")
    prefix = manifest.env_var_prefix
    env = resolution.env
    owned: dict[str, str] = {}
    for key in resolution.flag_keys:
        suffix = key[len(prefix) :]
        if env[key].lower() != "false":
            owned[flag_for(suffix, style)] = key
        elif (off := negation_prefix(manifest.raw, suffix)) is not None:
            owned[off_flag(suffix, style, off)] = key  # false: the off form, if any
    for field in ("port_flag", "host_flag"):
        if field in manifest.launch:
            owned[manifest.launch[field]] = f"the engine manifest's launch.{field}"
    # Tier 1 closed: a computed flag (and its aliases) is the spec field's, whether the
    # ConfigMap carries it or the wrapper adds it at pod start (the multi-node launch)
    for key, computed in tier1_keys(resolution).items():
        if key.startswith(prefix) and key not in manifest.engine_env:
            owned[flag_for(key[len(prefix) :], style)] = f"the spec field {computed.field}"
    return owned


def tier1_keys(resolution: Resolution) -> dict[str, ComputedKey]:
    """Every key the library computes for this deployment (:mod:`.computed_keys`): the
    engine's own, and what streaming and runtime adapter loading set when they are on."""
    manifest = resolution.manifest
    keys = dict(computed_keys(manifest))
    if resolution.stream is not None:
        keys.update(stream_keys(manifest, resolution.stream))
    emitted = {key for key, _ in resolution.tier1}
    keys.update(
        (key, computed)
        for key, computed in runtime_adapter_keys(manifest).items()
        if key in emitted
    )
    return keys


def _env_override_problems(backend: CacheBackendSpec, resolution: Resolution) -> list[Problem]:
    """Override env entries naming a variable the library computes for the engine (its API
    key, the streaming region, the runtime adapter switch): the engine reads these from its
    environment, and an override would replace the computed value (a ConfigMap one, which
    the container's own env entry wins over) or be dropped in silence (a container one)."""
    owned = tier1_keys(resolution)
    named = [("env", index, entry.name) for index, entry in enumerate(backend.overrides.env)]
    return [
        Problem(
            message=f"overrides {name}, which the spec field {owned[name].field} sets (Tier 1: "
            f"{owned[name].sets})",
            pointer=POINTER + json_pointer("integration", "engineOverrides", field, index),
            value=name,
            fix=f"set it through the spec field {owned[name].field} instead, or drop the override",
        )
        for field, index, name in named
        if name in owned and _read_from_env(resolution.manifest, name)
    ]


def _read_from_env(manifest: EngineManifest, key: str) -> bool:
    """Whether the engine reads ``key`` from its environment (a plain variable, an
    ``engine_env`` one or its API key variable) rather than as a flag the wrapper passes."""
    return (
        not key.startswith(manifest.env_var_prefix)
        or key in manifest.engine_env
        or key == manifest.api_key_env
    )


def engine_port_problems(
    backend: CacheBackendSpec,
    manifests: Iterable[EngineManifest],
    *,
    where: str = "",
    path: str = POINTER,
) -> list[Problem]:
    """The MP server's port equal to the port of an engine serving the backend's runtime
    (``cache_runtime``): the sidecar shares the engine pod's network, so one of the two could
    not listen."""
    if backend.lm_cache is None:
        return []
    port = backend.lm_cache.server.port
    return [
        Problem(
            message=f"is engine {manifest.engine!r}'s port: the MP server shares the engine's "
            "pod network, so one of them could not listen",
            where=where,
            pointer=f"{path}/lmCache/podLocal/server/port",
            value=port,
            allowed=f"any port but {port}",
            fix="pick another port, e.g. 5555",
        )
        for manifest in manifests
        if manifest.raw.get("cache_runtime") == backend.runtime
        and manifest.launch.get("port") == port
    ]


def node_memory_problems(
    admission: Admission, engine_requests: Mapping[str, str], instances: Sequence[InstanceType]
) -> list[Problem]:
    """The engine container's memory (request = limit) plus the MP server sidecar's memory
    limit (its larger value) above the node's memory (the instance catalog's ``memory_gib``):
    the pod could not fit, or the sidecar's L1 would push the node out of memory."""
    resources = admission.server.resources
    sidecar = max(
        (
            parse_quantity(resources.get(kind, {}).get("memory", 0))
            for kind in ("requests", "limits")
        ),
        default=parse_quantity(0),
    )
    engine = parse_quantity(engine_requests["memory"])
    problems = []
    for instance in instances:
        node = parse_quantity(f"{instance.memory_gib}Gi")
        if engine + sidecar > node:
            problems.append(
                Problem(
                    message=f"the engine's memory ({format_quantity(engine)}) plus the MP "
                    f"server's ({format_quantity(sidecar)}) is "
                    f"{format_quantity(engine + sidecar)}, above {instance.name}'s "
                    f"{instance.memory_gib}Gi",
                    pointer=f"{POINTER}/lmCache/podLocal/server/resources",
                    value=format_quantity(sidecar),
                    allowed=f"at most {format_quantity(node - engine)} for the MP server on "
                    f"{instance.name}",
                    fix="lower l1Capacity and the MP server's memory, or pick an instance type "
                    "with more memory",
                )
            )
    return problems
