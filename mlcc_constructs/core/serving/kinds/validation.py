"""Validation of rendered Kubernetes objects, run at synth and by ``mlcc render``.

* Names: every user-facing object gets an explicit name checked here (RFC 1035 label for the
  base name, because a Service name must be one; DNS-1123 for the rest).
* Core kinds (ConfigMap, Deployment, Service, ServiceAccount, PersistentVolume(Claim)) are
  validated against the strict OpenAPI schemas bundled with ``kubernetes-validate`` (offline),
  for the Kubernetes version pinned in ``data/versions.json``.
* The HyperPod ``InferenceEndpointConfig`` (a CRD) is validated against :data:`IEC_V1_RULES`:
  a hand-written JSON schema for exactly the fields we emit, with the constraints of the
  upstream v1 CRD (required fields, ``^ml\\.`` instance types, 63-character names...) and
  ``additionalProperties: false`` everywhere, so a misspelt field fails. The CRD itself is not
  shipped; ``tests/test_iec_crd.py`` checks every rule here against the real CRD.

Every violation becomes a :class:`Problem` naming the object, the field path and the fix.
"""

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

IEC_API_VERSION = "inference.sagemaker.aws.amazon.com/v1"
IEC_KIND = "InferenceEndpointConfig"

MAX_NAME = 63
_RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def name_problems(name: str | None, *, pointer: str = "/name") -> list[Problem]:
    """Problems with a deployment's base name (the Deployment, Service and IEC are named so).

    RFC 1035 label: a Service name must start with a letter, and the IEC's ``endpointName`` is
    limited to 63 characters, so the base name satisfies the strictest of them.
    """
    allowed = "lower-case letters, digits and '-', starting with a letter, at most 63"
    if not name:
        return [
            Problem(
                message="a name is required to render Kubernetes objects",
                pointer=pointer,
                allowed=allowed,
                fix="pass --name, e.g. --name my-model",
            )
        ]
    if len(name) > MAX_NAME or not _RFC1035_LABEL.match(name):
        suggestion = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:MAX_NAME].rstrip("-")
        if suggestion and not suggestion[0].isalpha():
            suggestion = ("m-" + suggestion)[:MAX_NAME].rstrip("-")
        return [
            Problem(
                message="not a valid Kubernetes name (RFC 1035 label)",
                pointer=pointer,
                value=name,
                allowed=allowed,
                fix=f"use e.g. {suggestion!r}" if suggestion else "choose a name like my-model",
            )
        ]
    return []


def namespace_problems(namespace: str, *, pointer: str = "/namespace") -> list[Problem]:
    """Problems with a namespace name (DNS-1123 label)."""
    if len(namespace) > MAX_NAME or not _DNS1123_LABEL.match(namespace):
        return [
            Problem(
                message="not a valid namespace name (DNS-1123 label)",
                pointer=pointer,
                value=namespace,
                allowed="lower-case letters, digits and '-', at most 63",
                fix="use e.g. 'inference'",
            )
        ]
    return []


# -- core kinds: kubernetes-validate's bundled strict schemas -------------------------------


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


# -- the InferenceEndpointConfig: rules of the v1 CRD for the fields we emit ---------------

_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
        r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ),
}
_KEY_REF = {
    "type": "object",
    "required": ["key"],
    "properties": {"key": {"type": "string"}, "name": {"type": "string"}},
}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_INT32 = {"type": "integer", "format": "int32"}
_PROBE = {
    "type": "object",
    "properties": {
        "httpGet": {
            "type": "object",
            "required": ["port"],
            "properties": {
                "path": {"type": "string"},
                "port": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
        },
        "periodSeconds": _INT32,
        "timeoutSeconds": _INT32,
        "failureThreshold": _INT32,
    },
}

IEC_V1_RULES: Mapping[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": IEC_API_VERSION},
        "kind": {"const": IEC_KIND},
        "metadata": {
            "type": "object",
            "required": ["name", "namespace"],
            "properties": {
                "name": {
                    "type": "string",
                    "maxLength": 63,
                    "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$",
                },
                "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "spec": {
            "type": "object",
            "required": ["modelName", "modelSourceConfig", "worker"],
            "properties": {
                "modelName": {
                    "type": "string",
                    "maxLength": 63,
                    "pattern": "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
                },
                "endpointName": {
                    "type": "string",
                    "maxLength": 63,
                    "pattern": "^$|^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$",
                },
                "instanceType": {"type": "string", "pattern": "^ml\\..*"},
                "invocationEndpoint": {"type": "string"},
                "replicas": {"type": "integer", "format": "int32"},
                "modelSourceConfig": {
                    "type": "object",
                    "required": ["modelSourceType"],
                    "properties": {
                        "modelSourceType": {
                            "enum": ["fsx", "s3", "huggingface", "kubernetesVolume"]
                        },
                        "s3Storage": {
                            "type": "object",
                            "required": ["bucketName", "region"],
                            "properties": {
                                "bucketName": {"type": "string"},
                                "region": {"type": "string"},
                            },
                        },
                        "huggingFaceModel": {
                            "type": "object",
                            "required": ["modelId"],
                            "properties": {
                                "modelId": {
                                    "type": "string",
                                    "pattern": "^[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$",
                                },
                                "tokenSecretRef": _KEY_REF,
                            },
                        },
                        "modelLocation": {"type": "string"},
                        "prefetchEnabled": {"type": "boolean"},
                    },
                },
                "tlsConfig": {
                    "type": "object",
                    "properties": {
                        "tlsCertificateOutputS3Uri": {
                            "type": "string",
                            "pattern": "^s3://([^/]+)/?(.*)$",
                        }
                    },
                },
                "metrics": {
                    "type": "object",
                    "properties": {
                        "enabled": {"type": "boolean"},
                        "modelMetrics": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string", "pattern": "^/[a-zA-Z0-9\\-_.\\/]*$"},
                                "port": {
                                    "type": "integer",
                                    "format": "int32",
                                    "minimum": 1024,
                                    "maximum": 65535,
                                },
                            },
                        },
                    },
                },
                "loadBalancer": {
                    "type": "object",
                    "properties": {"healthCheckPath": {"type": "string", "pattern": "^/.*"}},
                },
                "worker": {
                    "type": "object",
                    "required": ["image", "modelInvocationPort", "modelVolumeMount", "resources"],
                    "properties": {
                        "image": {"type": "string"},
                        "command": _STRINGS,
                        "args": _STRINGS,
                        "modelInvocationPort": {
                            "type": "object",
                            "required": ["containerPort"],
                            "properties": {
                                "containerPort": {
                                    "type": "integer",
                                    "format": "int32",
                                    "minimum": 1,
                                    "maximum": 65535,
                                },
                                "name": {"type": "string", "pattern": "^http$|^grpc$"},
                            },
                        },
                        "modelVolumeMount": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "mountPath": {"type": "string"},
                            },
                        },
                        "resources": {
                            "type": "object",
                            "properties": {
                                "limits": {"type": "object", "additionalProperties": _QUANTITY},
                                "requests": {"type": "object", "additionalProperties": _QUANTITY},
                            },
                        },
                        "environmentVariables": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "value": {"type": "string"},
                                    "valueFrom": {
                                        "type": "object",
                                        "properties": {"secretKeyRef": _KEY_REF},
                                    },
                                },
                            },
                        },
                        "probes": {
                            "type": "object",
                            "properties": {
                                "startupProbe": _PROBE,
                                "readinessProbe": _PROBE,
                                "livenessProbe": _PROBE,
                            },
                        },
                    },
                },
            },
        },
    },
}
"""The v1 CRD's rules for the fields the renderer emits (checked against the CRD in tests)."""


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
def _iec_validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(strict(IEC_V1_RULES))


@cache
def _iec_check() -> Check:
    return compile_schema(strict(IEC_V1_RULES))


def iec_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Problems of one rendered ``InferenceEndpointConfig`` against :data:`IEC_V1_RULES`."""
    if _iec_check()(obj):
        return []
    errors = sorted(_iec_validator().iter_errors(dict(obj)), key=lambda e: [str(p) for p in e.path])
    return [
        Problem(
            message=f"{error.message} (InferenceEndpointConfig v1 CRD rules)",
            where=_label(obj),
            pointer=_path(error.absolute_path),
            fix=_IEC_FIXES.get(str(error.validator), "emit only fields the v1 CRD defines"),
        )
        for error in errors
    ]


_IEC_FIXES = {
    "pattern": "change the value to match the CRD pattern (names: letters, digits, '-')",
    "maxLength": "shorten the value (the CRD allows at most 63 characters)",
    "required": "set the missing field",
    "additionalProperties": "remove the field or fix its spelling: the v1 CRD does not define it",
    "minimum": "use a value within the CRD's range",
    "maximum": "use a value within the CRD's range",
}


def object_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Problems of any rendered object: IEC rules for the IEC, strict schemas for core kinds."""
    if obj.get("apiVersion") == IEC_API_VERSION and obj.get("kind") == IEC_KIND:
        return iec_problems(obj)
    return core_object_problems(obj)


def validate_objects(objects: Iterable[Mapping[str, Any]]) -> None:
    """Raise one :class:`MlccError` naming every problem of every object, or return."""
    problems = [problem for obj in objects for problem in object_problems(obj)]
    if problems:
        raise MlccError(problems)
