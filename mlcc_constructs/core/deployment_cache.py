"""A deployment's CacheBackend: admitted once, then checked against the engine that serves it
and the target it is rendered for."""

from __future__ import annotations

from mlcc_constructs.core.cache import Admission, CacheBackendSpec, admit, leading_token
from mlcc_constructs.core.errors import MlccError, Problem, json_pointer
from mlcc_constructs.core.resolution import Resolution
from mlcc_constructs.core.targets import TargetDescriptor, load_target, target_names
from mlcc_constructs.core.wrapper import flag_for, negation_prefix, off_flag

POINTER = "/cache_backend"


def admit_for_deployment(
    backend: CacheBackendSpec, resolution: Resolution, target: TargetDescriptor
) -> tuple[list[Problem], Admission | None]:
    """Every problem of injecting ``backend`` into this deployment, and the admission when
    there is none: admission (once per spec object), argument overrides that would touch a flag
    the engine config or launch section owns, a target without cache injection, and a runtime
    the engine does not serve."""
    problems: list[Problem] = []
    admission: Admission | None = None
    try:
        admission = admit(backend, path=POINTER)
    except MlccError as error:
        problems.extend(error.problems)
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
                fix=f"drop cache_backend, or render for target {injecting}",
            )
        )
    manifest = resolution.manifest
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
    return owned
