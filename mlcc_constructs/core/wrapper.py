"""Container-side wrapper: turn the active engine's ``<PREFIX>*`` env into its command line.

Standard library only: this file runs inside engine images as the entrypoint and execs the
engine, in any image with python3: mounted from a ConfigMap on eks (``python3
/opt/mlcc/wrapper.py``), inlined on hyperpod-eks (``python3 -c <this file>``), or from an
installed package (``python -m mlcc_constructs.core.wrapper``). The same functions
compute the argv at synth time for ``config_delivery="args"`` and for ``mlcc argv``, so
what a reviewer sees is exactly what the container runs.

Rules (ADR-010): ``<PREFIX>FOO_BAR=v`` becomes ``--foo-bar v`` (``--foo_bar v`` for
``flag_style: snake``); ``true`` becomes the bare ``--foo-bar``; ``false`` becomes the
engine's off form (``--no-foo-bar``) when the manifest declares one (``negation``), else
nothing; an empty value is refused, and so is a key whose suffix is not a flag name
(:data:`FLAG_SUFFIX`). A JSON array value (``["q_proj","v_proj"]``) is several
values where the manifest declares ``list_values``: by default one flag then each element
(``--foo-bar q_proj v_proj``), ``repeat`` gives one flag per element, ``verbatim`` passes the
text as one argument. Flags come out sorted by env key, so the argv does not depend on the
order a process environment happens to list its variables in. Arguments the container
itself passes (a CacheBackend's flags) replace a flag group of the same name in place, else
follow. The engine is exec'd with the environment minus every key that became a flag and
minus the wrapper's own ``MLCC_*`` variables: it sees its flags plus its own variables.

An engine whose API key goes in a config file (manifest ``api_key.config_file``, SGLang's
``--config``) gets the key from ``MLCC_API_KEY`` (a Secret reference) written to a private
file (mode 0600 in ``$TMPDIR``, else ``/tmp``) and that file's flag: the key is never on its
command line and never in its environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

BIND_ALL = "0.0.0.0"
CONTROL_PREFIX = "MLCC_"
"""The prefix of the wrapper's own variables (:data:`CONTROL_ENV`): no user key may take it."""
ENGINE_ENV = "MLCC_ENGINE"
"""The engine's name."""
MANIFEST_ENV = "MLCC_ENGINE_MANIFEST"
"""A file holding the engine manifest."""
MANIFEST_JSON_ENV = "MLCC_ENGINE_MANIFEST_JSON"
"""The engine manifest itself (JSON text)."""
KEYS_ENV = "MLCC_ENGINE_KEYS"
"""Comma-separated env keys to translate: only what the library delivered, never an image's own."""
PATH_ENV = "MLCC_ENGINE_PATH"
"""Plugin folders searched for the manifest (``os.pathsep``-separated)."""
API_KEY_ENV = "MLCC_API_KEY"
"""The API key, for an engine that reads it from a config file the wrapper writes."""
CONTROL_ENV = (ENGINE_ENV, MANIFEST_ENV, MANIFEST_JSON_ENV, KEYS_ENV, PATH_ENV, API_KEY_ENV)
"""The wrapper's own variables: never passed on to the engine."""
LIST_FORMS = ("spread", "repeat", "verbatim")
"""How a JSON array value becomes arguments (module doc)."""
MANIFEST_KEYS = (
    "api_key",
    "engine",
    "engine_env",
    "entrypoint",
    "env_var_prefix",
    "launch",
    "list_values",
    "multi_node",
    "negation",
)
"""The engine manifest's keys this script reads, with the ``model`` entry of its
``capability_map``: the part of the manifest that travels with the pods (:func:`pod_manifest`),
so a field only the library reads (metrics, gateway, ...) rolls no pod."""

_FLAG = re.compile(r"^--?[A-Za-z]")
FLAG_SUFFIX = re.compile(r"^[A-Z0-9]+(?:_[A-Z0-9]+)*$")
"""The part of a ``<PREFIX>*`` key after the prefix that names a flag: upper-case words of
letters and digits joined by single ``_``, so :func:`flag_for` gives one flag (``--a-b``) and
no two keys give the same one (a suffix ``_`` would give ``---``, ``MODEL_`` ``--model-``)."""


class WrapperError(ValueError):
    """An env value the wrapper cannot turn into a flag."""


class ListValueError(WrapperError):
    """A malformed JSON array value: ``detail`` says what is wrong, ``fix`` what to do."""

    def __init__(self, key: str, detail: str, fix: str) -> None:
        super().__init__(f"{key} {detail}; {fix}")
        self.detail, self.fix = detail, fix


def flag_for(suffix: str, flag_style: str) -> str:
    """``MAX_LORA_RANK`` → ``--max-lora-rank`` (kebab) or ``--max_lora_rank`` (snake)."""
    word = suffix.lower()
    return "--" + (word if flag_style == "snake" else word.replace("_", "-"))


def off_flag(suffix: str, flag_style: str, prefix: str) -> str:
    """The off form of a boolean flag: ``ENABLE_PREFIX_CACHING`` with prefix ``no-`` →
    ``--no-enable-prefix-caching``."""
    return "--" + prefix + flag_for(suffix, flag_style)[2:]


def negation_prefix(manifest: Mapping[str, Any], suffix: str) -> str | None:
    """The prefix of the off form of flag ``suffix``, or ``None`` when the engine has none."""
    negation = manifest.get("negation")
    if not negation or suffix in negation.get("except", ()):
        return None
    if "only" in negation and suffix not in negation["only"]:
        return None
    return str(negation["prefix"])


def list_form(manifest: Mapping[str, Any], suffix: str) -> str:
    """How a JSON array value of flag ``suffix`` becomes arguments (``verbatim``: it does not)."""
    lists = manifest.get("list_values")
    if not lists:
        return "verbatim"
    return str(lists.get("flags", {}).get(suffix, lists["default"]))


def list_values(key: str, value: str, form: str) -> list[str] | None:
    """The elements of a JSON array ``value`` (``None``: not a list, or a ``verbatim`` flag).

    String elements pass as they are; numbers, booleans and objects as compact JSON text.
    """
    if form == "verbatim" or not value.lstrip().startswith("["):
        return None
    try:
        items = json.loads(value)
    except ValueError as error:
        raise ListValueError(
            key,
            f"starts with '[' but is not a JSON array ({error})",
            'write several values as a JSON array, e.g. ["a","b"]',
        ) from error
    if not isinstance(items, list) or not items:
        raise ListValueError(
            key,
            "is an empty JSON array: a list flag needs at least one value",
            "remove the key to leave the flag unset",
        )
    values = [
        item if isinstance(item, str) else json.dumps(item, separators=(",", ":")) for item in items
    ]
    if any(not v for v in values):
        raise ListValueError(
            key, "holds an empty string", "give every list element a value, or remove it"
        )
    return values


def engine_flags(
    env: Mapping[str, str],
    prefix: str,
    flag_style: str,
    *,
    skip: frozenset[str] = frozenset(),
    manifest: Mapping[str, Any] | None = None,
) -> list[str]:
    """The flags for every ``prefix`` key of ``env`` (sorted by key), except keys in ``skip``.

    ``manifest`` supplies the off form of booleans and the list forms (module doc); without
    it ``false`` gives nothing and every value is one argument.
    """
    manifest = manifest or {}
    argv: list[str] = []
    for key in sorted(env):
        if not key.startswith(prefix) or key in skip:
            continue
        suffix, value = key[len(prefix) :], env[key]
        if not suffix:
            raise WrapperError(f"{key}: the bare prefix names no flag; use {prefix}<FLAG_NAME>")
        if not FLAG_SUFFIX.match(suffix):
            raise WrapperError(
                f"{key}: {suffix!r} names no flag (upper-case letters and digits, words joined "
                f"by single '_'); use {prefix}<FLAG_NAME>, e.g. {prefix}MAX_NUM_SEQS"
            )
        flag = flag_for(suffix, flag_style)
        if value == "":
            raise WrapperError(
                f"{key} is empty: an engine flag needs a value; remove the key to leave "
                f"{flag} unset, or set 'true' for a bare flag"
            )
        lowered = value.lower()
        if lowered == "false":
            off = negation_prefix(manifest, suffix)
            if off is not None:
                argv.append(off_flag(suffix, flag_style, off))
            continue
        if lowered == "true":
            argv.append(flag)
            continue
        form = list_form(manifest, suffix)
        values = list_values(key, value, form)
        if values is None:
            argv.extend([flag, value])
        elif form == "repeat":
            for item in values:
                argv.extend([flag, item])
        else:
            argv.extend([flag, *values])
    return argv


def pod_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``manifest`` this script reads (:data:`MANIFEST_KEYS`)."""
    kept = {key: manifest[key] for key in MANIFEST_KEYS if key in manifest}
    model = manifest.get("capability_map", {}).get("model")
    if model is not None:
        kept["capability_map"] = {"model": model}
    return kept


def model_key(manifest: Mapping[str, Any]) -> str | None:
    """The env key that carries the model, from the manifest's ``model`` capability."""
    model = manifest.get("capability_map", {}).get("model")
    return f"{manifest['env_var_prefix']}{model['suffix']}" if model else None


def own_env_keys(manifest: Mapping[str, Any]) -> frozenset[str]:
    """The env keys the engine reads itself (``engine_env``): they stay env, never flags."""
    prefix = manifest["env_var_prefix"]
    return frozenset(prefix + suffix for suffix in manifest.get("engine_env", ()))


def translated_keys(
    manifest: Mapping[str, Any], env: Mapping[str, str], keys: Collection[str] | None = None
) -> list[str]:
    """The keys of ``env`` the wrapper turns into arguments (the model included), sorted.

    ``keys`` limits the translation to the variables the library delivered (``MLCC_ENGINE_KEYS``
    in a pod): an image's own ``<PREFIX>*`` settings (a stock image may set a usage-source
    variable under the engine's prefix) then stay env instead of becoming flags it rejects.
    ``None``: every prefix key.
    """
    prefix, own = manifest["env_var_prefix"], own_env_keys(manifest)
    return sorted(
        key
        for key in env
        if key.startswith(prefix) and key not in own and (keys is None or key in keys)
    )


def build_argv(
    manifest: Mapping[str, Any], env: Mapping[str, str], *, keys: Collection[str] | None = None
) -> list[str]:
    """The engine's full argv for ``env``, as the manifest's ``launch`` section says
    (``keys``: :func:`translated_keys`)."""
    name, launch = manifest["engine"], manifest["launch"]
    if manifest["entrypoint"] != "wrapper":
        raise WrapperError(
            f"engine {name!r} has entrypoint 'image': its image owns the command line and "
            f"reads {manifest['env_var_prefix']}* itself, so there is no wrapper argv"
        )
    prefix, style = manifest["env_var_prefix"], launch.get("flag_style", "kebab")
    key = model_key(manifest)
    argv = list(launch["command"])
    chosen = {k: env[k] for k in translated_keys(manifest, env, keys)}
    if launch["model"] == "positional":
        if key is None or not env.get(key):
            raise WrapperError(
                f"{name}: the model is positional but {key or 'no model key'} is unset"
            )
        argv.append(env[key])
        chosen.pop(key, None)
    argv.extend(engine_flags(chosen, prefix, style, manifest=manifest))
    if "host_flag" in launch:
        argv.extend([launch["host_flag"], BIND_ALL])
    if "port_flag" in launch:
        argv.extend([launch["port_flag"], str(launch["port"])])
    argv.extend(multi_node_args(manifest, env))
    return argv


# The variables the LeaderWorkerSet controller adds to every container of a group (kubernetes-
# sigs/lws v0.10.0 api/leaderworkerset/v1/leaderworkerset_types.go LwsLeaderAddress,
# LwsGroupSize, LwsWorkerIndex; the leader is worker index 0 and its address is
# <lws>-<group>.<lws>.<namespace>, pkg/utils/pod/pod_utils_test.go): the placeholders of an
# engine manifest's multi_node arguments.
LWS_ENV = {
    "leader_address": "LWS_LEADER_ADDRESS",
    "group_size": "LWS_GROUP_SIZE",
    "worker_index": "LWS_WORKER_INDEX",
}


def multi_node_role(env: Mapping[str, str]) -> str | None:
    """``leader`` or ``worker`` in a LeaderWorkerSet pod (from ``LWS_WORKER_INDEX``), else
    ``None`` (one node: no multi-node arguments)."""
    index = env.get(LWS_ENV["worker_index"])
    if index is None or not env.get(LWS_ENV["leader_address"]):
        return None
    return "leader" if index == "0" else "worker"


def multi_node_args(manifest: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """The manifest's ``multi_node`` leader or worker arguments with the LWS values of ``env``
    filled in; none outside a LeaderWorkerSet group or for an engine without the block."""
    block = manifest.get("multi_node")
    role = multi_node_role(env)
    if not block or role is None:
        return []
    values = {name: env.get(var, "") for name, var in LWS_ENV.items()}
    values["master_port"] = str(block["master_port"])
    for name in ("group_size", "worker_index"):
        if not values[name].isdigit():
            raise WrapperError(
                f"{manifest['engine']}: {LWS_ENV[name]}={values[name]!r} is not a number "
                "(the LeaderWorkerSet controller sets it)"
            )
    return [arg.format(**values) for arg in block[f"{role}_args"]]


def exec_env(
    manifest: Mapping[str, Any], env: Mapping[str, str], *, keys: Collection[str] | None = None
) -> dict[str, str]:
    """The environment the engine is exec'd with: ``env`` minus the keys that became
    arguments and minus the wrapper's own variables (:data:`CONTROL_ENV`)."""
    dropped = set(translated_keys(manifest, env, keys)) | set(CONTROL_ENV)
    if manifest["launch"].get("model") == "positional":
        dropped.add(model_key(manifest) or "")  # the model went in as an argument
    return {key: value for key, value in env.items() if key not in dropped}


def _leading_flag(arg: str) -> str:
    """The flag an argument names (``--a=b`` → ``--a``), or ``""`` for a value."""
    return arg.split("=", 1)[0] if _FLAG.match(arg) else ""


def flag_groups(args: Sequence[str]) -> list[list[str]]:
    """``args`` as groups: a flag and the values after it (leading values form their own)."""
    groups: list[list[str]] = []
    for arg in args:
        if _leading_flag(arg) or not groups:
            groups.append([arg])
        else:
            groups[-1].append(arg)
    return groups


def upsert_group(args: Sequence[str], group: Sequence[str]) -> list[str]:
    """``args`` with ``group`` in place of the first group of the same flag (``--f v``,
    ``--f=v``, ``--f v1 v2``), or appended: a flag is never passed twice."""
    flag = _leading_flag(group[0])
    result: list[str] = []
    placed = False
    for existing in flag_groups(args):
        if not placed and flag and _leading_flag(existing[0]) == flag:
            result.extend(group)
            placed = True
        else:
            result.extend(existing)
    return result if placed else [*result, *group]


def merge_args(argv: Sequence[str], extra: Sequence[str]) -> list[str]:
    """``argv`` with each flag group of ``extra`` upserted in order (:func:`upsert_group`)."""
    merged = list(argv)
    for group in flag_groups(extra):
        merged = upsert_group(merged, group)
    return merged


def key_config_args(manifest: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """For an engine that reads its API key from a config file (``api_key.config_file``:
    ``flag``, ``key``, ``suffix``) and an ``MLCC_API_KEY`` in ``env``: the key written as
    ``{key: value}`` (JSON, which is YAML) to a new file only its owner reads, and
    ``[flag, path]``; else ``[]``."""
    config = (manifest.get("api_key") or {}).get("config_file")
    value = env.get(API_KEY_ENV)
    if not config or not value:
        return []
    folder = env.get("TMPDIR") or "/tmp"
    # The engine is exec'd in this process, so its pid names the file; a restarted container
    # finds its predecessor's file in the pod's /tmp, removes it and makes its own.
    path = os.path.join(folder, f"mlcc-api-key-{os.getpid()}{config['suffix']}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({config["key"]: value}, handle)
    return [config["flag"], path]


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


def _load_manifest(engine: str) -> dict[str, Any]:
    inline = os.environ.get(MANIFEST_JSON_ENV)
    if inline is not None:
        source, manifest = MANIFEST_JSON_ENV, json.loads(inline)
    else:
        given = os.environ.get(MANIFEST_ENV)
        paths = [Path(p) for p in os.environ.get(PATH_ENV, "").split(os.pathsep) if p]
        path = Path(given) if given else find_manifest(engine, paths)
        source, manifest = str(path), json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("engine") != engine:
        raise WrapperError(
            f"{source} is the manifest of {manifest.get('engine')!r}, not {engine!r}"
        )
    return dict(manifest)


def main(args: Sequence[str] | None = None) -> int:
    """Entrypoint. Environment: ``MLCC_ENGINE`` (the engine's name); the manifest from
    ``MLCC_ENGINE_MANIFEST_JSON`` (the JSON itself), ``MLCC_ENGINE_MANIFEST`` (a file) or the
    plugin folders and built-ins; ``MLCC_ENGINE_KEYS`` (comma-separated), the only variables
    to translate. The container's own args (e.g. flags a CacheBackend injected) are merged
    into the env-derived flags (:func:`merge_args`). A leading ``--print`` shows the argv as
    JSON instead of exec'ing; ``--print-env`` shows the environment the engine would get."""
    args = list(sys.argv[1:] if args is None else args)
    show = args[0] if args and args[0] in ("--print", "--print-env") else None
    extra = args[1:] if show else args
    engine = os.environ.get(ENGINE_ENV, "")
    if not engine:
        print(
            f"mlcc wrapper: {ENGINE_ENV} is not set (the engine's name, e.g. vllm)",
            file=sys.stderr,
        )
        return 2
    delivered = os.environ.get(KEYS_ENV)
    keys = frozenset(filter(None, delivered.split(","))) if delivered is not None else None
    try:
        manifest = _load_manifest(engine)
        argv = merge_args(build_argv(manifest, os.environ, keys=keys), extra)
        argv += key_config_args(manifest, os.environ)
        environment = exec_env(manifest, os.environ, keys=keys)
    except (OSError, ValueError) as error:  # WrapperError is a ValueError
        print(f"mlcc wrapper: {error}", file=sys.stderr)
        return 2
    if show == "--print":
        print(json.dumps(argv))
        return 0
    if show == "--print-env":
        print(json.dumps(environment, sort_keys=True))
        return 0
    sys.stdout.flush()
    os.execvpe(argv[0], argv, environment)


if __name__ == "__main__":
    sys.exit(main())
