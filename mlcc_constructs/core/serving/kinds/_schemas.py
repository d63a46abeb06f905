"""Core kinds (ConfigMap, Deployment, Service, ...) against the strict OpenAPI schemas bundled
with ``kubernetes-validate`` (offline), for the Kubernetes version pinned in
``data/versions.json``: jsonschema-rs answers valid or not on the hot path, and jsonschema
gives the messages only when an object is invalid (both from one self-contained document per
kind)."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer
from mlcc_constructs.core.support.schema_verdict import Verdict, verdict


def kubernetes_version() -> str:
    """The Kubernetes minor version objects are validated for (``versions.json``)."""
    return pinned().kubernetes


@cache
def _schema_dir() -> Any:
    version = kubernetes_version()
    # find_spec locates the package without importing it: kubernetes_validate's own import
    # costs ~50 ms, paid by every synth and `mlcc render`, for a folder path.
    package = importlib.util.find_spec("kubernetes_validate")
    if package is not None and package.submodule_search_locations:
        root: Any = Path(package.submodule_search_locations[0], "kubernetes-json-schema")
    else:  # pragma: no cover - a zipped install: let importlib.resources find it
        from importlib import resources  # here: its import pulls in tempfile (start-up)

        root = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    folder = root.joinpath(f"v{version}.0-local-strict")
    if not folder.is_dir():  # pragma: no cover - guarded by a test on the pinned version
        raise MlccError(
            Problem(
                message=f"kubernetes-validate bundles no schemas for Kubernetes {version}",
                where="mlcc_constructs/data/versions.json",
                pointer="/kubernetes",
                value=version,
                fix="pin a Kubernetes version that the installed kubernetes-validate supports",
            )
        )
    return folder


_DEFS_REF = "#/$defs/"


@cache
def _raw_definitions() -> dict[str, Any]:
    text = _schema_dir().joinpath("_definitions.json").read_text(encoding="utf-8")
    raw: dict[str, Any] = json.loads(text)["$defs"]
    return raw


@cache
def _core_schema(kind: str, api_version: str) -> dict[str, Any] | None:
    """A kind's strict schema as one self-contained document: its file, with its references
    into ``_definitions.json`` made local and the shared definitions they reach (directly or
    through each other) under ``$defs``; ``None`` when the version bundles no such kind."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir().joinpath(f"{kind.lower()}-{group_version}.json")
    if not path.is_file():
        return None
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    definitions = _raw_definitions()
    reached: dict[str, Any] = {}
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and _DEFS_REF in ref:
                name = ref.split(_DEFS_REF, 1)[1]
                if ref != _DEFS_REF + name:  # the kind's file: "/api/_definitions.json#/$defs/"
                    node["$ref"] = _DEFS_REF + name  # (the cached definitions refer locally)
                if name not in reached:
                    reached[name] = definitions[name]
                    stack.append(definitions[name])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    document["$defs"] = reached
    return document


@cache
def _core_verdict(kind: str, api_version: str) -> Verdict | None:
    """jsonschema-rs's verdict on a kind: the fast yes/no on the hot path."""
    schema = _core_schema(kind, api_version)
    return None if schema is None else verdict(schema)


@cache
def _core_validator(kind: str, api_version: str) -> Any:
    """jsonschema's validator of a kind: the messages, asked only when an object is invalid."""
    import jsonschema

    schema = _core_schema(kind, api_version)
    assert schema is not None  # asked only after _core_verdict found the kind
    return jsonschema.Draft202012Validator(schema)


def _label(obj: Mapping[str, Any]) -> str:
    name = obj.get("metadata", {}).get("name", "?")
    return f"{obj.get('kind', '?')}/{name}"


def _path(parts: Iterable[object]) -> str:
    return json_pointer(*parts) or "/"


def core_object_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Strict schema problems of one core-kind object (empty when it is valid)."""
    kind, api_version = str(obj.get("kind", "")), str(obj.get("apiVersion", ""))
    is_valid = _core_verdict(kind, api_version)
    if is_valid is None:
        return [
            Problem(
                message=f"no Kubernetes {kubernetes_version()} schema for this kind",
                where=_label(obj),
                pointer="/apiVersion",
                value=f"{obj.get('apiVersion')} {obj.get('kind')}",
                fix="render only core kinds here; custom resources have their own rules",
            )
        ]
    if is_valid(obj):
        return []
    validator = _core_validator(kind, api_version)
    errors = sorted(validator.iter_errors(dict(obj)), key=lambda e: [str(p) for p in e.path])
    return [
        Problem(
            message=f"{error.message} (Kubernetes {kubernetes_version()} strict schema)",
            where=_label(obj),
            pointer=_path(error.absolute_path),
            fix="fix the field, or remove a JSON patch that set it",
        )
        for error in errors
    ]
