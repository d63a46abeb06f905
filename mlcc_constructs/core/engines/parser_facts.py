"""The recorded argument parser of an engine release, and the checks of a Tier-2 flag
against it (issue 25).

``mlcc_constructs/data/engine_parsers/<engine>/<version>.json`` holds every flag of the
release's server parser (spelling, aliases, argparse action and off forms, nargs, type,
choices) and the env variables it reads, read from the release's PyPI wheel by
``tools/engine_parser_facts.py`` (each file's ``read_from``). A Tier-2 key is checked against
the release the image runs (``engine.version``, which follows the image's tag:
:mod:`~mlcc_constructs.core.engines.image_version`). An engine that has recorded facts is
refused a release without them (the error lists the recorded ones); for an engine with none
(TensorRT-LLM, LMI, llama.cpp, plugins) the flags are not checked here, and the caller warns.

Where the release's own config classes define them, a flag also records the numeric
``bounds`` of the field it is built from and the ``json`` shape its value must have (issue 39;
``tools/engine_config_facts.py``), each with its ``source``: a value past the bounds, JSON of the
other kind or with a key the config class does not take is refused, as is one
whitespace-joined value for a flag that takes several.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.support.errors import Problem, closest

FACTS_DIR = "engine_parsers"
"""The folder of :func:`parser_facts` files under ``mlcc_constructs/data``."""
BOOLEAN_ACTIONS = ("store_true", "store_false", "store_const", "boolean_optional", "count")
"""Actions that take no value: the flag is given bare (``true``) or as its off form."""
LIST_NARGS = ("+", "*")
"""nargs that take several values (one flag, then each value)."""
NUMBER_TYPES: Mapping[str, type] = MappingProxyType({"int": int, "float": float})
"""The argparse types mlcc checks a value against (every other type is the engine's to parse)."""


BOUND_TEXT: Mapping[str, str] = MappingProxyType({"gt": ">", "ge": ">=", "lt": "<", "le": "<="})
"""The recorded bounds (a flag's ``bounds``), as a reader says them."""


@dataclass(frozen=True, kw_only=True)
class Bounds:
    """The numeric bounds the engine declares on the config class field a flag is built from
    (vLLM's ``CacheConfig.gpu_memory_utilization: Field(gt=0, le=1)``), as recorded."""

    limits: tuple[tuple[str, float], ...]
    """``(("gt", 0), ("le", 1))``: each of ``gt``, ``ge``, ``lt``, ``le`` the field has."""
    source: str
    """The engine file, class and field they were read from."""

    def holds(self, number: float) -> bool:
        """Whether ``number`` is within every bound."""
        tests = {
            "gt": number.__gt__,
            "ge": number.__ge__,
            "lt": number.__lt__,
            "le": number.__le__,
        }
        return all(tests[name](edge) for name, edge in self.limits)

    @property
    def text(self) -> str:
        """``> 0 and <= 1``."""
        return " and ".join(f"{BOUND_TEXT[name]} {edge:g}" for name, edge in self.limits)


@dataclass(frozen=True, kw_only=True)
class JsonShape:
    """The JSON a flag's value must be, where the engine's own code says so (recorded)."""

    kind: str
    """``object`` or ``array``."""
    keys: frozenset[str] | None
    """The only keys an object may have (the config class the engine's parser validates the
    value against forbids others); ``None``: any key."""
    source: str
    """The engine file and class (and field) the shape was read from."""


@dataclass(frozen=True, kw_only=True)
class FlagFact:
    """One flag of a recorded parser."""

    name: str
    """Its first spelling (``--enable-lora``)."""
    action: str
    """``store``, ``append``, ``store_true``, ``boolean_optional`` (takes an off form), ..."""
    off: tuple[str, ...] = ()
    """The spellings that turn a ``boolean_optional`` flag off (``--no-enable-lora``)."""
    nargs: str | int | None = None
    type: str | None = None
    """``int``, ``float``, ``str``, ``json`` or the engine's own parser function's name."""
    choices: tuple[object, ...] | None = None
    bounds: Bounds | None = None
    """The numeric bounds of the engine's config class field behind the flag, if it has any."""
    json: JsonShape | None = None
    """The JSON shape of the flag's value, where the engine defines one."""

    @property
    def takes_value(self) -> bool:
        """Whether the flag takes a value (else it is given bare or as its off form)."""
        return self.action not in BOOLEAN_ACTIONS

    @property
    def takes_list(self) -> bool:
        """Whether the flag takes several values (nargs ``+``/``*`` or ``append``)."""
        return self.nargs in LIST_NARGS or self.action == "append"


@dataclass(frozen=True, kw_only=True)
class ParserFacts:
    """The recorded parser and env registry of one engine release."""

    engine: str
    version: str
    flags: Mapping[str, FlagFact]
    """Every spelling, aliases and off forms included, to the flag it names."""
    env: frozenset[str]

    @property
    def label(self) -> str:
        """``vllm 0.31.0``."""
        return f"{self.engine} {self.version}"

    def suggestions(self, flag: str) -> list[str]:
        """The recorded spellings closest to ``flag`` (did-you-mean), with the off forms of
        the flag they name."""
        close = closest(flag, self.flags, cutoff=0.6)
        out: list[str] = []
        for spelling in close:
            fact = self.flags[spelling]
            for name in (fact.name, *fact.off):
                if name not in out:
                    out.append(name)
        return out


def _bounds(record: Mapping[str, Any] | None) -> Bounds | None:
    if record is None:
        return None
    limits = tuple((name, float(record[name])) for name in BOUND_TEXT if name in record)
    return Bounds(limits=limits, source=str(record["source"]))


def _json(record: Mapping[str, Any] | None) -> JsonShape | None:
    if record is None:
        return None
    keys = record.get("keys")
    return JsonShape(
        kind=str(record["kind"]),
        keys=None if keys is None else frozenset(keys),
        source=str(record["source"]),
    )


def _flag(name: str, record: Mapping[str, Any]) -> FlagFact:
    choices = record.get("choices")
    return FlagFact(
        name=name,
        action=str(record["action"]),
        off=tuple(record.get("off", ())),
        nargs=record.get("nargs"),
        type=record.get("type"),
        choices=None if choices is None else tuple(choices),
        bounds=_bounds(record.get("bounds")),
        json=_json(record.get("json")),
    )


@cache
def parser_facts(engine: str, version: str) -> ParserFacts | None:
    """The recorded facts of ``engine`` ``version`` (``"0.31.0"``), or ``None`` when none are
    recorded."""
    path = data_path(f"{FACTS_DIR}/{engine}/{version}.json")
    if not path.is_file():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    flags: dict[str, FlagFact] = {}
    for name, record in document["flags"].items():
        fact = _flag(name, record)
        for spelling in (name, *record.get("aliases", ()), *fact.off):
            flags[spelling] = fact
    return ParserFacts(
        engine=engine,
        version=version,
        flags=MappingProxyType(flags),
        env=frozenset(document["env"]),
    )


def recorded_versions(engine: str) -> list[str]:
    """The versions of ``engine`` with recorded facts, oldest first."""
    folder = data_path(f"{FACTS_DIR}/{engine}")
    names = [p.stem for p in folder.glob("*.json")] if folder.is_dir() else []
    return sorted(names, key=lambda v: tuple(int(x) for x in v.split(".") if x.isdigit()))


@cache
def spellings(engine: str, flag: str) -> tuple[str, ...]:
    """``flag`` and every long alias of it (``--tp-size``: ``--tensor-parallel-size``) that
    any recorded release of ``engine`` has, ``flag`` first, the others sorted; off forms are
    not spellings of the flag. ``(flag,)`` when no release records it."""
    found: set[str] = set()
    for version in recorded_versions(engine):
        facts = parser_facts(engine, version)
        fact = facts.flags.get(flag) if facts is not None else None
        if facts is None or fact is None or flag in fact.off:
            continue
        found.update(
            spelling
            for spelling, other in facts.flags.items()
            if other.name == fact.name and spelling.startswith("--") and spelling not in fact.off
        )
    return (flag, *sorted(found - {flag}))


def _number(text: str, kind: type) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, kw_only=True)
class FlagCheck:
    """The check of one Tier-2 key ``key`` (flag ``flag``) with ``value`` at ``pointer``."""

    facts: ParserFacts
    key: str
    flag: str
    value: str
    pointer: str

    def _problem(self, message: str, *, allowed: str = "", fix: str = "") -> Problem:
        return Problem(
            message=f"{self.key} → {message}",
            pointer=self.pointer,
            value=self.value,
            allowed=allowed,
            fix=fix,
        )

    def unknown(self) -> Problem:
        """The flag is not one of the release's (with a did-you-mean)."""
        facts, flag = self.facts, self.flag
        close = facts.suggestions(flag)
        env = (
            f"{self.key} is an environment variable {facts.label} reads, but "
            if (self.key in facts.env)
            else ""
        )
        fix = f"did you mean {' / '.join(close)}?" if close else "remove the key"
        if env:
            fix += f" ({env}the manifest's engine_env does not list it)"
        return self._problem(
            f"{flag} is not a flag of {facts.label}",
            fix=fix + f"; the flags are recorded in mlcc_constructs/data/{FACTS_DIR}/"
            f"{facts.engine}/{facts.version}.json",
        )

    def bare(self, fact: FlagFact) -> Problem:
        """``true``/``false`` for a flag that takes a value: it would be passed bare."""
        return self._problem(
            f"{self.flag} of {self.facts.label} takes a value ({fact.type or 'str'}); "
            f"{self.value} would pass the flag bare or not at all",
            fix="give the flag's value"
            + (f", one of {', '.join(str(c) for c in fact.choices)}" if fact.choices else ""),
        )

    def boolean(self, fact: FlagFact, lowered: str) -> Problem | None:
        """A flag that takes no value: only ``true`` or ``false``."""
        if lowered not in ("true", "false"):
            return self._problem(
                f"{self.flag} of {self.facts.label} takes no value ({fact.action}): it is "
                "given bare or left out",
                allowed="true, false",
                fix=f"true or false (true passes {fact.name}"
                + (f", false passes {fact.off[0]})" if fact.off else ", false passes nothing)"),
            )
        return None

    def values(self, fact: FlagFact, values: list[str] | None) -> Problem | None:
        """A flag that takes values: a list where it takes several, each of its type and
        choices. ``values`` are a JSON array's elements (``None``: one value, as written)."""
        if values is not None and not fact.takes_list:
            if fact.json is not None:  # a JSON value: say which kind the flag takes
                shaped = self._shaped(fact.json, strict=fact.type == "json")
                if shaped is not None:
                    return shaped
            return self._problem(
                f"{self.flag} of {self.facts.label} takes one value, not a list",
                fix="give one value",
            )
        items = [self.value] if values is None else values
        if values is None and fact.takes_list and "," in self.value:
            parts = [p.strip() for p in self.value.split(",")]
            return self._problem(
                f"{self.flag} of {self.facts.label} takes several values, and a comma does not "
                "separate them (the engine would get one value)",
                fix="write them as a JSON array, e.g. " + json.dumps(parts),
            )
        if values is None and fact.takes_list and _spaced(self.value):
            return self._problem(
                f"{self.flag} of {self.facts.label} takes several values, and whitespace in "
                "one value does not separate them (the engine would get one value holding a "
                "space)",
                allowed="a JSON array of values",
                fix="write them as a JSON array, e.g. "
                + json.dumps(self.value.split())
                + " (one value that holds a space: a one-element array)",
            )
        kind = NUMBER_TYPES.get(fact.type or "")
        if kind is not None:
            bad = [v for v in items if not _number(v, kind)]
            if bad:
                what = "an integer" if kind is int else "a number"
                return self._problem(
                    f"{self.flag} of {self.facts.label} takes {what}",
                    allowed=fact.type or "",
                    fix=f"give {what}, not {bad[0]!r}",
                )
        if fact.json is not None and values is None:
            problem = self._shaped(fact.json, strict=fact.type == "json")
            if problem is not None:
                return problem
        if fact.bounds is not None:
            problem = self._bounded(fact.bounds, items, integer=fact.type == "int")
            if problem is not None:
                return problem
        if fact.choices is not None:
            allowed = {str(c) for c in fact.choices}
            bad = [v for v in items if v not in allowed]
            if bad:
                return self._problem(
                    f"{bad[0]!r} is not a choice of {self.flag} in {self.facts.label}",
                    allowed=", ".join(str(c) for c in fact.choices),
                    fix="use one of the allowed values",
                )
        return None

    def _bounded(self, bounds: Bounds, items: list[str], *, integer: bool) -> Problem | None:
        """A number past the engine's own bounds; a value that is not a number (``1K``,
        ``auto`` for vLLM's human-readable ints) is the engine's to parse."""
        for item in items:
            try:
                number = float(item)
            except ValueError:
                continue
            if not bounds.holds(number):
                return self._problem(
                    f"{item} is out of the range of {self.flag} in {self.facts.label}",
                    allowed=f"{'an integer' if integer else 'a number'} {bounds.text} "
                    f"({bounds.source})",
                    fix=f"give a value {bounds.text}",
                )
        return None

    def _shaped(self, shape: JsonShape, *, strict: bool) -> Problem | None:
        """A JSON value of the other kind, or an object with a key the engine's config class
        does not take. Text that is not JSON is refused only where the engine reads it with
        ``json.loads`` (``strict``; its ``None`` aside): vLLM's config-class flags take
        human-readable numbers (``1K``) in their JSON."""
        try:
            document = json.loads(self.value)
        except ValueError:
            if not strict or self.value == "None":
                return None
            return self._problem(
                f"{self.flag} of {self.facts.label} takes a JSON {shape.kind}, and this is not "
                "JSON",
                allowed=f"a JSON {shape.kind} ({shape.source})",
                fix="write the value as JSON, e.g. "
                + ('{"key": "value"}' if shape.kind == "object" else json.dumps([self.value])),
            )
        kind = (
            "object"
            if isinstance(document, dict)
            else "array"
            if isinstance(document, list)
            else "scalar"
        )
        if kind != shape.kind:
            return self._problem(
                f"{self.flag} of {self.facts.label} takes a JSON {shape.kind}, not a JSON {kind}",
                allowed=f"a JSON {shape.kind} ({shape.source})",
                fix="write the value as a JSON " + shape.kind,
            )
        if shape.keys is None or not isinstance(document, dict):
            return None
        unknown = sorted(k for k in document if k not in shape.keys)
        if not unknown:
            return None
        close = closest(unknown[0], shape.keys, cutoff=0.6)
        return self._problem(
            f"{unknown[0]!r} is not a key of {self.flag} in {self.facts.label}",
            allowed=", ".join(sorted(shape.keys)) + f" ({shape.source})",
            fix=(f"did you mean {' / '.join(close)}?" if close else "remove the key")
            + f" (unknown: {', '.join(unknown)})",
        )


def _spaced(value: str) -> bool:
    """Whether one value holds whitespace between words (a list flag would get it whole)."""
    return len(value.split()) > 1
