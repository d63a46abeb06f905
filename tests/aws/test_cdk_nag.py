"""cdk-nag (v3 API) on every stack of the app and on a team-composed stack: the AwsSolutions
pack and the project's pack (``MlccChecks``: EKS rules that see ``aws_eks_v2`` clusters).
Every finding is fixed or acknowledged in code with a reason."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.platform.eks_rules import missing_log_types, public_endpoint_problem
from tests._cdk_app import synthesised, team

ALL_LOGS = {
    "ClusterLogging": {
        "EnabledTypes": [
            {"Type": t} for t in ("api", "audit", "authenticator", "controllerManager", "scheduler")
        ]
    }
}


def _findings(scope: Any) -> list[str]:
    from cdk_nag import AwsSolutionsChecks

    from mlcc_constructs.aws.nag import MlccChecks

    found = []
    for pack in (AwsSolutionsChecks(scope), MlccChecks(scope)):
        report = pack.validate_scope(scope)
        found += [
            f"{violation.rule_name} at {resource.construct_path}"
            for violation in report.violations
            for resource in violation.violating_resources
        ]
    return sorted(found)


def test_app_stacks_have_no_unacknowledged_findings() -> None:
    import aws_cdk as cdk

    app = synthesised()[0]
    stacks = {child.node.id for child in app.node.children if isinstance(child, cdk.Stack)}
    assert stacks == {
        "mlcc-dev-buckets",
        "mlcc-dev-eks-cluster",
        "mlcc-dev-hyperpod-cluster",
        "mlcc-dev-inference-operator",
        "mlcc-dev-serving",
        "mlcc-dev-serving-eks-inference-llama-405b-vllm",
        "mlcc-dev-serving-eks-inference-llama-vllm",
        "mlcc-dev-serving-eks-inference-mistral-vllm-args",
        "mlcc-dev-serving-hyperpod-eks-inference-llama-sglang",
        "mlcc-dev-serving-hyperpod-eks-inference-llama-vllm",
    }
    assert _findings(app) == []


def test_team_stack_with_bucket_objects_is_clean() -> None:
    stack, _ = team()
    assert _findings(stack) == []


PUBLIC_ENDPOINT = [
    ({"ResourcesVpcConfig": {"EndpointPublicAccess": False}}, None),
    (
        {"ResourcesVpcConfig": {"EndpointPublicAccess": True, "PublicAccessCidrs": ["10.0.0.0/8"]}},
        None,
    ),
    (
        {"ResourcesVpcConfig": {"SubnetIds": ["s"]}},
        "the public endpoint has no PublicAccessCidrs (CloudFormation allows 0.0.0.0/0)",
    ),
    (
        {"ResourcesVpcConfig": {"EndpointPublicAccess": True, "PublicAccessCidrs": ["0.0.0.0/0"]}},
        "PublicAccessCidrs allows 0.0.0.0/0",
    ),
    (
        {"ResourcesVpcConfig": {"EndpointPublicAccess": {"Ref": "Public"}}},
        "EndpointPublicAccess is only known at deploy time",
    ),
    (
        {"ResourcesVpcConfig": {"PublicAccessCidrs": {"Ref": "Cidrs"}}},
        "PublicAccessCidrs is only known at deploy time",
    ),
    ({}, "ResourcesVpcConfig is not a literal object"),
]


@pytest.mark.parametrize(("properties", "problem"), PUBLIC_ENDPOINT)
def test_public_endpoint_rule(properties: dict[str, Any], problem: str | None) -> None:
    assert public_endpoint_problem(properties) == problem


LOGS = [
    ({"Logging": ALL_LOGS}, ()),
    ({}, ("api", "audit", "authenticator", "controllerManager", "scheduler")),
    (
        {"Logging": {"ClusterLogging": {"EnabledTypes": [{"Type": "api"}, {"Type": "audit"}]}}},
        ("authenticator", "controllerManager", "scheduler"),
    ),
    (
        {"Logging": {"ClusterLogging": {"EnabledTypes": {"Ref": "Types"}}}},
        ("api", "audit", "authenticator", "controllerManager", "scheduler"),
    ),
]


@pytest.mark.parametrize(("properties", "missing"), LOGS)
def test_control_plane_logging_rule(properties: dict[str, Any], missing: tuple[str, ...]) -> None:
    assert missing_log_types(properties) == missing


def test_the_pack_sees_aws_eks_v2_clusters() -> None:
    """A public, unlimited aws_eks_v2 cluster without logs: AwsSolutions misses it, the
    project pack reports both rules; an acknowledgement with a reason silences one."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks
    from cdk_nag import AwsSolutionsChecks

    from mlcc_constructs.aws.nag import MlccChecks

    app = cdk.App()
    stack = cdk.Stack(app, "Team", env=cdk.Environment(account="123456789012", region="us-east-1"))
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-1",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-1"],
        public_subnet_ids=["subnet-2"],
    )
    cluster = eks.Cluster(stack, "Cluster", version=eks.KubernetesVersion.of("1.35"), vpc=vpc)

    def eks_findings(pack: Any) -> list[str]:
        report = pack.validate_scope(stack)
        return sorted(
            f"{v.rule_name} at {r.construct_path}"
            for v in report.violations
            for r in v.violating_resources
            if v.rule_name.split("[")[0].split("-")[1].startswith("EKS")
        )

    assert eks_findings(AwsSolutionsChecks(stack)) == []
    assert eks_findings(MlccChecks(stack)) == [
        "Mlcc-EKSControlPlaneLogs at Team/Cluster/Resource",
        "Mlcc-EKSPublicEndpoint at Team/Cluster/Resource",
    ]
    cdk.Validations.of(cluster).acknowledge(
        cdk.Acknowledgment(id="Mlcc-EKSControlPlaneLogs", reason="a test cluster")
    )
    assert eks_findings(MlccChecks(stack)) == ["Mlcc-EKSPublicEndpoint at Team/Cluster/Resource"]
