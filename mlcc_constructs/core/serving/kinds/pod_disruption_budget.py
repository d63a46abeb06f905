"""``PodDisruptionBudget`` (``policy/v1``): how many of a deployment's pods a voluntary
disruption (a node drain for drift or consolidation, ``kubectl drain``) may evict at once.

Rendered for a deployment of two replicas or more (its ``min_replicas``): one pod at a time,
and a pod that is not Ready may always be evicted
(:func:`~mlcc_constructs.core.serving.prepare.disruption.disruption_budget`, which says why,
and why one replica gets no budget). A budget does not stop a node's expiry; it makes the
eviction wait for the other replicas. For a LeaderWorkerSet it selects every pod of every group,
one group at a time (the same module says why).
"""

from __future__ import annotations

from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, exists
from mlcc_constructs.core.serving.prepare.disruption import (
    disruption_budget,
    needs_disruption_budget,
)
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import pod_selector


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's PodDisruptionBudget, or none for a single replica (module doc)."""
    if not needs_disruption_budget(facts.min_replicas):
        return []
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(facts, facts.names.base),
        "spec": disruption_budget(pod_selector(facts.names)),
    }
    return [RenderedObject("PodDisruptionBudget", budget)]


KIND = Kind(
    kind="PodDisruptionBudget",
    api_version="policy/v1",
    plural="poddisruptionbudgets",
    namespaced=True,
    # Before the Deployment: the budget guards the pods from the first one on.
    apply_phase=45,
    validate=core_object_problems,
    readiness=exists,
    render=render,
)
