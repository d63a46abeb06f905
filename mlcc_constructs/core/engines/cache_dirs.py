"""An engine's compile and download caches (manifest ``cache_dirs``), read and checked.

Each entry names the environment variable that moves one cache directory (vLLM's
``VLLM_CACHE_ROOT``, Triton's ``TRITON_CACHE_DIR``, Hugging Face's ``HF_HOME``), the directory
it gets under the pod's cache volume, what lands there and where that was read. The serving
layer turns them into env and one volume (:mod:`mlcc_constructs.core.serving.prepare.engine_cache`);
the wrapper never reads them, so they stay out of the manifest that travels with the pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.support.container_env import POD_ENV, WRAPPER_PREFIX
from mlcc_constructs.core.support.errors import Problem, json_pointer

RESERVED_ENV = frozenset(name for name, _ in POD_ENV)
"""Variables the rendered pod sets itself: no cache may claim them."""


@dataclass(frozen=True, kw_only=True)
class CacheDir:
    """One ``cache_dirs`` entry: ``env`` is set to ``<cache mount>/<dir>``."""

    env: str
    dir: str
    holds: str
    source: str


def cache_dirs(document: Mapping[str, Any]) -> tuple[CacheDir, ...]:
    """The ``cache_dirs`` of a (checked) manifest document, in declared order."""
    return tuple(
        CacheDir(env=e["env"], dir=e["dir"], holds=e["holds"], source=e["source"])
        for e in document.get("cache_dirs", ())
    )


def cache_dir_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """What the schema cannot say about ``cache_dirs``: every variable and directory once, no
    variable the pod or the wrapper sets, no variable that is a capability's flag key or the
    API key's variable, and a variable with the engine's prefix listed in ``engine_env``."""
    problems: list[Problem] = []
    prefix = document["env_var_prefix"]
    flag_keys = {prefix + cap["suffix"]: name for name, cap in document["capability_map"].items()}
    api_key_env = (document.get("api_key") or {}).get("env")
    own = set(document.get("engine_env", ()))
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(document.get("cache_dirs", ())):
        for field in ("env", "dir"):
            first = seen.setdefault((field, entry[field]), index)
            if first != index:
                problems.append(
                    Problem(
                        message=f"{field} also used by cache_dirs/{first}",
                        where=where,
                        pointer=json_pointer("cache_dirs", index, field),
                        value=entry[field],
                        fix=f"give every cache its own {field}, or drop the duplicate entry",
                    )
                )
        env = entry["env"]
        pointer = json_pointer("cache_dirs", index, "env")
        reason = None
        if env in RESERVED_ENV:
            reason = "the rendered pod sets this variable itself"
        elif env.startswith(WRAPPER_PREFIX):
            reason = f"{WRAPPER_PREFIX}* variables are the wrapper's own"
        elif env in flag_keys:
            reason = f"it is the flag key of capability {flag_keys[env]!r}"
        elif env == api_key_env:
            reason = "it is the variable the engine reads its API key from"
        elif env.startswith(prefix) and env.removeprefix(prefix) not in own:
            reason = (
                f"it has the engine's prefix {prefix} but is not in engine_env, so the "
                "wrapper would take it for a flag"
            )
        if reason is not None:
            problems.append(
                Problem(
                    message=f"a cache directory's variable cannot be {env}: {reason}",
                    where=where,
                    pointer=pointer,
                    value=env,
                    fix="name the variable the engine reads the cache directory from (one "
                    "with the engine's prefix goes in engine_env too)",
                )
            )
    return problems
