"""``ServingCluster``: an EKS Auto Mode cluster ready to serve models. It is an
:class:`~mlcc_constructs.aws.imported_cluster.IServingCluster`, what serving on a cluster needs;
``ServingCluster.from_cluster_attributes`` makes one of a team's own cluster.

``ServingCluster`` creates (children; their ids are a contract, see *Logical ids*):

* ``Vpc`` (only without ``vpc``): one public and one private subnet (with egress) per zone, one
  NAT gateway, an S3 gateway endpoint (model weights stream from S3 through it, not the NAT
  gateway) and a flow log.
* ``KubectlLayer`` (only without ``kubectl_layer``): the kubectl Lambda layer pinned in
  ``versions.json`` (its kubectl matches the cluster's minor version).
* ``Cluster``: the ``aws_eks_v2`` cluster (Auto Mode, authentication mode ``API``, every
  control-plane log type), its kubectl provider in the cluster's private subnets (it reaches
  the API endpoint privately whatever the public CIDRs), an access entry with
  ``AmazonEKSClusterAdminPolicy`` at cluster scope per admin role (child id from the role's ARN,
  so adding or removing a role never touches another's entry). The API endpoint is private
  unless ``endpoint_public_cidrs`` lists networks.
* ``GpuCapacity`` (only with GPU families or types): the :class:`GpuNodePool`.
* ``OidcProvider``: the native ``AWS::IAM::OIDCProvider`` of the cluster (IRSA).
* ``S3CsiDriver`` and beside it ``S3CsiRole`` and ``S3CsiDriverAddon``
  (:class:`~mlcc_constructs.aws.s3_csi.S3CsiParentIds`): the Mountpoint S3 CSI driver, its node
  pod tolerating the GPU taint, reading ``read_buckets`` (and the TLS bucket; more with
  :meth:`ServingCluster.grant_model_read`).

**Logical ids.** CloudFormation logical ids come from construct paths, and a changed logical
id replaces the resource. The children's ids above are a contract: a team's
``ServingCluster(stack, "Serving")`` has ``Serving/Cluster``, ``Serving/S3CsiRole``, ... and
keeps them. The app's deployed ``mlcc-<profile>-eks-cluster`` stack had these resources as
the stack's own children (``Cluster``, ``S3CsiRole``, ``S3CsiDriverAddon``, policy
``S3CsiRoleDefaultPolicyE2B11437``), so the app passes ``in_parent_scope=True``: the children
are created in the stack with the same ids, and their construct paths are exactly what they
were. Not a construct id ``Default`` (which CDK leaves out of logical ids): CDK also writes
construct paths into templates (the VPC's ``Name`` tags, the kubectl provider's description),
and the stack-level singletons (the ``CfnJson`` provider) would move in the template: measured,
that is 61 changed lines of the eks-cluster template; nor overridden logical ids: construct
paths keep matching the ids ``cdk diff`` and cdk-nag print, and no hashed suffix is hard-coded.

**Availability zones.** A VPC created in a stack with an explicit environment checks its zones
against the stack's (a context lookup): answer it offline with
``stack.node.set_context("availability-zones:account=<account>:region=<region>", [...])``
before adding children to the stack (the app does), or let ``cdk synth`` look it up.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import (
    aws_ec2 as ec2,
    aws_eks_v2 as eks,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_s3 as s3,
)
from constructs import Construct

from mlcc_constructs.aws._eks_findings import acknowledge_cluster_findings
from mlcc_constructs.aws.buckets import BucketRef, bucket_ref_problem
from mlcc_constructs.aws.gpu_node_pool import GpuNodePool, GpuNodePoolProps, capacity_problems
from mlcc_constructs.aws.imported_cluster import (
    ImportedServingCluster,
    ImportedServingClusterProps,
    IServingCluster,
)
from mlcc_constructs.aws.s3_csi import (
    S3CsiDriver,
    S3CsiDriverProps,
    S3CsiParentIds,
)
from mlcc_constructs.core.platform.cluster_access import (
    ADMIN_POLICY,
    admin_access_id,
    endpoint_cidrs,
)
from mlcc_constructs.core.platform.gpu_capacity import s3_csi_addon_configuration
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import (
    MlccError,
    Problem,
    json_pointer,
    raise_if_any,
)
from mlcc_constructs.core.support.typecheck import check_fields

# Logical ids are a contract with the deployed stack: a changed id replaces the resource.
S3CSI_IDS = S3CsiParentIds(role="S3CsiRole", addon="S3CsiDriverAddon")
_MIN_ZONES = 2  # EKS needs subnets in at least two availability zones
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_KUBERNETES_VERSION = re.compile(r"^1\.[0-9]+$")
_PROPS = "ServingClusterProps"

_CONTROL_PLANE_LOGS = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)


@dataclass(frozen=True, kw_only=True)
class ServingClusterProps:
    """Props of :class:`ServingCluster`. Every field is optional.

    ``cluster_name``: the EKS cluster's name (1-100 letters, digits, ``-``, ``_``); default
    ``None``: CloudFormation names it.
    ``vpc``: the team's VPC (``ec2.IVpc``); default ``None``: a new VPC (child ``Vpc``).
    ``availability_zones``: the new VPC's zones, at least two; default ``()``: up to three
    of the stack's zones. Only without ``vpc``.
    ``vpc_subnets``: the subnets of the cluster and its kubectl provider; default ``None``:
    the VPC's private subnets with egress (``SubnetType.PRIVATE_WITH_EGRESS``).
    ``admin_roles``: IAM roles (``iam.IRole``; an ARN from configuration:
    ``iam.Role.from_role_arn``) given ``AmazonEKSClusterAdminPolicy`` at cluster scope by EKS
    access entries; default ``()``.
    ``endpoint_public_cidrs``: IPv4 networks that reach the public API endpoint; default
    ``()``: the endpoint is private. ``0.0.0.0/0`` is refused.
    ``gpu_instance_families``: instance families the GPU NodePool offers (``g5``); default
    ``()``.
    ``gpu_instance_types``: instance types of the catalog whose families the pool offers
    (``ml.g5.12xlarge``); default ``()``. Neither: no GPU NodePool.
    ``read_buckets``: buckets the S3 CSI driver mounts read-only
    (:data:`~mlcc_constructs.aws.buckets.BucketRef`: the team's ``s3.IBucket``, a descriptor
    key or a literal name); default ``()`` (add some with :meth:`ServingCluster.grant_model_read`).
    ``tls_bucket``: the bucket the HyperPod inference operator writes TLS certificates to (the
    driver gets read access); default ``None``: none.
    ``profile``: fills ``${profile}`` of descriptor keys; default ``None`` (required then).
    ``kubernetes_version``: the cluster's Kubernetes version (``1.35``); default ``None``: the
    version pinned in ``versions.json``.
    ``kubectl_layer``: the kubectl Lambda layer (its kubectl of the cluster's minor version);
    default ``None``: the layer package pinned in ``versions.json`` (child ``KubectlLayer``);
    required with another ``kubernetes_version``.
    ``in_parent_scope``: default ``False``: the children are this construct's
    (``<id>/Cluster``, ...). ``True`` creates them directly in the construct's scope with the
    same ids, for a stack whose deployed resources were its own children (the app's
    eks-cluster stack): see *Logical ids* in the module.
    """

    cluster_name: str | None = None
    vpc: ec2.IVpc | None = None
    availability_zones: Sequence[str] = ()
    vpc_subnets: ec2.SubnetSelection | None = None
    admin_roles: Sequence[iam.IRole] = ()
    endpoint_public_cidrs: Sequence[str] = ()
    gpu_instance_families: Sequence[str] = ()
    gpu_instance_types: Sequence[str] = ()
    read_buckets: Sequence[BucketRef] = ()
    tls_bucket: BucketRef | None = None
    profile: str | None = None
    kubernetes_version: str | None = None
    kubectl_layer: lambda_.ILayerVersion | None = None
    in_parent_scope: bool = False

    def __post_init__(self) -> None:
        check_fields(self)
        raise_if_any(
            [
                *_resource_problems(self),
                *_network_problems(self),
                *_version_problems(self),
                *capacity_problems(
                    self.gpu_instance_families,
                    self.gpu_instance_types,
                    where=_PROPS,
                    fields=("gpu_instance_families", "gpu_instance_types"),
                ),
            ]
        )


def _problem(field: str, message: str, value: object, *, allowed: str = "", fix: str) -> Problem:
    return Problem(
        message=message,
        where=_PROPS,
        pointer=json_pointer(*field.split("/")),
        value=value,
        allowed=allowed,
        fix=fix,
    )


def _resource_problems(props: ServingClusterProps) -> list[Problem]:
    """Text where a resource object belongs (jsii interfaces pass the type check)."""
    problems: list[Problem | None] = []
    if isinstance(props.vpc, str):
        problems.append(
            _problem(
                "vpc",
                "a VPC id is not a VPC",
                props.vpc,
                fix="pass the VPC object (ec2.Vpc.from_vpc_attributes(scope, id, ...) for a "
                "VPC the app does not create)",
            )
        )
    for index, role in enumerate(props.admin_roles):
        if isinstance(role, str):
            problems.append(
                _problem(
                    f"admin_roles/{index}",
                    "an ARN is not a role",
                    role,
                    allowed="iam.IRole",
                    fix="pass iam.Role.from_role_arn(scope, id, arn)",
                )
            )
    for index, bucket in enumerate(props.read_buckets):
        problems.append(bucket_ref_problem(bucket, where=_PROPS, pointer=f"/read_buckets/{index}"))
    problems.append(bucket_ref_problem(props.tls_bucket, where=_PROPS, pointer="/tls_bucket"))
    if isinstance(props.kubectl_layer, str):
        problems.append(
            _problem(
                "kubectl_layer",
                "an ARN is not a layer",
                props.kubectl_layer,
                allowed="lambda.ILayerVersion",
                fix="pass the layer object (e.g. KubectlV35Layer(scope, id))",
            )
        )
    return [problem for problem in problems if problem is not None]


def _network_problems(props: ServingClusterProps) -> list[Problem]:
    problems = []
    zones = list(props.availability_zones)
    if zones and props.vpc is not None:
        problems.append(
            _problem(
                "availability_zones",
                "availability_zones apply only to the VPC ServingCluster creates",
                zones,
                fix="leave availability_zones empty (the team's VPC has its subnets), or pass "
                "no vpc",
            )
        )
    elif zones and (len(set(zones)) < _MIN_ZONES or len(set(zones)) != len(zones)):
        problems.append(
            _problem(
                "availability_zones",
                f"EKS needs at least {_MIN_ZONES} distinct availability zones",
                zones,
                allowed="distinct zones of the stack's region, e.g. ['us-east-1a', 'us-east-1b']",
                fix="name two zones or more, each once (or none: the stack's zones)",
            )
        )
    if props.cluster_name is not None and not _CLUSTER_NAME.match(props.cluster_name):
        problems.append(
            _problem(
                "cluster_name",
                "not an EKS cluster name",
                props.cluster_name,
                allowed="1-100 letters, digits, '-' and '_', starting with a letter or digit",
                fix="rename the cluster, e.g. team-serving",
            )
        )
    try:
        endpoint_cidrs(list(props.endpoint_public_cidrs), where=_PROPS)
    except MlccError as error:  # its problems, with a fix for a construct (not -c)
        problems.extend(
            dataclasses.replace(
                problem,
                fix="pass networks such as ['203.0.113.0/24'] (or none: a private endpoint)"
                if problem.fix.startswith("pass -c")
                else problem.fix,
            )
            for problem in error.problems
        )
    return problems


def _version_problems(props: ServingClusterProps) -> list[Problem]:
    version = props.kubernetes_version
    if version is None:
        return []
    if not _KUBERNETES_VERSION.match(version):
        return [
            _problem(
                "kubernetes_version",
                "not a Kubernetes minor version",
                version,
                allowed="1.<minor>, e.g. " + pinned().kubernetes,
                fix="pass the minor version only, e.g. " + pinned().kubernetes,
            )
        ]
    if version != pinned().kubernetes and props.kubectl_layer is None:
        minor = version.split(".")[1]
        return [
            _problem(
                "kubernetes_version",
                f"Kubernetes {version} needs a kubectl layer of that minor version (the "
                f"pinned layer is {pinned().kubectl_layer}, for {pinned().kubernetes})",
                version,
                fix=f"pass kubectl_layer=KubectlV{minor}Layer(scope, id) (PyPI "
                f"aws-cdk.lambda-layer-kubectl-v{minor}), or leave kubernetes_version unset",
            )
        ]
    return []


class ServingCluster(Construct):
    """An EKS Auto Mode cluster with what serving needs (children: see the module).

    Attributes: ``vpc``, ``cluster``, ``cluster_name`` (text when ``cluster_name`` is given, else
    a token), ``kubectl_layer``, ``gpu_node_pool`` (``None`` without GPU families),
    ``oidc_provider``, ``s3_csi`` and ``s3_csi_role``.
    """

    def __init__(
        self, scope: Construct, id: str, *, props: ServingClusterProps | None = None
    ) -> None:
        super().__init__(scope, id)
        props = props or ServingClusterProps()
        # Where the children go: this construct, or its scope (``in_parent_scope``).
        owner: Construct = scope if props.in_parent_scope else self
        self.vpc: ec2.IVpc = props.vpc or _new_vpc(owner, props.availability_zones)
        subnets = props.vpc_subnets or ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
        )
        self.kubectl_layer = props.kubectl_layer or _pinned_kubectl_layer(owner)
        cidrs = props.endpoint_public_cidrs
        self.cluster = eks.Cluster(
            owner,
            "Cluster",
            cluster_name=props.cluster_name,
            version=eks.KubernetesVersion.of(props.kubernetes_version or pinned().kubernetes),
            vpc=self.vpc,
            vpc_subnets=[subnets],
            endpoint_access=(
                eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*cidrs)
                if cidrs
                else eks.EndpointAccess.PRIVATE
            ),
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=self.kubectl_layer,
                private_subnets=_select(self.vpc, subnets).subnets,
            ),
            # Every control-plane log type (the project's cdk-nag rule Mlcc-EKSControlPlaneLogs).
            cluster_logging=list(_CONTROL_PLANE_LOGS),
        )
        self.cluster_name: str = props.cluster_name or self.cluster.cluster_name
        acknowledge_cluster_findings(self.cluster)
        admin = eks.AccessPolicy.from_access_policy_name(
            ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
        )
        for role in props.admin_roles:
            self.cluster.grant_access(_access_id(role), role.role_arn, [admin])
        families, types = props.gpu_instance_families, props.gpu_instance_types
        self.gpu_node_pool: GpuNodePool | None = (
            GpuNodePool(
                owner,
                "GpuCapacity",
                props=GpuNodePoolProps(
                    cluster=self.cluster, instance_families=families, instance_types=types
                ),
            )
            if families or types
            else None
        )
        # The native AWS::IAM::OIDCProvider: no custom-resource Lambda.
        self.oidc_provider = eks.OidcProviderNative(
            owner, "OidcProvider", url=self.cluster.cluster_open_id_connect_issuer_url
        )
        self.s3_csi = S3CsiDriver(
            owner,
            "S3CsiDriver",
            props=S3CsiDriverProps(
                cluster=self.cluster,
                oidc_provider=self.oidc_provider,
                read_buckets=props.read_buckets,
                tls_bucket=props.tls_bucket,
                profile=props.profile,
                parent_ids=S3CSI_IDS,
                configuration_values=s3_csi_addon_configuration(),
            ),
        )
        self.s3_csi_role: iam.IRole = self.s3_csi.role

    @staticmethod
    def from_cluster_attributes(
        scope: Construct,
        id: str,
        *,
        cluster: eks.ICluster | eks.Cluster,
        oidc_provider: iam.IOpenIdConnectProvider,
        vpc: ec2.IVpc | None = None,
        cluster_name: str | None = None,
        s3_csi_role: iam.IRole | None = None,
    ) -> IServingCluster:
        """A team's own cluster as an :class:`IServingCluster` (creates nothing); see
        :class:`ImportedServingClusterProps` for the arguments."""
        return ImportedServingCluster(
            scope,
            id,
            props=ImportedServingClusterProps(
                cluster=cluster,
                oidc_provider=oidc_provider,
                vpc=vpc,
                cluster_name=cluster_name,
                s3_csi_role=s3_csi_role,
            ),
        )

    def grant_model_read(self, bucket: BucketRef) -> s3.IBucket:
        """Let the S3 CSI driver mount ``bucket`` read-only (see
        :meth:`~mlcc_constructs.aws.s3_csi.S3CsiDriver.grant_read`); returns the bucket."""
        return self.s3_csi.grant_read(bucket)


def _new_vpc(scope: Construct, zones: Sequence[str]) -> ec2.Vpc:
    return ec2.Vpc(
        scope,
        "Vpc",
        availability_zones=list(zones) or None,
        nat_gateways=1,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
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


def _select(vpc: ec2.IVpc, selection: ec2.SubnetSelection) -> ec2.SelectedSubnets:
    """``vpc.select_subnets`` of a ``SubnetSelection`` (jsii passes a struct as keywords)."""
    return vpc.select_subnets(
        availability_zones=selection.availability_zones,
        one_per_az=selection.one_per_az,
        subnet_filters=selection.subnet_filters,
        subnet_group_name=selection.subnet_group_name,
        subnets=selection.subnets,
        subnet_type=selection.subnet_type,
    )


def _pinned_kubectl_layer(scope: Construct) -> lambda_.ILayerVersion:
    """The kubectl layer package pinned in versions.json (its kubectl matches the cluster)."""
    versions = pinned()
    module = importlib.import_module(versions.kubectl_layer_module)
    layer: lambda_.ILayerVersion = getattr(module, versions.kubectl_layer_class)(
        scope, "KubectlLayer"
    )
    return layer


def _access_id(role: iam.IRole) -> str:
    """The access entry's child id: from the role's ARN (stable, whatever other roles are
    added or removed), or from its construct address when the ARN is only known at deploy
    time (a role the app creates)."""
    arn = role.role_arn
    if not cdk.Token.is_unresolved(arn):
        return admin_access_id(arn)
    name = "".join(ch for ch in role.node.id.title() if ch.isalnum())[:48]
    return f"AdminAccess{name}{role.node.addr[:8].upper()}"
