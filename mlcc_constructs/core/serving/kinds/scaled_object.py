"""``ScaledObject`` (``keda.sh/v1alpha1``): an autoscaled eks deployment's replica count, driven
by its engine's metric in Amazon Managed Service for Prometheus. Rendered only with
``autoscaling``; KEDA's HorizontalPodAutoscaler then owns the Deployment's ``replicas``, which
the Deployment leaves out (every apply would reset it otherwise).

Fields (KEDA 2.21, keda.sh/docs/2.21/reference/scaledobject-spec; the same in 2.22):

* ``scaleTargetRef``: the deployment's Deployment.
* ``minReplicaCount`` / ``maxReplicaCount``: ``autoscaling.min_replicas`` / ``max_replicas``.
* ``pollingInterval``: ``autoscaling.polling_seconds``.
* ``cooldownPeriod`` applies only to the last step to zero ("the period to wait after the last
  trigger reported active before scaling the resource back to 0"); between replicas the HPA's
  scale-down stabilization window decides (``advanced.horizontalPodAutoscalerConfig.behavior.
  scaleDown.stabilizationWindowSeconds``, Kubernetes' default 300 s). Both are
  ``autoscaling.cooldown_seconds`` (the window's cap, 3600 s, bounds the second).
* ``idleReplicaCount: 0`` with ``scale_to_zero``: KEDA scales to zero when no trigger is active
  and straight back to ``minReplicaCount`` on activity ("only 0 is supported", and it must be
  below ``minReplicaCount``).

Triggers:

* ``queue-depth`` (``prometheus``): ``sum(<metric>{<model label>="<served name>", namespace=
  "<ns>"})`` against ``RenderContext.prometheus_query_url`` (the workspace's query endpoint),
  ``threshold`` the target per replica (``metricType`` AverageValue, KEDA's default: the HPA
  divides the sum by the replicas), ``awsRegion`` for SigV4, and ``authenticationRef`` the
  cluster's ``ClusterTriggerAuthentication`` ``mlcc-aws`` (``podIdentity.provider: aws``;
  keda.sh/docs/2.21/scalers/prometheus, "Amazon Managed Service for Prometheus").
* With ``scale_to_zero``, two ``aws-cloudwatch`` triggers on the deployment's load balancer,
  which exist while no pod runs (no pod is left to report a queue): ``requests``
  (``RequestCount``: keeps a serving deployment awake while clients call it, even when nothing
  waits) and ``wake`` (``HTTPCode_ELB_503_Count``: the ALB counts a request it could route to no
  target as a 503, not in RequestCount). Each is a CloudWatch Metrics Insights ``expression``
  selecting the load balancer by its ``MlccDeployment`` tag (``WHERE tag.<key> = '<value>'``: the
  CloudWatch ``LoadBalancer`` dimension holds an id the ALB gets only when Auto Mode creates it),
  active above 0 (``activationTargetMetricValue``), with a ``targetMetricValue`` so high that it
  never asks for more than one replica: the queue depth scales. The Ingress carries the tag
  (``alb.ingress.kubernetes.io/tags``). Not verified on a cluster: see
  docs/operations/not-verified.md, *Scaling and disruption*.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.keda import (
    API_VERSION,
    LOAD_BALANCER_TAG,
    NAMESPACE_LABEL,
    TRIGGER_AUTHENTICATION,
    TRIGGER_AUTHENTICATION_KIND,
)
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, ready_condition
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.support.errors import Problem

RULES = CrdRules(file="scaledobjects.keda.sh.v1alpha1.json")
MAX_STABILIZATION_S = 3600
"""The HPA's largest scale-down stabilization window (autoscaling/v2 HPAScalingRules)."""
WAKE_WINDOW_S = 60
"""The CloudWatch period of the wake-up triggers: ALB metrics are per minute."""
WAKE_COLLECTION_S = 120
"""How far back the wake-up triggers look (two periods: the last minute may not be in yet)."""
NEVER_SCALES = "1000000"
"""A wake-up trigger's target per replica: far above any request count, so it asks for one
replica at most and the queue-depth trigger alone scales."""
ALB_NAMESPACE = "AWS/ApplicationELB"
WAKE_METRICS = (("requests", "RequestCount"), ("wake", "HTTPCode_ELB_503_Count"))


def load_balancer_tag(facts: DeploymentFacts) -> tuple[str, str]:
    """The tag that marks the deployment's load balancer for its wake-up triggers."""
    return LOAD_BALANCER_TAG, f"{facts.names.namespace}.{facts.names.base}"


def prometheus_query(facts: DeploymentFacts, *, namespace_label: bool) -> str:
    """The PromQL of the deployment's scaling metric, summed over its pods."""
    metric = facts.scaling_metric
    assert metric is not None  # checked: an autoscaled deployment has one
    selectors = []
    if metric.model_label is not None:
        selectors.append(f"{metric.model_label}={json.dumps(facts.served_name)}")
    if namespace_label:
        selectors.append(f"{NAMESPACE_LABEL}={json.dumps(facts.names.namespace)}")
    return f"sum({metric.name}{{{','.join(selectors)}}})"


def scale_target(facts: DeploymentFacts) -> dict[str, str]:
    """The workload KEDA's HPA scales: the Deployment, or over several nodes the
    LeaderWorkerSet (its scale subresource counts whole groups)."""
    from mlcc_constructs.core.serving.kinds.registry import kind_named

    name = facts.target.workload_for(facts.resolution.nodes) or "Deployment"
    kind = kind_named(name)
    return {"apiVersion": kind.api_version, "kind": kind.kind, "name": facts.names.base}


def number(value: float) -> str:
    """A KEDA metadata number: ``5`` for 5.0, else the shortest float text."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def check(facts: DeploymentFacts) -> tuple[list[Problem], list[str]]:
    """What an eks autoscaler needs from the render context and the endpoint."""
    autoscaling = facts.spec.scaling.autoscaling
    if autoscaling is None:
        return [], []
    problems = []
    if facts.prometheus_query_url is None:
        problems.append(
            Problem(
                message="autoscaling on eks reads the engine's metric from Amazon Managed "
                "Service for Prometheus, and no workspace query URL is given",
                pointer="/scaling/autoscaling",
                value=None,
                fix="deploy through a ServingCluster (its prometheus_query_url), pass "
                "RenderContext(prometheus_query_url=...), or `mlcc render --prometheus-url "
                "https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>`",
            )
        )
    if facts.cluster_region is None:
        problems.append(
            Problem(
                message="the autoscaler signs its Prometheus and CloudWatch queries for a "
                "region, and the cluster's region is unknown",
                pointer="/region",
                value=None,
                fix="pass --region (RenderContext.region)",
            )
        )
    endpoint = facts.spec.endpoint
    if autoscaling.scale_to_zero and (endpoint.scheme == "none" or endpoint.group is not None):
        field = "scheme" if endpoint.scheme == "none" else "group"
        problems.append(
            Problem(
                message="scale to zero wakes on requests its own load balancer counts: "
                + (
                    "scheme none makes no load balancer"
                    if field == "scheme"
                    else "a shared load balancer (group) counts every deployment's requests"
                ),
                pointer=f"/endpoint/{field}",
                value=getattr(endpoint, field),
                fix="give the deployment a load balancer of its own (scheme internal or "
                "internet-facing, no group), or drop autoscaling.scale_to_zero",
            )
        )
    return problems, []


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's ScaledObject, when it has ``autoscaling``."""
    autoscaling = facts.spec.scaling.autoscaling
    metric = facts.scaling_metric
    if autoscaling is None or metric is None:
        return []
    region = str(facts.cluster_region)
    auth = {"name": TRIGGER_AUTHENTICATION, "kind": TRIGGER_AUTHENTICATION_KIND}
    triggers: list[dict[str, Any]] = [
        {
            "type": "prometheus",
            "name": metric.role.replace("_", "-"),
            "metadata": {
                "serverAddress": str(facts.prometheus_query_url),
                "query": prometheus_query(facts, namespace_label=True),
                "threshold": number(metric.target),
                "awsRegion": region,
                # No series (every pod gone, or not scraped yet) reads as 0, not an error.
                "ignoreNullValues": "true",
            },
            "authenticationRef": dict(auth),
        }
    ]
    spec: dict[str, Any] = {
        "scaleTargetRef": scale_target(facts),
        "pollingInterval": autoscaling.polling_seconds,
        "cooldownPeriod": autoscaling.cooldown_seconds,
    }
    if autoscaling.scale_to_zero:
        spec["idleReplicaCount"] = 0
        key, value = load_balancer_tag(facts)
        for name, alb_metric in WAKE_METRICS:
            expression = (
                f"SELECT SUM({alb_metric}) FROM \"{ALB_NAMESPACE}\" WHERE tag.{key} = '{value}'"
            )
            triggers.append(
                {
                    "type": "aws-cloudwatch",
                    "name": name,
                    "metadata": {
                        "awsRegion": region,
                        "expression": expression,
                        "metricStat": "Sum",
                        "metricStatPeriod": str(WAKE_WINDOW_S),
                        "metricCollectionTime": str(WAKE_COLLECTION_S),
                        "targetMetricValue": NEVER_SCALES,
                        "activationTargetMetricValue": "0",
                        "minMetricValue": "0",
                    },
                    "authenticationRef": dict(auth),
                }
            )
    spec["minReplicaCount"] = autoscaling.min_replicas
    spec["maxReplicaCount"] = autoscaling.max_replicas
    spec["advanced"] = {
        "horizontalPodAutoscalerConfig": {
            "behavior": {
                "scaleDown": {
                    "stabilizationWindowSeconds": min(
                        autoscaling.cooldown_seconds, MAX_STABILIZATION_S
                    )
                }
            }
        }
    }
    spec["triggers"] = triggers
    scaled_object = {
        "apiVersion": API_VERSION,
        "kind": "ScaledObject",
        "metadata": metadata(facts, facts.names.base),
        "spec": spec,
    }
    return [RenderedObject("ScaledObject", scaled_object)]


def _problems(obj: Mapping[str, Any]) -> list[Problem]:
    problems = RULES.problems(obj)
    spec = obj.get("spec") or {}
    idle, low = spec.get("idleReplicaCount"), spec.get("minReplicaCount", 0)
    if idle is not None and not idle < low:  # KEDA: "must be less than minReplicaCount"
        problems.append(
            Problem(
                message="idleReplicaCount must be below minReplicaCount (KEDA ScaledObject)",
                where=f"ScaledObject/{obj.get('metadata', {}).get('name', '?')}",
                pointer="/spec/idleReplicaCount",
                value=idle,
                allowed=f"below {low}",
            )
        )
    return problems


KIND = Kind(
    kind="ScaledObject",
    api_version=API_VERSION,
    plural="scaledobjects",
    namespaced=True,
    # After the Deployment it scales (50) and its Service (60), before the Ingress (70).
    apply_phase=65,
    validate=_problems,
    readiness=ready_condition,
    render=render,
    check=check,
)
