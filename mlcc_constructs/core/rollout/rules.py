"""Rollout capacity on a HyperPod instance group (seed lora-delivery §4), as pure rules over the
plain data read from the cluster (``core/rollout/cluster_state.py``: nodes, pods, instance groups)
and the live and rendered ``InferenceEndpointConfig``.

Decisions (for reviewers):

* **Is there a rollout?** Only a change to the IEC's pod template rolls pods. Every ``spec``
  field counts as pod template except the scale fields (:data:`SCALE_FIELDS`): the operator
  builds the pod from the rest, and treating an unknown field as pod template errs on the side
  of checking capacity. The rendered spec is compared with what ``kubectl apply`` last applied
  (the ``last-applied-configuration`` annotation, exactly: a field dropped from the render is
  a change), else with the live spec for the fields the render sets (the API server fills in
  defaults the render does not name).
* **Can the surge pod schedule?** A Ready, schedulable node of the IEC's instance type needs
  the worker's ``nvidia.com/gpu`` free: allocatable minus the requests of the pods bound to it
  (Succeeded and Failed pods hold nothing). If none has them, the rollout needs one more node
  of that instance type (``--surge-node``); nothing is applied until then.
* **Which node goes after a surge?** One that hosts no Ready serving pod, and never the last
  Ready node of the group: an instance that never joined the cluster first, then the node with
  the fewest serving pods, preferring the node the surge added (which restores the group's
  membership). Replicas and group counts are never set to zero anywhere in this flow.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE
from mlcc_constructs.core.rollout.cluster_state import (
    ClusterView,
    InstanceGroup,
    NodeView,
    resource_gpus,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

SCALE_FIELDS = frozenset({"replicas", "InitialReplicaCount", "autoScalingSpec"})
"""IEC ``spec`` fields that scale the pods without changing them."""
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ROLLED_OUT = "InferenceEndpointConfig"
"""The kind ``mlcc rollout`` rolls out: its pods run on a HyperPod instance group."""

Action = Literal["create", "none", "fits", "surge"]


@dataclass(frozen=True, kw_only=True)
class RolloutCheck:
    """What applying the rendered IEC would do to the pods."""

    action: Action
    """``create`` (no live IEC), ``none`` (pod template unchanged), ``fits`` (a surge pod can
    schedule), ``surge`` (it cannot: one more node is needed)."""
    changes: tuple[str, ...]
    """JSON pointers of the changed pod-template fields."""
    subject: str
    """``InferenceEndpointConfig <namespace>/<name>``."""
    detail: str
    group: InstanceGroup | None = None
    """The instance group a surge node would join (``surge`` only)."""

    @property
    def summary(self) -> str:
        """``<subject>: <detail>``, one line."""
        return f"{self.subject}: {self.detail}"


@dataclass(frozen=True, kw_only=True)
class Removal:
    """The instance to remove to restore a group's count, and why it is safe."""

    instance_id: str
    node: str | None
    reason: str


# -- does applying roll the pods, and can it? -------------------------------------------------


def _last_applied(live: Mapping[str, Any]) -> Mapping[str, Any] | None:
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _diff(new: Any, old: Any, path: str, *, exact: bool) -> list[str]:
    if isinstance(new, Mapping) and isinstance(old, Mapping):
        found = []
        for key, value in new.items():
            where = f"{path}/{key}"
            found += [where] if key not in old else _diff(value, old[key], where, exact=exact)
        if exact:
            found += [f"{path}/{key}" for key in old if key not in new]
        return found
    return [] if new == old else [path]


def template_changes(rendered: Mapping[str, Any], live: Mapping[str, Any]) -> tuple[str, ...]:
    """JSON pointers of the pod-template fields (module doc) that differ from the live IEC."""
    applied = _last_applied(live)
    base = (applied if applied is not None else live).get("spec") or {}
    changes = _diff(rendered.get("spec") or {}, base, "/spec", exact=applied is not None)
    return tuple(c for c in changes if c.split("/")[2] not in SCALE_FIELDS)


def worker_gpus(rendered: Mapping[str, Any]) -> int:
    """GPUs one pod of the rendered IEC takes."""
    return resource_gpus(((rendered.get("spec") or {}).get("worker") or {}).get("resources"))


def _label(rendered: Mapping[str, Any]) -> str:
    meta = rendered.get("metadata") or {}
    return f"InferenceEndpointConfig {meta.get('namespace')}/{meta.get('name')}"


def pick_group(
    groups: Sequence[InstanceGroup], *, instance_type: str, requested: str | None, cluster: str
) -> InstanceGroup:
    """The instance group a surge node joins: ``requested``, else the only group of the IEC's
    instance type."""
    if requested is not None:
        group = next((g for g in groups if g.name == requested), None)
        if group is None:
            raise fail(
                f"cluster {cluster!r} has no instance group {requested!r}",
                where="--instance-group",
                value=requested,
                allowed=", ".join(g.name for g in groups) or "(none)",
                fix="pass one of the cluster's instance groups",
            )
        if group.instance_type != instance_type:
            raise fail(
                f"instance group {requested!r} runs {group.instance_type}, the IEC {instance_type}",
                where="--instance-group",
                value=requested,
                fix="pass the instance group that runs the IEC's instance type",
            )
        return group
    matching = [g for g in groups if g.instance_type == instance_type]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        raise fail(
            f"cluster {cluster!r} has no instance group of instance type {instance_type}",
            where="--cluster",
            value=cluster,
            allowed=", ".join(f"{g.name} ({g.instance_type})" for g in groups) or "(none)",
            fix="deploy to an instance type the cluster runs, or add an instance group of it",
        )
    raise fail(
        f"several instance groups of cluster {cluster!r} run {instance_type}",
        where="--instance-group",
        allowed=", ".join(g.name for g in matching),
        fix="pass --instance-group to say which one takes the surge node",
    )


def check_rollout(
    *,
    rendered: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    view: ClusterView,
    groups: Sequence[InstanceGroup],
    cluster: str,
    instance_group: str | None = None,
) -> RolloutCheck:
    """What applying ``rendered`` over ``live`` does (module doc). Raises only for a surge
    that has no instance group to take it."""
    label = _label(rendered)
    if live is None:
        return RolloutCheck(
            action="create",
            changes=(),
            subject=label,
            detail="does not exist yet: applying creates it (no rollout)",
        )
    changes = template_changes(rendered, live)
    if not changes:
        return RolloutCheck(
            action="none",
            changes=(),
            subject=label,
            detail="the pod template is unchanged: no rollout",
        )
    instance_type = str((rendered.get("spec") or {}).get("instanceType"))
    needed = worker_gpus(rendered)
    candidates = [
        n for n in view.nodes if n.instance_type == instance_type and n.ready and n.schedulable
    ]
    roomy = [n for n in candidates if n.free_gpus >= needed]
    changed = ", ".join(changes)
    if roomy:
        best = max(roomy, key=lambda n: (n.free_gpus, n.name))
        return RolloutCheck(
            action="fits",
            changes=changes,
            subject=label,
            detail=f"the pod template changed ({changed}); node {best.name} has "
            f"{best.free_gpus} free {GPU_RESOURCE} for the surge pod ({needed} needed)",
        )
    group = pick_group(
        groups, instance_type=instance_type, requested=instance_group, cluster=cluster
    )
    usage = "; ".join(f"{n.name}: {n.free_gpus} of {n.gpus} free" for n in candidates)
    return RolloutCheck(
        action="surge",
        changes=changes,
        subject=label,
        detail=f"the pod template changed ({changed}) and no Ready node of "
        f"instance type {instance_type} has {needed} free {GPU_RESOURCE} for the surge pod "
        f"({usage or 'no Ready node of that type'})",
        group=group,
    )


def stop_problem(check: RolloutCheck, *, cluster: str, surge_command: str) -> Problem:
    """The refusal of a rollout that needs a surge node: nothing was applied; the fix is the
    command with ``--surge-node`` and what it costs."""
    group = check.group
    assert group is not None  # a surge check names its group
    nodes = f"{group.target_count} node{'s' if group.target_count != 1 else ''} now"
    return Problem(
        message=f"{check.detail}; nothing was applied",
        where=check.subject,
        fix=f"run `{surge_command}`; cost: one more {group.instance_type} node in instance "
        f"group {group.name!r} of cluster {cluster!r} ({nodes}) for the rollout's duration, "
        "until the new pod is Ready and the old pod is gone; the vacated node is then removed",
    )


# -- the surge: preconditions, progress, and which node goes ---------------------------------


def surge_problems(
    group: InstanceGroup, *, cluster_status: str, group_ids: Collection[str], view: ClusterView
) -> list[Problem]:
    """Why raising ``group`` by one now would be unsafe (empty when it is safe)."""
    problems = []
    where = f"instance group {group.name!r}"
    if cluster_status != "InService":
        problems.append(
            Problem(
                message="the cluster is not InService",
                where=where,
                value=cluster_status,
                fix="wait until DescribeCluster reports InService, then re-run",
            )
        )
    if group.status != "InService" or group.scaling or group.target_count != group.current_count:
        problems.append(
            Problem(
                message=f"the group is busy ({group.status}, {group.current_count} of "
                f"{group.target_count} instances)",
                where=where,
                fix="wait until the group is InService at its target count, then re-run",
            )
        )
    if group.target_count < 1:
        problems.append(
            Problem(
                message="the group has no instances to serve from",
                where=where,
                value=group.target_count,
                fix="scale the group up before rolling out to it",
            )
        )
    unnamed = sorted(set(group_ids) - {n.instance_id for n in view.nodes if n.instance_id})
    if unnamed:
        problems.append(
            Problem(
                message="instances of the group have no Kubernetes node named hyperpod-<id>",
                where=where,
                value=unnamed,
                fix="wait until every instance has joined the cluster, then re-run",
            )
        )
    return problems


def new_node(
    view: ClusterView, *, group_ids: Collection[str], before: Collection[str]
) -> NodeView | None:
    """A node of the group that joined since the increase and takes workloads."""
    return next(
        (
            n
            for n in view.nodes
            if n.instance_id in group_ids
            and n.instance_id not in before
            and n.ready
            and n.schedulable
        ),
        None,
    )


def rollout_done(view: ClusterView, *, old_pods: Collection[str], replicas: int) -> bool:
    """Every old pod is gone and ``replicas`` new pods are Ready."""
    if any(p.name in old_pods for p in view.serving):
        return False
    return sum(1 for p in view.serving if p.ready and not p.terminating) >= replicas


def node_to_remove(
    view: ClusterView, *, group_ids: Collection[str], new_ids: Collection[str]
) -> Removal | None:
    """The instance whose removal restores the group's count safely (module doc), or ``None``
    when every node of the group still hosts a Ready serving pod or is its last Ready node."""
    joined = {n.instance_id: n for n in view.nodes if n.instance_id in group_ids}
    for instance in sorted(set(new_ids) - set(joined)):
        return Removal(
            instance_id=instance, node=None, reason="it never joined the Kubernetes cluster"
        )
    ready = [n for n in joined.values() if n.ready]
    candidates = sorted(
        (n for n in joined.values() if n.ready_serving == 0),
        key=lambda n: (len(n.serving), n.instance_id not in new_ids, n.name),
    )
    for node in candidates:
        if node.ready and len(ready) == 1:
            continue  # never the last Ready node
        assert node.instance_id is not None  # joined nodes have one
        pods = len(node.serving)
        reason = "it hosts no serving pod" if not pods else "it hosts no Ready serving pod"
        return Removal(instance_id=node.instance_id, node=node.name, reason=reason)
    return None


def serving_summary(view: ClusterView) -> str:
    """``a on n1 (Ready), b on n2 (not Ready)`` for messages."""
    return (
        ", ".join(
            f"{p.name} on {p.node or 'no node'} ({'Ready' if p.ready else 'not Ready'}"
            f"{', terminating' if p.terminating else ''})"
            for p in view.serving
        )
        or "none"
    )


def rollout_targets() -> list[str]:
    """The targets that render the ``InferenceEndpointConfig`` ``mlcc rollout`` rolls out (their
    ``kinds`` in ``targets/*.json``), in name order."""
    from mlcc_constructs.core.platform.targets import load_target, target_names

    return [n for n in target_names() if ROLLED_OUT in load_target(n).kinds]


def require_rendered_iec(objects: Sequence[Mapping[str, Any]], *, target: str) -> Mapping[str, Any]:
    """The one ``InferenceEndpointConfig`` among the rendered objects."""
    from mlcc_constructs.core.serving.kinds.registry import of_kind

    found = of_kind(objects, ROLLED_OUT)
    if len(found) != 1:
        allowed = rollout_targets()
        raise MlccError(
            Problem(
                message="mlcc rollout rolls out an InferenceEndpointConfig on a HyperPod "
                "cluster; this target renders none",
                where="--target",
                value=target,
                allowed=", ".join(allowed),
                fix=f"pass --target {allowed[0]}" if allowed else "",
            )
        )
    return found[0]
