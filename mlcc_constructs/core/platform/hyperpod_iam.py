"""The IAM permissions of the HyperPod roles, as data: the instance groups' execution role, the
inference operator's execution role, and the role of KEDA the operator add-on runs (the ALB
controller's is in :mod:`~mlcc_constructs.core.platform.alb_controller_iam`). No action is a
wildcard;
a resource is a wildcard only where the action supports no resource-level permission or the
resource's name is chosen at run time, and ``why`` says so (the cdk-nag acknowledgement's
reason). ARNs are built from ``partition``, ``region`` and ``account`` (CloudFormation tokens
allowed).

Sources (checked 2026-11-30):

* Instance groups (EKS orchestrator): AWS managed ``AmazonSageMakerClusterInstanceRolePolicy``
  (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonSageMakerClusterInstanceRolePolicy.html)
  and the EKS additions of "IAM role for SageMaker HyperPod"
  (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites-iam.html),
  as AWS's own HyperPod templates grant them (aws/sagemaker-hyperpod-cluster-setup,
  eks/cloudformation/sagemaker-iam-role-template.yaml): the VPC CNI runs on HyperPod nodes
  with the node's role, so it holds the CNI's ENI permissions. The lifecycle scripts are read
  from the artifacts bucket (the managed policy only reads buckets named ``sagemaker-*``).
* Operator: AWS managed ``AmazonSageMakerHyperPodInferenceAccess`` v4
  (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonSageMakerHyperPodInferenceAccess.html),
  whose S3 statements name only buckets called ``hyperpod-tls*``; for another TLS bucket the
  setup page gives the statements to grant instead (delete, get, put with object tagging:
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html),
  and v3.0's release notes add ``s3:PutObjectTagging`` and ``acm:AddTagsToCertificate``
  (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-inference-release-notes.html).
  The data-capture KMS statement is left out: the TLS bucket is SSE-S3 (the buckets stack).
* KEDA: the policy of "Create the KEDA operator role" on the setup page.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from mlcc_constructs.core.platform.iam_statement import OWN_ACCOUNT, Arns, Statement
from mlcc_constructs.core.platform.image_cache import pull_through_statement


def hyperpod_instance_statements(
    arns: Arns,
    *,
    eks_cluster_name: str,
    lifecycle_bucket: str,
    lifecycle_prefix: str,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
) -> tuple[Statement, ...]:
    """The execution role of the HyperPod instance groups (EKS orchestrator)."""
    log_groups = arns.of("logs", "log-group:/aws/sagemaker/Clusters/*")
    network = (
        arns.of("ec2", "instance/*"),
        arns.of("ec2", "network-interface/*"),
        *(arns.of("ec2", f"subnet/{subnet}") for subnet in subnet_ids),
        *(arns.of("ec2", f"security-group/{group}") for group in security_group_ids),
    )
    return (
        Statement(
            sid="ClusterLogGroups",
            actions=("logs:CreateLogGroup",),
            resources=(log_groups,),
            why="HyperPod names a log group per cluster under /aws/sagemaker/Clusters/ when it "
            "creates the cluster",
        ),
        Statement(
            sid="ClusterLogStreams",
            actions=("logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"),
            resources=(f"{log_groups}:log-stream:*",),
            why="one log stream per node, named by HyperPod at run time",
        ),
        Statement(
            sid="ClusterMetrics",
            actions=("cloudwatch:PutMetricData",),
            resources=("*",),
            conditions=MappingProxyType(
                {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Clusters"}}
            ),
            why="PutMetricData has no resource-level permission; the condition pins the namespace",
        ),
        Statement(
            sid="LifecycleScriptsList",
            actions=("s3:ListBucket",),
            resources=(arns.bucket(lifecycle_bucket),),
            conditions=MappingProxyType(
                {"StringLike": {"s3:prefix": f"{lifecycle_prefix.rstrip('/')}*"}}
            ),
        ),
        Statement(
            sid="LifecycleScriptsRead",
            actions=("s3:GetObject",),
            resources=(f"{arns.bucket(lifecycle_bucket)}/{lifecycle_prefix}*",),
            why="the lifecycle scripts' objects under their one content-addressed prefix",
        ),
        Statement(
            sid="SessionManager",
            actions=(
                "ssmmessages:CreateControlChannel",
                "ssmmessages:CreateDataChannel",
                "ssmmessages:OpenControlChannel",
                "ssmmessages:OpenDataChannel",
            ),
            resources=("*",),
            why="Session Manager channels (node access) have no resource-level permission",
        ),
        Statement(
            sid="CniDescribe",
            actions=(
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeInstances",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
                "ec2:DescribeTags",
                "ec2:DescribeVpcs",
            ),
            resources=("*",),
            why="EC2 Describe actions have no resource-level permission (the VPC CNI on "
            "HyperPod nodes)",
        ),
        Statement(
            sid="CniNetworkInterfaces",
            actions=(
                "ec2:AssignPrivateIpAddresses",
                "ec2:AttachNetworkInterface",
                "ec2:CreateNetworkInterface",
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
                "ec2:DetachNetworkInterface",
                "ec2:ModifyNetworkInterfaceAttribute",
                "ec2:UnassignPrivateIpAddresses",
            ),
            resources=network,
            why="the VPC CNI creates and attaches network interfaces to the cluster's own "
            "instances in its subnets and security group; their ids exist only at run time",
        ),
        Statement(
            sid="CniTagNetworkInterfaces",
            actions=("ec2:CreateTags",),
            resources=(arns.of("ec2", "network-interface/*"),),
            why="the VPC CNI tags the network interfaces it creates",
        ),
        Statement(
            sid="ImagePullToken",
            actions=("ecr:GetAuthorizationToken",),
            resources=("*",),
            why="GetAuthorizationToken has no resource-level permission",
        ),
        Statement(
            sid="ImagePull",
            actions=(
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
            ),
            resources=(arns.any_region("ecr", "repository/*"),),
            why="system and engine images come from AWS-owned registries of other accounts "
            "(EKS add-ons, SageMaker containers); pulling is read-only",
        ),
        Statement(
            sid="PodIdentity",
            actions=("eks-auth:AssumeRoleForPodIdentity",),
            resources=(arns.of("eks", f"cluster/{eks_cluster_name}"),),
        ),
        # The engine images come through the ECR pull-through cache, and an image only
        # HyperPod runs is first pulled by a HyperPod node.
        *((through,) if (through := pull_through_statement(arns)) is not None else ()),
    )


def inference_operator_statements(
    arns: Arns, *, tls_bucket: str, eks_cluster_name: str, role_name: str
) -> tuple[Statement, ...]:
    """The inference operator's execution role."""
    tls_objects = f"{arns.bucket(tls_bucket)}/*"
    sagemaker = tuple(
        arns.of("sagemaker", f"{kind}/*") for kind in ("model", "endpoint", "endpoint-config")
    )
    created_by = "HyperPodInference"
    certificates = arns.of("acm", "certificate/*")
    return (
        Statement(
            sid="TlsBucketList",
            actions=("s3:ListBucket",),
            resources=(arns.bucket(tls_bucket),),
            conditions=OWN_ACCOUNT,
        ),
        Statement(
            sid="TlsObjectsRead",
            actions=("s3:GetObject",),
            resources=(tls_objects,),
            why="the certificates the operator writes to the TLS bucket, named per endpoint",
        ),
        Statement(
            sid="TlsObjectsWrite",
            actions=("s3:PutObject", "s3:PutObjectTagging"),
            resources=(tls_objects,),
            conditions=OWN_ACCOUNT,
            why="the operator writes and tags (CreatedBy=HyperPodInference) the certificates "
            "of each endpoint in the TLS bucket",
        ),
        Statement(
            sid="TlsObjectsDelete",
            actions=("s3:DeleteObject",),
            resources=(tls_objects,),
            conditions=OWN_ACCOUNT,
            why="the operator deletes an endpoint's certificates with the endpoint",
        ),
        Statement(
            sid="EcrAuthorization",
            actions=("ecr:GetAuthorizationToken",),
            resources=("*",),
            why="GetAuthorizationToken has no resource-level permission",
        ),
        Statement(
            sid="EcrRepositoryRead",
            actions=("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"),
            resources=(arns.any_region("ecr", "repository/*"),),
            why="the operator reads model-server images of AWS-owned registries in other "
            "accounts; read-only",
        ),
        Statement(
            sid="Ec2Describe",
            actions=(
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
                "ec2:DescribeVpcs",
            ),
            resources=("*",),
            conditions=OWN_ACCOUNT,
            why="EC2 Describe actions have no resource-level permission",
        ),
        Statement(
            sid="Ec2NetworkInterfaces",
            actions=(
                "ec2:CreateNetworkInterface",
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
            ),
            resources=tuple(
                arns.of("ec2", f"{kind}/*")
                for kind in ("network-interface", "subnet", "security-group")
            ),
            conditions=OWN_ACCOUNT,
            why="network interfaces of endpoints the operator creates at run time, in this "
            "account and region",
        ),
        Statement(
            sid="EksCluster",
            actions=("eks-auth:AssumeRoleForPodIdentity", "eks:DescribeCluster"),
            resources=(arns.of("eks", f"cluster/{eks_cluster_name}"),),
        ),
        Statement(
            sid="EksMonitoringAccessPolicy",
            actions=("eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy"),
            resources=(arns.of("eks", f"access-entry/{eks_cluster_name}/*"),),
            conditions=MappingProxyType(
                {
                    "StringEquals": {
                        "eks:policyarn": f"arn:{arns.partition}:eks::aws:cluster-access-policy/"
                        "AmazonSagemakerHyperpodInferenceMonitoringPolicy"
                    }
                }
            ),
            why="access entries of this cluster only, and only the inference monitoring "
            "access policy",
        ),
        Statement(
            sid="EksListAccessPolicies",
            actions=("eks:ListAssociatedAccessPolicies",),
            resources=(arns.of("eks", f"access-entry/{eks_cluster_name}/*"),),
            conditions=OWN_ACCOUNT,
            why="access entries of this cluster only (their ids are chosen by EKS)",
        ),
        Statement(
            sid="LoadBalancersDescribe",
            actions=("elasticloadbalancing:DescribeLoadBalancers",),
            resources=("*",),
            conditions=OWN_ACCOUNT,
            why="DescribeLoadBalancers has no resource-level permission",
        ),
        Statement(
            sid="FsxDescribe",
            actions=("fsx:DescribeFileSystems",),
            resources=("*",),
            conditions=OWN_ACCOUNT,
            why="DescribeFileSystems lists file systems; it has no resource-level permission",
        ),
        Statement(
            sid="CertificateImport",
            actions=("acm:AddTagsToCertificate", "acm:ImportCertificate"),
            resources=(certificates,),
            conditions=MappingProxyType(
                {
                    "ForAllValues:StringEquals": {"aws:TagKeys": "CreatedBy"},
                    "StringEquals": {
                        "aws:RequestTag/CreatedBy": created_by,
                        "aws:ResourceTag/CreatedBy": created_by,
                        "aws:ResourceAccount": "${aws:PrincipalAccount}",
                    },
                }
            ),
            why="the operator imports each endpoint's certificate into ACM; only certificates "
            "tagged CreatedBy=HyperPodInference",
        ),
        Statement(
            sid="CertificateDelete",
            actions=("acm:DeleteCertificate",),
            resources=(certificates,),
            conditions=MappingProxyType(
                {
                    "StringEquals": {
                        "aws:ResourceAccount": "${aws:PrincipalAccount}",
                        "aws:ResourceTag/CreatedBy": created_by,
                    }
                }
            ),
            why="only certificates the operator imported (CreatedBy=HyperPodInference)",
        ),
        Statement(
            sid="PassOwnRoleToSageMaker",
            actions=("iam:PassRole",),
            resources=(arns.of("iam", f"role/{role_name}", region=False),),
            conditions=MappingProxyType(
                {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
            ),
        ),
        Statement(
            sid="Metrics",
            actions=("cloudwatch:PutMetricData",),
            resources=("*",),
            conditions=MappingProxyType({"StringEquals": {"cloudwatch:namespace": created_by}}),
            why="PutMetricData has no resource-level permission; the condition pins the namespace",
        ),
        Statement(
            sid="Logs",
            actions=("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"),
            resources=(arns.of("logs", "log-group:*"),),
            conditions=OWN_ACCOUNT,
            why="log groups the operator names per endpoint at run time, in this account and "
            "region",
        ),
        Statement(
            sid="SageMakerDescribe",
            actions=(
                "sagemaker:DescribeCluster",
                "sagemaker:DescribeClusterInference",
                "sagemaker:DescribeEndpoint",
                "sagemaker:DescribeEndpointConfig",
                "sagemaker:DescribeHubContent",
                "sagemaker:DescribeModel",
                "sagemaker:UpdateClusterInference",
            ),
            resources=(
                *sagemaker,
                arns.of("sagemaker", "cluster/*"),
                arns.of("sagemaker", "hub/*"),
                arns.of("sagemaker", "hub-content/*"),
            ),
            conditions=OWN_ACCOUNT,
            why="SageMaker endpoints, models and the cluster's id are named at run time",
        ),
        Statement(
            sid="SageMakerCreate",
            actions=(
                "sagemaker:CreateEndpoint",
                "sagemaker:CreateEndpointConfig",
                "sagemaker:CreateModel",
            ),
            resources=sagemaker,
            conditions=MappingProxyType({"StringEquals": {"aws:RequestTag/CreatedBy": created_by}}),
            why="the SageMaker endpoint of each InferenceEndpointConfig, tagged "
            "CreatedBy=HyperPodInference",
        ),
        Statement(
            sid="SageMakerTag",
            actions=("sagemaker:AddTags",),
            resources=sagemaker,
            conditions=MappingProxyType(
                {
                    "StringEquals": {
                        "sagemaker:TaggingAction": [
                            "CreateEndpoint",
                            "CreateEndpointConfig",
                            "CreateModel",
                        ]
                    }
                }
            ),
            why="tags only while creating those endpoints",
        ),
        Statement(
            sid="SageMakerDelete",
            actions=(
                "sagemaker:DeleteEndpoint",
                "sagemaker:DeleteEndpointConfig",
                "sagemaker:DeleteModel",
                "sagemaker:UpdateEndpoint",
            ),
            resources=sagemaker,
            conditions=MappingProxyType(
                {"StringEquals": {"aws:ResourceTag/CreatedBy": created_by}}
            ),
            why="only endpoints the operator created (CreatedBy=HyperPodInference)",
        ),
    )


def keda_statements(arns: Arns) -> tuple[Statement, ...]:
    """KEDA's role (scaling triggers from CloudWatch and Amazon Managed Prometheus)."""
    return (
        Statement(
            sid="CloudWatchMetricsRead",
            actions=(
                "cloudwatch:GetMetricData",
                "cloudwatch:GetMetricStatistics",
                "cloudwatch:ListMetrics",
            ),
            resources=("*",),
            why="CloudWatch metric reads have no resource-level permission",
        ),
        Statement(
            sid="PrometheusQuery",
            actions=(
                "aps:GetLabels",
                "aps:GetMetricMetadata",
                "aps:GetSeries",
                "aps:QueryMetrics",
            ),
            resources=(arns.of("aps", "workspace/*"),),
            why="the Amazon Managed Prometheus workspace a scaling trigger names, in this "
            "account and region",
        ),
    )
