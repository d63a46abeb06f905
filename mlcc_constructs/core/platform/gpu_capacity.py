"""GPU capacity for deployments whose pods run on the EKS cluster's own Auto Mode nodes.

EKS Auto Mode's built-in ``system`` and ``general-purpose`` node pools launch only C, M and R
instances, so a pod asking for ``nvidia.com/gpu`` stays Pending. The app adds one Auto Mode
``NodePool`` (``karpenter.sh/v1``) on the built-in ``default`` node class, limited to the
instance families its deployments run on (from the instance catalog) and tainted
``nvidia.com/gpu:NoSchedule``: only pods that tolerate the taint (the rendered Deployments do)
land on GPU nodes. Field names and labels: https://docs.aws.amazon.com/eks/latest/userguide/
create-node-pool.html (supported labels, ``eks.amazonaws.com/instance-family``) and
https://docs.aws.amazon.com/eks/latest/userguide/auto-accelerated.html (GPU NodePool on the
``default`` NodeClass, which exists while a built-in node pool is enabled).

The Mountpoint S3 CSI driver's node pod must run on those nodes too (the model volume): the
add-on's ``node.tolerations`` (appended by the driver's chart to its default tolerations,
charts/aws-mountpoint-s3-csi-driver/templates/node.yaml of awslabs/mountpoint-s3-csi-driver)
names the same taint, so the mount works whatever the add-on's ``tolerateAllTaints`` default.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE, lookup
from mlcc_constructs.core.platform.labels import MANAGED_BY

NODE_POOL_NAME = "mlcc-gpu"
GPU_TAINT_KEY = GPU_RESOURCE
NODE_CLASS = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
INSTANCE_FAMILY_LABEL = "eks.amazonaws.com/instance-family"
# Model servers take minutes to load weights: on-demand capacity, and nodes are consolidated
# only when empty (never to repack running servers).
CAPACITY_TYPES = ("on-demand",)
CONSOLIDATE_AFTER = "10m"
ARCHITECTURES = ("amd64",)  # the pinned engine images are amd64


def gpu_toleration() -> dict[str, str]:
    """The toleration of the GPU nodes' taint (every GPU pod carries it)."""
    return {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def gpu_taint() -> dict[str, str]:
    """The taint of the GPU node pool's nodes."""
    return {"key": GPU_TAINT_KEY, "effect": "NoSchedule"}


def instance_families(instance_types: Iterable[str]) -> tuple[str, ...]:
    """The sorted, distinct instance families of ``instance_types`` (catalog names, with or
    without ``ml.``); an unknown type raises the catalog's error."""
    return tuple(sorted({lookup(name).family for name in instance_types}))


def gpu_node_pool(families: Iterable[str], *, name: str = NODE_POOL_NAME) -> dict[str, Any]:
    """The Auto Mode ``NodePool`` offering ``families``, tainted for GPU pods only."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": dict(NODE_CLASS),
                    "requirements": [
                        {
                            "key": INSTANCE_FAMILY_LABEL,
                            "operator": "In",
                            "values": sorted(set(families)),
                        },
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": list(CAPACITY_TYPES),
                        },
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "In",
                            "values": list(ARCHITECTURES),
                        },
                    ],
                    "taints": [gpu_taint()],
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": CONSOLIDATE_AFTER,
            },
        },
    }


def s3_csi_addon_configuration() -> dict[str, Any]:
    """``ConfigurationValues`` of the ``aws-mountpoint-s3-csi-driver`` add-on: its node pod
    tolerates the GPU taint (schema: ``aws eks describe-addon-configuration``, ``node``)."""
    return {"node": {"tolerations": [gpu_toleration()]}}
