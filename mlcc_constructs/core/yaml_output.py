"""Rendered objects as YAML a reviewer reads: multi-document, keys in render order, multi-line
strings (the wrapper script, JSON files) as ``|`` blocks; byte-stable across runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

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


def to_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML, keys in render order (byte-stable)."""
    return yaml.dump_all(
        [dict(o) for o in objects],
        Dumper=_ReviewDumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        allow_unicode=True,
    )


def file_name(obj: Mapping[str, Any]) -> str:
    """``<kind>-<name>.yaml`` (lower-case kind), the ``--out`` file of one object."""
    return f"{str(obj['kind']).lower()}-{obj['metadata']['name']}.yaml"
