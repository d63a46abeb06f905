"""The model loader's extra config (vLLM's ``--model-loader-extra-config``) checked against
the keys and types the engine release's loaders take (issue 39).

The parser takes the flag as one JSON text and hands it to the loader the load format picks;
only that loader reads it, at model load, so a key it does not know or a string where it wants
an integer passes the parser and fails the pod minutes later. The loaders' keys are data:
``mlcc_constructs/data/loader_config/<engine>/<version>.json`` (read from each loader's
``__init__`` in the release's wheel by ``tools/loader_config_facts.py``: its ``read_from``, and
each loader's module and function) names the flag, the load-format flag and its default, and
per loader the load formats it serves and its keys with their JSON type and minimum. A load
format the file does not record (a plugin's loader, one it lists as ``unrecorded``) and a
release without a file go unchecked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.engines.manifests import EngineManifest
from mlcc_constructs.core.support.errors import Problem, closest
from mlcc_constructs.core.wrapper import flag_for

FACTS_DIR = "loader_config"
"""The folder of :func:`loader_config_facts` files under ``mlcc_constructs/data``."""
TYPE_WORDS: Mapping[str, str] = MappingProxyType(
    {"boolean": "a boolean", "integer": "an integer", "string": "a string"}
)
"""How a message names each recorded JSON type."""


@dataclass(frozen=True, kw_only=True)
class KeyFact:
    """One key a loader takes: its JSON type and, for an integer, its least value."""

    name: str
    type: str | None
    """``boolean``, ``integer``, ``string``; ``None``: the loader takes any value."""
    minimum: int | None = None

    @property
    def text(self) -> str:
        """``an integer of at least 1``."""
        words = TYPE_WORDS.get(self.type, "any value") if self.type else "any value"
        return words if self.minimum is None else f"{words} of at least {self.minimum}"

    def fits(self, value: object) -> bool:
        """Whether the JSON ``value`` is of the key's type and range."""
        if self.type == "boolean":
            return isinstance(value, bool)
        if self.type == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                return False
            return self.minimum is None or value >= self.minimum
        if self.type == "string":
            return isinstance(value, str)
        return True  # a type the file names but mlcc does not check


@dataclass(frozen=True, kw_only=True)
class LoaderFact:
    """One loader class: where it is read from and the keys it takes."""

    name: str
    """The loader class (``RunaiModelStreamerLoader``)."""
    module: str
    function: str
    keys: Mapping[str, KeyFact]


@dataclass(frozen=True, kw_only=True)
class LoaderConfigFacts:
    """The loaders of one engine release (module doc)."""

    engine: str
    version: str
    flag: str
    """The extra-config flag (``--model-loader-extra-config``)."""
    load_format_flag: str
    default_load_format: str
    loaders: Mapping[str, LoaderFact]
    """Load format -> the loader that reads the extra config."""

    @property
    def path(self) -> str:
        """The facts file, as messages name it."""
        return f"mlcc_constructs/data/{FACTS_DIR}/{self.engine}/{self.version}.json"


@cache
def loader_config_facts(engine: str, version: str) -> LoaderConfigFacts | None:
    """The recorded loaders of ``engine`` ``version``, or ``None`` when none are recorded."""
    path = data_path(f"{FACTS_DIR}/{engine}/{version}.json")
    if not path.is_file():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    loaders: dict[str, LoaderFact] = {}
    for name, record in document["loaders"].items():
        keys = {
            key: KeyFact(name=key, type=fact["type"], minimum=fact.get("minimum"))
            for key, fact in record["keys"].items()
        }
        loader = LoaderFact(
            name=name,
            module=str(record["module"]),
            function=str(record["function"]),
            keys=MappingProxyType(keys),
        )
        loaders.update((load_format, loader) for load_format in record["load_formats"])
    return LoaderConfigFacts(
        engine=engine,
        version=version,
        flag=str(document["flag"]),
        load_format_flag=str(document["load_format_flag"]),
        default_load_format=str(document["default_load_format"]),
        loaders=MappingProxyType(loaders),
    )


def loader_config_problems(
    manifest: EngineManifest, release: str | None, env: Sequence[tuple[str, str]]
) -> list[Problem]:
    """Why the extra config among the engine's resolved ``env`` (Tier 1 then Tier 2, so the
    library's load format counts) would fail the loader of its load format in ``release``;
    empty when it fits, is not set, or nothing is recorded (module doc)."""
    facts = loader_config_facts(manifest.engine, release) if release else None
    if facts is None:
        return []
    prefix, style = manifest.env_var_prefix, manifest.launch.get("flag_style", "kebab")
    by_flag = {
        flag_for(key[len(prefix) :], style): (key, value)
        for key, value in env
        if key.startswith(prefix)
    }
    given = by_flag.get(facts.flag)
    if given is None:
        return []
    load_format = by_flag.get(facts.load_format_flag, ("", facts.default_load_format))[1]
    loader = facts.loaders.get(load_format)
    if loader is None:
        return []
    return _Check(facts, loader, load_format, *given).problems()


@dataclass(frozen=True)
class _Check:
    facts: LoaderConfigFacts
    loader: LoaderFact
    load_format: str
    key: str
    value: str

    @property
    def whose(self) -> str:
        """``the runai_streamer loader of vllm 0.31.0 (RunaiModelStreamerLoader)``."""
        return (
            f"the {self.load_format} loader of {self.facts.engine} {self.facts.version} "
            f"({self.loader.name})"
        )

    @property
    def allowed(self) -> str:
        keys = self.loader.keys
        return ", ".join(f"{k} ({keys[k].text})" for k in sorted(keys)) or "none"

    @property
    def source(self) -> str:
        return f"{self.facts.path}: {self.loader.module} {self.loader.function}"

    def problem(self, message: str, *, value: object, fix: str) -> Problem:
        return Problem(
            message=f"{self.key} → {message}",
            pointer=f"/engine/env/{self.key}",
            value=value,
            allowed=self.allowed,
            fix=fix,
        )

    def problems(self) -> list[Problem]:
        try:
            config: Any = json.loads(self.value)
        except ValueError:
            config = None
        if not isinstance(config, dict):
            return [
                self.problem(
                    f"{self.facts.flag} takes a JSON object: the keys of {self.whose}",
                    value=self.value,
                    fix='write a JSON object, e.g. {"'
                    + (min(self.loader.keys) if self.loader.keys else "key")
                    + '": ...}, or remove the key',
                )
            ]
        found: list[Problem] = []
        for name, item in config.items():
            fact = self.loader.keys.get(name)
            if fact is None:
                near = closest(name, self.loader.keys)
                found.append(
                    self.problem(
                        f"{name!r} is not a key {self.whose} takes: the engine refuses it when "
                        "it loads the model",
                        value=name,
                        fix=(f"did you mean {', '.join(near)}? " if near else "remove it; ")
                        + f"the keys are recorded in {self.source}",
                    )
                )
            elif not fact.fits(item):
                found.append(
                    self.problem(
                        f"{name} of {self.whose} takes {fact.text}",
                        value=item,
                        fix=_fix(fact, item),
                    )
                )
        return found


def _fix(fact: KeyFact, item: object) -> str:
    """How to write ``item`` as ``fact`` takes it: a quoted number or boolean unquoted."""
    if isinstance(item, str):
        try:
            unquoted = json.loads(item)
        except ValueError:
            unquoted = None
        if unquoted is not None and fact.fits(unquoted):
            return f'write "{fact.name}": {json.dumps(unquoted)} (a JSON {fact.type}, no quotes)'
    return f'give "{fact.name}" {fact.text}'
