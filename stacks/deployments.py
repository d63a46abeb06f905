"""The app's deployments: cdk.json ``reference_deployments`` (the ``mlcc render -f`` spec
schema), each prepared once. ``dist/`` (app.py), the GPU NodePool and the IngressClasses
(eks-cluster stack) and the serving stacks all read this one list.

The deployments are prepared before the cluster exists (they size its GPU NodePool), so their
NetworkPolicies admit the load balancers from CIDRs both sides compute from one input: the
app's availability zones (:func:`load_balancer_cidrs`, the load balancer subnets of the VPC the
cluster creates). ``app.py`` checks that the cluster's subnets have exactly those CIDRs."""

from __future__ import annotations

import weakref

import aws_cdk as cdk

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.platform.load_balancing import reference_cidrs
from mlcc_constructs.core.serving.kinds.registry import requirement
from mlcc_constructs.core.serving.spec.app_deployments import (
    CONTEXT_KEY,
    AppDeployment,
    prepare_deployments,
)
from stacks.app_context import environment_from_context

_CACHE: weakref.WeakKeyDictionary[cdk.App, tuple[AppDeployment, ...]] = weakref.WeakKeyDictionary()


def app_deployments(app: cdk.App) -> tuple[AppDeployment, ...]:
    """Every deployment of ``app``'s context, prepared once per app; all problems at once."""
    if app in _CACHE:
        return _CACHE[app]
    defaults = {key: app.node.try_get_context(key) for key in ("account", "region", "profile")}
    entries = app.node.try_get_context(CONTEXT_KEY) or []
    _CACHE[app] = result = prepare_deployments(
        entries, defaults=defaults, load_balancer_cidrs=load_balancer_cidrs(app)
    )
    return result


def load_balancer_cidrs(app: cdk.App) -> dict[str, tuple[str, ...]]:
    """The load balancer subnets' CIDRs of the cluster's VPC, by scheme: one subnet per zone of
    the app's ``availability_zones`` (what the eks-cluster stack creates)."""
    zones = environment_from_context(app).availability_zones
    return {str(scheme): cidrs for scheme, cidrs in reference_cidrs(len(zones)).items()}


def gpu_instance_types(deployments: tuple[AppDeployment, ...]) -> tuple[str, ...]:
    """The instance types of the deployments whose pods run on the cluster's own nodes, their
    fallback ``instance_types`` included (the GPU NodePool offers every family of them)."""
    return tuple(
        instance.name
        for d in deployments
        if d.prepared.target.cluster_gpu_nodes
        for instance in d.prepared.instance_types
    )


def gpu_demand(deployments: tuple[AppDeployment, ...]) -> tuple[tuple[int, int], ...]:
    """``(max replicas, GPUs per pod)`` of each deployment whose pods run on the cluster's own
    GPU nodes (what the GPU NodePool's limit covers)."""
    return tuple(
        (d.prepared.max_replicas, int(d.prepared.container.requests[GPU_RESOURCE]))
        for d in deployments
        if d.prepared.target.cluster_gpu_nodes
    )


def hyperpod_needs(deployments: tuple[AppDeployment, ...]) -> list[tuple[str, str]]:
    """``(where declared, instance type)`` of each deployment with an object the HyperPod
    inference operator serves (its pods run on the HyperPod cluster's instance groups)."""
    return [
        (d.where, d.prepared.resolution.instance.name)
        for d in deployments
        if any(requirement(entry.object) == ADDON_NAME for entry in d.prepared.objects)
    ]


def wants_inference_gateway(deployments: tuple[AppDeployment, ...]) -> bool:
    """Some deployment asks for the HyperPod Inference Gateway (``endpoint.gateway``): the
    inference-operator stack turns it on."""
    return any(d.prepared.spec.endpoint.gateway is not None for d in deployments)
