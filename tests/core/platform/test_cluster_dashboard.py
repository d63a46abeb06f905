"""The cluster's CloudWatch dashboard (issue 22 item 8): the ALB metrics CloudWatch holds without
an agent, byte-stable."""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.platform.cloudwatch_dashboard import dashboard_panels
from tests._cdk_app import EKS_STACK, build, template


def _dashboard(resources: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = [v for v in resources.values() if v["Type"] == "AWS::CloudWatch::Dashboard"]
    return dashboard["Properties"]  # type: ignore[no-any-return]


def test_panels_name_the_alb_metrics() -> None:
    metrics = [
        series.expression.split('MetricName="')[1].split('"')[0]
        for panel in dashboard_panels()
        for series in panel.series
    ]
    assert metrics == [
        "TargetResponseTime",
        "TargetResponseTime",
        "HTTPCode_Target_5XX_Count",
        "HTTPCode_ELB_5XX_Count",
        "RequestCount",
        "HealthyHostCount",
        "UnHealthyHostCount",
    ]
    assert all(
        s.expression.startswith("SEARCH('{AWS/ApplicationELB,")
        for p in dashboard_panels()
        for s in p.series
    )


def test_the_stack_dashboard_is_named_and_byte_stable() -> None:
    from aws_cdk.assertions import Template

    props = _dashboard(template(EKS_STACK)["Resources"])
    assert props["DashboardName"] == "mlcc-dev-eks-serving"
    body = "".join(
        p if isinstance(p, str) else "<region>" for p in props["DashboardBody"]["Fn::Join"][1]
    )
    for panel in dashboard_panels():
        assert panel.title in body
    again = Template.from_stack(build().node.find_child(EKS_STACK)).to_json()["Resources"]
    assert _dashboard(again) == props
