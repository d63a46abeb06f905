"""The instance types a deployment's pods may run on: ``instance_type``, then the spec's
``instance_types`` fallbacks in order of preference, each checked against the catalog.

Decisions (for reviewers):

* **Same settings on every type.** The engine settings are computed once, for ``instance_type``:
  the tensor-parallel degree, the LoRA memory cap and the engine's share of GPU memory. A
  fallback must keep them valid, so it has at least the tensor-parallel degree's GPUs and at
  least the GPU memory per GPU of ``instance_type``; a type with more GPUs gives the pod its
  share of them. The GPU model may differ (A10G and L4 both have 24 GiB): a quantization a
  GPU model cannot run is not checked here.
* **Resources fit the smallest**
  (:func:`~mlcc_constructs.core.serving.prepare.container.fitting_resources`): the pod asks
  for the least CPU and memory any of its types offers for its GPUs, so it fits on each.
* **Scheduling** (:func:`node_affinity`): a required ``In`` on ``node.kubernetes.io/instance-
  type`` allows every type, and one preferred term per type, weights descending in order.
  Karpenter treats the heaviest preferred term as required and drops it only when it cannot
  be met, then the next (kubernetes-sigs/karpenter ``pkg/scheduling/requirements.go``: "Select
  heaviest preference and treat as a requirement. An outer loop will iteratively unconstrain
  them if unsatisfiable"), so the order is the order nodes are tried in; the kube-scheduler
  prefers an existing node of the earliest type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mlcc_constructs.core.platform.catalog import InstanceType, lookup
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
MAX_WEIGHT = 100
"""A preferred term's weight is 1..100 (Kubernetes ``PreferredSchedulingTerm``)."""


def fallback_instances(
    primary: InstanceType, names: Sequence[str], *, tensor_parallel_degree: int
) -> tuple[tuple[InstanceType, ...], list[Problem]]:
    """``primary`` then the fallbacks ``names`` (the spec's ``instance_types``), and every
    problem of a fallback (module doc), each naming ``/instance_types/<i>``."""
    found: list[InstanceType] = [primary]
    problems: list[Problem] = []
    for index, name in enumerate(names):
        pointer = json_pointer("compute", "instance_types", index)
        try:
            entry = lookup(name, pointer=pointer)
        except MlccError as error:
            problems.extend(error.problems)
            continue
        if entry in found:
            problems.append(
                Problem(
                    message="listed twice: instance_type and instance_types name each type once",
                    pointer=pointer,
                    value=name,
                    fix="remove the repeated type",
                )
            )
            continue
        if entry.gpus < tensor_parallel_degree:
            problems.append(
                Problem(
                    message=f"{entry.name} has {entry.gpus} GPU(s), fewer than the "
                    f"tensor-parallel degree {tensor_parallel_degree}",
                    pointer=pointer,
                    value=name,
                    allowed=f"a type with {tensor_parallel_degree} GPUs or more",
                    fix="pick a type with enough GPUs, or set tensor_parallel_degree to what "
                    "every type has",
                )
            )
        if entry.gpu_memory_gib < primary.gpu_memory_gib:
            problems.append(
                Problem(
                    message=f"{entry.name} has {entry.gpu_memory_gib} GiB per GPU, less than "
                    f"{primary.name}'s {primary.gpu_memory_gib} GiB the engine settings (memory "
                    "cap, GPU memory share) were computed for",
                    pointer=pointer,
                    value=name,
                    allowed=f"a type with {primary.gpu_memory_gib} GiB per GPU or more",
                    fix="pick a type with as much GPU memory, or make the smaller type the "
                    "instance_type",
                )
            )
        found.append(entry)
    return tuple(found), problems


def node_affinity(instances: Sequence[InstanceType]) -> dict[str, Any]:
    """The pod's ``affinity`` allowing every one of ``instances``, preferred in order."""
    names = [instance.node_name for instance in instances]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": names}
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": max(1, MAX_WEIGHT - index),
                    "preference": {
                        "matchExpressions": [
                            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [name]}
                        ]
                    },
                }
                for index, name in enumerate(names)
            ],
        }
    }
