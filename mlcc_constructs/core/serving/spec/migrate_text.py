"""The text of a spec file rewritten from the flat 0.1 shape into sections (``mlcc spec
migrate``): parse, :func:`~.flat_shape.migrate_document` each deployment, print it again (JSON
for a ``.json`` file, YAML otherwise), with the file's leading comment block kept."""

from __future__ import annotations

import json
from typing import Any

import yaml

from mlcc_constructs.core.serving.spec.flat_shape import migrate_document
from mlcc_constructs.core.support.documents import parse_json, parse_yaml
from mlcc_constructs.core.support.errors import fail


def _leading_comments(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def _migrated(document: Any, where: str) -> Any:
    if isinstance(document, list):
        return [_migrated(entry, where) for entry in document]
    if not isinstance(document, dict):
        raise fail(
            "a spec file holds mappings of deployment fields",
            where=where,
            value=type(document).__name__,
        )
    return migrate_document(document)


def migrate_text(text: str, *, where: str) -> str:
    """``text`` (a spec file's) with each deployment in the sectioned shape."""
    if where.endswith(".json"):
        return json.dumps(_migrated(parse_json(text, where=where), where), indent=2) + "\n"
    documents = [_migrated(d, where) for d in parse_yaml(text, where=where) if d is not None]
    body = "---\n".join(
        yaml.safe_dump(d, sort_keys=False, default_flow_style=False, width=100) for d in documents
    )
    return _leading_comments(text) + body
