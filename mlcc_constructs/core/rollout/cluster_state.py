"""The cluster as the rollout rules see it (``core/rollout/rules.py``), from the plain data kubectl
and SageMaker return: ``kubectl get nodes|pods -o json`` and ``DescribeCluster``.

* A node's free GPUs are its allocatable ``nvidia.com/gpu`` minus the effective requests of
  the pods bound to it (Succeeded and Failed pods hold nothing); it takes workloads when Ready,
  not cordoned, and HyperPod's health label (when set) says ``Schedulable``.
* HyperPod names a node ``hyperpod-<instance id>`` (HyperPod tooling relies on it, e.g.
  shimomut/sagemaker-solutions ``hyperpod_issue_report`` resolves ``hyperpod-i-...`` node names
  to instance ids); a node named otherwise is matched by the instance id in its
  ``spec.providerID`` (``aws:///<zone>/<instance id>``). The group of an instance comes from
  ``ListClusterNodes``, not from node labels.
* The serving pods carry ``app=<IEC name>`` in the IEC's namespace (how
  aws/sagemaker-hyperpod-cli ``HPEndpoint.list_pods`` finds them, commit 011ca92).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE
from mlcc_constructs.core.support.errors import fail

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
"""HyperPod's node health label; only ``Schedulable`` takes workloads (docs:
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-node-labels.html)."""
SCHEDULABLE = "Schedulable"
_NODE_NAME = re.compile(r"^hyperpod-(i-[0-9a-f]+)$")
_PROVIDER_ID = re.compile(r"^aws:///[^/]*/(i-[0-9a-f]+)$")
_SELECTOR_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_./]*)=([-A-Za-z0-9_.]*)$")


@dataclass(frozen=True, kw_only=True)
class ServingPod:
    """A pod of the deployment (matched by the selector in the IEC's namespace)."""

    name: str
    node: str | None
    ready: bool
    terminating: bool


@dataclass(frozen=True, kw_only=True)
class NodeView:
    """One Kubernetes node, with what the rules need."""

    name: str
    instance_id: str | None
    """From the node name ``hyperpod-<instance id>``, else its ``providerID``; or ``None``."""
    instance_type: str | None
    ready: bool
    schedulable: bool
    """Not cordoned, and HyperPod's health label (when set) is ``Schedulable``."""
    gpus: int
    gpus_requested: int
    serving: tuple[ServingPod, ...]

    @property
    def free_gpus(self) -> int:
        """GPUs no bound pod requests."""
        return max(0, self.gpus - self.gpus_requested)

    @property
    def ready_serving(self) -> int:
        """Ready serving pods on the node (terminating ones excluded)."""
        return sum(1 for p in self.serving if p.ready and not p.terminating)


@dataclass(frozen=True, kw_only=True)
class ClusterView:
    """The nodes and the deployment's pods at one moment."""

    nodes: tuple[NodeView, ...]
    serving: tuple[ServingPod, ...]

    def node(self, name: str) -> NodeView | None:
        """The node called ``name``, if any."""
        return next((n for n in self.nodes if n.name == name), None)


@dataclass(frozen=True, kw_only=True)
class InstanceGroup:
    """One instance group of ``DescribeCluster``."""

    name: str
    instance_type: str
    target_count: int
    current_count: int
    status: str
    scaling: bool
    """An operation (``ActiveOperations``) is in progress."""


def parse_selector(text: str, *, where: str = "--selector") -> dict[str, str]:
    """``a=b,c=d`` → ``{"a": "b", "c": "d"}``; only equality terms (what the rules match)."""
    labels: dict[str, str] = {}
    for part in text.split(","):
        match = _SELECTOR_PART.match(part.strip())
        if not match:
            raise fail(
                "not an equality label selector",
                where=where,
                value=text,
                allowed="KEY=VALUE[,KEY=VALUE...]",
                fix="name each label and its value, e.g. app=my-model,tier=gpu",
            )
        labels[match[1]] = match[2]
    return labels


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _count(value: object) -> int:
    from mlcc_constructs.core.support.quantity import parse_quantity

    try:
        return int(parse_quantity(value if isinstance(value, int) else str(value)))
    except ValueError:
        return 0


def resource_gpus(resources: Mapping[str, Any] | None) -> int:
    """``nvidia.com/gpu`` of a container's ``resources`` (its request, else its limit)."""
    resources = resources or {}
    # An extended resource's request defaults to its limit.
    for part in ("requests", "limits"):
        value = (resources.get(part) or {}).get(GPU_RESOURCE)
        if value is not None:
            return _count(value)
    return 0


def pod_gpus(pod: Mapping[str, Any]) -> int:
    """The pod's effective ``nvidia.com/gpu`` request: its containers plus restartable init
    containers (sidecars), or its largest plain init container if that is more."""
    spec = pod.get("spec") or {}
    inits = spec.get("initContainers") or []
    sidecars = sum(
        resource_gpus(c.get("resources")) for c in inits if c.get("restartPolicy") == "Always"
    )
    running = (
        sum(resource_gpus(c.get("resources")) for c in spec.get("containers") or []) + sidecars
    )
    plain = [resource_gpus(c.get("resources")) for c in inits if c.get("restartPolicy") != "Always"]
    return max([running, *plain])


def cluster_view(
    nodes: Mapping[str, Any],
    pods: Mapping[str, Any],
    *,
    namespace: str,
    selector: Mapping[str, str],
) -> ClusterView:
    """The view of ``kubectl get nodes -o json`` and ``kubectl get pods -A -o json``."""
    bound: dict[str, list[Mapping[str, Any]]] = {}
    serving: list[ServingPod] = []
    for pod in pods.get("items") or []:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            bound.setdefault(node, []).append(pod)
        labels = meta.get("labels") or {}
        if meta.get("namespace") == namespace and all(
            labels.get(k) == v for k, v in selector.items()
        ):
            serving.append(
                ServingPod(
                    name=str(meta.get("name")),
                    node=node,
                    ready=_condition(pod, "Ready"),
                    terminating=meta.get("deletionTimestamp") is not None,
                )
            )
    views = []
    for node in nodes.get("items") or []:
        meta = node.get("metadata") or {}
        name = str(meta.get("name"))
        labels = meta.get("labels") or {}
        match = _NODE_NAME.match(name) or _PROVIDER_ID.match(
            str((node.get("spec") or {}).get("providerID", ""))
        )
        views.append(
            NodeView(
                name=name,
                instance_id=match[1] if match else None,
                instance_type=labels.get(INSTANCE_TYPE_LABEL),
                ready=_condition(node, "Ready"),
                schedulable=not (node.get("spec") or {}).get("unschedulable")
                and labels.get(HEALTH_LABEL, SCHEDULABLE) == SCHEDULABLE,
                gpus=_count(
                    ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, 0)
                ),
                gpus_requested=sum(pod_gpus(p) for p in bound.get(name, [])),
                serving=tuple(p for p in serving if p.node == name),
            )
        )
    return ClusterView(
        nodes=tuple(sorted(views, key=lambda n: n.name)),
        serving=tuple(sorted(serving, key=lambda p: p.name)),
    )


def instance_groups(described: Mapping[str, Any]) -> tuple[InstanceGroup, ...]:
    """The instance groups of a ``DescribeCluster`` response."""
    return tuple(
        InstanceGroup(
            name=str(g.get("InstanceGroupName")),
            instance_type=str(g.get("InstanceType")),
            target_count=int(g.get("TargetCount", 0)),
            current_count=int(g.get("CurrentCount", 0)),
            status=str(g.get("Status", "")),
            scaling=bool(g.get("ActiveOperations")),
        )
        for g in described.get("InstanceGroups") or []
    )
