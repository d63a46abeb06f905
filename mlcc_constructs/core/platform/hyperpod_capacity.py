"""Whether a created HyperPod cluster can hold its deployments, checked at synth.

Per instance type, the GPUs the hyperpod-eks deployments ask for at most (each one's
``max_replicas`` x GPUs per pod) must fit the GPUs of the cluster's instance groups of that type
(their ``count`` x the type's GPUs, from the instance catalog). A deployment that does not fit
would leave an ``InferenceEndpointConfig`` Pending for ever, after a green deploy of the cluster.

What is left over is the rollout's surge headroom: the operator replaces a worker by starting
the new one first, so a rollout needs a free pod's worth of GPUs of that type. Without it the
rollout waits for a node; ``mlcc rollout apply --surge-node`` adds one for the rollout and
removes it after (README, *Rolling out on HyperPod*). An imported cluster's groups are not known
offline, so nothing is checked for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.platform.hyperpod import GROUPS_KEY, HyperPodSettings
from mlcc_constructs.core.support.errors import Problem, json_pointer


@dataclass(frozen=True, kw_only=True)
class HyperPodDemand:
    """What one hyperpod-eks deployment asks of the cluster.

    ``where``: where it is declared (``cdk.json:/context/reference_deployments/<i>``).
    ``name``: the deployment's name.
    ``instance_type``: its SageMaker instance type.
    ``max_replicas``: the most replicas it runs (its autoscaling maximum, else ``replicas``).
    ``gpus_per_pod``: the GPUs one replica takes.
    """

    where: str
    name: str
    instance_type: str
    max_replicas: int
    gpus_per_pod: int

    @property
    def gpus(self) -> int:
        return self.max_replicas * self.gpus_per_pod


def capacity_problems(
    settings: HyperPodSettings | None, demands: Sequence[HyperPodDemand]
) -> list[Problem]:
    """One problem per instance type whose deployments ask for more GPUs than the created
    cluster's groups of that type have (module doc); none for an imported cluster."""
    if settings is None or settings.imported:
        return []
    problems = []
    for instance_type in sorted({d.instance_type for d in demands}):
        groups = [
            (index, group)
            for index, group in enumerate(settings.groups)
            if group.instance_type == instance_type
        ]
        if not groups:
            continue  # coverage_problems names a deployment without a group of its type
        asking = [d for d in demands if d.instance_type == instance_type]
        per_node = lookup(instance_type).gpus
        have = sum(group.count for _, group in groups) * per_node
        want = sum(d.gpus for d in asking)
        if want <= have:
            continue
        index, group = groups[0]
        nodes = -(-want // per_node)
        problems.append(
            Problem(
                message=f"the {instance_type} instance groups have {have} GPUs "
                f"({sum(g.count for _, g in groups)} x {per_node}), and the deployments on "
                f"them ask for {want} at most ("
                + ", ".join(f"{d.name} {d.max_replicas} x {d.gpus_per_pod}" for d in asking)
                + "): a replica beyond the capacity stays Pending",
                where="cdk.json",
                pointer=json_pointer("context", GROUPS_KEY, index, "count"),
                value=group.count,
                allowed=f"at least {nodes - sum(g.count for _, g in groups) + group.count} "
                f"for this group",
                fix=f"raise {group.name}'s count, or lower the deployments' replicas or "
                "max_replicas",
            )
        )
    return problems


def surge_headroom(
    settings: HyperPodSettings | None, demands: Sequence[HyperPodDemand]
) -> list[str]:
    """One note per instance type of a created cluster: the GPUs left once its deployments run
    at most, and whether a rollout can start its new pod there (module doc)."""
    if settings is None or settings.imported:
        return []
    notes = []
    for instance_type in sorted({d.instance_type for d in demands}):
        nodes = sum(g.count for g in settings.groups if g.instance_type == instance_type)
        if not nodes:
            continue
        asking = [d for d in demands if d.instance_type == instance_type]
        free = nodes * lookup(instance_type).gpus - sum(d.gpus for d in asking)
        largest = max(d.gpus_per_pod for d in asking)
        if free >= largest:
            notes.append(
                f"HyperPod {instance_type}: {free} GPUs free at the deployments' most, room for "
                "a rollout's surge pod"
            )
        else:
            notes.append(
                f"HyperPod {instance_type}: {max(free, 0)} GPUs free at the deployments' most, "
                f"fewer than a pod's {largest}: a rollout waits for a node; roll out with "
                "`mlcc rollout apply -f SPEC --cluster NAME --surge-node`"
            )
    return notes
