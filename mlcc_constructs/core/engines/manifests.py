"""Engine manifests and the engine registry (ADR-010).

A manifest declares an engine's env prefix, how it is launched and its capability map. The
JSON schema (``engines/manifest.schema.json``) governs the shape and
``core/engines/manifest_checks.py``
the rules a schema cannot express; this module loads built-in engines plus plugin folders.
Capability names are open: nothing here knows any engine by name.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.engines.cache_dirs import CacheDir, cache_dirs
from mlcc_constructs.core.engines.manifest_checks import manifest_problems
from mlcc_constructs.core.engines.metrics import EngineMetrics, engine_metrics
from mlcc_constructs.core.engines.name_checks import prefix_problems
from mlcc_constructs.core.support.documents import parse_json, read_text
from mlcc_constructs.core.support.errors import MlccError, Problem, closest, fail
from mlcc_constructs.core.wrapper import PATH_ENV, flag_for, off_flag, pod_manifest

ENGINE_PATH_ENV = PATH_ENV
"""Plugin folders, separated by ``os.pathsep``, added to the built-in engines."""

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")

ValueType = Literal["valued", "boolean"]
ADAPTER_API_PATHS = ("load", "unload", "list")
"""The HTTP paths of a manifest's ``adapter_api`` (:attr:`EngineManifest.adapter_api`)."""


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``"0.6.3"``, ``"v0.8.4"``, ``"0.6.3.post1"`` → ``(0, 6, 3)``; unparseable → ``None``."""
    match = _VERSION.match(text.strip())
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


@dataclass(frozen=True, kw_only=True)
class Capability:
    """One ``capability_map`` entry; ``groups`` is ``requires_any_of`` (``requires`` = 1 group)."""

    name: str
    suffix: str
    value_type: ValueType
    groups: tuple[tuple[str, ...], ...] = ()
    default: str | None = None
    allowed: tuple[str, ...] | None = None
    since: str | None = None


@dataclass(frozen=True, kw_only=True)
class StreamLoad:
    """How an engine reads its weights straight from object storage (manifest
    ``model_load.stream``): the model is passed as its URI and ``flag`` set to ``value``.

    Fields:

    ``flag``: the engine's load-format flag (``--load-format``).
    ``value``: its value for streaming (``runai_streamer``).
    ``sources``: the model source kinds it streams from (``s3``).
    ``since``: the first engine version that has it; ``None``: every supported version.
    ``env``: plain variables the engine process needs for it -> the deployment fact each takes
        (``model_region``).
    ``source``: where it is documented.
    """

    flag: str
    value: str
    sources: tuple[str, ...]
    since: str | None
    env: Mapping[str, str]
    source: str

    def suffix(self) -> str:
        """The env suffix the wrapper turns into ``flag`` (``--load-format`` -> ``LOAD_FORMAT``)."""
        return self.flag.lstrip("-").upper().replace("-", "_")


@dataclass(frozen=True, kw_only=True)
class EngineManifest:
    """A validated engine manifest. ``raw`` is the JSON document (the wrapper reads it)."""

    engine: str
    env_var_prefix: str
    entrypoint: Literal["wrapper", "image"]
    min_version: str
    launch: Mapping[str, Any]
    capabilities: tuple[Capability, ...]
    dimension_map: Mapping[str, str]
    adapter_api: Mapping[str, str] | None
    """The dynamic LoRA API's paths (``load``, ``unload``, ``list``), or ``None``."""
    source: str
    raw: Mapping[str, Any]
    engine_env: frozenset[str] = frozenset()
    """Env keys (prefix included) the engine reads itself: forwarded as env, never flags."""

    def off_form_blocker(self, suffix: str, version: tuple[int, int, int] | None) -> str | None:
        """Why ``<PREFIX><suffix>=false`` cannot reach the engine as the flag's off form at
        engine ``version`` (``None``: unknown, gates fail open), or ``None`` when it can."""
        negation = self.raw.get("negation")
        style = self.launch.get("flag_style", "kebab")
        if not negation:
            return f"{self.engine} declares no off form for its boolean flags (manifest negation)"
        if suffix in negation.get("except", ()):
            return (
                f"{flag_for(suffix, style)} has no off form in {self.engine} "
                "(manifest negation.except)"
            )
        if "only" in negation and suffix not in negation["only"]:
            return (
                f"{flag_for(suffix, style)} has no off form in {self.engine} "
                "(manifest negation.only)"
            )
        since = parse_version(negation.get("since", ""))
        if since and version is not None and version < since:
            off = off_flag(suffix, style, negation["prefix"])
            return f"{self.engine} takes {off} only from version {negation['since']}"
        return None

    @cached_property
    def stream_load(self) -> StreamLoad | None:
        """How the engine streams its weights from object storage (manifest
        ``model_load.stream``), or ``None`` when it only reads the mount."""
        stream = (self.raw.get("model_load") or {}).get("stream")
        if stream is None:
            return None
        return StreamLoad(
            flag=stream["flag"],
            value=stream["value"],
            sources=tuple(stream["sources"]),
            since=stream.get("since"),
            env=MappingProxyType(dict(stream.get("env", {}))),
            source=stream["source"],
        )

    @cached_property
    def metrics(self) -> EngineMetrics | None:
        """The Prometheus metrics the engine declares (manifest ``metrics``), or ``None``."""
        return engine_metrics(self.raw)

    @cached_property
    def cache_dirs(self) -> tuple[CacheDir, ...]:
        """The engine's compile and download cache directories (manifest ``cache_dirs``), each
        moved by its variable; empty when none is declared."""
        return cache_dirs(self.raw)

    @cached_property
    def pod_json_text(self) -> str:
        """The part of the manifest the wrapper reads, as indented JSON: what travels with the
        pods (the eks wrapper ConfigMap mounts it, an IEC worker gets it in its env)."""
        return json.dumps(pod_manifest(self.raw), indent=2, ensure_ascii=False) + "\n"

    def capability(self, name: str) -> Capability | None:
        """The capability called ``name``, or ``None`` when the engine does not declare it."""
        return next((c for c in self.capabilities if c.name == name), None)

    def key(self, capability: Capability) -> str:
        """The env key of ``capability``: prefix + suffix, e.g. ``SGLANG_TP_SIZE``."""
        return self.env_var_prefix + capability.suffix

    @property
    def hub_model_env(self) -> str | None:
        """The variable an image engine takes a Hugging Face model id from (``HF_MODEL_ID``),
        or ``None`` when it declares none."""
        value = self.raw.get("hub_model_env")
        return str(value) if value is not None else None

    @property
    def managed_cache_routing(self) -> str | None:
        """Where AWS documents the HyperPod inference operator's routing and KV cache for this
        engine's containers (manifest ``managed_cache_routing.source``), or ``None``: the engine
        is not supported by them."""
        value = (self.raw.get("managed_cache_routing") or {}).get("source")
        return str(value) if value is not None else None

    @property
    def api_paths(self) -> tuple[str, ...]:
        """The inference API's path prefixes a load balancer routes (empty: none declared)."""
        return tuple(str(path) for path in (self.raw.get("api_paths") or {}).get("paths", ()))

    @property
    def adapter_runtime_env(self) -> Mapping[str, str]:
        """The variables the engine needs to load and unload adapters at runtime (manifest
        ``adapter_api.runtime_env``: vLLM serves its load route only with
        ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` true); empty when it needs none."""
        runtime = (self.raw.get("adapter_api") or {}).get("runtime_env") or {}
        return MappingProxyType({str(k): str(v) for k, v in runtime.items()})

    @property
    def api_key_env(self) -> str | None:
        """The variable the engine reads its API key from (``VLLM_API_KEY``), if it has one."""
        value = (self.raw.get("api_key") or {}).get("env")
        return str(value) if value is not None else None

    @property
    def api_key_config_file(self) -> bool:
        """The engine reads its API key from a config file the wrapper writes (SGLang)."""
        return bool((self.raw.get("api_key") or {}).get("config_file"))

    @property
    def reserved_keys(self) -> dict[str, str]:
        """Env keys the wrapper sets itself (host/port flags) → the flag they would collide with."""
        flags = (self.launch.get(f) for f in ("port_flag", "host_flag"))
        return {
            key: flag
            for flag in flags
            if flag
            and (key := self.env_var_prefix + flag.lstrip("-").upper().replace("-", "_"))
            not in self.engine_env
        }


def _scalar(value: object) -> str:
    return str(value)


def _build(document: Mapping[str, Any], where: str) -> EngineManifest:
    capabilities = []
    for name, cap in document["capability_map"].items():
        groups = (
            (tuple(cap["requires"]),)
            if "requires" in cap
            else tuple(tuple(g) for g in cap.get("requires_any_of", ()))
        )
        capabilities.append(
            Capability(
                name=name,
                suffix=cap["suffix"],
                value_type=cap["value_type"],
                groups=groups,
                default=_scalar(cap["default"]) if "default" in cap else None,
                allowed=tuple(_scalar(v) for v in cap["allowed"]) if "allowed" in cap else None,
                since=cap.get("since"),
            )
        )
    return EngineManifest(
        engine=document["engine"],
        env_var_prefix=document["env_var_prefix"],
        entrypoint=document["entrypoint"],
        min_version=document["min_version"],
        launch=MappingProxyType(dict(document["launch"])),
        capabilities=tuple(capabilities),
        dimension_map=MappingProxyType(dict(document.get("dimension_map", {}))),
        engine_env=frozenset(
            document["env_var_prefix"] + s for s in document.get("engine_env", ())
        ),
        adapter_api=(
            MappingProxyType(
                {
                    name: path
                    for name, path in document["adapter_api"].items()
                    if name in ADAPTER_API_PATHS
                }
            )
            if "adapter_api" in document
            else None
        ),
        source=where,
        raw=document,
    )


def load_manifest(path: str | Path) -> EngineManifest:
    """Load and check one manifest file; every problem is reported in one :class:`MlccError`."""
    where = str(path)
    document = _read_document(Path(path))
    problems = manifest_problems(document, where)
    if problems:
        raise MlccError(problems)
    return _build(document, where)


def _read_document(path: Path) -> Any:
    return parse_json(read_text(path, what="manifest"), where=str(path))


def manifest_files(folder: str | Path) -> list[Path]:
    """The manifests of a plugin folder: the folder's own manifest.json, or ``*/manifest.json``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise fail(
            "plugin folder does not exist",
            where=str(folder),
            fix="pass a folder holding <engine>/manifest.json (or one engine's manifest.json)",
        )
    own = folder / "manifest.json"
    if own.is_file():
        return [own]
    found = sorted(folder.glob("*/manifest.json"))
    if not found:
        raise fail(
            "no engine manifest in plugin folder",
            where=str(folder),
            fix="add <engine>/manifest.json (see engines/manifest.schema.json)",
        )
    return found


def builtin_manifest_files() -> list[Path]:
    """The manifest files shipped with the library."""
    return sorted(shipped_path("engines").glob("*/manifest.json"))


@cache
def _builtin() -> tuple[EngineManifest, ...]:
    # The shipped manifests are checked against the schema and the semantic rules by the test
    # suite (tests/core/engines/test_manifests.py), so loading them skips jsonschema: importing
    # it costs more than the whole start-up of the pure `mlcc` commands. Plugins always get the
    # full check.
    return tuple(_build(_read_document(p), str(p)) for p in builtin_manifest_files())


def builtin_engines() -> tuple[EngineManifest, ...]:
    """The manifests shipped with the library."""
    return _builtin()


def prefix_problems_with_builtins(manifests: Sequence[EngineManifest]) -> list[Problem]:
    """The env prefix overlaps of ``manifests`` (files checked on their own, as ``mlcc validate
    FILE`` does) with each other and with the built-in engines they do not replace (a manifest
    named like a built-in stands for it)."""
    names = {m.engine for m in manifests}
    kept = [m for m in builtin_engines() if m.engine not in names]
    return prefix_problems([(m.source, m.raw) for m in [*kept, *manifests]])


class EngineRegistry:
    """Built-in engines plus plugins. Use :meth:`load`; look engines up with :meth:`get`."""

    def __init__(self, manifests: Iterable[EngineManifest]) -> None:
        self._engines: dict[str, EngineManifest] = {}
        for manifest in manifests:
            self._engines[manifest.engine] = manifest
        # Longest prefix first. A registry that EngineRegistry.load built has no overlapping
        # prefixes (name_checks.prefix_problems); one built from manifests directly may.
        self._by_prefix = sorted(
            self._engines.values(), key=lambda m: len(m.env_var_prefix), reverse=True
        )

    @classmethod
    def load(
        cls,
        plugin_dirs: Sequence[str | Path] = (),
        *,
        use_env: bool = True,
        allow_override: Iterable[str] = (),
    ) -> EngineRegistry:
        """Built-ins, then ``$MLCC_ENGINE_PATH`` folders (when ``use_env``), then ``plugin_dirs``.

        A plugin named like a built-in is refused unless its name is in ``allow_override``;
        two plugins with one name, or two engines whose prefixes overlap (``VLLM_X_`` and
        ``VLLM_``: :func:`~mlcc_constructs.core.engines.name_checks.prefix_problems`), are
        refused.
        """
        builtins = {m.engine: m for m in builtin_engines()}
        folders: list[str | Path] = []
        if use_env:
            folders += [p for p in os.environ.get(ENGINE_PATH_ENV, "").split(os.pathsep) if p]
        folders += plugin_dirs
        overrides = set(allow_override)
        unknown = sorted(overrides - set(builtins))
        if unknown:
            raise MlccError(
                Problem(
                    message=f"--override-builtin names no built-in engine: {name!r}",
                    where="--override-builtin",
                    value=name,
                    allowed=", ".join(sorted(builtins)),
                    fix="name the built-in engine the plugin replaces, or drop the option",
                )
                for name in unknown
            )
        if not folders:
            return _builtin_registry()
        engines = dict(builtins)
        plugin_sources: dict[str, str] = {}
        problems: list[Problem] = []
        loaded: list[EngineManifest] = []
        for folder in folders:
            for path in manifest_files(folder):
                try:
                    loaded.append(load_manifest(path))
                except MlccError as error:
                    problems.extend(error.problems)
        for manifest in loaded:
            name = manifest.engine
            if name in plugin_sources:
                problems.append(
                    Problem(
                        message=f"engine {name!r} is declared twice",
                        where=manifest.source,
                        pointer="/engine",
                        value=name,
                        fix=f"rename one; the other is {plugin_sources[name]}",
                    )
                )
                continue
            if name in builtins and name not in overrides:
                problems.append(
                    Problem(
                        message=f"plugin shadows the built-in engine {name!r}",
                        where=manifest.source,
                        pointer="/engine",
                        value=name,
                        fix=f"rename the plugin, or override it explicitly "
                        f"(--override-builtin {name} / allow_override=[{name!r}])",
                    )
                )
                continue
            plugin_sources[name] = manifest.source
            engines[name] = manifest
        problems += prefix_problems([(m.source, m.raw) for m in engines.values()])
        if problems:
            raise MlccError(problems)
        return cls(engines.values())

    def get(self, name: str, *, pointer: str = "/engine") -> EngineManifest:
        """The manifest of ``name``; an unknown name lists the known ones."""
        manifest = self._engines.get(name)
        if manifest is None:
            near = closest(name, self._engines)
            raise fail(
                "unknown engine",
                pointer=pointer,
                value=name,
                allowed=", ".join(sorted(self._engines)),
                fix=(f"did you mean {' or '.join(near)}? " if near else "")
                + "a plugin engine needs --plugin-dir or MLCC_ENGINE_PATH",
            )
        return manifest

    def owner_of(self, key: str) -> EngineManifest | None:
        """The engine whose prefix ``key`` starts with (longest prefix wins), if any."""
        return next((m for m in self._by_prefix if key.startswith(m.env_var_prefix)), None)

    def names(self) -> list[str]:
        """Every engine name, sorted."""
        return sorted(self._engines)

    def __iter__(self) -> Iterator[EngineManifest]:
        return iter(self._engines[name] for name in self.names())

    def __len__(self) -> int:
        return len(self._engines)


@cache
def _builtin_registry() -> EngineRegistry:
    return EngineRegistry(builtin_engines())
