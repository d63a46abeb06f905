"""The cluster side of scaling on metrics (issue 22 items 1 and 2): the Prometheus workspace and
its managed scraper, KEDA (pinned chart, IRSA role with least privilege, the
ClusterTriggerAuthentication mlcc-aws) and the query URL the ScaledObjects use."""

from __future__ import annotations

import base64
import json
from typing import Any

import yaml

from mlcc_constructs.core.platform.iam_statement import wildcard_actions
from mlcc_constructs.core.platform.keda import (
    TRIGGER_AUTHENTICATION,
    cluster_trigger_authentication,
    keda_statements,
)
from mlcc_constructs.core.platform.prometheus import (
    SCRAPE_INTERVAL,
    configuration_blob,
    scrape_configuration,
)
from mlcc_constructs.core.platform.versions import pinned
from tests._cdk_app import EKS_STACK, manifest_object, stack, template


def _resources(kind: str) -> dict[str, Any]:
    return {k: v for k, v in template(EKS_STACK)["Resources"].items() if v["Type"] == kind}


def test_workspace_and_scraper_of_the_cluster() -> None:
    ((workspace_id, workspace),) = _resources("AWS::APS::Workspace").items()
    assert workspace["Properties"] == {"Alias": "mlcc-dev-eks"}
    ((_, scraper),) = _resources("AWS::APS::Scraper").items()
    props = scraper["Properties"]
    assert props["Destination"] == {
        "AmpConfiguration": {"WorkspaceArn": {"Fn::GetAtt": [workspace_id, "Arn"]}}
    }
    source = props["Source"]["EksConfiguration"]
    (cluster_id,) = _resources("AWS::EKS::Cluster")
    assert source["ClusterArn"] == {"Fn::GetAtt": [cluster_id, "Arn"]}
    internal = {
        k for k in _resources("AWS::EC2::Subnet") if k.startswith("LoadBalancerSubnetsInternal")
    }
    # At least two subnets in two zones (the managed collector's requirement): the internal load
    # balancer subnets, whose CIDRs the deployments' NetworkPolicies admit.
    assert {s["Ref"] for s in source["SubnetIds"]} == internal and len(internal) == 2
    assert source["SecurityGroupIds"] == [{"Fn::GetAtt": [cluster_id, "ClusterSecurityGroupId"]}]
    blob = props["ScrapeConfiguration"]["ConfigurationBlob"]
    assert blob == configuration_blob()
    assert base64.b64decode(blob).decode() == scrape_configuration()


def test_scrape_configuration_keeps_annotated_pods_every_30_seconds() -> None:
    config = yaml.safe_load(scrape_configuration())
    assert config["global"] == {"scrape_interval": SCRAPE_INTERVAL} == {"scrape_interval": "30s"}
    (job,) = config["scrape_configs"]
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}]
    keep = job["relabel_configs"][0]
    assert keep == {
        "source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_scrape"],
        "action": "keep",
        "regex": "true",
    }
    assert scrape_configuration() == scrape_configuration()  # byte-stable


def test_keda_role_reads_exactly_the_workspace_and_metric_data() -> None:
    ((role_id, role),) = {
        k: v for k, v in _resources("AWS::IAM::Role").items() if k.startswith("KedaRole")
    }.items()
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    trust = template(EKS_STACK)["Resources"][
        statement["Condition"]["StringEquals"]["Fn::GetAtt"][0]
    ]
    parts = trust["Properties"]["Value"]["Fn::Join"][1]
    assert ':sub":"system:serviceaccount:keda:keda-operator","' in parts
    (policy,) = [
        v
        for v in _resources("AWS::IAM::Policy").values()
        if v["Properties"]["Roles"] == [{"Ref": role_id}]
    ]
    (workspace_id,) = _resources("AWS::APS::Workspace")
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Action": [
                "aps:GetLabels",
                "aps:GetMetricMetadata",
                "aps:GetSeries",
                "aps:QueryMetrics",
            ],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [workspace_id, "Arn"]},
            "Sid": "PrometheusQuery",
        },
        {
            "Action": "cloudwatch:GetMetricData",
            "Effect": "Allow",
            "Resource": "*",
            "Sid": "CloudWatchMetricData",
        },
    ]
    assert wildcard_actions(keda_statements("arn:aws:aps:us-east-1:1:workspace/ws-1")) == []


def test_keda_is_the_pinned_chart_with_the_role_and_no_gpu_toleration() -> None:
    ((chart_id, chart),) = [
        (k, v)
        for k, v in _resources("Custom::AWSCDK-EKS-HelmChart").items()
        if v["Properties"]["Chart"] == "keda"
    ]
    props = chart["Properties"]
    assert (props["Repository"], props["Chart"], props["Version"]) == (
        "https://kedacore.github.io/charts",
        "keda",
        pinned().keda,
    )
    assert pinned().keda == "2.21.1"
    assert (props["Namespace"], props["Release"], props["CreateNamespace"]) == (
        "keda",
        "keda",
        True,
    )
    values = "".join(
        p if isinstance(p, str) else f"<{p['Fn::GetAtt'][0]}>"
        for p in props["Values"]["Fn::Join"][1]
    )
    (role_id,) = [k for k in _resources("AWS::IAM::Role") if k.startswith("KedaRole")]
    assert json.loads(values) == {
        "podIdentity": {"aws": {"irsa": {"enabled": True, "roleArn": f"<{role_id}>"}}}
    }
    assert "toleration" not in values
    (authentication,) = [
        v
        for v in _resources("Custom::AWSCDK-EKS-KubernetesResource").values()
        if manifest_object(v)["kind"] == "ClusterTriggerAuthentication"
    ]
    assert manifest_object(authentication) == cluster_trigger_authentication()
    assert (
        manifest_object(authentication)["metadata"]["name"] == TRIGGER_AUTHENTICATION == "mlcc-aws"
    )
    assert manifest_object(authentication)["spec"] == {
        "podIdentity": {"provider": "aws", "identityOwner": "keda"}
    }
    assert chart_id in authentication["DependsOn"]


def test_prometheus_query_url_is_the_endpoint_without_its_api_path() -> None:
    import aws_cdk as cdk

    cluster = stack(EKS_STACK).serving_cluster
    url = cluster.prometheus_query_url
    assert cdk.Token.is_unresolved(url)
    (workspace_id,) = _resources("AWS::APS::Workspace")
    assert stack(EKS_STACK).resolve(url) == {
        "Fn::Select": [
            0,
            {"Fn::Split": ["/api/v1", {"Fn::GetAtt": [workspace_id, "PrometheusEndpoint"]}]},
        ]
    }


def test_a_cluster_without_scaling_metrics_has_no_workspace_nor_keda() -> None:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from mlcc_constructs.aws.serving_cluster import ServingCluster, ServingClusterProps

    app = cdk.App()
    team = cdk.Stack(app, "Team", env=cdk.Environment(account="123456789012", region="us-east-1"))
    team.node.set_context(
        "availability-zones:account=123456789012:region=us-east-1", ["us-east-1a", "us-east-1b"]
    )
    cluster = ServingCluster(team, "Serving", props=ServingClusterProps(scaling_metrics=False))
    assert cluster.metrics is None and cluster.prometheus_query_url is None
    resources = Template.from_stack(team).to_json()["Resources"]
    kinds = {r["Type"] for r in resources.values()}
    assert not kinds & {"AWS::APS::Workspace", "AWS::APS::Scraper", "Custom::AWSCDK-EKS-HelmChart"}


def test_an_imported_cluster_passes_its_query_url() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs.aws.serving_cluster import ServingCluster

    team = cdk.Stack(cdk.App(), "Team")
    cluster = eks.Cluster.from_cluster_attributes(team, "C", cluster_name="c")
    oidc = eks.OidcProviderNative(team, "Oidc", url="https://oidc.example.com/id/X")
    url = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1"
    imported = ServingCluster.from_cluster_attributes(
        team, "Imported", cluster=cluster, oidc_provider=oidc, prometheus_query_url=url
    )
    assert imported.prometheus_query_url == url
    bare = ServingCluster.from_cluster_attributes(team, "Bare", cluster=cluster, oidc_provider=oidc)
    assert bare.prometheus_query_url is None
