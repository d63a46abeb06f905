"""JSON Schema's view of Python values, for the subset validator (``schema_check``): its ``type``
names and its equality."""

from __future__ import annotations

from typing import Any


def is_type(instance: Any, name: str) -> bool:
    """Whether ``instance`` is of JSON Schema type ``name`` (a bool is no number; ``1.0`` is an
    integer, as jsonschema's draft 2020-12 checker says)."""
    if name == "object":
        return isinstance(instance, dict)
    if name == "string":
        return isinstance(instance, str)
    if name == "array":
        return isinstance(instance, list)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if isinstance(instance, bool):
        return False
    if name == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return isinstance(instance, int | float)
    raise ValueError(f"unknown JSON Schema type {name!r}")


def json_equal(one: Any, two: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, in nested lists and objects too."""
    if isinstance(one, bool) or isinstance(two, bool):
        return type(one) is type(two) and one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[k], two[k]) for k in one)
    return bool(one == two)


_ATOMS = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A copy of ``value`` for the caller to change: new dicts and lists all the way down, the
    same strings, numbers, booleans and ``None`` (immutable); anything else is
    :func:`copy.deepcopy`'d. A rendered object's copy is ~5x sooner than ``deepcopy``'s (no memo
    of every node), and equal to it; a subtree reached twice is copied twice (no aliases)."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind in _ATOMS:
        return value
    import copy

    return copy.deepcopy(value)
