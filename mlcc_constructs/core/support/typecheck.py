"""Runtime type checks of frozen dataclasses (specs and construct props) against their hints.

Python does not enforce annotations: ``DeploymentSpec(lora="no")`` would turn LoRA on and
``replicas="3"`` would fail deep inside a renderer. :func:`check_fields` compares every field
with its annotation when the object is built and reports each mismatch at once, naming the
field (a JSON pointer), the value and the type it needs.

Supported annotations: ``str``, ``int`` (``bool`` is not an ``int`` here), ``float`` (``int``
accepted), ``bool``, ``None``, ``Any``, ``Literal[...]``, unions, ``Mapping[K, V]``,
``Sequence[T]``/``tuple[T, ...]``/``tuple[A, B]``, classes (``isinstance``). A class that
cannot be checked with ``isinstance`` (a jsii interface or protocol) is accepted as is.
"""

# Kept over the libraries (`make bench`, "libraries vs ours", 2026-12-01, 2 cores, CPU time
# library/ours): every `mlcc` command builds a DeploymentSpec, so the import is the cost:
# `mlcc env` 1.5x with typeguard 2.13.3 (the version jsii pins exactly: 4.x cannot be
# installed; it imports unittest.mock and asyncio) and 2.0x with beartype 0.23.1; per spec
# 20 and 14 against 16 us. Neither gives our verdicts: both accept True for an int, typeguard
# 2.13.3 checks no value of a Mapping and beartype checks one item of a container.

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer

_HINTS: dict[tuple[type, str], Any] = {}
_FIELDS: dict[type, tuple[dataclasses.Field[Any], ...]] = {}
"""A dataclass's fields, asked once per class (``dataclasses.fields`` filters them per call)."""


def _hint(cls: type, name: str) -> Any:
    """The resolved annotation of field ``name`` of ``cls``, computed once per field. Fields are
    resolved one by one (not with ``typing.get_type_hints``, which resolves them all), so a
    field left at its default never makes its type's module load."""
    key = (cls, name)
    if key not in _HINTS:
        for klass in cls.__mro__:
            annotations = inspect.get_annotations(klass)
            if name in annotations:
                annotation = annotations[name]
                if isinstance(annotation, str):  # postponed (PEP 563): our own source text
                    annotation = eval(annotation, dict(vars(sys.modules[klass.__module__])))
                _HINTS[key] = annotation
                break
    return _HINTS[key]


_FACTORY_DEFAULTS: dict[dataclasses.Field[Any], Any] = {}


def _is_default(item: dataclasses.Field[Any], value: Any) -> bool:
    """``value`` is the field's own default (trusted: the class declared it). A
    ``default_factory``'s value is made once per field and kept for the comparison only (a
    factory such as ``Endpoint`` builds, and type-checks, a whole dataclass)."""
    if item.default is not dataclasses.MISSING:
        default = item.default
    elif item.default_factory is not dataclasses.MISSING:
        if item not in _FACTORY_DEFAULTS:  # a Field hashes by identity: one entry per field
            _FACTORY_DEFAULTS[item] = item.default_factory()
        default = _FACTORY_DEFAULTS[item]
    else:
        return False
    return type(value) is type(default) and bool(value == default)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if hint is type(None):
        return "None"
    if hint is Any:
        return "anything"
    if origin is typing.Literal:
        return " or ".join(repr(v) for v in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        args = ", ".join(_describe(a) for a in typing.get_args(hint) if a is not Ellipsis)
        return f"{name}[{args}]" if args else name
    return getattr(hint, "__name__", str(hint))


def _matches(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            return False
        key_hint, value_hint = args or (Any, Any)
        return all(_matches(k, key_hint) and _matches(v, value_hint) for k, v in value.items())
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(item, args[0]) for item in value)
        return len(value) == len(args) and all(
            _matches(v, a) for v, a in zip(value, args, strict=True)
        )
    if origin is not None and isinstance(origin, type) and issubclass(origin, Sequence):
        if isinstance(value, str) or not isinstance(value, Sequence):
            return False
        return all(_matches(item, args[0]) for item in value) if args else True
    if isinstance(hint, type):
        try:
            return isinstance(value, hint)
        except TypeError:  # a protocol that is not runtime-checkable: nothing to compare
            return True
    return True


def _our_classes(hint: Any) -> list[type]:
    """The classes of this package ``hint`` names (``Endpoint`` in ``Endpoint | None``)."""
    if isinstance(hint, type):
        return [hint] if hint.__module__.startswith("mlcc_constructs.") else []
    return [c for a in typing.get_args(hint) for c in _our_classes(a)]


def _where_from(hint: Any) -> str:
    """Where the package's classes in ``hint`` are imported from: the package root when it
    exports them (every type a public spec or props field takes: tests/project/test_public_api.py),
    else their module. The root is read from ``sys.modules``, not imported: it is this
    package's parent, always loaded before this module."""
    root = sys.modules.get("mlcc_constructs")
    public = set(getattr(root, "__all__", ()))
    lines = []
    for cls in dict.fromkeys(_our_classes(hint)):
        module = "mlcc_constructs" if cls.__name__ in public else cls.__module__
        lines.append(f"from {module} import {cls.__name__}")
    return f" ({'; '.join(lines)})" if lines else ""


def field_problems(instance: Any, *, where: str = "", pointer: str = "") -> list[Problem]:
    """Every field of dataclass ``instance`` whose value does not match its annotation;
    ``pointer``: the JSON pointer of ``instance`` itself (default ``""``: the document root), so a
    section of a spec names its fields where a file has them (``/compute/nodes``)."""
    problems = []
    cls = type(instance)
    items = _FIELDS.get(cls)
    if items is None:
        items = _FIELDS[cls] = dataclasses.fields(instance)
    for item in items:
        value = getattr(instance, item.name)
        if _is_default(item, value):
            continue
        hint = _hint(cls, item.name)
        if not _matches(value, hint):
            problems.append(
                Problem(
                    message=f"wrong type for {type(instance).__name__}.{item.name}",
                    where=where,
                    pointer=pointer + json_pointer(item.name),
                    value=value,
                    allowed=_describe(hint),
                    fix=f"pass {_describe(hint)}{_where_from(hint)}",
                )
            )
    return problems


def check_fields(instance: Any, *, where: str = "", pointer: str = "") -> None:
    """Raise one :class:`MlccError` listing every field of ``instance`` of the wrong type
    (``pointer``: :func:`field_problems`')."""
    problems = field_problems(instance, where=where, pointer=pointer)
    if problems:
        raise MlccError(problems)
