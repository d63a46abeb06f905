"""Pieces every target renderer shares: labels, metadata, probes, Secret env."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.prepare import PreparedDeployment
from mlcc_constructs.core.spec import SecretRef

ENGINE_LABEL = "mlcc-constructs/engine"
NAME_LABEL = "app.kubernetes.io/name"


def labels(prepared: PreparedDeployment) -> dict[str, str]:
    """The labels of every object of the deployment."""
    return {
        NAME_LABEL: prepared.names.base,
        "app.kubernetes.io/component": "inference-server",
        "app.kubernetes.io/managed-by": "mlcc-constructs",
        ENGINE_LABEL: prepared.resolution.manifest.engine,
    }


def metadata(prepared: PreparedDeployment, name: str, *, namespaced: bool = True) -> dict[str, Any]:
    """``metadata`` of one object: name, namespace (unless cluster-scoped), labels."""
    result: dict[str, Any] = {"name": name}
    if namespaced:
        result["namespace"] = prepared.names.namespace
    result["labels"] = labels(prepared)
    return result


def selector(prepared: PreparedDeployment) -> dict[str, str]:
    """The pods' selector (Deployment and Service)."""
    return {NAME_LABEL: prepared.names.base}


def secret_env(refs: Mapping[str, SecretRef]) -> list[dict[str, Any]]:
    """``valueFrom.secretKeyRef`` entries: secrets never travel as plain values."""
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
        for key, ref in refs.items()
    ]


def plain_env(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """``name``/``value`` env entries, in order."""
    return [{"name": key, "value": value} for key, value in pairs]
