"""What every promotion record document shares (adapter versions and full fine-tunes alike):
reading a field by its path, the provenance fields (where the content came from, its base model,
who made it and when) and the header checks (the record format, the content hash). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.support.errors import Problem, json_pointer

HEX64 = re.compile(r"^[0-9a-f]{64}$")
"""A sha256 hex digest (a record's ``content_hash``)."""


def dig(document: Any, *path: str) -> Any:
    """``document[path[0]][path[1]]...``, or ``None`` where a level is missing or not a map."""
    for key in path:
        if not isinstance(document, Mapping):
            return None
        document = document.get(key)
    return document


def text_field(
    document: Any, *path: str, where: str, problems: list[Problem], optional: bool = False
) -> str | None:
    """A record's non-empty string at ``path``; a missing (unless ``optional``) or non-string
    value adds a problem to ``problems`` and gives ``None``."""
    value = dig(document, *path)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        problems.append(
            Problem(
                message="missing or not a non-empty string",
                where=where,
                pointer=json_pointer(*path),
                value=value,
            )
        )
        return None
    return value


_PROVENANCE: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("source_uri", ("source", "uri"), False),
    ("source_job", ("source", "job"), True),
    ("technique", ("technique",), True),
    ("base_model", ("base_model", "id"), False),
    ("base_revision", ("base_model", "revision"), True),
    ("created_by", ("created_by",), False),
    ("created_at", ("created_at",), False),
)
"""Every record's provenance: field, its path in the document, optional."""


def provenance_fields(
    document: Any, *, where: str, problems: list[Problem]
) -> dict[str, str | None]:
    """The provenance fields every record carries (adapter versions and full fine-tunes
    alike: where it came from, its base model, who made it and when), read from a record
    document; a bad one adds its problem to ``problems``."""
    return {
        name: text_field(document, *path, where=where, problems=problems, optional=optional)
        for name, path, optional in _PROVENANCE
    }


def header_problems(
    document: Mapping[str, Any], *, record_format: str, where: str
) -> list[Problem]:
    """The format and content-hash problems every record document shares."""
    problems = []
    if document.get("format") != record_format:
        problems.append(
            Problem(
                message="unknown record format",
                where=where,
                pointer="/format",
                value=document.get("format"),
                allowed=record_format,
            )
        )
    digest = document.get("content_hash")
    if isinstance(digest, str) and digest and not HEX64.match(digest):
        problems.append(
            Problem(
                message="not a sha256 hex digest",
                where=where,
                pointer="/content_hash",
                value=digest,
            )
        )
    return problems
