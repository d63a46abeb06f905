"""CacheBackend runtime adapters, loaded from ``data/cache_adapters.json``.

An adapter is data: the engine arguments and env it contributes (its canonical wire), the
reserved subset that overrides may not touch, the integration roles it supports and an
optional client config file. :mod:`mlcc_constructs.core.cache` applies one engine of rules
to whichever adapter a spec selects; nothing here or there branches on a runtime name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlcc_constructs.core._resources import data_path

_PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``{name}`` in ``template``; an unknown name is a bug in the data file."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise KeyError(f"cache_adapters.json: unknown placeholder {{{name}}} in {template!r}")
        return values[name]

    return _PLACEHOLDER.sub(one, template)


def _substitute_tree(node: Any, values: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return substitute(node, values)
    if isinstance(node, Mapping):
        return {key: _substitute_tree(value, values) for key, value in node.items()}
    if isinstance(node, list):
        return [_substitute_tree(item, values) for item in node]
    return node


@dataclass(frozen=True, kw_only=True)
class AdapterArg:
    """One argument group the adapter contributes: a flag, optionally with one value.

    ``json`` values are rendered compactly with keys in the declared order, which is the
    exact wire the seed shows for vLLM's ``--kv-transfer-config``.
    """

    flag: str
    value: str | None = None
    json: Mapping[str, Any] | None = None

    def render(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """The group's tokens, e.g. ``("--lmcache-config-file", "/var/run/.../client.yaml")``."""
        if self.json is not None:
            rendered = _substitute_tree(self.json, values)
            return (self.flag, json.dumps(rendered, separators=(",", ":"), ensure_ascii=False))
        if self.value is not None:
            return (self.flag, substitute(self.value, values))
        return (self.flag,)


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """A config file the engine reads; mlcc ships it in a ConfigMap mounted read-only."""

    volume: str
    mount_path: str
    file: str
    content: str

    @property
    def path(self) -> str:
        """Absolute path of the file inside the engine container."""
        return f"{self.mount_path.rstrip('/')}/{self.file}"


@dataclass(frozen=True, kw_only=True)
class RuntimeAdapter:
    """One (runtime, cache type) pair's engine wire and reserved sets."""

    name: str
    runtime: str
    type: str
    summary: str
    roles: Mapping[str, str]
    """Integration role → the value of the ``{kv_role}`` placeholder; absent roles are refused."""
    args: tuple[AdapterArg, ...]
    env: tuple[tuple[str, str], ...]
    """``(name, value template)`` pairs, in injection order."""
    reserved_args: tuple[str, ...]
    reserved_env: tuple[str, ...]
    client_config: ClientConfig | None = None

    @property
    def label(self) -> str:
        """``vllm-lmcache-mp (VLLM + LMCache)``: how errors name the adapter."""
        return f"{self.name} ({self.runtime} + {self.type})"

    def render_args(self, values: Mapping[str, str]) -> list[tuple[str, ...]]:
        """The canonical argument groups, placeholders filled."""
        return [arg.render(values) for arg in self.args]

    def render_env(self, values: Mapping[str, str]) -> list[tuple[str, str]]:
        """The canonical ``(name, value)`` env pairs, placeholders filled."""
        return [(name, substitute(value, values)) for name, value in self.env]


@dataclass(frozen=True, kw_only=True)
class MpServer:
    """The engine-neutral LMCache MP server rendered as the ``lmcache-mp-server`` sidecar."""

    container: str
    managed_env: tuple[str, str]
    command: tuple[str, ...]
    args: tuple[str, ...]
    l2_adapter_flag: str
    resp_auth_env: Mapping[str, str]
    env: tuple[tuple[str, str], ...]
    port_name: str
    http_port: int
    http_port_name: str
    health_path: str
    probes: Mapping[str, Mapping[str, int]]
    shm_volume: str
    shm_mount_path: str
    shm_headroom: str
    default_chunk_size_tokens: int


def _adapter(raw: Mapping[str, Any]) -> RuntimeAdapter:
    client = raw.get("client_config")
    adapter = RuntimeAdapter(
        name=raw["name"],
        runtime=raw["runtime"],
        type=raw["type"],
        summary=raw["summary"],
        roles=dict(raw["roles"]),
        args=tuple(
            AdapterArg(flag=a["flag"], value=a.get("value"), json=a.get("json"))
            for a in raw["args"]
        ),
        env=tuple((e["name"], e["value"]) for e in raw["env"]),
        reserved_args=tuple(raw["reserved"]["args"]),
        reserved_env=tuple(raw["reserved"]["env"]),
        client_config=ClientConfig(**client) if client else None,
    )
    # A reserved token the adapter never contributes would reject overrides for nothing and
    # hide a typo in the data file.
    contributed_args = {arg.flag for arg in adapter.args}
    contributed_env = {name for name, _ in adapter.env}
    stray = [t for t in adapter.reserved_args if t not in contributed_args] + [
        n for n in adapter.reserved_env if n not in contributed_env
    ]
    if stray:
        raise ValueError(f"cache_adapters.json: {adapter.name} reserves {stray} it never injects")
    return adapter


@cache
@cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        data_path("cache_adapters.json").read_text(encoding="utf-8")
    )
    return document


def cache_types() -> tuple[str, ...]:
    """The CacheBackend ``type`` values the CRD defines (``LMCache``...)."""
    return tuple(_document()["types"])


def _load() -> tuple[tuple[RuntimeAdapter, ...], MpServer]:
    raw = _document()
    server = raw["mp_server"]
    mp = MpServer(
        container=server["container"],
        managed_env=(server["managed_env"]["name"], server["managed_env"]["value"]),
        command=tuple(server["command"]),
        args=tuple(server["args"]),
        l2_adapter_flag=server["l2_adapter_flag"],
        resp_auth_env=dict(server["resp_auth_env"]),
        env=tuple((e["name"], e["value"]) for e in server["env"]),
        port_name=server["port_name"],
        http_port=int(server["http_port"]),
        http_port_name=server["http_port_name"],
        health_path=server["health_path"],
        probes={name: dict(probe) for name, probe in server["probes"].items()},
        shm_volume=server["shm"]["volume"],
        shm_mount_path=server["shm"]["mount_path"],
        shm_headroom=server["shm"]["headroom"],
        default_chunk_size_tokens=int(server["default_chunk_size_tokens"]),
    )
    return tuple(_adapter(a) for a in raw["adapters"]), mp


def adapters() -> tuple[RuntimeAdapter, ...]:
    """Every built-in adapter, in the data file's order."""
    return _load()[0]


def mp_server() -> MpServer:
    """The LMCache MP server description."""
    return _load()[1]


def adapter_for(runtime: str, cache_type: str) -> RuntimeAdapter | None:
    """The adapter for ``(runtime, cache_type)``; ``None`` when no adapter supports the pair."""
    for adapter in adapters():
        if adapter.runtime == runtime and adapter.type == cache_type:
            return adapter
    return None


def runtimes() -> tuple[str, ...]:
    """Runtime names the adapters cover, in first-seen order (``VLLM``, ``SGLang``)."""
    return tuple(dict.fromkeys(a.runtime for a in adapters()))


def supported_pairs() -> str:
    """``VLLM + LMCache, SGLang + LMCache``: for 'allowed' texts."""
    return ", ".join(f"{a.runtime} + {a.type}" for a in adapters())


def reserved_table(runtime: str | None = None) -> list[dict[str, Any]]:
    """Reserved args and env per adapter (``mlcc cache reserved``)."""
    selected: Sequence[RuntimeAdapter] = [
        a for a in adapters() if runtime is None or a.runtime == runtime
    ]
    return [
        {
            "adapter": a.name,
            "runtime": a.runtime,
            "type": a.type,
            "reserved_args": list(a.reserved_args),
            "reserved_env": list(a.reserved_env),
        }
        for a in selected
    ]
