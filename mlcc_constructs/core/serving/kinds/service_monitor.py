"""``ServiceMonitor`` (``monitoring.coreos.com/v1``): how a Prometheus that the Prometheus
Operator runs scrapes the engine, for a team with its own (the render context's
``prometheus_operator_namespace``; the cluster's managed scraper reads the pods' annotations
instead, :mod:`mlcc_constructs.core.platform.prometheus`).

Rendered for an engine that serves metrics on a target that scrapes them: it selects the
deployment's Service by its pod-selector labels and scrapes the Service's ``http`` port at the
engine manifest's metrics path, every :data:`~mlcc_constructs.core.platform.prometheus.
SCRAPE_INTERVAL`, like the managed scraper. The NetworkPolicy admits that namespace on the
engine port. Validated against rule data written from the Prometheus Operator's documented API
(``data/crd_rules/servicemonitors.monitoring.coreos.com.v1.json``).
"""

from __future__ import annotations

from mlcc_constructs.core.platform.prometheus import SCRAPE_INTERVAL
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, exists
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import pod_selector

RULES = CrdRules(file="servicemonitors.monitoring.coreos.com.v1.json")
SERVICE_PORT = "http"
"""The name of the Service port the engine listens behind (kinds/service.py)."""


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's ServiceMonitor, or none without a Prometheus Operator (module doc)."""
    metrics = facts.resolution.manifest.metrics
    if facts.service_monitor_namespace is None or metrics is None:
        return []
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata(facts, facts.names.base),
        "spec": {
            "selector": {"matchLabels": pod_selector(facts.names)},
            "endpoints": [
                {"port": SERVICE_PORT, "path": metrics.path, "interval": SCRAPE_INTERVAL}
            ],
        },
    }
    return [RenderedObject("ServiceMonitor", monitor)]


KIND = Kind(
    kind="ServiceMonitor",
    api_version="monitoring.coreos.com/v1",
    plural="servicemonitors",
    namespaced=True,
    # After the Service it selects (60), beside the ScaledObject (65).
    apply_phase=62,
    validate=RULES.problems,
    readiness=exists,
    render=render,
)
