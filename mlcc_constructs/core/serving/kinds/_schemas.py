"""Core kinds (ConfigMap, Deployment, Service, ...) against the strict OpenAPI schemas bundled
with ``kubernetes-validate`` (offline), for the Kubernetes version pinned in
``data/versions.json``: a compiled predicate answers valid or not on the hot path, and
jsonschema gives the messages only when an object is invalid."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer
from mlcc_constructs.core.support.schema_compile import Check, compile_schema


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


_RESOLVED: dict[str, dict[str, Any]] = {}


def _definition(name: str) -> dict[str, Any]:
    """Shared definition ``name`` with every reference replaced by the referenced schema itself
    (resolved on first use, so only what the rendered kinds reach is ever inlined).

    Resolving ``$ref`` through a registry on every validation costs about a third of the time;
    these schemas only put annotations (``description``, ``x-kubernetes-*``) beside a ``$ref``,
    so replacing the reference node with its target keeps the validation identical. Recursive
    definitions become cyclic dicts, which the validators walk only as deep as the instance
    goes.
    """
    found = _RESOLVED.get(name)
    if found is None:
        found = _RESOLVED[name] = {}  # the placeholder a recursive reference points at
        found.update(_inline(_raw_definitions()[name]))
    return found


def _inline(node: Any) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and _DEFS_REF in ref:
            return _definition(ref.split(_DEFS_REF, 1)[1])
        return {key: _inline(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value) for value in node]
    return node


@cache
def _core_schema(kind: str, api_version: str) -> dict[str, Any] | None:
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir().joinpath(f"{kind.lower()}-{group_version}.json")
    if not path.is_file():
        return None
    schema: dict[str, Any] = _inline(json.loads(path.read_text(encoding="utf-8")))
    return schema


@cache
def _core_check(kind: str, api_version: str) -> Check | None:
    """The compiled strict schema of a kind: the fast yes/no on the hot path."""
    schema = _core_schema(kind, api_version)
    return None if schema is None else compile_schema(schema)


@cache
def _core_validator(kind: str, api_version: str) -> Any:
    """jsonschema's validator of a kind: the messages, asked only when an object is invalid."""
    import jsonschema

    schema = _core_schema(kind, api_version)
    assert schema is not None  # asked only after _core_check found the kind
    return jsonschema.Draft202012Validator(schema)


def _label(obj: Mapping[str, Any]) -> str:
    name = obj.get("metadata", {}).get("name", "?")
    return f"{obj.get('kind', '?')}/{name}"


def _path(parts: Iterable[object]) -> str:
    return json_pointer(*parts) or "/"


def core_object_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Strict schema problems of one core-kind object (empty when it is valid)."""
    kind, api_version = str(obj.get("kind", "")), str(obj.get("apiVersion", ""))
    check = _core_check(kind, api_version)
    if check is None:
        return [
            Problem(
                message=f"no Kubernetes {kubernetes_version()} schema for this kind",
                where=_label(obj),
                pointer="/apiVersion",
                value=f"{obj.get('apiVersion')} {obj.get('kind')}",
                fix="render only core kinds here; custom resources have their own rules",
            )
        ]
    if check(obj):
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
