"""Rendered objects as YAML a reviewer reads: multi-document, keys in render order, multi-line
strings (the wrapper script, JSON files) as ``|`` blocks; byte-stable across runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from mlcc_constructs.core.support.yaml_emit import Scalars, Unsupported, emit_document

# libyaml's emitter when PyYAML has it: the same bytes as the pure-Python one (the snapshots
# check it), several times faster.
_BASE: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _ReviewDumper(_BASE):  # type: ignore[misc]
    """Multi-line strings as ``|`` blocks a reviewer can read."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    lines = text.split("\n")
    if len(lines) > 1 and not any(line != line.rstrip() for line in lines):
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", text)


_ReviewDumper.add_representer(str, _represent_str)


_OPTIONS: dict[str, Any] = {
    "Dumper": _ReviewDumper,
    "sort_keys": False,
    "default_flow_style": False,
    "width": 1000,
    "allow_unicode": True,
}


def _pyyaml(documents: Sequence[Any]) -> str:
    text: str = yaml.dump_all(list(documents), **_OPTIONS)
    return text


def _scalar(text: str) -> str:
    """PyYAML's one-line rendering of ``text`` as a mapping value (and key: same rules)."""
    rendered = _pyyaml([{"k": text}])
    if not rendered.startswith("k: ") or rendered.count("\n") != 1:
        raise Unsupported
    return rendered[3:-1]


def _key(text: str) -> str:
    """PyYAML's rendering of ``text`` as a simple mapping key."""
    rendered = _pyyaml([{text: None}])
    if not rendered.endswith(": null\n") or rendered.count("\n") != 1 or rendered[0] == "?":
        raise Unsupported  # a complex key ("? ...")
    return rendered[: -len(": null\n")]


def _block(text: str) -> tuple[str, tuple[str, ...]]:
    """PyYAML's rendering of a multi-line ``text``: the header (``|``, ``|-``, ``|2``...) and
    the content lines without their indentation."""
    first, *lines = _pyyaml([{"k": text}]).split("\n")
    header = first.removeprefix("k: ")
    if not header.startswith("|") or lines[-1] != "":
        raise Unsupported
    return header, tuple(line[2:] for line in lines[:-1])


_SCALARS = Scalars(_scalar, _key, _block)
"""Every distinct scalar PyYAML rendered in this process (rendered objects repeat most)."""


def to_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML, keys in render order (byte-stable): PyYAML's bytes, laid out by
    :mod:`~mlcc_constructs.core.support.yaml_emit` (PyYAML itself for a stream with a document
    outside
    its shape: how a document ends, e.g. a ``|+`` block's ``...``, depends on the stream)."""
    documents = [dict(obj) for obj in objects]
    try:
        return "---\n".join(emit_document(document, _SCALARS) for document in documents)
    except Unsupported:
        return _pyyaml(documents)


def file_name(obj: Mapping[str, Any]) -> str:
    """``<kind>-<name>.yaml`` (lower-case kind), the ``--out`` file of one object."""
    return f"{str(obj['kind']).lower()}-{obj['metadata']['name']}.yaml"
