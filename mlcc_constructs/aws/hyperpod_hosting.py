"""The deployments a created HyperPod cluster serves, checked against its instance groups where
they are added (``HyperPodCluster.host``, which ``ServedModel`` calls for a deployment the
cluster's operator serves), so a team composing the constructs gets the checks the app gets:

* an instance group of the deployment's instance type
  (:func:`~mlcc_constructs.core.platform.hyperpod.coverage_problems`);
* taints its workers tolerate
  (:func:`~mlcc_constructs.core.platform.hyperpod_tolerations.toleration_problems`);
* GPUs for every deployment at its most
  (:func:`~mlcc_constructs.core.platform.hyperpod_capacity.capacity_problems`).

Each problem is raised where the deployment is added, all of that deployment's at once; the
surge headroom left for rollouts is said once all are added (an info annotation on the cluster
at synth, which ``cdk synth`` and ``cdk deploy`` print).
"""

from __future__ import annotations

from collections.abc import Sequence

import jsii
from aws_cdk import Annotations, Aspects, IAspect
from constructs import Construct, IConstruct

from mlcc_constructs.core.platform.hyperpod import HyperPodSettings, coverage_problems
from mlcc_constructs.core.platform.hyperpod_capacity import (
    HyperPodDemand,
    capacity_problems,
    surge_headroom,
)
from mlcc_constructs.core.platform.hyperpod_tolerations import toleration_problems
from mlcc_constructs.core.serving.cluster_fit import hyperpod_demand
from mlcc_constructs.core.serving.identity import DeploymentKey, declared
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import raise_if_any


class HostedDeployments:
    """The deployments on one created HyperPod cluster (module doc): ``demands`` by
    deployment, in the order they were added."""

    def __init__(self, owner: Construct, settings: HyperPodSettings) -> None:
        self._owner = owner
        self._settings = settings
        self.demands: dict[DeploymentKey, HyperPodDemand] = {}
        self._noted = False

    def add(self, deployment: PreparedDeployment, *, where: str) -> None:
        """Check ``deployment`` against the groups (with every deployment added before) and keep
        it; adding one deployment twice checks it once. Raises with all its problems."""
        self.add_all([(deployment, where)])

    def add_all(self, deployments: Sequence[tuple[PreparedDeployment, str]]) -> None:
        """:meth:`add` of several deployments (each with where it is declared) at once: every
        problem of every one of them is raised together."""
        new: dict[DeploymentKey, HyperPodDemand] = {}
        for deployment, where in deployments:
            key = declared(where, deployment).key
            demand = hyperpod_demand(deployment, where=where)
            if demand is not None and key not in self.demands:
                new.setdefault(key, demand)
        if not new:
            return
        settings, added = self._settings, list(new.values())
        raise_if_any(
            [
                *coverage_problems(settings, [(d.where, d.instance_type) for d in added]),
                *toleration_problems(settings, added),
                *capacity_problems(settings, [*self.demands.values(), *added]),
            ]
        )
        self.demands.update(new)
        if not self._noted:  # the headroom is said once, of every deployment, at synth
            Aspects.of(self._owner).add(_SurgeNotes(self._owner, self))
            self._noted = True

    def surge_notes(self) -> list[str]:
        """What each instance type has left for a rollout's surge pod."""
        return surge_headroom(self._settings, list(self.demands.values()))


@jsii.implements(IAspect)
class _SurgeNotes:
    """Adds the surge headroom notes to the cluster once, when the app is synthesised."""

    def __init__(self, owner: Construct, hosted: HostedDeployments) -> None:
        self._owner = owner
        self._hosted = hosted

    def visit(self, node: IConstruct) -> None:
        if node.node.path != self._owner.node.path:
            return
        for note in self._hosted.surge_notes():
            Annotations.of(self._owner).add_info(note)
