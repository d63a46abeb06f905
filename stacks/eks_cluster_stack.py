"""Stack ``mlcc-<profile>-eks-cluster``: VPC, EKS cluster (Auto Mode) with its kubectl
provider, admin access entries, the GPU NodePool, OIDC provider, S3 CSI driver."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks, aws_lambda as lambda_
from constructs import Construct

from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.aws.s3_csi import S3CsiDriver, S3CsiDriverProps, S3CsiParentIds
from mlcc_constructs.core.platform.cluster_access import ADMIN_POLICY, admin_access_id
from mlcc_constructs.core.platform.gpu_capacity import gpu_node_pool, s3_csi_addon_configuration
from mlcc_constructs.core.platform.versions import pinned
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

# The kubectl provider is aws_eks_v2's own (handler and custom-resource framework Lambdas);
# its IAM and runtime are set by aws-cdk-lib, which the project pins.
_LAMBDA_POLICY = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
_KUBECTL_PROVIDER_FINDINGS = (
    (
        f"AwsSolutions-IAM4[{_LAMBDA_POLICY}AWSLambdaBasicExecutionRole]",
        "the kubectl provider's Lambdas (aws_eks_v2) write their logs with the AWS-managed "
        "basic execution policy",
    ),
    (
        f"AwsSolutions-IAM4[{_LAMBDA_POLICY}AWSLambdaVPCAccessExecutionRole]",
        "the kubectl provider's Lambdas run in the private subnets (the API endpoint is private "
        "or CIDR-limited) and need the AWS-managed policy that manages their network interfaces",
    ),
    (
        'AwsSolutions-IAM4[Policy::{"Fn::If":["ClusterKubectlProviderHandlerHasEcrPublic69E09706",'
        '{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":iam::aws:policy/'
        'AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]',
        "aws_eks_v2 attaches ECR Public read-only to the kubectl handler only in partitions that "
        "have ECR Public (Helm charts from public.ecr.aws); it grants no write",
    ),
    (
        "AwsSolutions-IAM5[Resource::<ClusterKubectlProviderHandler2E05C68A.Arn>:*]",
        "the custom-resource framework may invoke every version of the kubectl handler and "
        "nothing else",
    ),
    (
        "AwsSolutions-L1",
        "the kubectl handler's runtime is chosen by aws-cdk-lib (pinned in requirements.lock); "
        "it moves with aws-cdk-lib upgrades",
    ),
)


class EksClusterStack(cdk.Stack):
    """The EKS cluster ``mlcc-<profile>-eks`` with the Mountpoint S3 CSI driver add-on."""

    def __init__(
        self,
        scope: Construct,
        *,
        environment: AppEnvironment,
        gpu_families: Sequence[str] = (),
    ) -> None:
        """``gpu_families``: the instance families the GPU NodePool offers (none: no pool)."""
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
        self.cluster_name = f"mlcc-{environment.profile}-eks"
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=self.cluster_name,
            version=eks.KubernetesVersion.of(pinned().kubernetes),
            vpc=self.vpc,
            vpc_subnets=[ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)],
            endpoint_access=(
                eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*environment.endpoint_public_cidrs)
                if environment.endpoint_public_cidrs
                else eks.EndpointAccess.PRIVATE
            ),
            # kubectl runs in the private subnets: it reaches the endpoint privately, whatever
            # the public CIDRs are.
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=_kubectl_layer(self),
                private_subnets=self.vpc.select_subnets(
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                ).subnets,
            ),
            # Every control-plane log type (the project's cdk-nag rule Mlcc-EKSControlPlaneLogs).
            cluster_logging=[
                eks.ClusterLoggingTypes.API,
                eks.ClusterLoggingTypes.AUDIT,
                eks.ClusterLoggingTypes.AUTHENTICATOR,
                eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
                eks.ClusterLoggingTypes.SCHEDULER,
            ],
        )
        for finding, reason in _KUBECTL_PROVIDER_FINDINGS:
            cdk.Validations.of(self.cluster).acknowledge(
                cdk.Acknowledgment(id=finding, reason=reason)
            )
        for policy, role in _EKS_MANAGED_POLICIES:
            cdk.Validations.of(self.cluster).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]",
                    reason=f"the EKS {role} must carry the AWS-managed {policy}: EKS (Auto Mode) "
                    "requires exactly these policies and AWS keeps them current with the service",
                )
            )
        admin = eks.AccessPolicy.from_access_policy_name(
            ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
        )
        for arn in environment.admin_role_arns:
            self.cluster.grant_access(admin_access_id(arn), arn, [admin])
        self.gpu_node_pool = (
            KubernetesObjects(
                self,
                "GpuCapacity",
                props=KubernetesObjectsProps(
                    cluster=self.cluster, objects=[gpu_node_pool(gpu_families)]
                ),
            )
            if gpu_families
            else None
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
                configuration_values=s3_csi_addon_configuration(),
            ),
        )


def _kubectl_layer(scope: Construct) -> lambda_.ILayerVersion:
    """The kubectl layer package pinned in versions.json (its kubectl matches the cluster)."""
    versions = pinned()
    module = importlib.import_module(versions.kubectl_layer_module)
    layer: lambda_.ILayerVersion = getattr(module, versions.kubectl_layer_class)(
        scope, "KubectlLayer"
    )
    return layer
