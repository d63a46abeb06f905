"""The cdk-nag findings of what ``aws_eks_v2.Cluster`` creates, acknowledged with reasons: its
IAM and Lambda runtimes are aws-cdk-lib's, which the project pins."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks

# AWS-managed policies aws_eks_v2.Cluster attaches (Auto Mode): cdk-nag IAM4 findings.
_EKS_MANAGED_POLICIES = (
    ("AmazonEKSClusterPolicy", "cluster role"),
    ("AmazonEKSComputePolicy", "cluster role"),
    ("AmazonEKSBlockStoragePolicy", "cluster role"),
    ("AmazonEKSLoadBalancingPolicy", "cluster role"),
    ("AmazonEKSNetworkingPolicy", "cluster role"),
    ("AmazonEKSWorkerNodePolicy", "Auto Mode node role"),
    ("AmazonEC2ContainerRegistryReadOnly", "Auto Mode node role"),
)
_LAMBDA_POLICY = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"


def acknowledge_cluster_findings(cluster: eks.Cluster) -> None:
    """cdk-nag findings of what aws_eks_v2 creates (its IAM and Lambda runtimes are
    aws-cdk-lib's, which the project pins), named by this cluster's logical ids."""
    stack = cdk.Stack.of(cluster)
    handler = cluster.node.find_child("KubectlProvider").node.find_child("Handler")
    function = handler.node.default_child
    condition = handler.node.find_child("HasEcrPublic")
    assert isinstance(function, cdk.CfnElement) and isinstance(condition, cdk.CfnElement)
    ecr_public = (
        f'{{"Fn::If":["{stack.get_logical_id(condition)}",{{"Fn::Join":["",["arn:",'
        '{"Ref":"AWS::Partition"},":iam::aws:policy/'
        'AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}'
    )
    findings: list[tuple[str, str]] = [
        (
            f"AwsSolutions-IAM4[{_LAMBDA_POLICY}AWSLambdaBasicExecutionRole]",
            "the kubectl provider's Lambdas (aws_eks_v2) write their logs with the "
            "AWS-managed basic execution policy",
        ),
        (
            f"AwsSolutions-IAM4[{_LAMBDA_POLICY}AWSLambdaVPCAccessExecutionRole]",
            "the kubectl provider's Lambdas run in the private subnets (the API endpoint is "
            "private or CIDR-limited) and need the AWS-managed policy that manages their "
            "network interfaces",
        ),
        (
            f"AwsSolutions-IAM4[Policy::{ecr_public}]",
            "aws_eks_v2 attaches ECR Public read-only to the kubectl handler only in "
            "partitions that have ECR Public (Helm charts from public.ecr.aws); it grants "
            "no write",
        ),
        (
            f"AwsSolutions-IAM5[Resource::<{stack.get_logical_id(function)}.Arn>:*]",
            "the custom-resource framework may invoke every version of the kubectl handler "
            "and nothing else",
        ),
        (
            "AwsSolutions-L1",
            "the kubectl handler's runtime is chosen by aws-cdk-lib (pinned in "
            "requirements.lock); it moves with aws-cdk-lib upgrades",
        ),
    ]
    findings += [
        (
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]",
            f"the EKS {role} must carry the AWS-managed {policy}: EKS (Auto Mode) "
            "requires exactly these policies and AWS keeps them current with the service",
        )
        for policy, role in _EKS_MANAGED_POLICIES
    ]
    for finding, reason in findings:
        cdk.Validations.of(cluster).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))
