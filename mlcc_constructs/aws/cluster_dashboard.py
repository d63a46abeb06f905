"""``ServingDashboard``: the cluster's CloudWatch dashboard of its load balancers' latency, 5xx,
requests and healthy targets (:mod:`mlcc_constructs.core.platform.cloudwatch_dashboard`)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from mlcc_constructs.core.platform.cloudwatch_dashboard import PERIOD_SECONDS, dashboard_panels

DASHBOARD_ID = "ServingDashboard"
_WIDTH, _HEIGHT = 12, 6  # two graphs per row of the dashboard's 24 columns


def add_serving_dashboard(owner: Construct, cluster_name: str | None) -> cloudwatch.Dashboard:
    """The dashboard (child ``ServingDashboard``), named ``<cluster>-serving`` when the cluster's
    name is known at synth."""
    widgets: list[cloudwatch.IWidget] = [
        cloudwatch.GraphWidget(
            title=panel.title,
            width=_WIDTH,
            height=_HEIGHT,
            left=[
                cloudwatch.SearchExpression(
                    expression=series.expression,
                    label=series.label,
                    period=cdk.Duration.seconds(PERIOD_SECONDS),
                )
                for series in panel.series
            ],
            left_y_axis=cloudwatch.YAxisProps(label=panel.unit, show_units=False),
        )
        for panel in dashboard_panels()
    ]
    name = (
        f"{cluster_name}-serving"
        if cluster_name is not None and not cdk.Token.is_unresolved(cluster_name)
        else None
    )
    return cloudwatch.Dashboard(
        owner,
        DASHBOARD_ID,
        dashboard_name=name,
        widgets=[widgets[index : index + 2] for index in range(0, len(widgets), 2)],
    )
