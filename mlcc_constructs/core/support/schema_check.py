"""A JSON Schema validator for the keyword subset the library's own schemas use, with
jsonschema's messages.

``jsonschema`` costs about 0.1 s to import, more than the whole start-up budget of the pure
``mlcc`` commands, and every command validates a deployment spec. The library's own schemas
(``data/deployment-spec.schema.json``) use a small subset of draft 2020-12; this module
implements exactly that subset and refuses a schema that uses anything else, so it can never
silently skip a rule. ``tests/core/support/test_schema_check.py`` proves it reports what
jsonschema reports, message for message, on generated documents. Plugin manifests and
arbitrary schemas still go through jsonschema itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlcc_constructs.core.support.json_types import is_type, json_equal

ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "default", "examples"})
"""Keywords that carry no rule."""


@dataclass(frozen=True)
class SchemaError:
    """One violation: where (path of keys and indexes), what (jsonschema's message), which
    keyword."""

    path: tuple[str | int, ...]
    message: str
    validator: str


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _number(instance: Any) -> bool:
    return is_type(instance, "number")


def iter_errors(
    instance: Any, schema: Mapping[str, Any], path: tuple[str | int, ...] = ()
) -> Iterator[SchemaError]:
    """Every violation of ``schema`` by ``instance``, keywords in the schema's order (as
    jsonschema iterates them). Raises ``ValueError`` for a keyword outside the subset."""
    for keyword, value in schema.items():
        if keyword in ANNOTATIONS:
            continue
        check = _KEYWORDS.get(keyword)
        if check is None:
            raise ValueError(f"JSON Schema keyword {keyword!r} is outside the supported subset")
        for message in check(value, instance, schema):
            yield SchemaError(path, message, keyword)
        if keyword == "properties" and isinstance(instance, dict):
            for name, subschema in value.items():
                if name in instance:
                    yield from iter_errors(instance[name], subschema, (*path, name))
        elif keyword == "additionalProperties" and isinstance(value, Mapping):
            if isinstance(instance, dict):
                for name in _extras(instance, schema):
                    yield from iter_errors(instance[name], value, (*path, name))
        elif keyword == "items" and isinstance(instance, list):
            for index, item in enumerate(instance):
                yield from iter_errors(item, value, (*path, index))


def _extras(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    known = schema.get("properties", {})
    return [name for name in instance if name not in known]


def _type(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    types = [value] if isinstance(value, str) else list(value)
    if not any(is_type(instance, t) for t in types):
        yield f"{instance!r} is not of type {', '.join(repr(t) for t in types)}"


def _enum(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if all(not json_equal(each, instance) for each in value):
        yield f"{instance!r} is not one of {value!r}"


def _min_length(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(instance, str) and len(instance) < value:
        yield f"{instance!r} {'should be non-empty' if value == 1 else 'is too short'}"


def _minimum(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if _number(instance) and instance < value:
        yield f"{instance!r} is less than the minimum of {value!r}"


def _maximum(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if _number(instance) and instance > value:
        yield f"{instance!r} is greater than the maximum of {value!r}"


def _exclusive_minimum(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if _number(instance) and instance <= value:
        yield f"{instance!r} is less than or equal to the minimum of {value!r}"


def _pattern(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(instance, str) and not _regex(value).search(instance):
        yield f"{instance!r} does not match {value!r}"


def _required(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(instance, dict):
        for name in value:
            if name not in instance:
                yield f"{name!r} is a required property"


def _additional(value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[str]:
    if value is False and isinstance(instance, dict):
        extras = sorted(_extras(instance, schema), key=str)
        if extras:
            verb = "was" if len(extras) == 1 else "were"
            listed = ", ".join(repr(extra) for extra in extras)
            yield f"Additional properties are not allowed ({listed} {verb} unexpected)"


def _nothing(value: Any, instance: Any, _: Mapping[str, Any]) -> Iterator[str]:
    return iter(())  # descends: see iter_errors


_KEYWORDS = {
    "type": _type,
    "enum": _enum,
    "minLength": _min_length,
    "minimum": _minimum,
    "maximum": _maximum,
    "exclusiveMinimum": _exclusive_minimum,
    "pattern": _pattern,
    "required": _required,
    "additionalProperties": _additional,
    "properties": _nothing,
    "items": _nothing,
}
