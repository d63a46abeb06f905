"""Reading the JSON data files the library ships or is given (targets, buckets), checked
against their JSON schemas, every problem named by file and JSON pointer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlcc_constructs.core.errors import MlccError, Problem, fail, json_pointer


def read_json(path: Path) -> Any:
    """The JSON document at ``path``; a syntax error names the line and column."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise fail(
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            where=str(path),
        ) from error


def validate_document(document: Any, schema_path: Path, *, where: str) -> None:
    """Raise one :class:`MlccError` with every schema violation of ``document``."""
    import jsonschema  # only when a document is checked: it is slow to import

    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        Problem(
            message=error.message,
            where=where,
            pointer=json_pointer(*error.absolute_path) or "/",
        )
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        raise MlccError(problems)
