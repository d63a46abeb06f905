"""Whether the pods of a created HyperPod cluster's deployments tolerate their nodes' taints.

An ``InferenceEndpointConfig``'s workers run on the instance groups of its instance type. The
v1 CRD gives them no tolerations, so they hold only what ``ExtendedResourceToleration`` adds
for the extended resources they request (:mod:`mlcc_constructs.core.platform.hyperpod_taints`).
A ``NoSchedule`` or ``NoExecute`` taint of such a group that none of those tolerates leaves
the IEC Pending after a green deploy: refused at synth, naming the group, the taint and the
deployments. An imported cluster's groups are not known offline, so nothing is checked for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlcc_constructs.core.platform.hyperpod import HyperPodSettings
from mlcc_constructs.core.platform.hyperpod_capacity import HyperPodDemand
from mlcc_constructs.core.platform.hyperpod_taints import (
    blocking_taints,
    extended_resource_tolerations,
)
from mlcc_constructs.core.support.errors import Problem


def toleration_problems(
    settings: HyperPodSettings | None, demands: Sequence[HyperPodDemand]
) -> list[Problem]:
    """One problem per taint of a created group that keeps the pods of some deployment of the
    group's instance type off its nodes (module doc); none for an imported cluster."""
    if settings is None or settings.imported:
        return []
    problems = []
    for index, group in enumerate(settings.groups):
        asking = [d for d in demands if d.instance_type == group.instance_type]
        blocked = {
            d.name: blocking_taints(group.node_taints, extended_resource_tolerations(d.resources))
            for d in asking
        }
        for position, taint in enumerate(group.node_taints):
            stuck = [d for d in asking if taint in blocked[d.name]]
            if not stuck:
                continue
            names = ", ".join(d.name for d in stuck)
            held = sorted(
                {
                    f"{t.key}:{t.effect}"
                    for d in stuck
                    for t in extended_resource_tolerations(d.resources)
                }
            )
            origin = "" if group.taints is not None else " (the default of its instance type)"
            pointer = (
                settings.group_pointer(index, "taints", position)
                if group.taints is not None
                else settings.group_pointer(index)
            )
            problems.append(
                Problem(
                    message=f"instance group {group.name!r} is tainted {taint}{origin}, and the "
                    f"pods of {names} ({group.instance_type}, so they run on it) cannot tolerate "
                    "it: an InferenceEndpointConfig has no tolerations, its workers tolerate only "
                    "what ExtendedResourceToleration adds for the extended resources they request "
                    f"({', '.join(held) or 'none'}), so they would stay Pending",
                    where=settings.where,
                    pointer=pointer,
                    value=str(taint),
                    allowed=", ".join([*held, "any PreferNoSchedule taint", "no taint"]),
                    fix=f"remove the taint from {group.name}'s taints (or make it "
                    f"PreferNoSchedule), or put {names} on a group of {group.instance_type} "
                    "without it",
                )
            )
    return problems
