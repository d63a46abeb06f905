"""Whether a prepared deployment fits the cluster it is applied to, checked by the constructs that
apply it (``ServedModel``), so a team composing them gets the same checks as the app.

**Load balancer subnets.** A deployment's NetworkPolicy admits its load balancer from CIDRs fixed
when it was prepared (``RenderContext.load_balancer_cidrs``); the cluster knows where its load
balancers really live (``IServingCluster.load_balancer_cidrs``). Prepared with other CIDRs, the
load balancer cannot reach the pods, and the deploy still goes green (the readiness wait reads
the pods, not the load balancer's targets). A cluster that cannot say (a bare ``eks.ICluster``,
an imported cluster without ``load_balancer_cidrs``) is refused for a deployment with a load
balancer, naming the field that would say it.

**GPU capacity.** A deployment whose pods run on a cluster's own GPU nodes needs a node pool
offering its instance families (``ServingCluster``'s ``gpu_instance_families``/``types``), else
its pods stay Pending. One whose pods run on a HyperPod cluster's instance groups asks them for
its GPUs (:func:`hyperpod_demand`; ``HyperPodCluster`` checks the groups hold them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE
from mlcc_constructs.core.platform.hyperpod_capacity import HyperPodDemand
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.serving.kinds.registry import requirement
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import Problem


def needs_load_balancer_cidrs(deployment: PreparedDeployment) -> bool:
    """Whether the deployment's NetworkPolicy admits a load balancer of the cluster (an eks
    endpoint with a scheme, its Ingress the cluster's)."""
    return deployment.target.cluster_gpu_nodes and deployment.spec.endpoint.scheme != "none"


def load_balancer_problems(
    deployment: PreparedDeployment,
    cluster_cidrs: Mapping[str, Sequence[str]] | None,
    *,
    where: str,
    cidrs_field: str,
) -> list[Problem]:
    """Why the deployment's NetworkPolicy would not admit the cluster's load balancers (module
    doc). ``cluster_cidrs``: the cluster's load balancer CIDRs by scheme, ``None`` when the
    cluster cannot say (a bare ``eks.ICluster``); ``where``: the construct applying it;
    ``cidrs_field``: where the cluster's CIDRs are given (for the fix)."""
    if not needs_load_balancer_cidrs(deployment):
        return []
    scheme = deployment.spec.endpoint.scheme
    mine = tuple(deployment.load_balancer_cidrs)
    name = f"{deployment.spec.namespace}/{deployment.names.base}"
    if cluster_cidrs is None:
        return [
            Problem(
                message=f"deployment {name} has an {scheme} load balancer, and an eks.ICluster "
                "does not say which subnets its load balancers live in: the NetworkPolicy "
                f"would admit {', '.join(mine) or 'nothing'}, which may not be them",
                where=where,
                pointer="/cluster",
                allowed="an IServingCluster (ServingCluster, or "
                "ServingCluster.from_cluster_attributes(..., load_balancer_cidrs=...))",
                fix="pass the cluster as an IServingCluster with its load balancer subnets' "
                "CIDRs, or give the deployment endpoint.scheme: none",
            )
        ]
    theirs = tuple(cluster_cidrs.get(scheme, ()))
    if not theirs:
        return [
            Problem(
                message=f"deployment {name} has an {scheme} load balancer, and the cluster "
                f"knows no {scheme} load balancer subnets: its NetworkPolicy could admit none",
                where=where,
                pointer="/cluster",
                value=scheme,
                allowed=", ".join(sorted(s for s, c in cluster_cidrs.items() if c)) or "none",
                fix=f"give the cluster's {scheme} load balancer subnets' CIDRs ({cidrs_field}), "
                "or change the deployment's endpoint.scheme",
            )
        ]
    if mine == theirs:
        return []
    return [
        Problem(
            message=f"deployment {name}'s NetworkPolicy would admit its {scheme} load balancers "
            f"from {', '.join(mine) or 'nowhere'}, and the cluster's {scheme} load balancer "
            f"subnets are {', '.join(theirs)}: the load balancer could not reach the pods",
            where=where,
            pointer="/deployment",
            value=", ".join(mine),
            allowed=", ".join(theirs),
            fix="prepare the deployment with the cluster's CIDRs: "
            "RenderContext(load_balancer_cidrs=<cluster>.load_balancer_cidrs, ...)",
        )
    ]


def gpu_pool_problems(
    deployment: PreparedDeployment,
    offered: Sequence[str] | None,
    *,
    where: str,
    pool_field: str,
) -> list[Problem]:
    """Why the cluster's GPU node pool could not run the deployment's pods (module doc).
    ``offered``: the instance families the cluster's pool offers, ``None`` when not known (a
    team's cluster); ``pool_field``: where they are given (for the fix)."""
    if offered is None or not deployment.target.cluster_gpu_nodes:
        return []
    pool = set(offered)
    missing = [
        instance.name for instance in deployment.instance_types if instance.family not in pool
    ]
    if not missing:
        return []
    name = f"{deployment.spec.namespace}/{deployment.names.base}"
    return [
        Problem(
            message=f"deployment {name} runs on {', '.join(missing)}, and the cluster's GPU node "
            f"pool offers {', '.join(sorted(pool)) or 'no GPU instances'}: its pods would stay "
            "Pending",
            where=where,
            pointer="/cluster",
            value=", ".join(missing),
            allowed=", ".join(sorted(pool)) or "none",
            fix=f"add the instance families to the cluster's pool ({pool_field}), or change "
            "the deployment's instance_type",
        )
    ]


def hyperpod_demand(deployment: PreparedDeployment, *, where: str) -> HyperPodDemand | None:
    """What the deployment asks of a HyperPod cluster's instance groups (its pods run there when
    an object of it is served by the HyperPod inference operator), or ``None``. ``where``: where
    it is declared, what its problems name."""
    if not any(requirement(entry.object) == ADDON_NAME for entry in deployment.objects):
        return None
    return HyperPodDemand(
        where=where,
        name=deployment.names.base,
        instance_type=deployment.resolution.instance.name,
        max_replicas=deployment.max_replicas,
        gpus_per_pod=int(deployment.container.requests[GPU_RESOURCE]),
        resources=tuple(sorted(deployment.container.requests)),
    )
