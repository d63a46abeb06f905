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

from mlcc_constructs.aws.late_value import LateString
from mlcc_constructs.core.serving.spec.app_deployments import (
    AppDeployment,
    prepare_app_deployments,
)
from mlcc_constructs.core.support.errors import fail
from stacks.app_context import environment_from_context

QUERY_URL_KEY = "prometheus_query_url"
"""cdk.json / ``-c`` key: a Prometheus workspace URL in place of the app's cluster's."""
QUERY_URL_PLACEHOLDER = "${MLCC_PROMETHEUS_QUERY_URL}"
"""What dist/ holds where the cluster's query URL goes, when cdk.json names none."""

_CACHE: weakref.WeakKeyDictionary[cdk.App, tuple[tuple[AppDeployment, ...], LateString]] = (
    weakref.WeakKeyDictionary()
)


def app_deployments(app: cdk.App) -> tuple[AppDeployment, ...]:
    """Every deployment of ``app``'s context, prepared once per app; all problems at once."""
    if app not in _CACHE:
        environment = environment_from_context(app)
        get = app.node.try_get_context
        late = LateString(
            fail(
                "an autoscaled deployment needs the cluster's Prometheus workspace, and the "
                "app's cluster has none",
                where="cdk.json:/context",
                pointer=f"/{QUERY_URL_KEY}",
                fix=f"keep the cluster's scaling metrics on, or set {QUERY_URL_KEY}",
            )
        )
        prepared = prepare_app_deployments(
            get, environment=environment, prometheus_query_url=get(QUERY_URL_KEY) or late.token
        )
        _CACHE[app] = (prepared, late)
    return _CACHE[app][0]


def set_cluster_query_url(app: cdk.App, url: str | None) -> None:
    """Give the app's deployments the cluster's query URL (``None``: it has no workspace)."""
    _CACHE[app][1].set(url)


def dist_text(app: cdk.App, text: str) -> str:
    """``text`` (a dist/ file) with the cluster's lazy query URL as :data:`QUERY_URL_PLACEHOLDER`:
    GitOps substitutes the workspace URL (or cdk.json names it and dist/ holds it)."""
    return _CACHE[app][1].placeholder(text, QUERY_URL_PLACEHOLDER)
