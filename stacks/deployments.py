"""The app's deployments: cdk.json ``reference_deployments`` (the ``mlcc render -f`` spec
schema), each prepared once. ``dist/`` (app.py), the GPU NodePool and the IngressClasses
(eks-cluster stack) and the serving stacks all read this one list.

The deployments are prepared before the cluster exists (they size its GPU NodePool), so their
NetworkPolicies admit the load balancers from CIDRs both sides compute from one input: the
app's availability zones (:func:`load_balancer_cidrs`, the load balancer subnets of the VPC the
cluster creates). ``app.py`` checks that the cluster's subnets have exactly those CIDRs. Their
autoscalers query the cluster's Prometheus workspace, which exists only once the cluster stack
does: its query URL reaches them as a lazy value (:func:`cluster_query_url`) that ``app.py``
fills in (:func:`set_cluster_query_url`), unless cdk.json gives ``prometheus_query_url``."""

from __future__ import annotations

import weakref

import aws_cdk as cdk
import jsii

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE
from mlcc_constructs.core.platform.context_values import context_source, decode_context
from mlcc_constructs.core.platform.hyperpod_capacity import HyperPodDemand
from mlcc_constructs.core.platform.image_cache import ecr_registry
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.platform.load_balancing import reference_cidrs
from mlcc_constructs.core.serving.kinds.registry import requirement
from mlcc_constructs.core.serving.spec.app_deployments import (
    CONTEXT_KEY,
    AppDeployment,
    prepare_deployments,
    prepare_labelled,
)
from mlcc_constructs.core.serving.spec.files import load_spec_documents
from mlcc_constructs.core.support.errors import fail
from stacks.app_context import environment_from_context

FILE_KEY = "deployments_file"
"""cdk.json / ``-c`` key: a spec list file (``mlcc render -f`` format) whose deployments replace
cdk.json's ``reference_deployments``, e.g. ``examples/reference.yaml``."""
QUERY_URL_KEY = "prometheus_query_url"
"""cdk.json / ``-c`` key: a Prometheus workspace URL in place of the app's cluster's."""
QUERY_URL_PLACEHOLDER = "${MLCC_PROMETHEUS_QUERY_URL}"
"""What dist/ holds where the cluster's query URL goes, when cdk.json names none."""

_CACHE: weakref.WeakKeyDictionary[cdk.App, tuple[AppDeployment, ...]] = weakref.WeakKeyDictionary()
_QUERY_URLS: weakref.WeakKeyDictionary[cdk.App, tuple[str, list[str | None]]] = (
    weakref.WeakKeyDictionary()
)


@jsii.implements(cdk.IStableStringProducer)
class _ClusterQueryUrl:
    """Produces the cluster's query URL once :func:`set_cluster_query_url` gave it."""

    def __init__(self, given: list[str | None]) -> None:
        self._given = given

    def produce(self) -> str | None:
        if not self._given or self._given[0] is None:
            raise fail(
                "an autoscaled deployment needs the cluster's Prometheus workspace, and the "
                "app's cluster has none",
                where="cdk.json:/context",
                pointer=f"/{QUERY_URL_KEY}",
                fix=f"keep the cluster's scaling metrics on, or set {QUERY_URL_KEY}",
            )
        return self._given[0]


def cluster_query_url(app: cdk.App) -> str:
    """The Prometheus query URL the app's deployments get: cdk.json's ``prometheus_query_url``,
    else a lazy value the cluster's URL fills in at synth (one per app)."""
    given = app.node.try_get_context(QUERY_URL_KEY)
    if given:
        return str(given)
    if app not in _QUERY_URLS:
        slot: list[str | None] = []
        _QUERY_URLS[app] = (cdk.Lazy.string(_ClusterQueryUrl(slot)), slot)
    return _QUERY_URLS[app][0]


def set_cluster_query_url(app: cdk.App, url: str | None) -> None:
    """Give the app's deployments the cluster's query URL (``None``: it has no workspace)."""
    if app in _QUERY_URLS:
        _QUERY_URLS[app][1][:] = [url]


def dist_text(app: cdk.App, text: str) -> str:
    """``text`` (a dist/ file) with the cluster's lazy query URL as :data:`QUERY_URL_PLACEHOLDER`:
    GitOps substitutes the workspace URL (or cdk.json names it and dist/ holds it)."""
    if app in _QUERY_URLS:
        text = text.replace(_QUERY_URLS[app][0], QUERY_URL_PLACEHOLDER)
    return text


def app_deployments(app: cdk.App) -> tuple[AppDeployment, ...]:
    """Every deployment of ``app``'s context, prepared once per app; all problems at once."""
    if app in _CACHE:
        return _CACHE[app]
    defaults = {key: app.node.try_get_context(key) for key in ("account", "region", "profile")}
    file = app.node.try_get_context(FILE_KEY)
    if file:  # a spec list file replaces cdk.json's list (the reference set: README)
        _CACHE[app] = result = prepare_labelled(
            load_spec_documents(str(file)),
            defaults=defaults,
            load_balancer_cidrs=load_balancer_cidrs(app),
            prometheus_query_url=cluster_query_url(app),
            image_registry=image_registry(app),
        )
        return result
    raw = app.node.try_get_context(CONTEXT_KEY)
    entries = decode_context(raw, CONTEXT_KEY) or []
    # "-c reference_deployments" for the CLI's text, else cdk.json's place of the list
    where = context_source(raw, CONTEXT_KEY, otherwise=f"cdk.json:/context/{CONTEXT_KEY}")
    if not isinstance(entries, list):
        raise fail(
            f"{CONTEXT_KEY} must be a list of deployment entries",
            where=where,
            value=raw,
            allowed="a JSON list of entries, as in the mlcc render -f spec",
            fix=f"edit {CONTEXT_KEY} in cdk.json, or pass -c {CONTEXT_KEY}='[{{...}}]'",
        )
    _CACHE[app] = result = prepare_deployments(
        entries,
        where=where,
        defaults=defaults,
        load_balancer_cidrs=load_balancer_cidrs(app),
        prometheus_query_url=cluster_query_url(app),
        image_registry=image_registry(app),
    )
    return result


def image_registry(app: cdk.App) -> str:
    """The registry whose pull through cache the app's cluster stack creates (its account and
    region): the deployments' images of a cached upstream are pulled through it."""
    environment = environment_from_context(app)
    return ecr_registry(environment.account, environment.region)


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
    """``(max replicas, GPUs per replica)`` of each deployment whose pods run on the cluster's
    own GPU nodes (what the GPU NodePool's limit covers): a replica over several nodes is a
    LeaderWorkerSet group of one pod per node."""
    return tuple(
        (d.prepared.max_replicas, _gpus_per_pod(d) * d.prepared.resolution.nodes)
        for d in deployments
        if d.prepared.target.cluster_gpu_nodes
    )


def _gpus_per_pod(deployment: AppDeployment) -> int:
    return int(deployment.prepared.container.requests[GPU_RESOURCE])


def hyperpod_demand(deployments: tuple[AppDeployment, ...]) -> list[HyperPodDemand]:
    """What each deployment with an object the HyperPod inference operator serves (its pods run
    on the HyperPod cluster's instance groups) asks of those groups."""
    return [
        HyperPodDemand(
            where=d.where,
            name=d.prepared.names.base,
            instance_type=d.prepared.resolution.instance.name,
            max_replicas=d.prepared.max_replicas,
            gpus_per_pod=_gpus_per_pod(d),
            resources=tuple(sorted(d.prepared.container.requests)),
        )
        for d in deployments
        if any(requirement(entry.object) == ADDON_NAME for entry in d.prepared.objects)
    ]


def wants_inference_gateway(deployments: tuple[AppDeployment, ...]) -> bool:
    """Some deployment asks for the HyperPod Inference Gateway (``endpoint.gateway``): the
    inference-operator stack turns it on."""
    return any(d.prepared.spec.endpoint.gateway is not None for d in deployments)
