"""A fast emitter for rendered Kubernetes objects: the bytes PyYAML writes, several times sooner.

PyYAML spends most of a render's YAML time representing every node in Python before its
(C) emitter runs. Rendered objects are plain JSON-like trees, so this module lays out the block
structure itself (mappings, indentless sequences under a key, ``- key: value`` items, ``{}`` and
``[]``) and asks PyYAML only for each distinct scalar once: whether a string is plain, quoted or a
``|`` block is PyYAML's decision, remembered in a :class:`Scalars`. Anything outside that shape
(a float, a non-string key, a long single-line string PyYAML might fold, a sequence directly in a
sequence) raises :class:`Unsupported`, and the caller uses PyYAML for that whole document.
``tests/core/support/test_yaml_emit.py`` checks the bytes against PyYAML on every rendered object
and on generated trees.
"""

# Kept over PyYAML alone with libyaml's emitter (`yaml.CSafeDumper`, what yaml_output falls back
# to) (`make bench`, "libraries vs ours", 2026-12-01, 2 cores, CPU time CSafeDumper/ours, same
# bytes): 14x in process (0.77 against 0.055 ms per deployment); end to end `mlcc render -f` of
# 500 deployments 1.81x and the dist/ writer 1.85x (100: 1.44x and 1.48x; one deployment: 0.97x,
# start-up dominates). PyYAML's Python representer and resolver take most of its time.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MAX_KEY = 120
"""Longer keys go to PyYAML (past 128 characters a key is no longer a simple key)."""
_MAX_SIMPLE = 500
"""Longer single-line strings go to PyYAML (at width 1000 it may fold them at a deeper column)."""


class Unsupported(Exception):
    """The tree has a shape this emitter does not lay out: use PyYAML for it."""


class Scalars:
    """PyYAML's renderings of scalars, asked once per distinct string.

    ``value(text)``: the one-line form of a string value; ``key(text)``: of a string key;
    ``block(text)``: a multi-line value as ``(header, lines)``. Each raises
    :class:`Unsupported` for a form this emitter cannot lay out.
    """

    def __init__(
        self,
        value: Callable[[str], str],
        key: Callable[[str], str],
        block: Callable[[str], tuple[str, tuple[str, ...]]],
    ) -> None:
        self._value, self._key, self._block = value, key, block
        self.values: dict[str, str] = {}
        self.keys: dict[str, str] = {}
        self.blocks: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.laid_out: dict[tuple[str, str], str] = {}  # (text, indentation) -> its lines

    def value(self, text: str) -> str:
        if len(text) > _MAX_SIMPLE:
            raise Unsupported
        rendered = self.values[text] = self._value(text)
        return rendered

    def key(self, key: Any) -> str:
        if type(key) is not str or "\n" in key or len(key) > _MAX_KEY:
            raise Unsupported
        rendered = self.keys[key] = self._key(key)
        return rendered

    def block(self, text: str) -> tuple[str, tuple[str, ...]]:
        found = self.blocks.get(text)
        if found is None:
            found = self.blocks[text] = self._block(text)
        if "+" in found[0]:  # keep chomping may end the document with "...": PyYAML's
            raise Unsupported
        return found


def emit_document(obj: Any, scalars: Scalars) -> str:
    """One document's YAML (a non-empty mapping)."""
    if type(obj) is not dict or not obj:
        raise Unsupported
    out: list[str] = []
    _mapping(obj, "", out, scalars, None)
    return "".join(out)


def _leaf(value: Any, scalars: Scalars) -> str | None:
    """The one-line form of a non-string leaf or an empty collection (``None``: a non-empty
    collection)."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is dict or kind is list:
        return None if value else ("{}" if kind is dict else "[]")
    raise Unsupported  # floats and other types: PyYAML's business


def _block(text: str, pad: str, out: list[str], scalars: Scalars) -> None:
    laid_out = scalars.laid_out.get((text, pad))
    if laid_out is None:
        header, lines = scalars.block(text)
        inner = pad + "  "
        body = "".join(inner + line + "\n" if line else "\n" for line in lines)
        laid_out = scalars.laid_out[(text, pad)] = " " + header + "\n" + body
    out.append(laid_out)


def _mapping(
    obj: dict[Any, Any], pad: str, out: list[str], scalars: Scalars, first: str | None
) -> None:
    keys, values = scalars.keys, scalars.values
    prefix = pad if first is None else first
    for key, value in obj.items():
        rendered_key = keys.get(key) if type(key) is str else None
        if rendered_key is None:
            rendered_key = scalars.key(key)
        head = prefix + rendered_key + ":"
        prefix = pad
        if type(value) is str:
            if "\n" in value:
                out.append(head)
                _block(value, pad, out, scalars)
                continue
            rendered = values.get(value)
            if rendered is None:
                rendered = scalars.value(value)
            out.append(head + " " + rendered + "\n")
            continue
        leaf = _leaf(value, scalars)
        if leaf is not None:
            out.append(head + " " + leaf + "\n")
        elif type(value) is dict:
            out.append(head + "\n")
            _mapping(value, pad + "  ", out, scalars, None)
        else:
            out.append(head + "\n")
            _sequence(value, pad, out, scalars)


def _sequence(items: list[Any], pad: str, out: list[str], scalars: Scalars) -> None:
    values = scalars.values
    dash = pad + "- "
    for item in items:
        if type(item) is str:
            if "\n" in item:
                out.append(pad + "-")
                _block(item, pad, out, scalars)
                continue
            rendered = values.get(item)
            if rendered is None:
                rendered = scalars.value(item)
            out.append(dash + rendered + "\n")
            continue
        leaf = _leaf(item, scalars)
        if leaf is not None:
            out.append(dash + leaf + "\n")
        elif type(item) is dict:
            _mapping(item, pad + "  ", out, scalars, dash)
        else:
            raise Unsupported  # a sequence in a sequence
