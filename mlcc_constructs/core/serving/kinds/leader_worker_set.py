"""``LeaderWorkerSet`` (``leaderworkerset.x-k8s.io/v1``): one model copy over several nodes on
eks, rendered in place of the Deployment when a deployment's ``nodes`` is above 1 (the target's
``multi_node_workload``; the Deployment renders nothing then).

Facts from kubernetes-sigs/lws v0.10.0 (``api/leaderworkerset/v1/leaderworkerset_types.go``,
``config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml``; rules:
``data/crd_rules/leaderworkersets.leaderworkerset.x-k8s.io.v1.json``):

* ``spec.replicas`` is the number of groups (model copies); ``leaderWorkerTemplate.size`` the
  pods per group, one per node: ``nodes``. Each pod takes its whole node's GPUs
  (``Resolution.gpus_per_pod``).
* Leader and worker use the same hardened pod template as the Deployment (wrapper-launched).
  The wrapper reads ``LWS_WORKER_INDEX`` / ``LWS_LEADER_ADDRESS`` / ``LWS_GROUP_SIZE``, which the
  controller adds to every container, and appends the engine manifest's ``multi_node``
  leader or worker arguments. Workers of an engine whose ``worker_serves_http`` is false serve
  no HTTP, so their engine container has no HTTP probes (they would never pass).
* ``startupPolicy: LeaderCreated`` (not ``LeaderReady``): ``LeaderReady`` creates the workers
  only once the leader pod is Ready, and a multi-node engine's leader answers ``/health`` only
  after every rank has joined, so the group would never start.
* ``restartPolicy: RecreateGroupOnPodRestart``: one failed pod restarts its whole group (a rank
  cannot rejoin a running NCCL group).
* Placement per group: each pod requires (pod affinity) the pods of its own group in its
  Availability Zone (``matchLabelKeys`` on the group's ``leaderworkerset.sigs.k8s.io/group-key``
  label, GA in Kubernetes 1.33), so a group never spans zones (EFA does not cross them). Each
  pod asks for its node's GPUs and EFA interfaces, so a node holds one pod: groups never share
  nodes. Not LWS's ``exclusive-topology`` annotation with the zone key: it also keeps every other
  group out of the zone (lws v0.10.0 pkg/webhooks/pod_webhook.go SetExclusiveAffinities adds
  the anti-affinity), which caps a deployment at one group per zone, too few for a rolling
  update's surge or for autoscaling.
* ``rolloutStrategy``: ``RollingUpdate`` one group at a time, from the spec's ``rollout``
  (``surge``: ``maxSurge 1, maxUnavailable 0``; ``replace``: ``maxSurge 0, maxUnavailable 1``).
* Autoscaling scales groups through the CRD's scale subresource (KEDA's ScaledObject targets
  the LeaderWorkerSet; ``kinds/scaled_object.py``), so ``replicas`` is left out under it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.platform.efa import multi_node_network
from mlcc_constructs.core.platform.labels import STREAMED_MODEL_ANNOTATION
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds._readiness import lws_readiness
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import (
    EngineView,
    Kind,
    PodShape,
    RenderedObject,
    pod_engine,
)
from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.prepare.disruption import rollout_strategy
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.support.errors import Problem, fail
from mlcc_constructs.core.support.json_types import json_copy
from mlcc_constructs.core.wrapper import LWS_ENV

API_VERSION = "leaderworkerset.x-k8s.io/v1"
RULES = CrdRules(file="leaderworkersets.leaderworkerset.x-k8s.io.v1.json")
GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
"""lws v0.10.0 GroupUniqueHashLabelKey: the same value on every pod of one group."""
GROUP_TOPOLOGY_KEY = "topology.kubernetes.io/zone"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
"""lws v0.10.0 WorkerIndexLabelKey: ``"0"`` on each group's leader, which serves the API."""
LEADER_INDEX = "0"
ROLES = ("leader", "worker")
_HTTP_PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def group_env(name: str, namespace: str, nodes: int, role: str) -> dict[str, str]:
    """The LWS variables the controller gives a pod of group 0 of LeaderWorkerSet ``name``: the
    leader (``role`` ``leader``, worker index 0) or its first worker (``worker``, index 1).
    The leader's address is ``<name>-0.<name>.<namespace>`` (lws v0.10.0
    pkg/utils/pod/pod_utils.go, as its pod_utils_test.go expects it). ``mlcc argv --role``
    shows the argv the wrapper builds from them."""
    if nodes <= 1:
        raise fail(
            "--role applies to a deployment over several nodes",
            pointer="/compute/nodes",
            value=nodes,
            allowed="2, 3, ...",
            fix="set nodes above 1 (--nodes), or leave --role out",
        )
    if role not in ROLES:
        raise fail("unknown multi-node role", where="--role", value=role, allowed=", ".join(ROLES))
    return {
        LWS_ENV["leader_address"]: f"{name}-0.{name}.{namespace}",
        LWS_ENV["group_size"]: str(nodes),
        LWS_ENV["worker_index"]: LEADER_INDEX if role == "leader" else "1",
    }


def kubelet_args(block: Mapping[str, Any], role: str) -> list[str]:
    """A ``multi_node`` block's ``role`` arguments with each LWS placeholder as the kubelet's
    ``$(VAR)`` reference (Kubernetes expands those in ``args`` from the container's env)."""
    values = {name: f"$({var})" for name, var in LWS_ENV.items()}
    values["master_port"] = str(block["master_port"])
    return [str(arg).format(**values) for arg in block[f"{role}_args"]]


def leader_selector() -> dict[str, str]:
    """The extra label that selects only each group's leader (the Service's endpoints)."""
    return {WORKER_INDEX_LABEL: LEADER_INDEX}


def _pod(facts: DeploymentFacts, *, leader: bool) -> dict[str, Any]:
    assert facts.pod_template is not None  # eks: the pods are the library's own
    template: dict[str, Any] = json_copy(dict(facts.pod_template))
    limits, env = multi_node_network(facts.resolution.instance)
    block = facts.resolution.manifest.raw.get("multi_node") or {}
    for container in template["spec"]["containers"]:
        if container["name"] != ENGINE_CONTAINER:
            continue
        resources = container.setdefault("resources", {})
        resources.setdefault("limits", {}).update(limits)
        if limits:
            resources.setdefault("requests", {}).update(limits)
        container["env"] = list(container.get("env", [])) + [
            {"name": k, "value": v} for k, v in sorted(env.items())
        ]
        if not facts.container.delivers_env and block:
            # args delivery: no wrapper at pod start, so the role's arguments are in the pod
            # spec with the kubelet's $(VAR) expansion of the LWS variables the controller adds
            # to the container's env.
            container["args"] = list(container.get("args", [])) + kubelet_args(
                block, "leader" if leader else "worker"
            )
        if not leader and not block.get("worker_serves_http", True):
            for probe in _HTTP_PROBES:
                container.pop(probe, None)
    affinity = template["spec"].setdefault("affinity", {}).setdefault("podAffinity", {})
    affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
        {
            "labelSelector": {"matchExpressions": [{"key": GROUP_KEY_LABEL, "operator": "Exists"}]},
            "matchLabelKeys": [GROUP_KEY_LABEL],
            "topologyKey": GROUP_TOPOLOGY_KEY,
        }
    )
    return template


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The engine LeaderWorkerSet (module doc); nothing for a deployment on one node."""
    if facts.resolution.nodes <= 1:
        return []
    meta = metadata(facts, facts.names.base)
    if facts.resolution.model_load == "stream":
        meta["annotations"] = {STREAMED_MODEL_ANNOTATION: facts.source.uri}
    strategy = rollout_strategy(facts.spec.rollout.strategy)["rollingUpdate"]
    spec: dict[str, Any] = {
        "replicas": facts.spec.scaling.replicas,
        "startupPolicy": "LeaderCreated",
        "rolloutStrategy": {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {
                "maxSurge": strategy["maxSurge"],
                "maxUnavailable": strategy["maxUnavailable"],
            },
        },
        "leaderWorkerTemplate": {
            "size": facts.resolution.nodes,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": _pod(facts, leader=True),
            "workerTemplate": _pod(facts, leader=False),
        },
    }
    if facts.spec.scaling.autoscaling is not None:  # KEDA's HPA owns the group count
        del spec["replicas"]
    obj = {"apiVersion": API_VERSION, "kind": "LeaderWorkerSet", "metadata": meta, "spec": spec}
    return [RenderedObject("LeaderWorkerSet", obj)]


def _problems(obj: Mapping[str, Any]) -> list[Problem]:
    """The CRD rules, and each pod template against the Kubernetes schema (a v1 PodTemplate)."""
    problems = RULES.problems(obj)
    templates = ((obj.get("spec") or {}).get("leaderWorkerTemplate") or {}).items()
    for role, template in templates:
        if not role.endswith("Template") or not isinstance(template, Mapping):
            continue
        name = str((obj.get("metadata") or {}).get("name", "x"))
        wrapped = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": name},
            "template": template,
        }
        for problem in core_object_problems(wrapped):
            problems.append(
                Problem(
                    message=problem.message,
                    where=f"LeaderWorkerSet/{name}",
                    pointer=f"/spec/leaderWorkerTemplate/{role}"
                    + (problem.pointer or "").removeprefix("/template"),
                    fix=problem.fix,
                )
            )
    return problems


def engine(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> EngineView:
    """The leader's engine container (``envFrom`` ConfigMaps among ``objects``)."""
    pod = obj["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    return pod_engine(pod, ENGINE_CONTAINER, objects, namespace=obj["metadata"].get("namespace"))


def pods(obj: Mapping[str, Any]) -> list[PodShape]:
    """A group's leader and a worker, each with the worker-index label the controller gives
    it (the leader's ``0`` is what its Service selects; lws v0.10.0 WorkerIndexLabelKey)."""
    templates = obj["spec"]["leaderWorkerTemplate"]
    shapes = []
    for role, index in (("leader", LEADER_INDEX), ("worker", "1")):
        template = json_copy(dict(templates[f"{role}Template"]))
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels[WORKER_INDEX_LABEL] = index
        shapes.append(PodShape(role, template))
    return shapes


KIND = Kind(
    kind="LeaderWorkerSet",
    api_version=API_VERSION,
    plural="leaderworkersets",
    namespaced=True,
    apply_phase=50,  # where the Deployment goes: after its ConfigMap and volumes
    validate=_problems,
    readiness=lws_readiness,
    render=render,
    engine=engine,
    pods=pods,
)
