"""GPU capacity for deployments whose pods run on the EKS cluster's own Auto Mode nodes.

EKS Auto Mode's built-in ``system`` and ``general-purpose`` node pools launch only C, M and R
instances, so a pod asking for ``nvidia.com/gpu`` stays Pending. The app adds one Auto Mode
``NodePool`` (``karpenter.sh/v1``) on the built-in ``default`` node class (or the NodeClass
below), limited to the
instance families its deployments run on (from the instance catalog) and tainted
``nvidia.com/gpu:NoSchedule``: only pods that tolerate the taint (the rendered Deployments do)
land on GPU nodes. Field names and labels: https://docs.aws.amazon.com/eks/latest/userguide/
create-node-pool.html (supported labels, ``eks.amazonaws.com/instance-family``) and
https://docs.aws.amazon.com/eks/latest/userguide/auto-accelerated.html (GPU NodePool on the
``default`` NodeClass, which exists while a built-in node pool is enabled).

A cluster that enforces NetworkPolicies gets the pool on a NodeClass of its own
(:func:`gpu_node_class`, ``mlcc-gpu``) that mirrors the built-in ``default`` one (the cluster's
node role, so EKS's access entry for that role covers it; its subnets; the cluster security
group) and says ``networkPolicy: DefaultAllow`` and a larger ``ephemeralStorage``. Fields: EKS
User Guide ``automode/create-node-class.adoc`` at awsdocs/amazon-eks-user-guide 0026c9df
(``role``, ``subnetSelectorTerms`` and ``securityGroupSelectorTerms`` required; "Do not name
your custom node class ``default``"; "EKS automatically creates an Access Entry for the Node
IAM Role during cluster creation", a different role would need its own ``EC2`` access entry
with ``AmazonEKSAutoNodePolicy``).

The Mountpoint S3 CSI driver's node pod must run on those nodes too (the model volume): the
add-on's ``node.tolerations`` (appended by the driver's chart to its default tolerations,
charts/aws-mountpoint-s3-csi-driver/templates/node.yaml of awslabs/mountpoint-s3-csi-driver)
names the same taint, so the mount works whatever the add-on's ``tolerateAllTaints`` default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from mlcc_constructs.core.platform.catalog import (
    GPU_RESOURCE,
    InstanceType,
    catalog_entries,
    lookup,
)
from mlcc_constructs.core.platform.gpu_disruption import (
    CONSOLIDATION_POLICY,
    EXPIRE_AFTER,
    TERMINATION_GRACE_PERIOD,
    MaintenanceWindow,
    disruption_budgets,
)
from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer

NODE_POOL_NAME = "mlcc-gpu"
GPU_TAINT_KEY = GPU_RESOURCE
NODE_CLASS = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
NODE_CLASS_NAME = "mlcc-gpu"
NETWORK_POLICY = "DefaultAllow"
"""Pods no NetworkPolicy selects keep all traffic; a selected pod gets only what its policies
admit (``auto-net-pol.adoc``: ``networkPolicy: DefaultAllow`` or ``DefaultDeny``). Said
explicitly, though it is Auto Mode's default: the deployments' policies admit the engine port
only and are written for pods whose other traffic is allowed, which ``DefaultDeny`` would not
be."""
EPHEMERAL_STORAGE = "200Gi"
"""Each node's ephemeral storage (Auto Mode's default is 80Gi, ``create-node-class.adoc``). An
engine image is tens of GB once extracted (vllm/vllm-openai:latest measured 28.6 GB in
vllm-project/vllm pull request 22377; a 25 GB image filled 50 GB nodes in issue 17163), the
kubelet holds the compressed layers while it pulls, a rollout pulls the next image beside the
running one, and a Hugging Face model is downloaded into the pod's cache ``emptyDir`` (an 8B
model's weights are 16 GB in bf16: 8e9 parameters at 2 bytes) beside the engine's compile
caches (torch.compile, Triton, FlashInfer: a few GB by our estimate, not measured;
``serving.prepare.engine_cache``), which
fit in the same budget. Where the instance's NVMe instance store is larger, Auto Mode puts the
ephemeral storage on the NVMe instead, with a 20 GiB EBS data volume (automode-learn-instances
"Considerations", https://docs.aws.amazon.com/eks/latest/userguide/automode-learn-instances.html).
The extra 120Gi of EBS per GPU node is billed per GB-month, small next to the GPU instance."""
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


def instance_families(instances: Iterable[InstanceType]) -> tuple[str, ...]:
    """The sorted, distinct instance families of ``instances`` (catalog entries)."""
    return tuple(sorted({instance.family for instance in instances}))


def gpu_node_class(
    *,
    role: str,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
    name: str = NODE_CLASS_NAME,
    ephemeral_storage: str = EPHEMERAL_STORAGE,
) -> dict[str, Any]:
    """The GPU pool's ``NodeClass`` (``eks.amazonaws.com/v1``; module doc): ``role`` is the node
    IAM role's name, the subnets and security groups are selected by id."""
    return {
        "apiVersion": "eks.amazonaws.com/v1",
        "kind": "NodeClass",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {
            "role": role,
            "subnetSelectorTerms": [{"id": subnet} for subnet in subnet_ids],
            "securityGroupSelectorTerms": [{"id": group} for group in security_group_ids],
            "networkPolicy": NETWORK_POLICY,
            "ephemeralStorage": {"size": ephemeral_storage},
        },
    }


def gpu_node_pool(
    families: Iterable[str],
    *,
    name: str = NODE_POOL_NAME,
    node_class: str | None = None,
    gpu_limit: int | None = None,
    maintenance_window: MaintenanceWindow | None = None,
    expire_after: str = EXPIRE_AFTER,
    termination_grace_period: str = TERMINATION_GRACE_PERIOD,
) -> dict[str, Any]:
    """The Auto Mode ``NodePool`` offering ``families``, tainted for GPU pods only, on the
    NodeClass ``node_class`` (default: the built-in ``default``), holding at most ``gpu_limit``
    GPUs (``None``: no limit), its nodes disrupted as :mod:`gpu_disruption` describes."""
    spec: dict[str, Any] = {}
    if gpu_limit is not None:
        spec["limits"] = {GPU_RESOURCE: str(gpu_limit)}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {
            **spec,
            "template": {
                "spec": {
                    "nodeClassRef": {**NODE_CLASS, "name": node_class or NODE_CLASS["name"]},
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
                    "expireAfter": expire_after,
                    "terminationGracePeriod": termination_grace_period,
                }
            },
            "disruption": {
                "consolidationPolicy": CONSOLIDATION_POLICY,
                "consolidateAfter": CONSOLIDATE_AFTER,
                "budgets": disruption_budgets(maintenance_window),
            },
        },
    }


def s3_csi_addon_configuration() -> dict[str, Any]:
    """``ConfigurationValues`` of the ``aws-mountpoint-s3-csi-driver`` add-on: its node pod
    tolerates the GPU taint (schema: ``aws eks describe-addon-configuration``, ``node``)."""
    return {"node": {"tolerations": [gpu_toleration()]}}


@cache
def catalog_families() -> tuple[str, ...]:
    """The instance families of the instance catalog (``g5``, ``p5``, ...), sorted."""
    return instance_families(catalog_entries())


def pool_families(
    families: Sequence[str],
    types: Sequence[str],
    *,
    where: str,
    fields: tuple[str, str] = ("instance_families", "instance_types"),
) -> tuple[tuple[str, ...], list[Problem]]:
    """The families a GPU pool offers (``families`` and those of ``types``, sorted, each once),
    read once where the props are, with every family that is not one of the catalog's and every
    type the catalog does not know (``where``: the props, e.g. ``GpuNodePoolProps``; ``fields``:
    the names of the two fields there)."""
    problems: list[Problem] = []
    instances: list[InstanceType] = []
    for index, family in enumerate(families):
        if family not in catalog_families():
            problems.append(
                Problem(
                    message="not an instance family of the instance catalog",
                    where=where,
                    pointer=json_pointer(fields[0], index),
                    value=family,
                    allowed=", ".join(catalog_families()),
                    fix="name the family of a catalog instance type (ml.g5.12xlarge: g5)",
                )
            )
    for index, name in enumerate(types):
        try:
            instances.append(lookup(name))
        except MlccError as error:
            problems.extend(
                dataclasses.replace(problem, where=where, pointer=json_pointer(fields[1], index))
                for problem in error.problems
            )
    return tuple(sorted({*families, *instance_families(instances)})), problems
