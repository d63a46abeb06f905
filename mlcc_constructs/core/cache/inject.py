"""Injection: wire a plain Deployment (or pod template) dict to a CacheBackend the way the
operator's pod webhook would, so a cluster without the operator gets the same pods.

The adapter's canonical wire, the four override primitives, the ``lmcache-mp-server``
native sidecar and the shared ``/dev/shm`` (:mod:`~mlcc_constructs.core.cache.pod`), plus the
ConfigMap holding an adapter's client config. Both entry points take a spec (admitted once,
see :func:`~mlcc_constructs.core.cache.admit`) or its :class:`Admission`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.cache.adapters import mp_server, substitute
from mlcc_constructs.core.cache.admission import Admission, as_admission, leading_token
from mlcc_constructs.core.cache.pod import check_free, pod_template, shm, sidecar
from mlcc_constructs.core.cache.spec import CacheBackendSpec
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer, raise_if_any
from mlcc_constructs.core.support.json_types import json_copy
from mlcc_constructs.core.support.quantity import parse_quantity
from mlcc_constructs.core.wrapper import flag_groups, upsert_group

SKIP_INJECT_ANNOTATION = "inferencecache.io/skip-inject"
INJECTED_BY_ANNOTATION = "inferencecache.io/injected-by"


def cache_config_map_name(workload_name: str) -> str:
    """Name of the ConfigMap holding an adapter's client config for ``workload_name``."""
    return f"{workload_name}-lmcache-mp"


def render_cache_config_maps(
    spec_or_admission: CacheBackendSpec | Admission,
    *,
    workload_name: str,
    namespace: str | None = None,
) -> list[dict[str, Any]]:
    """The ConfigMap the injected pod mounts (SGLang's client config), or ``[]``.

    Its name is :func:`cache_config_map_name` of ``workload_name``, which is what
    :func:`inject_cache_backend` mounts by default. A spec is admitted first (once per spec
    object); raises :class:`MlccError` with every problem.
    """
    admission = as_admission(spec_or_admission)
    client = admission.adapter.client_config
    if client is None:
        return []
    metadata: dict[str, Any] = {"name": cache_config_map_name(workload_name)}
    if namespace is not None:
        metadata["namespace"] = namespace
    data = {client.file: substitute(client.content, admission.values)}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}]


def _env_entry(
    name: str, value: str | None, value_from: Mapping[str, Any] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if value_from is not None:
        entry["valueFrom"] = json_copy(dict(value_from))
    else:
        entry["value"] = value if value is not None else ""
    return entry


def _wire_engine(engine: dict[str, Any], admission: Admission) -> None:
    """Set the engine's args and env: the adapter's wire with the overrides merged in."""
    adapter, values, overrides = admission.adapter, admission.values, admission.spec.overrides
    template_args: list[str] = list(engine.get("args", []))
    template_flags = {leading_token(a) for a in template_args} - {""}
    template_env = {e.get("name") for e in engine.get("env", [])}

    # The adapter's canonical contribution, minus suppressions, with overrides merged in.
    suppressed_args = set(overrides.suppress_args)
    groups = [list(g) for g in adapter.render_args(values) if g[0] not in suppressed_args]
    appended_groups: list[list[str]] = []
    for group in flag_groups(overrides.args):
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

    # The wrapper merges a container's args into its env-derived flags with the same rule,
    # so both config deliveries give the engine one identical argv.
    args = template_args
    for group in groups:
        args = upsert_group(args, group)
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


def inject_cache_backend(
    obj: Mapping[str, Any],
    spec_or_admission: CacheBackendSpec | Admission,
    *,
    engine_container: str,
    config_map_name: str | None = None,
) -> dict[str, Any]:
    """A copy of ``obj`` (a Deployment, any workload with ``spec.template``, or a pod
    template) wired to a CacheBackend; ``obj`` is not modified.

    ``spec_or_admission`` is a :class:`CacheBackendSpec` (admitted here, once per spec
    object) or its :class:`Admission` (used as is). The engine container is the one named
    ``engine_container``. A pod template annotated ``inferencecache.io/skip-inject: "true"``
    is returned unchanged, before admission. The override primitives act exactly as the
    seed defines them:

    - ``env`` upserts an adapter-contributed variable by name or appends a new name; a
      name the pod template already sets (and the adapter does not) is left alone;
    - ``suppressEnv`` / ``suppressArgs`` drop non-reserved adapter contributions;
    - ``args`` replaces an adapter flag group by leading token, or appends a flag absent
      from both the adapter and the template (a template flag is left alone).

    ``config_map_name`` names the ConfigMap holding an adapter's client config (SGLang);
    default :func:`cache_config_map_name` of the object's ``metadata.name``. Raises
    :class:`MlccError` with every problem.
    """
    result: dict[str, Any] = json_copy(dict(obj))
    template = pod_template(result)
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get(SKIP_INJECT_ANNOTATION) == "true":
        return result
    admission = as_admission(spec_or_admission)
    adapter = admission.adapter
    pod: dict[str, Any] = template["spec"]
    containers: list[dict[str, Any]] = pod.get("containers", [])
    engine = next((c for c in containers if c.get("name") == engine_container), None)
    if engine is None:
        raise MlccError(
            Problem(
                message=f"no container named {engine_container}",
                pointer="/spec/template/spec/containers",
                value=[c.get("name") for c in containers],
                fix="pass engine_container= the engine container's name",
            )
        )
    if INJECTED_BY_ANNOTATION in annotations:
        # Everything below would restate this one problem (sidecar, volumes, ports taken).
        raise MlccError(
            Problem(
                message=f"already injected by {annotations[INJECTED_BY_ANNOTATION]}",
                pointer=json_pointer(
                    "spec", "template", "metadata", "annotations", INJECTED_BY_ANNOTATION
                ),
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
                    pointer="/metadata/name",
                    fix="pass config_map_name=, or inject into a named workload",
                )
            )
        else:
            config_map_name = cache_config_map_name(workload_name)
    problems.extend(check_free(pod, engine, admission))
    raise_if_any(problems)

    _wire_engine(engine, admission)
    budget = admission.server.l1_bytes + parse_quantity(mp_server().shm_headroom)
    shm_mount, shm_problems = shm(pod, engine, budget)
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
    pod.setdefault("initContainers", []).append(sidecar(admission, shm_mount, engine))
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("annotations", {})[INJECTED_BY_ANNOTATION] = f"mlcc/{adapter.name}"
    return result


__all__ = (
    "INJECTED_BY_ANNOTATION",
    "SKIP_INJECT_ANNOTATION",
    "cache_config_map_name",
    "inject_cache_backend",
    "render_cache_config_maps",
)
