"""A CRD's CEL validation rules (``x-kubernetes-validations``) evaluated on objects, with PyPI
``cel-python`` (the CEL interpreter of Cloud Custodian, pinned in requirements.lock).

:func:`crd_rules` collects every rule of every served version with where it sits in the schema;
:func:`evaluate` binds ``self`` to each value of an object at that place and runs the rule, as
the API server does on create. What cel-python does not bring is Kubernetes' own CEL libraries:
the ones the pinned CRDs' rules call are supplied here (:data:`KUBERNETES_FUNCTIONS`, over the
project's exact quantity parser); a rule that calls anything else, or that the interpreter
cannot compile, is *unevaluable* and reported as such, never counted as passed. Transition rules
(``oldSelf``) do not run on create and are reported so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import celpy
import celpy.celtypes as cel
import celpy.evaluation

from mlcc_constructs.core.support.quantity import parse_quantity


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry: the CRD version, the schema path it sits at
    (property names; ``[]`` for list items, ``{}`` for map values), and the entry."""

    version: str
    path: tuple[str, ...]
    rule: str
    message: str

    @property
    def where(self) -> str:
        return "/" + "/".join(self.path)

    @property
    def transition(self) -> bool:
        return "oldSelf" in self.rule


@dataclass(frozen=True)
class Outcome:
    """A rule on one value: ``passed``, ``failed`` (the rule's message), or ``unevaluable``
    (why), at the value's JSON pointer."""

    rule: Rule
    pointer: str
    verdict: str
    detail: str = ""


class _Quantity:
    """Kubernetes CEL's Quantity (k8s.io/apiserver pkg/cel/library quantity.go), exact."""

    def __init__(self, text: Any) -> None:
        self.value = parse_quantity(str(text))


def _compare(a: _Quantity, b: _Quantity) -> int:
    return (a.value > b.value) - (a.value < b.value)


KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _Quantity,
    "isGreaterThan": lambda a, b: cel.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: cel.BoolType(_compare(a, b) < 0),
    "compareTo": lambda a, b: cel.IntType(_compare(a, b)),
    "sign": lambda a: cel.IntType((a.value > 0) - (a.value < 0)),
    "isInteger": lambda a: cel.BoolType(a.value.denominator == 1),
    "asInteger": lambda a: cel.IntType(int(a.value)),
    "asApproximateFloat": lambda a: cel.DoubleType(float(Fraction(a.value))),
}
"""The Kubernetes CEL library functions the pinned CRDs' rules call (quantity library)."""


def crd_rules(crd: Mapping[str, Any]) -> list[Rule]:
    """Every CEL rule of every served version of ``crd``."""
    rules: list[Rule] = []
    for version in crd["spec"]["versions"]:
        if version.get("served", True):
            schema = version["schema"]["openAPIV3Schema"]
            rules += [
                Rule(version["name"], path, str(entry["rule"]), str(entry.get("message", "")))
                for path, entry in _validations(schema, ())
            ]
    return rules


def _validations(schema: Mapping[str, Any], path: tuple[str, ...]) -> Iterator[tuple[Any, Any]]:
    for entry in schema.get("x-kubernetes-validations", ()):
        yield path, entry
    for name, child in (schema.get("properties") or {}).items():
        yield from _validations(child, (*path, name))
    if isinstance(schema.get("items"), Mapping):
        yield from _validations(schema["items"], (*path, "[]"))
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _validations(schema["additionalProperties"], (*path, "{}"))


def values_at(obj: Any, path: tuple[str, ...], pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Each value of ``obj`` at schema ``path`` (absent fields: none), with its JSON pointer."""
    if not path:
        yield pointer or "/", obj
        return
    step, rest = path[0], path[1:]
    if step == "[]" and isinstance(obj, list):
        for index, item in enumerate(obj):
            yield from values_at(item, rest, f"{pointer}/{index}")
    elif step == "{}" and isinstance(obj, Mapping):
        for key, item in obj.items():
            yield from values_at(item, rest, f"{pointer}/{key}")
    elif isinstance(obj, Mapping) and step in obj:
        yield from values_at(obj[step], rest, f"{pointer}/{step}")


_ENV = celpy.Environment()
# CEL's macros, and the functions cel-python has built in (its standard definitions).
_MACROS = {"has", "all", "exists", "exists_one", "map", "filter"}
_AVAILABLE = _MACROS | set(celpy.evaluation.base_functions) | set(KUBERNETES_FUNCTIONS)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def missing_functions(rule: str) -> list[str]:
    """The functions ``rule`` calls that neither cel-python nor :data:`KUBERNETES_FUNCTIONS`
    has (found before evaluating: an undeclared function inside ``||`` or ``&&`` surfaces as
    a "no matching overload" error, which would read as the rule failing)."""
    return sorted({name for name in _CALL.findall(_STRING.sub("''", rule))} - _AVAILABLE)


def evaluate(rule: Rule, obj: Mapping[str, Any]) -> list[Outcome]:
    """``rule`` on every value of ``obj`` it applies to, as on create."""
    places = list(values_at(obj, rule.path))
    if rule.transition:
        return [Outcome(rule, p, "unevaluable", "a transition rule (oldSelf): not run on create")
                for p, _ in places]  # fmt: skip
    missing = missing_functions(rule.rule)
    if missing:
        reason = f"calls {', '.join(missing)}, which cel-python does not have"
        return [Outcome(rule, p, "unevaluable", reason) for p, _ in places]
    try:
        program = _ENV.program(_ENV.compile(rule.rule), functions=KUBERNETES_FUNCTIONS)
    except celpy.CELParseError as error:
        return [Outcome(rule, "", "unevaluable", f"cel-python cannot parse it: {error}")]
    outcomes = []
    for pointer, value in places:
        try:
            result = program.evaluate({"self": celpy.json_to_cel(value)})
        except celpy.CELEvalError as error:
            result = error
        if isinstance(result, celpy.CELEvalError):
            reason = str(result.args[0]).split(" (in activation")[0]
            if "undeclared reference" in reason:
                outcomes.append(Outcome(rule, pointer, "unevaluable", reason))
            else:  # the API server refuses an object whose rule errors
                outcomes.append(Outcome(rule, pointer, "failed", f"{rule.message} ({reason})"))
        elif result == cel.BoolType(True):
            outcomes.append(Outcome(rule, pointer, "passed"))
        else:
            outcomes.append(Outcome(rule, pointer, "failed", rule.message))
    return outcomes
