"""``PersistentVolumeClaim``: the claim of an ``s3://`` model's static volume, mounted
read-only at the target's model mount path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.mountpoint import PV_CAPACITY
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, Readiness, RenderedObject
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The model volume's claim, for an ``s3://`` model (none otherwise)."""
    names = facts.names
    if not facts.resolution.mounts_model:
        return []
    claim: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(facts, names.claim),
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": "",
            "volumeName": names.volume,
            "resources": {"requests": {"storage": PV_CAPACITY}},
        },
    }
    return [RenderedObject("ModelClaim", claim)]


def readiness(obj: Mapping[str, Any]) -> Readiness:
    """Ready once bound to its volume."""
    phase = str((obj.get("status") or {}).get("phase", "Pending"))
    if phase == "Bound":
        return Readiness("ready", phase)
    return Readiness("failed" if phase == "Lost" else "progressing", phase)


KIND = Kind(
    kind="PersistentVolumeClaim",
    api_version="v1",
    plural="persistentvolumeclaims",
    namespaced=True,
    apply_phase=40,
    validate=core_object_problems,
    readiness=readiness,
    render=render,
)
