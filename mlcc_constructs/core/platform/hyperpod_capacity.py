"""Whether a created HyperPod cluster can hold its deployments, checked at synth.

Per instance type, the GPUs the hyperpod-eks deployments ask for at most (each one's
``max_replicas`` x GPUs per pod) must fit the GPUs of the cluster's instance groups of that type
(their ``count`` x the type's GPUs, from the instance catalog). A deployment that does not fit
would leave an ``InferenceEndpointConfig`` Pending for ever, after a green deploy of the cluster.

What is left over is the rollout's surge headroom: the operator replaces a worker by starting
the new one first, so a rollout needs a free pod's worth of GPUs of that type. Without it the
rollout waits for a node; ``mlcc rollout apply --surge-node`` adds one for the rollout and
removes it after (docs/guides/hyperpod.md, *Rollouts*). An imported cluster's groups are not known
offline, so nothing is checked for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE
from mlcc_constructs.core.platform.hyperpod import HyperPodSettings, InstanceGroup
from mlcc_constructs.core.support.errors import Problem


@dataclass(frozen=True, kw_only=True)
class HyperPodDemand:
    """What one hyperpod-eks deployment asks of the cluster.

    ``where``: where it is declared (``cdk.json:/context/reference_deployments/<i>``).
    ``name``: the deployment's name.
    ``instance_type``: its SageMaker instance type.
    ``max_replicas``: the most replicas it runs (its autoscaling maximum, else ``replicas``).
    ``gpus_per_pod``: the GPUs one replica takes.
    ``resources``: the names of the resources a replica's worker requests (what its pods
    tolerate follows from them, :mod:`mlcc_constructs.core.platform.hyperpod_tolerations`);
    default ``("nvidia.com/gpu",)``.
    """

    where: str
    name: str
    instance_type: str
    max_replicas: int
    gpus_per_pod: int
    resources: tuple[str, ...] = (GPU_RESOURCE,)

    @property
    def gpus(self) -> int:
        return self.max_replicas * self.gpus_per_pod


@dataclass(frozen=True, kw_only=True)
class _TypeCapacity:
    """The created groups of one instance type (with their indexes) and the deployments on
    them."""

    instance_type: str
    groups: tuple[tuple[int, InstanceGroup], ...]
    asking: tuple[HyperPodDemand, ...]

    @property
    def per_node(self) -> int:
        """The GPUs of one node: the catalog entry the groups carry (one type, at least one
        group)."""
        return self.groups[0][1].instance.gpus

    @property
    def nodes(self) -> int:
        return sum(group.count for _, group in self.groups)

    @property
    def have(self) -> int:
        return self.nodes * self.per_node

    @property
    def want(self) -> int:
        """The GPUs the deployments ask for at most."""
        return sum(d.gpus for d in self.asking)

    @property
    def free(self) -> int:
        """GPUs left once the deployments run at most (negative: they do not fit)."""
        return self.have - self.want


def _by_type(
    settings: HyperPodSettings | None, demands: Sequence[HyperPodDemand]
) -> list[_TypeCapacity]:
    """Per instance type the deployments ask for, the created groups of it; none for an
    imported cluster, and no entry for a type without a group (``coverage_problems`` names
    those deployments)."""
    if settings is None or settings.imported:
        return []
    found = []
    for instance_type in sorted({d.instance_type for d in demands}):
        groups = tuple(
            (index, group)
            for index, group in enumerate(settings.groups)
            if group.instance_type == instance_type
        )
        if groups:
            asking = tuple(d for d in demands if d.instance_type == instance_type)
            found.append(_TypeCapacity(instance_type=instance_type, groups=groups, asking=asking))
    return found


def capacity_problems(
    settings: HyperPodSettings | None, demands: Sequence[HyperPodDemand]
) -> list[Problem]:
    """One problem per instance type whose deployments ask for more GPUs than the created
    cluster's groups of that type have (module doc); none for an imported cluster."""
    if settings is None:
        return []
    problems = []
    for capacity in _by_type(settings, demands):
        if capacity.free >= 0:
            continue
        per_node, nodes = capacity.per_node, capacity.nodes
        index, group = capacity.groups[0]
        needed = -(-capacity.want // per_node)
        problems.append(
            Problem(
                message=f"the {capacity.instance_type} instance groups have "
                f"{capacity.have} GPUs ({nodes} x {per_node}), and the deployments on them "
                f"ask for {capacity.want} at most ("
                + ", ".join(
                    f"{d.name} {d.max_replicas} x {d.gpus_per_pod}" for d in capacity.asking
                )
                + "): a replica beyond the capacity stays Pending",
                where=settings.where,
                pointer=settings.group_pointer(index, "count"),
                value=group.count,
                allowed=f"at least {needed - nodes + group.count} for this group",
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
    notes = []
    for capacity in _by_type(settings, demands):
        largest = max(d.gpus_per_pod for d in capacity.asking)
        prefix = (
            f"HyperPod {capacity.instance_type}: {max(capacity.free, 0)} GPUs free at the "
            "deployments' most"
        )
        if capacity.free >= largest:
            notes.append(f"{prefix}, room for a rollout's surge pod")
        else:
            notes.append(
                f"{prefix}, fewer than a pod's {largest}: a rollout waits for a node; roll out "
                "with `mlcc rollout apply -f SPEC --cluster NAME --surge-node`"
            )
    return notes
