"""The cluster's CloudWatch dashboard: what CloudWatch holds about the deployments without an
agent.

Auto Mode creates one Application Load Balancer per Ingress (or per IngressClass group); ALBs
publish ``AWS/ApplicationELB`` metrics by themselves: ``TargetResponseTime`` (latency to the
pods), ``RequestCount``, ``HTTPCode_Target_5XX_Count`` (errors the engines return) and
``HTTPCode_ELB_5XX_Count`` (errors the ALB returns, e.g. no healthy target), and per target group
``HealthyHostCount``: the pods that pass the ALB's health check, i.e. the replicas that serve.
The ALBs' names are chosen at deploy time, so every panel is a CloudWatch ``SEARCH`` expression
over the region's ALBs
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/search-expression-syntax.html).
Deployment replicas as Kubernetes counts them (Container Insights'
``ContainerInsights`` namespace) need the ``amazon-cloudwatch-observability`` add-on and its
agents on every node, which the cluster does not install: the Prometheus workspace and the
Grafana dashboard show those.
"""

from __future__ import annotations

from dataclasses import dataclass

PERIOD_SECONDS = 60
_ALB = "{AWS/ApplicationELB,LoadBalancer}"
_TARGET_GROUP = "{AWS/ApplicationELB,LoadBalancer,TargetGroup}"


@dataclass(frozen=True, kw_only=True)
class Series:
    """One ``SEARCH`` expression of a panel and its legend label."""

    expression: str
    label: str


@dataclass(frozen=True, kw_only=True)
class Panel:
    """One graph: ``title``, its ``series``, the left axis ``unit`` label."""

    title: str
    series: tuple[Series, ...]
    unit: str


def _search(schema: str, metric: str, stat: str) -> str:
    return f"SEARCH('{schema} MetricName=\"{metric}\"', '{stat}', {PERIOD_SECONDS})"


def dashboard_panels() -> tuple[Panel, ...]:
    """The dashboard's panels, in order (module doc)."""
    return (
        Panel(
            title="Latency to the pods (ALB TargetResponseTime)",
            series=(
                Series(expression=_search(_ALB, "TargetResponseTime", "p50"), label="p50"),
                Series(expression=_search(_ALB, "TargetResponseTime", "p99"), label="p99"),
            ),
            unit="seconds",
        ),
        Panel(
            title="5xx responses",
            series=(
                Series(
                    expression=_search(_ALB, "HTTPCode_Target_5XX_Count", "Sum"),
                    label="from the engines",
                ),
                Series(
                    expression=_search(_ALB, "HTTPCode_ELB_5XX_Count", "Sum"),
                    label="from the load balancer",
                ),
            ),
            unit="count",
        ),
        Panel(
            title="Requests",
            series=(Series(expression=_search(_ALB, "RequestCount", "Sum"), label="requests"),),
            unit="count",
        ),
        Panel(
            title="Replicas serving (healthy targets)",
            series=(
                Series(
                    expression=_search(_TARGET_GROUP, "HealthyHostCount", "Minimum"),
                    label="healthy",
                ),
                Series(
                    expression=_search(_TARGET_GROUP, "UnHealthyHostCount", "Maximum"),
                    label="unhealthy",
                ),
            ),
            unit="replicas",
        ),
    )
