"""The declarative deployment spec file (``mlcc render -f spec.yaml``) and cdk.json entries.

A YAML or JSON mapping with the fields of :class:`DeploymentSpec` (snake_case) plus the render
context (``account``, ``profile``), validated by ``data/deployment-spec.schema.json``. Every
problem names the file and the JSON pointer of the bad field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.errors import MlccError, Problem, fail, json_pointer
from mlcc_constructs.core.render import RenderContext
from mlcc_constructs.core.spec import DeploymentSpec, SecretRef

SCHEMA_FILE = "deployment-spec.schema.json"
_CONTEXT_FIELDS = ("account", "region", "profile")


@dataclass(frozen=True, kw_only=True)
class SpecFile:
    """A loaded spec: the deployment and the render context it carries."""

    spec: DeploymentSpec
    context: RenderContext


@cache
def schema() -> Mapping[str, Any]:
    """The JSON schema of a deployment spec document."""
    document: Mapping[str, Any] = json.loads(data_path(SCHEMA_FILE).read_text(encoding="utf-8"))
    return document


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def spec_from_mapping(document: Any, *, where: str) -> SpecFile:
    """Validate ``document`` (parsed YAML/JSON) and build the spec; all problems at once."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: [str(p) for p in e.path])
    if errors:
        raise MlccError(
            Problem(
                message=error.message,
                where=where,
                pointer=json_pointer(*error.absolute_path) or "/",
                fix="see mlcc_constructs/data/deployment-spec.schema.json for the fields",
            )
            for error in errors
        )
    spec_fields = {f.name for f in fields(DeploymentSpec)}
    values: dict[str, Any] = {k: v for k, v in document.items() if k in spec_fields}
    values["env"] = {k: _text(v) for k, v in document.get("env", {}).items()}
    values["secret_env"] = {
        k: SecretRef(name=v["name"], key=v["key"])
        for k, v in document.get("secret_env", {}).items()
    }
    if "lora_adapters" in document:
        from mlcc_constructs.core.lora import AdapterRank

        values["lora_adapters"] = tuple(AdapterRank(**a) for a in document["lora_adapters"])
    if "cache_backend" in document:
        from mlcc_constructs.core.cache import CacheBackendSpec

        values["cache_backend"] = CacheBackendSpec.from_dict(
            document["cache_backend"], where=where, path="/cache_backend"
        )
    context = RenderContext(**{k: document.get(k) for k in _CONTEXT_FIELDS})
    return SpecFile(spec=DeploymentSpec(**values), context=context)


def load_spec_file(path: str | Path) -> SpecFile:
    """Read a ``.yaml``/``.yml``/``.json`` spec file."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise fail(f"cannot read the spec file: {error.strerror}", where=where) from error
    try:
        document = json.loads(text) if where.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise fail(f"not valid YAML/JSON: {error}", where=where) from error
    if not isinstance(document, dict):
        raise fail(
            "a spec file holds one mapping of deployment fields",
            where=where,
            value=type(document).__name__,
            fix="write e.g. 'engine: vllm', 'model: ...', 'instance_type: ...' at the top level",
        )
    return spec_from_mapping(document, where=where)
