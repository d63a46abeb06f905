"""``HyperPodCluster``: a SageMaker HyperPod cluster orchestrated by an EKS cluster, and
``ImportedHyperPodCluster``: an existing one, read at deploy time, created by nobody here.

``HyperPodCluster`` creates (children):

* ``Role``: the instance groups' execution role (``sagemaker.amazonaws.com``), with the
  permissions HyperPod documents for EKS-orchestrated clusters
  (:func:`mlcc_constructs.core.platform.hyperpod_iam.hyperpod_instance_statements`): no wildcard
  action.
* ``LifecycleScripts``: the lifecycle scripts (``mlcc_constructs/data/hyperpod-lifecycle``),
  a CDK asset copied into ``artifacts_bucket`` (the app's: its ``artifacts`` bucket of
  ``stacks/buckets.json``) under a content-addressed prefix
  (:func:`mlcc_constructs.core.adapters.s3_layout.hyperpod_lifecycle_prefix`).
* ``VpcCniAddon``, ``KubeProxyAddon``, ``CoreDnsAddon``: the networking add-ons HyperPod nodes
  need on an EKS Auto Mode cluster
  (:data:`mlcc_constructs.core.platform.networking_addons.NETWORKING_ADDONS`, which cites how
  each schedules on Auto Mode). None of them waits for a HyperPod node: the VPC CNI and
  kube-proxy DaemonSets want no pod on Auto Mode nodes, and CoreDNS runs on Auto Mode's pools
  (it prefers them). EKS installs its default version for the cluster's Kubernetes version
  (far above the VPC CNI 1.18.3 HyperPod requires, on Kubernetes 1.35).
* ``Dependencies`` (unless ``install_dependencies`` is off): the components of HyperPod's
  dependency Helm chart an inference cluster needs (device plugins, health monitoring agent,
  HyperPod's RBAC; :class:`mlcc_constructs.aws.hyperpod_dependencies.HyperPodDependencies`),
  which AWS requires before ``CreateCluster``.
* ``Resource``: the ``AWS::SageMaker::Cluster`` (``Orchestrator.Eks.ClusterArn``, the given
  private subnets and security group, ``NodeRecovery: Automatic``), created after the roles,
  scripts, the VPC CNI and kube-proxy (not CoreDNS: DNS serves pods, not joining nodes).
  Each instance group's ``KubernetesConfig`` holds its nodes' taints and labels
  (:attr:`InstanceGroup.node_taints`: the GPU taint by default), always given, so that
  removing one from the context removes it from the nodes (HyperPod reconciles the nodes to
  the declared state).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import (
    aws_eks_v2 as eks,
    aws_iam as iam,
    aws_s3 as s3,
    aws_s3_deployment as s3deploy,
    aws_sagemaker as sagemaker,
    custom_resources as cr,
)
from constructs import Construct

from mlcc_constructs.aws._iam import grant, nag_text
from mlcc_constructs.aws.buckets import bucket_problem, concrete_environment
from mlcc_constructs.aws.hyperpod_dependencies import (
    HyperPodDependencies,
    HyperPodDependenciesProps,
)
from mlcc_constructs.aws.hyperpod_hosting import HostedDeployments
from mlcc_constructs.core.adapters.s3_layout import S3Location, hyperpod_lifecycle_prefix
from mlcc_constructs.core.platform.hyperpod import (
    ON_CREATE,
    HyperPodSettings,
    InstanceGroup,
    lifecycle_dir,
    lifecycle_hash,
)
from mlcc_constructs.core.platform.hyperpod_iam import hyperpod_instance_statements
from mlcc_constructs.core.platform.iam_statement import Arns
from mlcc_constructs.core.platform.networking_addons import NETWORKING_ADDONS
from mlcc_constructs.core.platform.versions import hyperpod_version_warning, pinned
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields

NODE_RECOVERY = "Automatic"
HYPERPOD_VERSION_WARNING = "mlcc:hyperpod-kubernetes-version"
"""The id of the synth warning for a Kubernetes version HyperPod does not document
(``cdk.Annotations.of(scope).acknowledge_warning(id)`` silences it once checked)."""
_ANY_BUCKET = "bucket-known-at-deploy-time"  # stands in for a token name (the key is the same)

# Findings of aws-cdk-lib's BucketDeployment handler (a Lambda that copies the asset into the
# artifacts bucket): its role and runtime are aws-cdk-lib's, pinned in requirements.lock.
_DEPLOYMENT_FINDINGS = (
    (
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "the BucketDeployment handler (aws-cdk-lib) writes its logs with the AWS-managed basic "
        "execution policy",
    ),
    ("AwsSolutions-L1", "the BucketDeployment handler's runtime is chosen by aws-cdk-lib"),
)


@dataclass(frozen=True, kw_only=True)
class HyperPodClusterProps:
    """Props of :class:`HyperPodCluster`."""

    cluster: eks.ICluster | eks.Cluster
    """The orchestrating EKS cluster (its name; the networking add-ons go on it)."""
    eks_cluster_arn: str
    """That cluster's ARN (``Orchestrator.Eks.ClusterArn``)."""
    cluster_name: str
    """The HyperPod cluster's name."""
    groups: Sequence[InstanceGroup]
    """The instance groups (:class:`mlcc_constructs.core.platform.hyperpod.InstanceGroup`)."""
    subnet_ids: Sequence[str]
    """The private subnets of the EKS cluster's VPC the nodes run in."""
    security_group_ids: Sequence[str]
    """The nodes' security groups (the EKS cluster security group lets them reach the control plane
    and the cluster's other nodes)."""
    artifacts_bucket: s3.IBucket
    """The bucket the lifecycle scripts are copied into (``s3.IBucket``: ``ModelBuckets.bucket(
    "artifacts")``, or ``s3.Bucket.from_bucket_name(scope, id, name)``). Required."""
    eks_cluster_name: str | None = None
    """The EKS cluster's name as text, for the IAM ARNs; default: the cluster's name attribute."""
    install_dependencies: bool = True
    """Default ``True``: install HyperPod's required components on the EKS cluster first; ``False``
    when the team installs AWS's dependency chart itself."""
    kubernetes_version: str | None = None
    """The EKS cluster's Kubernetes version, checked against the versions HyperPod documents (a
    warning, id :data:`HYPERPOD_VERSION_WARNING`); default ``None``: the version pinned in
    ``versions.json``, which ``ServingCluster`` runs."""
    groups_where: str = "HyperPodClusterProps"
    """Where ``groups`` were declared, what a problem of a group names
    (``<where>:<pointer>/<index>/count``); default ``"HyperPodClusterProps"`` (the app passes its
    context key)."""
    groups_pointer: str = "/groups"
    """The JSON pointer of ``groups`` in ``groups_where``; default ``"/groups"``."""

    def __post_init__(self) -> None:
        check_fields(self)
        problems = [
            bucket_problem(
                self.artifacts_bucket, where="HyperPodClusterProps", pointer="/artifacts_bucket"
            ),
        ]
        raise_if_any(problem for problem in problems if problem is not None)


class HyperPodCluster(Construct):
    """A HyperPod cluster on the given EKS cluster; ``cluster_arn`` and ``cluster_name`` are
    its attributes, ``addons`` its networking add-ons (EKS add-on name -> ``CfnAddon``),
    ``hosted`` the deployments it serves (:meth:`host`)."""

    def __init__(self, scope: Construct, id: str, *, props: HyperPodClusterProps) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        versions = pinned()
        warning = hyperpod_version_warning(
            props.kubernetes_version or versions.kubernetes,
            versions.hyperpod_kubernetes_documented,
        )
        if warning is not None:  # shown by cdk synth and cdk deploy
            cdk.Annotations.of(self).add_warning_v2(HYPERPOD_VERSION_WARNING, warning)
        self.hosted = HostedDeployments(
            self,
            HyperPodSettings(
                cluster_name=props.cluster_name,
                groups=tuple(props.groups),
                imported=False,
                where=props.groups_where,
                pointer=props.groups_pointer,
            ),
        )
        account, region = concrete_environment(self)
        self.artifacts_bucket: s3.IBucket = props.artifacts_bucket
        artifacts = self.artifacts_bucket.bucket_name
        scripts = _lifecycle_prefix(artifacts)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"HyperPod {props.cluster_name}: the instance groups' execution role",
        )
        statements = hyperpod_instance_statements(
            Arns(partition=cdk.Aws.PARTITION, region=region, account=account),
            eks_cluster_name=props.eks_cluster_name or props.cluster.cluster_name,
            lifecycle_bucket=artifacts,
            lifecycle_prefix=scripts.key,
            subnet_ids=props.subnet_ids,
            security_group_ids=props.security_group_ids,
        )
        grant(self.role, statements)
        self.lifecycle_scripts = s3deploy.BucketDeployment(
            self,
            "LifecycleScripts",
            sources=[s3deploy.Source.asset(str(lifecycle_dir()))],
            destination_bucket=self.artifacts_bucket,
            destination_key_prefix=scripts.key,
            # The prefix is content-addressed: nothing under it ever needs deleting, and a
            # replaced script's old prefix stays readable for nodes created from it.
            prune=False,
            retain_on_delete=True,
        )
        # The handler is a singleton function at the stack's root (one for every deployment).
        for handler in stack.node.children:
            if handler.node.id.startswith("Custom::CDKBucketDeployment"):
                for finding, reason in (
                    *_DEPLOYMENT_FINDINGS,
                    *_handler_grants(stack, self.artifacts_bucket, account, region),
                ):
                    cdk.Validations.of(handler).acknowledge(
                        cdk.Acknowledgment(id=finding, reason=reason)
                    )
        # Versions: EKS's default for the cluster's Kubernetes version.
        self.addons = {
            addon.name: eks.CfnAddon(
                self,
                addon.child_id,
                addon_name=addon.name,
                cluster_name=props.cluster.cluster_name,
                resolve_conflicts="OVERWRITE",
                configuration_values=(
                    json.dumps(dict(addon.configuration), sort_keys=True)
                    if addon.configuration is not None
                    else None
                ),
            )
            for addon in NETWORKING_ADDONS
        }
        self.dependencies = (
            HyperPodDependencies(
                self,
                "Dependencies",
                props=HyperPodDependenciesProps(
                    cluster=props.cluster,
                    # The groups' catalog entries, looked up once when each group was built.
                    instance_types=[g.instance for g in props.groups],
                ),
            )
            if props.install_dependencies
            else None
        )
        self.resource = sagemaker.CfnCluster(
            self,
            "Resource",
            cluster_name=props.cluster_name,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=props.eks_cluster_arn
                )
            ),
            instance_groups=[
                _instance_group(group, self.role.role_arn, scripts.uri) for group in props.groups
            ],
            node_recovery=NODE_RECOVERY,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=list(props.security_group_ids),
                subnets=list(props.subnet_ids),
            ),
        )
        # The role's policy, the scripts, the nodes' networking and HyperPod's required
        # components exist before any node.
        before_nodes = [self.addons[a.name] for a in NETWORKING_ADDONS if a.before_nodes]
        required = [self.dependencies] if self.dependencies is not None else []
        for dependency in (self.role, self.lifecycle_scripts, *before_nodes, *required):
            self.resource.node.add_dependency(dependency)
        self.cluster_arn: str = self.resource.attr_cluster_arn
        self.cluster_name: str = props.cluster_name

    def host(self, deployment: PreparedDeployment, *, where: str | None = None) -> None:
        """Take ``deployment`` (its pods run on the instance groups when the inference operator
        serves one of its objects; else nothing happens): refused, with every problem, when no
        group runs its instance type, a group's taint keeps its workers off, or the groups lack
        the GPUs of every deployment at its most (:mod:`mlcc_constructs.aws.hyperpod_hosting`).
        ``where``: where the deployment is declared, what its problems name; default this
        cluster's construct path. ``ServedModel`` calls it through its operator."""
        self.hosted.add(deployment, where=where or self.node.path)

    def host_all(self, deployments: Sequence[tuple[PreparedDeployment, str]]) -> None:
        """:meth:`host` of several deployments (each with where it is declared), every problem
        of every one raised together (what an app declaring them in one list wants)."""
        self.hosted.add_all(deployments)


def _lifecycle_prefix(bucket_name: str) -> S3Location:
    """The scripts' content-addressed prefix in the bucket named ``bucket_name``. A name that
    is a token (a bucket the app creates) is checked by S3, not here; the key is the same."""
    if not cdk.Token.is_unresolved(bucket_name):
        return hyperpod_lifecycle_prefix(bucket_name, lifecycle_hash())
    key = hyperpod_lifecycle_prefix(_ANY_BUCKET, lifecycle_hash()).key
    return S3Location(bucket=bucket_name, key=key)


def _handler_grants(
    stack: cdk.Stack, artifacts: s3.IBucket, account: str, region: str
) -> list[tuple[str, str]]:
    """The IAM5 findings of the BucketDeployment handler's own grants (aws-cdk-lib's
    ``grantRead`` of the CDK asset bucket, ``grantReadWrite`` of the artifacts bucket)."""
    reason = (
        "aws-cdk-lib's BucketDeployment handler copies the CDK asset into the artifacts "
        "bucket with aws-cdk-lib's own S3 read/write grants on exactly those two buckets; the "
        "HyperPod roles of this app hold no wildcard action"
    )
    actions = ("s3:Abort*", "s3:DeleteObject*", "s3:GetBucket*", "s3:GetObject*", "s3:List*")
    assets = f"cdk-{cdk.DefaultStackSynthesizer.DEFAULT_QUALIFIER}-assets-{account}-{region}"
    objects = (
        f"arn:<AWS::Partition>:s3:::{assets}/*",
        nag_text(stack, artifacts.arn_for_objects("*")),
    )
    found = [(f"AwsSolutions-IAM5[Action::{action}]", reason) for action in actions]
    return found + [(f"AwsSolutions-IAM5[Resource::{text}]", reason) for text in objects]


def _instance_group(
    group: InstanceGroup, role_arn: str, scripts_uri: str
) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
    return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
        instance_group_name=group.name,
        instance_type=group.instance_type,
        instance_count=group.count,
        execution_role=role_arn,
        life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
            source_s3_uri=scripts_uri, on_create=ON_CREATE
        ),
        instance_storage_configs=[
            sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                    volume_size_in_gb=group.ebs_volume_gib
                )
            )
        ],
        kubernetes_config=sagemaker.CfnCluster.ClusterKubernetesConfigProperty(
            labels=dict(sorted(group.labels.items())),
            taints=[
                sagemaker.CfnCluster.ClusterKubernetesTaintProperty(
                    key=taint.key, effect=taint.effect, value=taint.value
                )
                for taint in group.node_taints
            ],
        ),
    )


@dataclass(frozen=True, kw_only=True)
class ImportedHyperPodClusterProps:
    """Props of :class:`ImportedHyperPodCluster`."""

    cluster_name: str
    """The existing HyperPod cluster's name."""

    def __post_init__(self) -> None:
        check_fields(self)


class ImportedHyperPodCluster(Construct):
    """An existing HyperPod cluster: ``DescribeCluster`` at deploy time reads its ARN (which
    holds an id that only AWS knows); nothing is created or changed."""

    def __init__(self, scope: Construct, id: str, *, props: ImportedHyperPodClusterProps) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        account, region = concrete_environment(self)
        clusters = f"arn:{cdk.Aws.PARTITION}:sagemaker:{region}:{account}:cluster/*"
        call = cr.AwsSdkCall(
            service="SageMaker",
            action="DescribeCluster",
            parameters={"ClusterName": props.cluster_name},
            physical_resource_id=cr.PhysicalResourceId.of(props.cluster_name),
            output_paths=["ClusterArn"],
        )
        self.resource = cr.AwsCustomResource(
            self,
            "Resource",
            on_create=call,
            on_update=call,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        sid="DescribeCluster",
                        actions=["sagemaker:DescribeCluster"],
                        resources=[clusters],
                    )
                ]
            ),
            install_latest_aws_sdk=False,
        )
        acknowledgements = (
            (
                f"AwsSolutions-IAM5[Resource::{nag_text(stack, clusters)}]",
                "a HyperPod cluster's ARN ends in an id AWS assigns; DescribeCluster is read-only",
            ),
            (
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "the AwsCustomResource handler (aws-cdk-lib) writes its logs with the "
                "AWS-managed basic execution policy",
            ),
            ("AwsSolutions-L1", "the AwsCustomResource handler's runtime is chosen by aws-cdk-lib"),
        )
        for finding, reason in acknowledgements:
            cdk.Validations.of(stack).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))
        self.cluster_arn: str = self.resource.get_response_field("ClusterArn")
        self.cluster_name: str = props.cluster_name

    def host(self, deployment: PreparedDeployment, *, where: str | None = None) -> None:
        """Nothing to check: an existing cluster's instance groups are not known offline."""

    def host_all(self, deployments: Sequence[tuple[PreparedDeployment, str]]) -> None:
        """Nothing to check (:meth:`host`)."""
