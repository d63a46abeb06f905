"""The app's deployments (cdk.json ``reference_deployments``, or the spec list file of
``-c deployments_file=...``), each prepared once: ``dist/``, the GPU NodePool, the
IngressClasses and the serving stacks all read this one list.

They are prepared before the cluster exists (they size its GPU NodePool), so their
NetworkPolicies admit the load balancer subnets the cluster creates from the app's availability
zones (``ServedModel`` checks the cluster's are those), and their autoscalers read the
cluster's Prometheus query URL as a :class:`~mlcc_constructs.aws.late_value.LateString` that
``app.py`` fills in (:func:`set_cluster_query_url`), unless cdk.json gives
``prometheus_query_url``."""

from __future__ import annotations

import weakref

import aws_cdk as cdk

from mlcc_constructs.aws.environment_stacks import QUERY_URL_KEY, prepare_deployments
from mlcc_constructs.aws.late_value import LateString
from mlcc_constructs.core.serving.spec.app_deployments import AppDeployment
from stacks.app_context import environment_from_context

__all__ = ["QUERY_URL_KEY", "app_deployments", "dist_text", "set_cluster_query_url"]
QUERY_URL_PLACEHOLDER = "${MLCC_PROMETHEUS_QUERY_URL}"
"""What dist/ holds where the cluster's query URL goes, when cdk.json names none."""

_CACHE: weakref.WeakKeyDictionary[cdk.App, tuple[tuple[AppDeployment, ...], LateString]] = (
    weakref.WeakKeyDictionary()
)


def app_deployments(app: cdk.App) -> tuple[AppDeployment, ...]:
    """Every deployment of ``app``'s context, prepared once per app; all problems at once."""
    if app not in _CACHE:
        environment = environment_from_context(app)
        _CACHE[app] = prepare_deployments(app.node.try_get_context, environment=environment)
    return _CACHE[app][0]


def set_cluster_query_url(app: cdk.App, url: str | None) -> None:
    """Give the app's deployments the cluster's query URL (``None``: it has no workspace)."""
    _CACHE[app][1].set(url)


def dist_text(app: cdk.App, text: str) -> str:
    """``text`` (a dist/ file) with the cluster's lazy query URL as :data:`QUERY_URL_PLACEHOLDER`:
    GitOps substitutes the workspace URL (or cdk.json names it and dist/ holds it)."""
    return _CACHE[app][1].placeholder(text, QUERY_URL_PLACEHOLDER)
