"""Container-side wrapper: turn the active engine's ``<PREFIX>*`` env into its command line.

Standard library only: this file runs inside engine images as the entrypoint and execs the
engine, in any image with python3: mounted from a ConfigMap on eks (``python3
/opt/mlcc/wrapper.py``), inlined on hyperpod-eks (``python3 -c <this file>``), or from an
installed package (``python -m mlcc_constructs.core.wrapper``). The same functions
compute the argv at synth time for ``config_delivery="args"`` and for ``mlcc argv``, so
what a reviewer sees is exactly what the container runs.

Rules (ADR-010): ``<PREFIX>FOO_BAR=v`` becomes ``--foo-bar v`` (``--foo_bar v`` for
``flag_style: snake``); ``true`` becomes the bare ``--foo-bar``; ``false`` is skipped; an
empty value is refused. Flags come out sorted by env key, so the argv does not depend on
the order a process environment happens to list its variables in.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

BIND_ALL = "0.0.0.0"


class WrapperError(ValueError):
    """An env value the wrapper cannot turn into a flag."""


def flag_for(suffix: str, flag_style: str) -> str:
    """``MAX_LORA_RANK`` → ``--max-lora-rank`` (kebab) or ``--max_lora_rank`` (snake)."""
    word = suffix.lower()
    return "--" + (word if flag_style == "snake" else word.replace("_", "-"))


def engine_flags(
    env: Mapping[str, str], prefix: str, flag_style: str, *, skip: frozenset[str] = frozenset()
) -> list[str]:
    """The flags for every ``prefix`` key of ``env`` (sorted by key), except keys in ``skip``."""
    argv: list[str] = []
    for key in sorted(env):
        if not key.startswith(prefix) or key in skip:
            continue
        suffix, value = key[len(prefix) :], env[key]
        if not suffix:
            raise WrapperError(f"{key}: the bare prefix names no flag; use {prefix}<FLAG_NAME>")
        if value == "":
            raise WrapperError(
                f"{key} is empty: an engine flag needs a value; remove the key to leave "
                f"{flag_for(suffix, flag_style)} unset, or set 'true' for a bare flag"
            )
        lowered = value.lower()
        if lowered == "false":
            continue
        flag = flag_for(suffix, flag_style)
        argv.extend([flag] if lowered == "true" else [flag, value])
    return argv


def model_key(manifest: Mapping[str, Any]) -> str | None:
    """The env key that carries the model, from the manifest's ``model`` capability."""
    model = manifest.get("capability_map", {}).get("model")
    return f"{manifest['env_var_prefix']}{model['suffix']}" if model else None


def build_argv(
    manifest: Mapping[str, Any], env: Mapping[str, str], *, keys: Collection[str] | None = None
) -> list[str]:
    """The engine's full argv for ``env``, as the manifest's ``launch`` section says.

    ``keys`` limits the translation to the variables the library delivered (``MLCC_ENGINE_KEYS``
    in a pod): an image's own ``<PREFIX>*`` settings (a stock image may set a usage-source
    variable under the engine's prefix) then stay env instead of becoming flags it rejects.
    ``None``: every prefix key.
    """
    name, launch = manifest["engine"], manifest["launch"]
    if manifest["entrypoint"] != "wrapper":
        raise WrapperError(
            f"engine {name!r} has entrypoint 'image': its image owns the command line and "
            f"reads {manifest['env_var_prefix']}* itself, so there is no wrapper argv"
        )
    prefix, style = manifest["env_var_prefix"], launch.get("flag_style", "kebab")
    key = model_key(manifest)
    argv = list(launch["command"])
    # The engine's own environment settings stay env; they are not flags.
    skip = frozenset(prefix + suffix for suffix in manifest.get("engine_env", ()))
    if launch["model"] == "positional":
        if key is None or not env.get(key):
            raise WrapperError(
                f"{name}: the model is positional but {key or 'no model key'} is unset"
            )
        argv.append(env[key])
        skip |= {key}
    if keys is not None:
        env = {key: value for key, value in env.items() if key in keys}
    argv.extend(engine_flags(env, prefix, style, skip=skip))
    if "host_flag" in launch:
        argv.extend([launch["host_flag"], BIND_ALL])
    if "port_flag" in launch:
        argv.extend([launch["port_flag"], str(launch["port"])])
    return argv


def find_manifest(engine: str, search_dirs: Sequence[Path]) -> Path:
    """The manifest of ``engine``: plugin folders first (in order), then the built-ins.

    A plugin folder holds ``<engine>/manifest.json`` entries or is one engine's folder.
    """
    from mlcc_constructs.core._resources import shipped_path  # absent when run as a lone file

    for folder in [*search_dirs, shipped_path("engines")]:
        for candidate in (folder / engine / "manifest.json", folder / "manifest.json"):
            if candidate.is_file() and _engine_name(candidate) == engine:
                return candidate
    raise WrapperError(f"no manifest for engine {engine!r} in {[str(d) for d in search_dirs]}")


def _engine_name(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("engine")
    except (OSError, ValueError):
        return None


def main(args: Sequence[str] | None = None) -> int:
    """Entrypoint. Environment: ``MLCC_ENGINE`` (the engine's name); the manifest from
    ``MLCC_ENGINE_MANIFEST_JSON`` (the JSON itself), ``MLCC_ENGINE_MANIFEST`` (a file) or the
    plugin folders and built-ins; ``MLCC_ENGINE_KEYS`` (comma-separated), the only variables
    to translate. The container's own args (e.g. flags a CacheBackend injected) follow the
    env-derived flags; a leading ``--print`` shows the argv as JSON instead of exec'ing."""
    args = list(sys.argv[1:] if args is None else args)
    show = bool(args) and args[0] == "--print"
    extra = args[1:] if show else args
    engine = os.environ.get("MLCC_ENGINE", "")
    if not engine:
        print(
            "mlcc wrapper: MLCC_ENGINE is not set (the engine's name, e.g. vllm)", file=sys.stderr
        )
        return 2
    delivered = os.environ.get("MLCC_ENGINE_KEYS")
    keys = frozenset(filter(None, delivered.split(","))) if delivered is not None else None
    try:
        inline = os.environ.get("MLCC_ENGINE_MANIFEST_JSON")
        if inline is not None:
            source, manifest = "MLCC_ENGINE_MANIFEST_JSON", json.loads(inline)
        else:
            given = os.environ.get("MLCC_ENGINE_MANIFEST")
            paths = [Path(p) for p in os.environ.get("MLCC_ENGINE_PATH", "").split(os.pathsep) if p]
            path = Path(given) if given else find_manifest(engine, paths)
            source, manifest = str(path), json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("engine") != engine:
            raise WrapperError(
                f"{source} is the manifest of {manifest.get('engine')!r}, not {engine!r}"
            )
        argv = build_argv(manifest, os.environ, keys=keys) + extra
    except (OSError, ValueError) as error:  # WrapperError is a ValueError
        print(f"mlcc wrapper: {error}", file=sys.stderr)
        return 2
    if show:
        print(json.dumps(argv))
        return 0
    sys.stdout.flush()
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    sys.exit(main())
