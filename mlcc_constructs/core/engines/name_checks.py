"""The names an engine manifest may not claim: another engine's env prefix, the wrapper's own
``MLCC_`` variables, a capability's flag for the port or host, one HTTP path for two adapter
calls. :func:`name_problems` checks one manifest (part of every manifest's check, so ``mlcc
validate`` and a plugin loaded for ``mlcc render`` get the same verdict); :func:`prefix_problems`
checks the engines of one registry (the built-ins and every plugin folder) together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.support.errors import Problem, json_pointer
from mlcc_constructs.core.wrapper import CONTROL_ENV, CONTROL_PREFIX, flag_for

LAUNCH_FLAGS = ("port_flag", "host_flag")
"""The ``launch`` flags the wrapper sets itself (the pod's port and listen address)."""


def overlaps(one: str, other: str) -> bool:
    """Two env prefixes overlap when either starts with the other (``VLLM_X_`` and ``VLLM_``):
    a key such as ``VLLM_X_MODEL`` would then belong to both engines."""
    return one.startswith(other) or other.startswith(one)


def name_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """The problems of one manifest ``document`` (read from ``where``, schema-valid) with the
    names it claims (module doc)."""
    return [
        *_reserved_prefix_problems(document, where),
        *_launch_flag_problems(document, where),
        *_adapter_path_problems(document, where),
        *_runtime_env_problems(document, where),
    ]


def _reserved_prefix_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    prefix = str(document["env_var_prefix"])
    taken = [key for key in CONTROL_ENV if key.startswith(prefix)]
    if not overlaps(prefix, CONTROL_PREFIX) and not taken:
        return []
    return [
        Problem(
            message=f"env_var_prefix overlaps the wrapper's reserved {CONTROL_PREFIX} variables "
            f"({', '.join(CONTROL_ENV)}): the engine's keys would be read as the wrapper's own, "
            "or the wrapper's as the engine's flags",
            where=where,
            pointer="/env_var_prefix",
            value=prefix,
            allowed=f"a prefix that neither starts with {CONTROL_PREFIX} nor begins any of them",
            fix="name the prefix after the engine, e.g. MYENGINE_",
        )
    ]


def _launch_flag_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """The wrapper passes ``port_flag`` and ``host_flag`` itself; a capability translating to
    the same flag would give the engine that flag twice."""
    launch: Mapping[str, Any] = document["launch"]
    style = str(launch.get("flag_style", "kebab"))
    flags = {
        flag_for(str(cap["suffix"]), style): name
        for name, cap in document["capability_map"].items()
    }
    problems = []
    for field in LAUNCH_FLAGS:
        flag = launch.get(field)
        if flag and flag in flags:
            problems.append(
                Problem(
                    message=f"launch.{field} is also the flag of capability {flags[flag]!r} "
                    f"(its suffix translates to {flag}): the engine would get {flag} twice",
                    where=where,
                    pointer=json_pointer("launch", field),
                    value=flag,
                    allowed="a flag no capability_map suffix translates to",
                    fix=f"remove capability {flags[flag]!r} (the wrapper sets {flag} itself), "
                    f"or correct launch.{field}",
                )
            )
    return problems


def _adapter_path_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    api = document.get("adapter_api")
    if not api or str(api["load"]).rstrip("/") != str(api["unload"]).rstrip("/"):
        return []
    return [
        Problem(
            message="adapter_api.unload is the load path: an unload request would load the "
            "adapter again (or a load unload it)",
            where=where,
            pointer="/adapter_api/unload",
            value=api["unload"],
            allowed=f"an HTTP path other than adapter_api.load ({api['load']})",
            fix="give the engine's unload endpoint, e.g. /v1/unload_lora_adapter",
        )
    ]


def _runtime_env_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """An ``adapter_api.runtime_env`` variable under the engine's prefix that ``engine_env``
    does not list: the wrapper would turn it into a flag instead of leaving it env."""
    prefix = document["env_var_prefix"]
    own = set(document.get("engine_env", ()))
    runtime = (document.get("adapter_api") or {}).get("runtime_env") or {}
    return [
        Problem(
            message=f"{key} has the engine's prefix but engine_env does not list "
            f"{key[len(prefix) :]}: the wrapper would pass it as a flag, not as env",
            where=where,
            pointer=f"/adapter_api/runtime_env/{key}",
            value=key,
            fix=f"add {key[len(prefix) :]!r} to engine_env (the engine reads it from its "
            "environment)",
        )
        for key in runtime
        if key.startswith(prefix) and key[len(prefix) :] not in own
    ]


def prefix_problems(engines: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Problem]:
    """The engines (``(where read, manifest document)`` pairs: built-ins first, then plugins in
    load order) whose ``env_var_prefix`` overlaps an earlier one's (:func:`overlaps`); each
    problem names the later manifest and the earlier engine's."""
    problems = []
    seen: list[tuple[str, Mapping[str, Any]]] = []
    for where, document in engines:
        prefix = str(document["env_var_prefix"])
        clash = next(
            (e for e in seen if overlaps(prefix, str(e[1]["env_var_prefix"]))),
            None,
        )
        if clash is None:
            seen.append((where, document))
            continue
        other_where, other = clash
        theirs = str(other["env_var_prefix"])
        relation = (
            "is the prefix"
            if prefix == theirs
            else ("starts with the prefix" if prefix.startswith(theirs) else "begins the prefix")
        )
        problems.append(
            Problem(
                message=f"env_var_prefix {relation} {theirs} of engine {other['engine']!r} "
                f"({other_where}): a key could belong to both engines",
                where=where,
                pointer="/env_var_prefix",
                value=prefix,
                allowed=f"a prefix that neither starts with {theirs} nor begins it",
                fix="give every engine a prefix of its own, e.g. the engine's name and '_'",
            )
        )
    return problems
