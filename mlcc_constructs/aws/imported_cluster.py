"""``IServingCluster``: what serving on an EKS cluster needs, and ``ImportedServingCluster``: a
cluster the team owns as one (``ServingCluster.from_cluster_attributes``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks, aws_iam as iam, aws_s3 as s3
from constructs import Construct

from mlcc_constructs.aws._iam import nag_text
from mlcc_constructs.aws.buckets import require_bucket
from mlcc_constructs.aws.s3_csi import READ_BUCKET_ACTIONS, READ_OBJECT_ACTIONS
from mlcc_constructs.core.platform.load_balancing import cidr_problems
from mlcc_constructs.core.support.errors import fail, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields


class IServingCluster(Protocol):
    """What serving on an EKS cluster needs: :class:`ServingCluster` (created) and
    :meth:`ServingCluster.from_cluster_attributes` (a team's own) both provide it.

    ``cluster``: the cluster; its kubectl provider applies Kubernetes objects
    (:class:`~mlcc_constructs.aws.served_model.ServedModel`).
    ``oidc_provider``: its IAM OIDC provider (IRSA trust of the HyperPod inference operator).
    ``vpc``: its VPC (the HyperPod cluster's subnets).
    ``cluster_name``: its name (text where known: IAM ARNs, cdk-nag acknowledgements).
    ``load_balancer_cidrs``: scheme -> the CIDRs of the subnets its load balancers live in:
    what the deployments' NetworkPolicies admit the load balancers from (pass it as
    ``RenderContext.load_balancer_cidrs`` when preparing them).
    ``prometheus_query_url``: the query base URL of the Amazon Managed Service for Prometheus
    workspace the cluster's metrics go to (what KEDA's ``prometheus`` trigger takes as
    ``serverAddress``; ``RenderContext.prometheus_query_url``), or ``None``: none.
    """

    @property
    def cluster(self) -> eks.ICluster | eks.Cluster: ...

    @property
    def oidc_provider(self) -> iam.IOpenIdConnectProvider: ...

    @property
    def vpc(self) -> ec2.IVpc: ...

    @property
    def cluster_name(self) -> str: ...

    @property
    def load_balancer_cidrs(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def prometheus_query_url(self) -> str | None: ...

    def grant_model_read(self, bucket: s3.IBucket) -> s3.IBucket:
        """Let the cluster's S3 CSI driver mount ``bucket`` read-only; returns the bucket."""
        ...


@dataclass(frozen=True, kw_only=True)
class ImportedServingClusterProps:
    """Props of :class:`ImportedServingCluster` (``ServingCluster.from_cluster_attributes``)."""

    cluster: eks.ICluster | eks.Cluster
    """The team's cluster; to apply objects it needs its kubectl provider
    (``eks.Cluster.from_cluster_attributes(..., kubectl_provider=...)``)."""
    oidc_provider: iam.IOpenIdConnectProvider
    """The cluster's IAM OIDC provider."""
    vpc: ec2.IVpc | None = None
    """The cluster's VPC; default ``None``: the cluster's own ``vpc`` attribute."""
    cluster_name: str | None = None
    """The cluster's name as text; default ``None``: the cluster's ``cluster_name`` attribute."""
    s3_csi_role: iam.IRole | None = None
    """The role of the cluster's Mountpoint S3 CSI driver, which
    :meth:`ImportedServingCluster.grant_model_read` grants to; default ``None``: no grants."""
    load_balancer_cidrs: Mapping[str, Sequence[str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Scheme (``internal``, ``internet-facing``) -> the CIDRs of the subnets the cluster's load
    balancers live in (two or more IPv4 networks each); default ``{}``: none known (a deployment
    rendered for this cluster would admit no load balancer)."""
    prometheus_query_url: str | None = None
    """The query base URL of the workspace the cluster's metrics go to
    (``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>``), with KEDA installed and a
    ``ClusterTriggerAuthentication`` ``mlcc-aws`` whose identity may query it; default ``None``:
    none (deployments rendered for this cluster cannot autoscale on metrics)."""

    def __post_init__(self) -> None:
        check_fields(self)
        raise_if_any(
            dataclasses.replace(problem, where="ImportedServingClusterProps")
            for problem in cidr_problems(self.load_balancer_cidrs, pointer="/load_balancer_cidrs")
        )
        if isinstance(self.cluster, str):
            raise fail(
                "a cluster name is not a cluster",
                where="ImportedServingClusterProps",
                pointer="/cluster",
                value=self.cluster,
                fix="pass eks.Cluster.from_cluster_attributes(scope, id, cluster_name=..., "
                "kubectl_provider=...)",
            )


class ImportedServingCluster(Construct):
    """A cluster the team owns, as an :class:`IServingCluster`: nothing is created, except the
    S3 CSI role's policy that :meth:`grant_model_read` adds."""

    def __init__(self, scope: Construct, id: str, *, props: ImportedServingClusterProps) -> None:
        super().__init__(scope, id)
        self._props = props

    @property
    def cluster(self) -> eks.ICluster | eks.Cluster:
        return self._props.cluster

    @property
    def oidc_provider(self) -> iam.IOpenIdConnectProvider:
        return self._props.oidc_provider

    @property
    def vpc(self) -> ec2.IVpc:
        vpc = self._props.vpc
        if vpc is None:
            try:
                vpc = self._props.cluster.vpc
            except RuntimeError as error:  # jsii: an imported cluster without a VPC
                raise fail(
                    "the imported cluster has no VPC",
                    where=self.node.path,
                    fix="pass vpc= to ServingCluster.from_cluster_attributes",
                ) from error
        return vpc

    @property
    def cluster_name(self) -> str:
        return self._props.cluster_name or self._props.cluster.cluster_name

    @property
    def load_balancer_cidrs(self) -> Mapping[str, tuple[str, ...]]:
        return MappingProxyType(
            {scheme: tuple(cidrs) for scheme, cidrs in self._props.load_balancer_cidrs.items()}
        )

    @property
    def prometheus_query_url(self) -> str | None:
        return self._props.prometheus_query_url

    def grant_model_read(self, bucket: s3.IBucket) -> s3.IBucket:
        """Grant the S3 CSI role (``s3_csi_role``) read access to ``bucket`` (an ``s3.IBucket``);
        returns the bucket."""
        resolved = require_bucket(bucket, where="ImportedServingCluster.grant_model_read")
        role = self._props.s3_csi_role
        if role is None:
            raise fail(
                "the imported cluster has no S3 CSI role to grant to",
                where=self.node.path,
                fix="pass s3_csi_role= to ServingCluster.from_cluster_attributes",
            )
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(READ_BUCKET_ACTIONS), resources=[resolved.bucket_arn])
        )
        objects = resolved.arn_for_objects("*")
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=list(READ_OBJECT_ACTIONS), resources=[objects])
        )
        # The grant is the role's policy (an imported role's: created beside it).
        cdk.Validations.of(role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::{nag_text(cdk.Stack.of(self), objects)}]",
                reason="s3:GetObject on the objects of one named bucket the CSI driver mounts "
                "read-only",
            )
        )
        return resolved
