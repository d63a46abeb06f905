"""``Namespace``: the namespaces the app's deployments live in (rendered by the app, not per
deployment: :func:`namespace_object`, read by the serving plan and the cdk8s ``Namespaces``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, Readiness

# Pod Security Admission: report (audit, warn) what the restricted profile would refuse, but
# do not enforce it: the HyperPod inference operator creates pods in these namespaces too.
NAMESPACE_LABELS = {
    **MANAGED_BY,
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}


def namespace_object(name: str) -> dict[str, Any]:
    """The ``Namespace`` object of ``name``."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(NAMESPACE_LABELS)},
    }


def readiness(obj: Mapping[str, Any]) -> Readiness:
    """Ready while ``Active`` (a terminating namespace takes no new objects)."""
    phase = str((obj.get("status") or {}).get("phase", "Active"))
    return Readiness("ready" if phase == "Active" else "failed", phase)


KIND = Kind(
    kind="Namespace",
    api_version="v1",
    plural="namespaces",
    namespaced=False,
    apply_phase=0,
    validate=core_object_problems,
    readiness=readiness,
)
