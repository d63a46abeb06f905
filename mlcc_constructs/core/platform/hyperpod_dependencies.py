"""HyperPod's required cluster components: what of AWS's dependency Helm chart an inference
cluster gets, the published charts' values, and the Kubernetes objects written here for its
local-only parts.

AWS requires the chart on the EKS cluster before ``CreateCluster`` ("This Helm installation
step is required ... Failure to configure your Amazon EKS cluster using the provided Helm chart
might result in the SageMaker HyperPod cluster not functioning correctly or the creation process
failing entirely. The aws-hyperpod namespace name cannot be modified.",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-install-packages-using-helm-chart.html).
The chart is an umbrella of local ``file://`` sub-charts that are published nowhere, plus a few
published charts. ``data/hyperpod_dependencies.json`` records each component with
``install``:

* ``chart``: a published chart, installed as it is with the version pinned in
  ``versions.json`` (``hyperpod_dependencies``) and the values of :func:`charts`;
* ``objects``: a local-only sub-chart whose objects :func:`dependency_objects` writes from the
  facts in the data file (names HyperPod looks up, RBAC rules, the agent's image per region);
* ``none``: not for an inference cluster (the reason is in the data file).

Every device plugin and agent runs only on the HyperPod nodes of the app's instance groups
(required node affinity on ``node.kubernetes.io/instance-type``, whose value on a HyperPod node
is the ``ml.`` name) and tolerates the GPU taint (:func:`gpu_capacity.gpu_toleration`) and
HyperPod's ``sagemaker.amazonaws.com/node-health-status=Unschedulable:NoSchedule``, as the
chart's values do. None of them needs a node to be installed: a DaemonSet with no matching node
is complete, so all are installed before the cluster's nodes exist.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.gpu_capacity import gpu_toleration
from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import fail

DATA_FILE = "hyperpod_dependencies.json"
INSTALL_KINDS = ("chart", "objects", "none")
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
RBAC_API = "rbac.authorization.k8s.io"
HMA = "health-monitoring-agent"

Manifest = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Component:
    """One sub-chart of HyperPod's dependency chart: ``install`` is one of
    :data:`INSTALL_KINDS`; ``why`` says why an inference cluster needs it or not."""

    name: str
    install: str
    why: str


@dataclass(frozen=True, kw_only=True)
class ChartInstall:
    """One published chart to install: ``name`` is the chart and its release; ``values`` are
    the chart values (a plain, JSON-ready mapping)."""

    name: str
    repository: str
    version: str
    namespace: str
    values: Mapping[str, Any]


@cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(data_path(DATA_FILE).read_text(encoding="utf-8"))
    return document


def namespace() -> str:
    """``aws-hyperpod``: the namespace AWS says cannot be renamed."""
    return str(_document()["namespace"])


def components() -> tuple[Component, ...]:
    """Every component of the dependency chart, in the data file's order."""
    return tuple(
        Component(name=name, install=str(entry["install"]), why=str(entry["why"]))
        for name, entry in _document()["components"].items()
    )


def installed(kind: str) -> tuple[str, ...]:
    """The names of the components installed as ``kind`` (``chart`` or ``objects``)."""
    return tuple(c.name for c in components() if c.install == kind)


def gpu_instance_types(instances: Sequence[InstanceType]) -> tuple[str, ...]:
    """The names of the GPU types among ``instances`` (catalog entries; ``ml.`` names), sorted,
    each once."""
    return tuple(sorted({instance.name for instance in instances if instance.gpus > 0}))


def hma_image(region: str, *, where: str) -> str:
    """The health monitoring agent's image in ``region`` (the account of AWS's per-region
    table, the tag pinned in ``versions.json``); a region without one is refused."""
    agent = _document()["health_monitoring_agent"]
    accounts: Mapping[str, str] = agent["image_accounts"]
    if region not in accounts:
        raise fail(
            "SageMaker HyperPod's health monitoring agent has no image in this region",
            where=where,
            pointer="/region",
            value=region,
            allowed=", ".join(sorted(accounts)),
            fix="deploy the HyperPod stacks in one of those regions, or add the region's ECR "
            f"account to mlcc_constructs/data/{DATA_FILE} (health_monitoring_agent."
            "image_accounts) once AWS's dependency chart lists it",
        )
    tag = pinned().hyperpod_dependency(HMA)
    return f"{accounts[region]}.dkr.ecr.{region}.amazonaws.com/{agent['image_repository']}:{tag}"


def node_health_toleration() -> dict[str, str]:
    """The toleration of HyperPod's taint on a node whose health check is failing."""
    taint = _document()["node_health_taint"]
    return {
        "key": taint["key"],
        "operator": "Equal",
        "value": taint["value"],
        "effect": "NoSchedule",
    }


def _instance_type_affinity(instance_types: Sequence[str]) -> dict[str, Any]:
    term = {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(instance_types)}
    required = {"nodeSelectorTerms": [{"matchExpressions": [term]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def _nvidia_values(instances: Sequence[InstanceType]) -> dict[str, Any] | None:
    """The NVIDIA device plugin on the groups' GPU types (the chart's ``affinity`` replaces its
    NFD-label default; ``tolerations`` replaces its list)."""
    gpus = gpu_instance_types(instances)
    if not gpus:
        return None
    return {
        "affinity": _instance_type_affinity(gpus),
        "tolerations": [gpu_toleration(), node_health_toleration()],
    }


def _efa_values(instances: Sequence[InstanceType]) -> dict[str, Any] | None:
    """The EFA device plugin on the groups' EFA-capable types (``supportedInstanceLabels.
    values``; the chart keeps its key and adds its own ``CriticalAddonsOnly`` toleration)."""
    efa = set(_document()["efa_instance_types"])
    types = sorted({instance.name for instance in instances} & efa)
    if not types:
        return None
    taint = _document()["efa_taint"]
    return {
        "supportedInstanceLabels": {"values": types},
        "tolerations": [
            gpu_toleration(),
            {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]},
            node_health_toleration(),
        ],
    }


_CHART_VALUES: Mapping[str, Callable[[Sequence[InstanceType]], dict[str, Any] | None]] = {
    "nvidia-device-plugin": _nvidia_values,
    "aws-efa-k8s-device-plugin": _efa_values,
}


def charts(instances: Sequence[InstanceType]) -> tuple[ChartInstall, ...]:
    """The published charts the instance groups of ``instances`` need (a chart whose
    nodes none of the groups are, such as EFA on types without EFA, is left out)."""
    found = []
    for name in installed("chart"):
        values = _CHART_VALUES[name](instances)
        if values is None:
            continue
        chart = _document()["charts"][name]
        found.append(
            ChartInstall(
                name=name,
                repository=str(chart["repository"]),
                version=pinned().hyperpod_dependency(name),
                namespace=str(chart["namespace"]),
                values=values,
            )
        )
    return tuple(found)


def _metadata(
    name: str, *, namespaced: bool = False, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {**(labels or {}), **MANAGED_BY}}
    if namespaced:
        metadata["namespace"] = namespace()
    return metadata


def _cluster_role(name: str, rules: Sequence[Mapping[str, Any]]) -> Manifest:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "ClusterRole",
        "metadata": _metadata(name),
        "rules": [dict(rule) for rule in rules],
    }


def _service_account(name: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(name, namespaced=True),
    }


def _binding(name: str, role: str, subject: Mapping[str, str]) -> Manifest:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(name),
        "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": role},
        "subjects": [dict(subject)],
    }


def _service_account_subject(name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace()}


def _health_monitoring_agent(instances: Sequence[InstanceType], image: str) -> list[Manifest]:
    """The agent's RBAC and its DaemonSet on the groups' GPU types. Host mounts, user and group
    are the agent's own (it reads the kernel log and writes under ``/var/log``); the container
    also drops every capability and may not escalate (a non-root process holds none)."""
    agent = _document()["health_monitoring_agent"]
    name = str(agent["name"])
    objects = [
        _cluster_role(name, agent["rules"]),
        _service_account(name),
        _binding(name, name, _service_account_subject(name)),
    ]
    gpus = gpu_instance_types(instances)
    if not gpus:
        return objects
    resources = {"cpu": agent["cpu"], "memory": agent["memory"]}
    mounts = agent["host_paths"]
    container = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        ],
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "securityContext": {
            "runAsUser": agent["run_as_user"],
            "runAsGroup": agent["run_as_group"],
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": m["name"], "mountPath": m["mount_path"], "readOnly": m["read_only"]}
            for m in mounts
        ],
    }
    pod = {
        "serviceAccountName": name,
        "affinity": _instance_type_affinity(gpus),
        "containers": [container],
        "volumes": [{"name": m["name"], "hostPath": {"path": m["host_path"]}} for m in mounts],
        # On every HyperPod node whatever its taints, unhealthy ones included.
        "tolerations": [
            {"operator": "Exists", "effect": "NoSchedule"},
            {"operator": "Exists", "effect": "NoExecute"},
        ],
    }
    daemon_set = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _metadata(name, namespaced=True, labels={"app": name}),
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    }
    return [*objects, daemon_set]


def _deep_health_check(instances: Sequence[InstanceType], image: str) -> list[Manifest]:
    """The service account HyperPod's deep health checks run as, and its permissions."""
    check = _document()["deep_health_check"]
    account = str(check["service_account"])
    return [
        _service_account(account),
        _cluster_role(check["cluster_role"], check["rules"]),
        _binding(
            check["cluster_role_binding"], check["cluster_role"], _service_account_subject(account)
        ),
    ]


def _hyperpod_patching(instances: Sequence[InstanceType], image: str) -> list[Manifest]:
    """What HyperPod's service-linked role (the Kubernetes user HyperPod maps it to) needs to
    drain nodes it patches: list pods, create evictions."""
    patching = _document()["hyperpod_patching"]
    name = str(patching["name"])
    user = {"apiGroup": RBAC_API, "kind": "User", "name": str(patching["user"])}
    return [_cluster_role(name, patching["rules"]), _binding(name, name, user)]


_OBJECTS: Mapping[str, Callable[[Sequence[InstanceType], str], list[Manifest]]] = {
    HMA: _health_monitoring_agent,
    "deep-health-check": _deep_health_check,
    "hyperpod-patching": _hyperpod_patching,
}


def namespace_object() -> Manifest:
    """The ``aws-hyperpod`` Namespace (labelled ``name: aws-hyperpod`` as AWS's chart does)."""
    metadata = _metadata(namespace(), labels={"name": namespace()})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def dependency_objects(
    instances: Sequence[InstanceType], *, region: str, where: str
) -> tuple[Manifest, ...]:
    """The objects of the ``objects`` components for the groups of ``instances`` in
    ``region`` (the Namespace is :func:`namespace_object`); ``where`` names the caller in an
    error (a region without the agent's image)."""
    image = hma_image(region, where=where)
    found: list[Manifest] = []
    for name in installed("objects"):
        found += _OBJECTS[name](instances, image)
    return tuple(found)
