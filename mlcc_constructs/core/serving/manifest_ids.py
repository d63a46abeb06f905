"""CloudFormation logical ids of Kubernetes objects applied by CDK, one resource per object.

The id is a pure function of the object's kind, namespace and name: the same object keeps
its resource (``cdk diff`` shows it modified, never replaced) whatever else the app adds or
removes. The readable part (``DeploymentInferenceLlamaVllm``) is followed by 8 hex digits of a
hash of the exact kind, namespace and name, so names that read alike (``a-1`` and ``a1``)
never share an id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mlcc_constructs.core.support.errors import Problem, raise_if_any

_WORD = re.compile(r"[A-Za-z0-9]+")
READABLE_MAX = 200  # CloudFormation logical ids: alphanumeric, at most 255 characters


def object_identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(kind, namespace, name)`` of a Kubernetes object (namespace ``""`` when cluster-scoped)."""
    metadata = obj.get("metadata") or {}
    return (
        str(obj.get("kind", "")),
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
    )


def manifest_logical_id(obj: Mapping[str, Any]) -> str:
    """The logical id of the resource that applies ``obj``, e.g.
    ``DeploymentInferenceLlamaVllm`` + 8 hex digits."""
    kind, namespace, name = object_identity(obj)
    readable = "".join(
        word[0].upper() + word[1:]
        for part in (kind, namespace, name)
        for word in _WORD.findall(part)
    )[:READABLE_MAX]
    digest = hashlib.sha256(f"{kind}/{namespace}/{name}".encode()).hexdigest()[:8].upper()
    return readable + digest


def unique_ids(objects: Iterable[Mapping[str, Any]], *, where: str) -> list[str]:
    """The logical ids of ``objects`` in order; an object applied twice is a problem."""
    ids: list[str] = []
    seen: dict[str, tuple[str, str, str]] = {}
    problems = []
    for obj in objects:
        logical_id = manifest_logical_id(obj)
        identity = object_identity(obj)
        if logical_id in seen:
            kind, namespace, name = identity
            problems.append(
                Problem(
                    message=f"{kind} {namespace + '/' if namespace else ''}{name} is applied twice",
                    where=where,
                    value=logical_id,
                    fix="give each deployment a distinct name (or namespace)",
                )
            )
            continue
        seen[logical_id] = identity
        ids.append(logical_id)
    raise_if_any(problems)
    return ids
