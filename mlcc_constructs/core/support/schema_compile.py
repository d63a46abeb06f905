"""JSON schemas compiled into plain Python predicates: is an instance valid, yes or no.

Validation is most of the cost of rendering: jsonschema walks every keyword of every schema
node through generic dispatch, about 3 ms for one eks deployment's objects. Rendered objects are
almost always valid, so the question asked on the hot path is only "valid?". :func:`compile_schema`
turns a schema (references already inlined, possibly cyclic) into nested closures that answer
it several times faster; a caller asks jsonschema for the messages only when the answer is no.

The subset is what the Kubernetes strict schemas and the library's own rules use. A schema with
any other keyword is refused at compile time, so a rule is never skipped silently. Semantics
follow draft 2020-12 as jsonschema implements it (``format`` is an annotation, ``true`` is not
``1``); ``tests/test_schema_compile.py`` checks that the answers agree with jsonschema's on
generated objects.
"""

# Kept over the libraries (`make bench`, "libraries vs ours", 2026-12-01, 2 cores, CPU time
# library/ours, each workload interleaved). jsonschema-rs 0.61.2 answers 10x sooner in process
# (0.005 against 0.053 ms per deployment) and gains a little at scale (`mlcc render -f` of 500
# deployments 0.95x, the dist/ writer 0.91x), so ours is not 1.5x faster; it stays because the
# CLI must not start slower: the extension's import (~10 ms: it loads email, socket, datetime,
# decimal) makes `mlcc validate` 1.24x and `mlcc render` of one deployment 1.07x (and would
# reach `mlcc env --plugin-dir`). fastjsonschema 2.22.3 (drafts 4-7 only) is slower everywhere:
# 2.1x in process, 1.9x (render 500) to 4.7x (render 1: it generates Python code per schema).

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from mlcc_constructs.core.support.json_types import is_type, json_equal

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "$comment",
    }
)
_VALIDATING = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "additionalProperties",
        "required",
        "items",
        "oneOf",
        "anyOf",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "pattern",
        "$ref",
        "allOf",
        "if",
        "then",
        "else",
        "not",
        "propertyNames",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "minItems",
        "maxItems",
    }
)


def _type_check(names: list[str]) -> Check:
    """The ``type`` keyword as one predicate (the common single types without dispatch)."""
    simple = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}
    if all(name in simple for name in names):  # the Kubernetes schemas: X or [X, "null"]
        classes = tuple(simple[name] for name in names)
        return lambda x: isinstance(x, classes)
    return lambda x: any(is_type(x, n) for n in names)


def _all(checks: list[Check]) -> Check:
    """The conjunction of ``checks``, without a generator per call for the usual one or two."""
    if not checks:
        return lambda _: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda x: first(x) and second(x)

    def check(x: Any) -> bool:
        for one in checks:  # noqa: SIM110 (a loop: no generator per call on the hot path)
            if not one(x):
                return False
        return True

    return check


def _unique(x: Any) -> bool:
    """``uniqueItems``: no two items JSON-equal (``true`` is not ``1``)."""
    if not isinstance(x, list):
        return True
    return not any(json_equal(a, b) for i, a in enumerate(x) for b in x[i + 1 :])


def _sizes(schema: Mapping[str, Any]) -> list[Check]:
    """``min``/``maxProperties`` and ``min``/``maxItems``."""
    checks: list[Check] = []
    for keyword, kind, at_least in (
        ("minProperties", dict, True),
        ("maxProperties", dict, False),
        ("minItems", list, True),
        ("maxItems", list, False),
    ):
        if keyword in schema:
            checks.append(_size(kind, int(schema[keyword]), at_least=at_least))
    return checks


def _size(kind: type[dict[Any, Any]] | type[list[Any]], bound: int, *, at_least: bool) -> Check:
    def check(x: Any) -> bool:
        if not isinstance(x, kind):
            return True
        return len(x) >= bound if at_least else len(x) <= bound

    return check


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A predicate telling whether an instance satisfies ``schema`` (local ``$ref`` s such as
    ``#/$defs/name`` resolve against ``schema`` itself)."""
    return _Compiler(schema).compile(schema)


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        # id(schema node) -> its check, so cyclic (recursive) schemas compile once
        self._done: dict[int, list[Check]] = {}

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda _: True
        if schema is False:
            return lambda _: False
        key = id(schema)
        pending = self._done.get(key)
        if pending is not None:  # a cycle: resolved once compilation of the node finishes
            return lambda instance: pending[0](instance)
        cell: list[Check] = [lambda _: True]
        self._done[key] = cell
        cell[0] = self._node(schema)
        return cell[0]

    def _node(self, schema: Mapping[str, Any]) -> Check:
        unknown = [k for k in schema if k not in _VALIDATING and k not in _ANNOTATIONS]
        unknown = [k for k in unknown if not k.startswith("x-")]
        if unknown:
            raise ValueError(f"JSON Schema keywords outside the compiled subset: {unknown}")
        checks: list[Check] = []
        names = self._type_names(schema)
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            checks.append(self._object(schema, typed=names == ["object"]))
            if names != ["object"] and names is not None:
                checks.insert(0, _type_check(names))
        elif "items" in schema:
            checks.append(self._array(schema, typed=names == ["array"]))
            if names != ["array"] and names is not None:
                checks.insert(0, _type_check(names))
        elif names is not None:
            checks.append(_type_check(names))
        if "enum" in schema:
            values = list(schema["enum"])
            checks.append(lambda x: any(json_equal(x, v) for v in values))
        if "const" in schema:
            const = schema["const"]
            checks.append(lambda x: json_equal(x, const))
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        if "allOf" in schema:
            checks += [self.compile(s) for s in schema["allOf"]]
        if "if" in schema:
            condition = self.compile(schema["if"])
            then = self.compile(schema.get("then", True))
            otherwise = self.compile(schema.get("else", True))
            checks.append(lambda x: then(x) if condition(x) else otherwise(x))
        if "not" in schema:
            negated = self.compile(schema["not"])
            checks.append(lambda x: not negated(x))
        if "propertyNames" in schema:
            name_check = self.compile(schema["propertyNames"])
            checks.append(lambda x: not isinstance(x, dict) or all(name_check(k) for k in x))
        if schema.get("uniqueItems"):
            checks.append(_unique)
        checks += _sizes(schema)
        if "oneOf" in schema:
            options = [self.compile(s) for s in schema["oneOf"]]
            checks.append(lambda x: sum(1 for o in options if o(x)) == 1)
        if "anyOf" in schema:
            choices = [self.compile(s) for s in schema["anyOf"]]
            checks.append(lambda x: any(c(x) for c in choices))
        checks += self._scalars(schema)
        return _all(checks)

    def _ref(self, ref: str) -> Check:
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref are compiled, not {ref!r}")
        node: Any = self._root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return self.compile(node)

    def _type_names(self, schema: Mapping[str, Any]) -> list[str] | None:
        if "type" not in schema:
            return None
        value = schema["type"]
        names = [value] if isinstance(value, str) else list(value)
        for name in names:
            is_type(None, name)  # refuses an unknown type name at compile time
        return names

    def _object(self, schema: Mapping[str, Any], *, typed: bool) -> Check:
        """``properties``, ``additionalProperties`` and ``required`` in one pass (and the
        object type, when it is the only type)."""
        properties = {k: self.compile(v) for k, v in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        extra_check = None if extra is False else self.compile(extra)
        required = tuple(schema.get("required", ()))

        def check(x: Any) -> bool:
            if not isinstance(x, dict):
                return not typed
            get = properties.get
            for name, value in x.items():
                known = get(name)
                if known is not None:
                    if not known(value):
                        return False
                elif extra_check is None or not extra_check(value):
                    return False
            for name in required:  # noqa: SIM110 (no generator per call)
                if name not in x:
                    return False
            return True

        return check

    def _array(self, schema: Mapping[str, Any], *, typed: bool) -> Check:
        item = self.compile(schema["items"])

        def check(x: Any) -> bool:
            if not isinstance(x, list):
                return not typed
            for value in x:  # noqa: SIM110 (no generator per call)
                if not item(value):
                    return False
            return True

        return check

    def _scalars(self, schema: Mapping[str, Any]) -> list[Check]:
        checks: list[Check] = []
        number = (int, float)
        if "minLength" in schema:
            low = schema["minLength"]
            checks.append(lambda x: not isinstance(x, str) or len(x) >= low)
        if "maxLength" in schema:
            high = schema["maxLength"]
            checks.append(lambda x: not isinstance(x, str) or len(x) <= high)
        if "minimum" in schema:
            minimum = schema["minimum"]
            checks.append(
                lambda x: isinstance(x, bool) or not isinstance(x, number) or x >= minimum
            )
        if "maximum" in schema:
            maximum = schema["maximum"]
            checks.append(
                lambda x: isinstance(x, bool) or not isinstance(x, number) or x <= maximum
            )
        if "exclusiveMinimum" in schema:
            bound = schema["exclusiveMinimum"]
            checks.append(lambda x: isinstance(x, bool) or not isinstance(x, number) or x > bound)
        if "pattern" in schema:
            search = re.compile(schema["pattern"]).search
            checks.append(lambda x: not isinstance(x, str) or search(x) is not None)
        return checks
