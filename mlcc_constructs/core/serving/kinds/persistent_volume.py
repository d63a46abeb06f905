"""``PersistentVolume``: the static Mountpoint S3 CSI volume of an ``s3://`` model, read-only,
bound to the deployment's claim. Cluster-scoped, so named ``<namespace>-<name>-model``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.mountpoint import PV_CAPACITY, S3_CSI_DRIVER
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, Readiness, RenderedObject
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.pod import RUN_AS


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The model's volume, for an ``s3://`` model (none otherwise)."""
    source, names = facts.source, facts.names
    if not facts.resolution.mounts_model:
        return []
    volume: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata(facts, names.volume, namespaced=False),
        "spec": {
            "capacity": {"storage": PV_CAPACITY},
            "accessModes": ["ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": names.namespace, "name": names.claim},
            "mountOptions": [
                "read-only",
                "allow-other",
                f"uid={RUN_AS}",
                f"gid={RUN_AS}",
                f"prefix {source.prefix}",
                f"region {facts.model_region}",
            ],
            "csi": {
                "driver": S3_CSI_DRIVER,
                "volumeHandle": f"s3-csi-{names.volume}",
                "readOnly": True,
                "volumeAttributes": {"bucketName": source.bucket},
            },
        },
    }
    return [RenderedObject("ModelVolume", volume)]


def readiness(obj: Mapping[str, Any]) -> Readiness:
    """Ready once bound to its claim (``Available`` until the claim binds it)."""
    phase = str((obj.get("status") or {}).get("phase", "Pending"))
    if phase == "Bound":
        return Readiness("ready", phase)
    return Readiness("failed" if phase == "Failed" else "progressing", phase)


KIND = Kind(
    kind="PersistentVolume",
    api_version="v1",
    plural="persistentvolumes",
    namespaced=False,
    apply_phase=30,
    validate=core_object_problems,
    readiness=readiness,
    render=render,
)
