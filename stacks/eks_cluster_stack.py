"""Stack ``mlcc-<profile>-eks-cluster``: VPC, EKS cluster, OIDC provider, S3 CSI driver."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.aws.s3_csi import S3CsiDriver, S3CsiDriverProps, S3CsiParentIds
from mlcc_constructs.core.versions import pinned
from stacks.app_context import AppEnvironment

# Logical ids are a contract with the deployed stack: a changed id replaces the resource.
S3CSI_IDS = S3CsiParentIds(role="S3CsiRole", addon="S3CsiDriverAddon")

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


class EksClusterStack(cdk.Stack):
    """The EKS cluster ``mlcc-<profile>-eks`` with the Mountpoint S3 CSI driver add-on."""

    def __init__(self, scope: Construct, *, environment: AppEnvironment) -> None:
        super().__init__(
            scope,
            environment.stack_name("eks-cluster"),
            env=environment.env,
            description=f"mlcc EKS cluster mlcc-{environment.profile}-eks",
        )
        # Answer the availability-zone context lookup with the app's declared zones
        # (cdk.json / -c availability_zones): synth never calls AWS, and the in-process
        # template equals the CLI's.
        self.node.set_context(
            f"availability-zones:account={environment.account}:region={environment.region}",
            list(environment.availability_zones),
        )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            availability_zones=list(environment.availability_zones),
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=19
                ),
            ],
            # Model weights stream from S3 through the gateway endpoint, not the NAT gateway.
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
            },
            flow_logs={"FlowLog": ec2.FlowLogOptions()},
        )
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=f"mlcc-{environment.profile}-eks",
            version=eks.KubernetesVersion.of(pinned().kubernetes),
            vpc=self.vpc,
            vpc_subnets=[ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)],
            cluster_logging=[
                eks.ClusterLoggingTypes.API,
                eks.ClusterLoggingTypes.AUDIT,
                eks.ClusterLoggingTypes.AUTHENTICATOR,
            ],
        )
        for policy, role in _EKS_MANAGED_POLICIES:
            cdk.Validations.of(self.cluster).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]",
                    reason=f"the EKS {role} must carry the AWS-managed {policy}: EKS (Auto Mode) "
                    "requires exactly these policies and AWS keeps them current with the service",
                )
            )
        # The native AWS::IAM::OIDCProvider: no custom-resource Lambda.
        self.oidc_provider = eks.OidcProviderNative(
            self, "OidcProvider", url=self.cluster.cluster_open_id_connect_issuer_url
        )
        self.s3_csi = S3CsiDriver(
            self,
            "S3CsiDriver",
            props=S3CsiDriverProps(
                cluster=self.cluster,
                oidc_provider=self.oidc_provider,
                profile=environment.profile,
                parent_ids=S3CSI_IDS,
            ),
        )
