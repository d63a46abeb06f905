"""The cluster side of multi-node serving (issue 27): ServingCluster installs LeaderWorkerSet
from its pinned OCI Helm chart only when told (``leader_worker_set``), with the manager image
pinned to the release tag."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core.platform.leader_worker_set_install import chart_values
from mlcc_constructs.core.platform.versions import pinned

HELM = "Custom::AWSCDK-EKS-HelmChart"


def _charts(**props: Any) -> dict[str, dict[str, Any]]:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from mlcc_constructs.aws.serving_cluster import ServingCluster, ServingClusterProps

    app = cdk.App()
    team = cdk.Stack(app, "Team", env=cdk.Environment(account="123456789012", region="us-east-1"))
    team.node.set_context(
        "availability-zones:account=123456789012:region=us-east-1", ["us-east-1a", "us-east-1b"]
    )
    cluster = ServingCluster(
        team, "Serving", props=ServingClusterProps(scaling_metrics=False, **props)
    )
    assert (cluster.leader_worker_set is not None) == bool(props.get("leader_worker_set"))
    resources = Template.from_stack(team).to_json()["Resources"]
    return {k: v["Properties"] for k, v in resources.items() if v["Type"] == HELM}


def test_the_pinned_chart_in_lws_system() -> None:
    ((chart_id, chart),) = _charts(leader_worker_set=True).items()
    assert chart_id.startswith("ServingLeaderWorkerSet")
    assert pinned().leader_worker_set == "0.10.0"
    assert (chart["Repository"], chart["Chart"], chart["Version"]) == (
        "oci://registry.k8s.io/lws/charts/lws",
        "lws",
        "0.10.0",
    )
    assert (chart["Namespace"], chart["Release"], chart["CreateNamespace"], chart["Wait"]) == (
        "lws-system",
        "lws",
        True,
        True,
    )
    assert json.loads(chart["Values"]) == {
        "image": {
            "manager": {
                "repository": "registry.k8s.io/lws/lws",
                "tag": "v0.10.0",
                "pullPolicy": "IfNotPresent",
            }
        }
    }
    # The controller never tolerates the GPU taint (it must not keep a GPU node awake).
    assert "toleration" not in chart["Values"]


def test_not_installed_by_default() -> None:
    assert _charts() == {}


@pytest.mark.parametrize(
    ("version", "tag"),
    [("0.10.0", "v0.10.0"), ("0.9.0", "v0.9.0")],
)
def test_the_manager_image_follows_the_chart_version(version: str, tag: str) -> None:
    manager = chart_values(version)["image"]["manager"]
    # The chart's own default (tag main, pullPolicy Always) is a moving tag: never used.
    assert manager["tag"] == tag != "main"
    assert manager["pullPolicy"] == "IfNotPresent"
