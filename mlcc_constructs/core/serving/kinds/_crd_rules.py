"""Custom resources against rule data kept per CRD version.

``mlcc_constructs/data/crd_rules/<plural>.<group>.<version>.json`` holds, for one served version
of a CRD, a JSON schema of exactly the fields the library emits with the CRD's own constraints
(required fields, patterns, ranges, enums), the fix to print per failed keyword, and the CRD
it was taken from. The schema is made strict when loaded (:func:`strict`): a misspelt field
fails, where the API server would silently prune it. jsonschema-rs answers valid or not on the
hot path; jsonschema gives the messages only for an invalid object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.support.errors import Problem, json_pointer
from mlcc_constructs.core.support.schema_verdict import Verdict, verdict

RULES_DIR = "crd_rules"


@dataclass(frozen=True, kw_only=True)
class CrdRules:
    """The rule data of one CRD version (``data/crd_rules/<file>``).

    ``file``: the data file's name, ``<plural>.<group>.<version>.json``.
    """

    file: str

    @property
    def document(self) -> Mapping[str, Any]:
        """The data file's content (description, source, apiVersion, kind, fixes, schema)."""
        return _document(self.file)

    @property
    def schema(self) -> Mapping[str, Any]:
        """The rules as written (not yet strict)."""
        schema: Mapping[str, Any] = self.document["schema"]
        return schema

    def problems(self, obj: Mapping[str, Any]) -> list[Problem]:
        """Every violation of the rules by ``obj``, with the fix the data file names."""
        if _verdict(self.file)(obj):
            return []
        document = self.document
        label = f"{obj.get('kind', '?')}/{obj.get('metadata', {}).get('name', '?')}"
        errors = sorted(
            _validator(self.file).iter_errors(dict(obj)), key=lambda e: [str(p) for p in e.path]
        )
        fixes: Mapping[str, str] = document.get("fixes", {})
        return [
            Problem(
                message=f"{error.message} ({document['kind']} "
                f"{document['apiVersion'].rpartition('/')[2]} CRD rules)",
                where=label,
                pointer=json_pointer(*error.absolute_path) or "/",
                fix=fixes.get(str(error.validator), "emit only fields the CRD defines"),
            )
            for error in errors
        ]


def strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object listing ``properties``
    and saying nothing about extra fields (the strict check of ``../shared/crds/SOURCES.md``)."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: strict(value) for key, value in schema.items()}
    if (
        "properties" in result
        and "additionalProperties" not in result
        and not result.get("x-kubernetes-preserve-unknown-fields")
    ):
        result["additionalProperties"] = False
    return result


@cache
def _document(file: str) -> Mapping[str, Any]:
    text = data_path(f"{RULES_DIR}/{file}").read_text(encoding="utf-8")
    document: Mapping[str, Any] = json.loads(text)
    return document


@cache
def _strict_schema(file: str) -> dict[str, Any]:
    schema: dict[str, Any] = strict(_document(file)["schema"])
    return schema


@cache
def _verdict(file: str) -> Verdict:
    return verdict(_strict_schema(file))


@cache
def _validator(file: str) -> Any:
    import jsonschema  # messages only: asked for an invalid object

    return jsonschema.Draft202012Validator(_strict_schema(file))
