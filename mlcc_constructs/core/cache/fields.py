"""One generic mapping between frozen dataclasses and a CRD's camelCase objects.

Each dataclass field says, in ``dataclasses.field(metadata=crd(...))``, what the mapping
cannot guess: its CRD path when that is not the camelCase of the field name
(``model_id`` → ``modelID``, ``password`` → ``authentication.password``), and the checks
parsing applies (required with what to set, enum, refused values, bounds, quantity...). The
field's type says how to read it: ``str``, ``int``, ``bool``, a nested dataclass, a tuple of
strings or of dataclasses, a ``Mapping[str, str]`` (labels) or ``Mapping[str, Any]`` (an
object kept as is). A class-level :class:`CrdObject` holds what belongs to the object rather
than a field: keys mlcc refuses, the order of keys in "allowed" texts, required groups.

- :func:`to_crd` writes an object: field order is key order; ``None`` and empty tuples are
  omitted; a group (``authentication``) is written only when its required members are set.
- :func:`read_crd` reads one, naming every problem by its RFC 6901 pointer. An object is
  built when every required, non-optional field was read; a field that failed takes its
  default, so later rules still see the rest of the object.
- :func:`rule_problems` applies the value rules fields declare for admission time (a digest
  pin), which must also hold for objects built in Python rather than parsed.
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

from mlcc_constructs.core.cache.reader import Reader
from mlcc_constructs.core.support.errors import Problem, json_pointer

T = TypeVar("T")

_METADATA_KEY = "mlcc.crd"


@dataclass(frozen=True, kw_only=True)
class PatternRule:
    """A value rule checked at admission (the value, stripped, must match ``pattern``)."""

    pattern: re.Pattern[str]
    message: str
    allowed: str
    fix: str

    def accepts(self, value: object) -> bool:
        """Whether ``value`` passes."""
        return isinstance(value, str) and self.pattern.match(value.strip()) is not None


@dataclass(frozen=True, kw_only=True)
class Crd:
    """How one field maps to its CRD key and what parsing checks (see :func:`crd`)."""

    path: str = ""
    required: str | Callable[[], str] = ""
    enum: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    refused: Mapping[str, str] = dataclasses.field(default_factory=dict)
    minimum: int | None = None
    maximum: int | None = None
    quantity: bool = False
    resources: bool = False
    expect: str = ""
    excludes: str = ""
    empty_in_parent: bool = False
    rules: tuple[PatternRule, ...] = ()

    def allowed_values(self) -> tuple[str, ...]:
        """The enum (a callable enum is read each time: it may come from a data file)."""
        return self.enum() if callable(self.enum) else self.enum

    def required_text(self) -> str:
        """What to set when the key is missing (a callable is read each time, like the enum)."""
        return self.required() if callable(self.required) else self.required


def crd(
    *,
    path: str = "",
    required: str | Callable[[], str] = "",
    enum: tuple[str, ...] | Callable[[], tuple[str, ...]] = (),
    refused: Mapping[str, str] | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    quantity: bool = False,
    resources: bool = False,
    expect: str = "",
    excludes: str = "",
    empty_in_parent: bool = False,
    rules: tuple[PatternRule, ...] = (),
) -> dict[str, Crd]:
    """Field metadata: ``dataclasses.field(default=None, metadata=crd(...))``.

    :param path: dotted CRD path inside the object. Default: camelCase of the field name.
    :param required: what to set when the key is missing; empty means optional. A required
        field of a non-optional type must be read for the object to be built.
    :param enum: the allowed values (or a function returning them).
    :param refused: values the CRD allows but mlcc refuses → the message saying why.
    :param minimum: smallest integer allowed. Default: none.
    :param maximum: largest integer allowed. Default: none.
    :param quantity: the value is a positive Kubernetes quantity (string or integer).
    :param resources: the value is a container's ``requests``/``limits`` of quantities.
    :param expect: what a list must be, for its error ("a list of {name, value} entries").
    :param excludes: another field's name: both set (this one non-empty) is a problem.
    :param empty_in_parent: read as empty, not unset, when the enclosing object is present.
    :param rules: value rules checked at admission by :func:`rule_problems`.
    """
    return {
        _METADATA_KEY: Crd(
            path=path,
            required=required,
            enum=enum,
            refused=dict(refused or {}),
            minimum=minimum,
            maximum=maximum,
            quantity=quantity,
            resources=resources,
            expect=expect,
            excludes=excludes,
            empty_in_parent=empty_in_parent,
            rules=rules,
        )
    }


@dataclass(frozen=True, kw_only=True)
class CrdObject:
    """What a class declares about its CRD object as a whole.

    :param refused_keys: keys the CRD has but mlcc refuses → the message saying why.
    :param key_order: group path (``""`` for the object) → its keys in the order "allowed"
        texts list them and parsing reads them, when that is not the field order.
    :param required_groups: group path → what to set when that intermediate object is missing.
    """

    refused_keys: Mapping[str, str] = dataclasses.field(default_factory=dict)
    key_order: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    required_groups: Mapping[str, str] = dataclasses.field(default_factory=dict)


class CrdModel:
    """Base of the CRD dataclasses: ``to_dict`` through :func:`to_crd`."""

    CRD: ClassVar[CrdObject] = CrdObject()

    def to_dict(self) -> dict[str, Any]:
        """The CRD shape: camelCase keys in field order, unset fields and empty lists omitted."""
        return to_crd(self)


# --------------------------------------------------------------------------- the field table


@dataclass(frozen=True, kw_only=True)
class _Leaf:
    name: str
    path: tuple[str, ...]
    crd: Crd
    kind: str
    item: type | None
    optional: bool
    has_default: bool


@dataclass(kw_only=True)
class _Group:
    path: tuple[str, ...]
    required: str = ""
    entries: dict[str, _Leaf | _Group] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class _Table:
    root: _Group
    leaves: tuple[_Leaf, ...]
    groups: Mapping[tuple[str, ...], _Group]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _kind(hint: Any, meta: Crd, where: str) -> tuple[str, type | None, bool]:
    """``(kind, item dataclass, optional)`` from a field's type."""
    args = get_args(hint)
    optional = get_origin(hint) in (Union, types.UnionType) and type(None) in args
    if meta.quantity:
        return "quantity", None, optional
    if meta.resources:
        return "resources", None, optional
    kept = [a for a in args if a is not type(None)]
    if optional and len(kept) == 1:
        hint = kept[0]
    origin, args = get_origin(hint), get_args(hint)
    if hint in (bool, int, str):
        return {bool: "boolean", int: "integer", str: "string"}[hint], None, optional
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return "object", hint, optional
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if args[0] is str:
            return "strings", None, optional
        if dataclasses.is_dataclass(args[0]) and isinstance(args[0], type):
            return "objects", args[0], optional
    if origin is Mapping and args and args[0] is str:
        return ("labels" if args[1] is str else "raw"), None, optional
    raise TypeError(f"{where}: no CRD mapping for type {hint!r}")


_TABLES: dict[type, _Table] = {}


def _table(cls: type) -> _Table:
    """The field table of ``cls``, built once per class."""
    found = _TABLES.get(cls)
    if found is None:
        found = _TABLES[cls] = _build_table(cls)
    return found


def _build_table(cls: type) -> _Table:
    hints = get_type_hints(cls)
    shape: CrdObject = getattr(cls, "CRD", CrdObject())
    root = _Group(path=())
    groups: dict[tuple[str, ...], _Group] = {(): root}
    leaves: list[_Leaf] = []
    for field in dataclasses.fields(cls):
        meta = field.metadata.get(_METADATA_KEY, Crd())
        path = tuple((meta.path or _camel(field.name)).split("."))
        kind, item, optional = _kind(hints[field.name], meta, f"{cls.__name__}.{field.name}")
        has_default = (
            field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        )
        leaf = _Leaf(
            name=field.name,
            path=path,
            crd=meta,
            kind=kind,
            item=item,
            optional=optional,
            has_default=has_default,
        )
        leaves.append(leaf)
        group = root
        for depth in range(1, len(path)):
            prefix = path[:depth]
            if prefix not in groups:
                required = shape.required_groups.get(".".join(prefix), "")
                groups[prefix] = _Group(path=prefix, required=required)
                group.entries[prefix[-1]] = groups[prefix]
            group = groups[prefix]
        group.entries[path[-1]] = leaf
    for dotted, order in shape.key_order.items():
        group = groups[tuple(dotted.split(".")) if dotted else ()]
        if sorted(order) != sorted(group.entries):
            raise TypeError(
                f"{cls.__name__}: key_order[{dotted!r}] must list {list(group.entries)}"
            )
        group.entries = {key: group.entries[key] for key in order}
    return _Table(root=root, leaves=tuple(leaves), groups=groups)


def crd_paths(cls: type) -> list[tuple[str, ...]]:
    """Every CRD path ``cls`` declares, in field order, nested dataclasses' under their own."""
    out: list[tuple[str, ...]] = []
    for leaf in _table(cls).leaves:
        out.append(leaf.path)
        if leaf.item is not None:
            out += [(*leaf.path, *inner) for inner in crd_paths(leaf.item)]
    return out


# --------------------------------------------------------------------------- writing


def _plain(value: Any) -> Any:
    """JSON-ready copy: dataclasses through :func:`to_crd`, mappings and tuples copied."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_crd(value)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def to_crd(obj: object) -> dict[str, Any]:
    """``obj`` (a dataclass of this module's kind) as its CRD object."""
    table = _table(type(obj))
    # An intermediate object is written only with its required members (the CRD requires
    # them: ``authentication`` without ``password`` is not an object to emit).
    incomplete = {
        path
        for path, group in table.groups.items()
        if path
        and any(
            isinstance(entry, _Leaf) and entry.crd.required and getattr(obj, entry.name) is None
            for entry in group.entries.values()
        )
    }
    out: dict[str, Any] = {}
    for leaf in table.leaves:
        value = getattr(obj, leaf.name)
        if value is None or (isinstance(value, tuple) and not value):
            continue
        if any(leaf.path[:depth] in incomplete for depth in range(1, len(leaf.path))):
            continue
        node = out
        for key in leaf.path[:-1]:
            node = node.setdefault(key, {})
        node[leaf.path[-1]] = _plain(value)
    return out


# --------------------------------------------------------------------------- reading


def _read_leaf(leaf: _Leaf, reader: Reader) -> Any:
    key, meta = leaf.path[-1], leaf.crd
    if leaf.kind == "string":
        return reader.string(
            key, required=meta.required_text(), enum=meta.allowed_values(), refused=meta.refused
        )
    if leaf.kind == "integer":
        return reader.integer(
            key, required=meta.required_text(), minimum=meta.minimum, maximum=meta.maximum
        )
    if leaf.kind == "boolean":
        return reader.boolean(key)
    if leaf.kind == "quantity":
        return reader.quantity(key, required=meta.required_text())
    if leaf.kind == "resources":
        return reader.resources(key, required=meta.required_text())
    if leaf.kind == "strings":
        return reader.strings(key, expect=meta.expect)
    if leaf.kind == "labels":
        return reader.string_map(key)
    if leaf.kind == "raw":
        raw = reader.child(key, required=meta.required_text())
        return dict(raw.node) if raw is not None else None
    assert leaf.item is not None
    if leaf.kind == "objects":
        item = leaf.item
        return reader.objects(key, lambda entry: _read(item, entry), expect=meta.expect)
    child = reader.child(key, required=meta.required_text())
    return _read(leaf.item, child) if child is not None else None


def _read_group(
    group: _Group,
    reader: Reader,
    values: dict[str, Any],
    refused: Mapping[str, str] | None,
    table: _Table,
) -> None:
    reader.check_keys(tuple(group.entries), refused)
    for key, entry in group.entries.items():
        if isinstance(entry, _Group):
            child = reader.child(key, required=entry.required)
            if child is not None:
                _read_group(entry, child, values, None, table)
            continue
        value = _read_leaf(entry, reader)
        if entry.crd.empty_in_parent and not value:
            value = {}
        if entry.crd.excludes and value is not None:
            other = next(leaf for leaf in table.leaves if leaf.name == entry.crd.excludes)
            if values.get(other.name):
                reader.problem(key, f"cannot be used together with a non-empty {other.path[-1]}")
        values[entry.name] = value


def _read(cls: type[T], reader: Reader) -> T | None:
    table = _table(cls)
    values: dict[str, Any] = {}
    _read_group(table.root, reader, values, getattr(cls, "CRD", CrdObject()).refused_keys, table)
    kwargs: dict[str, Any] = {}
    for leaf in table.leaves:
        value = values.get(leaf.name)
        if value is not None:
            kwargs[leaf.name] = value
        elif (leaf.crd.required and not leaf.optional) or not leaf.has_default:
            return None  # the object cannot be built; its problems are recorded
    return cls(**kwargs)


def read_crd(
    cls: type[T], data: object, *, pointer: str, where: str, problems: list[Problem]
) -> T | None:
    """``data`` read as ``cls``, or ``None`` when it cannot be built; problems are appended."""
    if not isinstance(data, Mapping):
        problems.append(
            Problem(message="must be an object", where=where, pointer=pointer, value=data)
        )
        return None
    return _read(cls, Reader(data, pointer, where, problems))


def rule_problems(obj: object, *, pointer: str, where: str) -> list[Problem]:
    """Problems of the admission-time value rules ``obj``'s fields declare."""
    problems: list[Problem] = []
    for leaf in _table(type(obj)).leaves:
        value = getattr(obj, leaf.name)
        for rule in leaf.crd.rules:
            if value is not None and not rule.accepts(value):
                problems.append(
                    Problem(
                        message=rule.message,
                        where=where,
                        pointer=pointer + json_pointer(*leaf.path),
                        value=value,
                        allowed=rule.allowed,
                        fix=rule.fix,
                    )
                )
    return problems


__all__ = (
    "Crd",
    "CrdModel",
    "CrdObject",
    "PatternRule",
    "crd",
    "crd_paths",
    "read_crd",
    "rule_problems",
    "to_crd",
)
