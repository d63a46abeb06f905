"""Typed reads of one JSON object's keys, each problem named by its RFC 6901 pointer.

The building blocks of :func:`~mlcc_constructs.core.cache.fields.read_crd`: a string from an
enum, a bounded integer, a Kubernetes quantity, a container's resources... A read that fails
records a :class:`~mlcc_constructs.core.support.errors.Problem` (the value, what is allowed, the
fix) and returns ``None``, so one pass reports every problem of a document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from mlcc_constructs.core.support.errors import Problem, closest, json_pointer
from mlcc_constructs.core.support.quantity import parse_quantity

T = TypeVar("T")

_RESOURCE_KINDS = ("requests", "limits")
_RESOURCES_REFUSED = {"claims": "resource claims are not supported"}


class Reader:
    """Reads one object, collecting problems under its JSON pointer."""

    def __init__(
        self, node: Mapping[str, Any], pointer: str, where: str, problems: list[Problem]
    ) -> None:
        self.node, self.pointer, self.where, self.problems = node, pointer, where, problems

    def at(self, *keys: str | int) -> str:
        """The pointer of ``keys`` under this object."""
        return self.pointer + json_pointer(*keys)

    def problem(self, key: str | int | None, message: str, **details: Any) -> None:
        """Record a problem at ``key`` (at this object when ``None``)."""
        pointer = self.pointer if key is None else self.at(key)
        self.problems.append(Problem(message=message, where=self.where, pointer=pointer, **details))

    def check_keys(self, known: Sequence[str], refused: Mapping[str, str] | None = None) -> None:
        """A problem for each key that is refused or unknown."""
        for key in self.node:
            if refused and key in refused:
                self.problem(key, refused[key])
            elif key not in known:
                near = closest(str(key), known)
                self.problem(
                    str(key),
                    "unknown field",
                    allowed=", ".join(known),
                    fix=f"did you mean {near[0]}?" if near else "remove it",
                )

    def missing(self, key: str, what: str) -> None:
        """A required key is missing; ``what`` says what to set."""
        self.problem(key, "required field is missing", fix=f"set {self.at(key)} ({what})")

    def string(
        self,
        key: str,
        *,
        required: str = "",
        enum: Sequence[str] = (),
        refused: Mapping[str, str] | None = None,
    ) -> str | None:
        """A string, one of ``enum`` when given (case-sensitive, with a hint)."""
        value = self.node.get(key)
        if refused and isinstance(value, str) and value in refused:
            self.problem(key, refused[value], value=value, allowed=", ".join(enum))
            return None
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        if not isinstance(value, str):
            self.problem(key, "must be a string", value=value)
            return None
        if enum and value not in enum:
            near = [e for e in enum if e.lower() == value.lower()] or closest(value, enum)
            self.problem(
                key,
                "not an allowed value",
                value=value,
                allowed=", ".join(enum),
                fix=f"values are case-sensitive: use {near[0]}" if near else "",
            )
            return None
        return value

    def integer(
        self,
        key: str,
        *,
        required: str = "",
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        """An integer (not a boolean) within the bounds."""
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(key, "must be an integer", value=value)
            return None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            bounds = f"{minimum if minimum is not None else '…'}..{maximum or '…'}"
            self.problem(key, "out of range", value=value, allowed=bounds)
            return None
        return value

    def boolean(self, key: str) -> bool | None:
        """``true`` or ``false``."""
        if key not in self.node:
            return None
        value = self.node[key]
        if not isinstance(value, bool):
            self.problem(key, "must be true or false", value=value)
            return None
        return value

    def quantity(self, key: str, *, required: str = "") -> str | int | None:
        """A Kubernetes quantity greater than zero, kept as written."""
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        try:
            amount = parse_quantity(value)
        except ValueError:
            self.problem(
                key, "not a Kubernetes quantity", value=value, allowed="e.g. 4Gi, 4096Mi, 4G"
            )
            return None
        if amount <= 0:
            self.problem(key, "must be greater than zero", value=value)
            return None
        return cast("str | int", value)

    def strings(self, key: str, *, expect: str = "") -> tuple[str, ...]:
        """A list of strings; any bad item drops the whole list (each one is named)."""
        value = self.node.get(key, [])
        if not isinstance(value, list):
            self.problem(key, f"must be {expect or 'a list of strings'}", value=value)
            return ()
        good = True
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.problem_at(self.at(key, index), "must be a string", value=item)
                good = False
        return tuple(value) if good else ()

    def problem_at(self, pointer: str, message: str, **details: Any) -> None:
        """Record a problem at a pointer below this object."""
        self.problems.append(Problem(message=message, where=self.where, pointer=pointer, **details))

    def child(self, key: str, *, required: str = "") -> Reader | None:
        """A reader for the object at ``key``, or ``None`` (absent or not an object)."""
        if key not in self.node:
            if required:
                self.missing(key, required)
            return None
        value = self.node[key]
        if not isinstance(value, Mapping):
            self.problem(key, "must be an object", value=value)
            return None
        return Reader(value, self.at(key), self.where, self.problems)

    def string_map(self, key: str) -> dict[str, str] | None:
        """An object of string values (labels); bad values are named and left out."""
        reader = self.child(key)
        if reader is None:
            return None
        out: dict[str, str] = {}
        for name, value in reader.node.items():
            if not isinstance(value, str):
                reader.problem(str(name), "must be a string", value=value)
            else:
                out[str(name)] = value
        return out

    def resources(self, key: str, *, required: str = "") -> dict[str, dict[str, Any]] | None:
        """A container's ``requests``/``limits``, each a map of quantities."""
        reader = self.child(key, required=required)
        if reader is None:
            return None
        reader.check_keys(_RESOURCE_KINDS, _RESOURCES_REFUSED)
        out: dict[str, dict[str, Any]] = {}
        for kind in _RESOURCE_KINDS:
            values = reader.child(kind)
            if values is None:
                continue
            out[kind] = {}
            for name in values.node:
                amount = values.quantity(str(name))
                if amount is not None:
                    out[kind][str(name)] = amount
        return out

    def objects(
        self, key: str, build: Callable[[Reader], T | None], *, expect: str = ""
    ) -> tuple[T, ...]:
        """A list of objects, each read by ``build``; items it cannot build are left out
        (their problems are recorded)."""
        value = self.node.get(key, [])
        if not isinstance(value, list):
            self.problem(key, f"must be {expect or 'a list of objects'}", value=value)
            return ()
        out: list[T] = []
        for index, entry in enumerate(value):
            if not isinstance(entry, Mapping):
                self.problem_at(self.at(key, index), "must be an object", value=entry)
                continue
            built = build(Reader(entry, self.at(key, index), self.where, self.problems))
            if built is not None:
                out.append(built)
        return tuple(out)


__all__ = ("Reader",)
