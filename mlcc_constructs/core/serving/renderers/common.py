"""Pieces every target renderer shares: labels, metadata, probes, Secret env."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.serving.prepare.deployment import PreparedDeployment
from mlcc_constructs.core.serving.spec.deployment import SecretRef

ENGINE_LABEL = "mlcc-constructs/engine"
NAME_LABEL = "app.kubernetes.io/name"
STARTUP_PERIOD_S, STARTUP_FAILURES = 10, 180
"""The startup probe allows 30 minutes: a cold start without prefetch measured ~15 minutes (model
load ~513 s, pod ready ~15 min; seed lora-delivery §4)."""
READINESS_PERIOD_S, LIVENESS_PERIOD_S, PROBE_FAILURES, PROBE_TIMEOUT_S = 10, 20, 3, 5


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


def probe(path: str, port: int | str, period: int, failures: int) -> dict[str, Any]:
    """An HTTP GET probe on the engine's ``path`` and ``port`` (a number or a port name)."""
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "timeoutSeconds": PROBE_TIMEOUT_S,
        "failureThreshold": failures,
    }


def health_probes(path: str, port: int | str) -> dict[str, dict[str, Any]]:
    """Startup (30 minutes), readiness and liveness probes, all on the engine's health path: a
    pod takes traffic only once the engine answers, and a wedged engine is restarted."""
    return {
        "startupProbe": probe(path, port, STARTUP_PERIOD_S, STARTUP_FAILURES),
        "readinessProbe": probe(path, port, READINESS_PERIOD_S, PROBE_FAILURES),
        "livenessProbe": probe(path, port, LIVENESS_PERIOD_S, PROBE_FAILURES),
    }
