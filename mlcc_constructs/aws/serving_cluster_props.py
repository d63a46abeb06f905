"""``ServingClusterProps``: the props of
:class:`~mlcc_constructs.aws.serving_cluster.ServingCluster` and their checks (every bad value
named by its JSON pointer, with what is allowed and the fix)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from aws_cdk import aws_ec2 as ec2, aws_iam as iam, aws_lambda as lambda_, aws_s3 as s3

from mlcc_constructs.aws.buckets import bucket_problem
from mlcc_constructs.aws.cluster_endpoint import subnet_problems
from mlcc_constructs.core.platform.cluster_access import endpoint_cidrs
from mlcc_constructs.core.platform.gpu_capacity import pool_families
from mlcc_constructs.core.platform.gpu_disruption import (
    gpu_limit_problems,
    parse_maintenance_window,
)
from mlcc_constructs.core.platform.image_cache import SECRETS_KEY, parse_pull_through_secrets
from mlcc_constructs.core.platform.load_balancing import MAX_ZONES
from mlcc_constructs.core.platform.log_retention import (
    CONTROL_PLANE_LOG_DAYS,
    FLOW_LOG_DAYS,
    retention_problems,
)
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.platform.vpc_network import nat_gateway_problems
from mlcc_constructs.core.support.errors import (
    MlccError,
    Problem,
    json_pointer,
    raise_if_any,
)
from mlcc_constructs.core.support.typecheck import check_fields

_MIN_ZONES = 2  # EKS needs subnets in at least two availability zones
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_KUBERNETES_VERSION = re.compile(r"^1\.[0-9]+$")
_PROPS = "ServingClusterProps"


def _internal_only() -> Mapping[str, Sequence[str]]:
    return MappingProxyType({"internal": ()})


@dataclass(frozen=True, kw_only=True)
class ServingClusterProps:
    """Props of :class:`ServingCluster`. Every field is optional."""

    cluster_name: str | None = None
    """The EKS cluster's name (1-100 letters, digits, ``-``, ``_``); default ``None``:
    CloudFormation names it."""
    vpc: ec2.IVpc | None = None
    """The team's VPC (``ec2.IVpc``); default ``None``: a new VPC (child ``Vpc``)."""
    availability_zones: Sequence[str] = ()
    """The new VPC's zones, at least two; default ``()``: up to three of the stack's zones. Only
    without ``vpc``."""
    vpc_subnets: ec2.SubnetSelection | None = None
    """The subnets of the cluster and its kubectl provider; default ``None``: the VPC's private
    subnets with egress (``SubnetType.PRIVATE_WITH_EGRESS``)."""
    admin_roles: Sequence[iam.IRole] = ()
    """IAM roles (``iam.IRole``; an ARN from configuration: ``iam.Role.from_role_arn``) given
    ``AmazonEKSClusterAdminPolicy`` at cluster scope by EKS access entries; default ``()``."""
    endpoint_public_cidrs: Sequence[str] = ()
    """IPv4 networks that reach the public API endpoint; default ``()``: the endpoint is private.
    ``0.0.0.0/0`` is refused."""
    gpu_instance_families: Sequence[str] = ()
    """Instance families the GPU NodePool offers (``g5``); default ``()``."""
    gpu_instance_types: Sequence[str] = ()
    """Instance types of the catalog whose families the pool offers (``ml.g5.12xlarge``); default
    ``()``. Neither: no GPU NodePool."""
    gpu_limit: int | None = None
    """The most GPUs the GPU NodePool holds (``limits``); default ``None``: no limit."""
    gpu_maintenance_window: str | None = None
    """When drift may replace GPU nodes (``'<daily|sun|...|sat> HH:MM <hours>h'`` UTC); default
    ``None``: never (:class:`~mlcc_constructs.aws.gpu_node_pool.GpuNodePoolProps`)."""
    control_plane_log_days: int = CONTROL_PLANE_LOG_DAYS
    """How long the EKS control-plane log group keeps its logs; default ``90``
    (:mod:`mlcc_constructs.core.platform.log_retention`)."""
    flow_log_days: int = FLOW_LOG_DAYS
    """How long the VPC flow log group keeps its logs (the VPC ServingCluster creates); default
    ``30``."""
    scaling_metrics: bool = True
    """Default ``True``: an Amazon Managed Service for Prometheus workspace with a managed scraper
    of the cluster's annotated pods, and KEDA (pinned Helm chart, IRSA role reading that workspace
    and CloudWatch metric data, ``ClusterTriggerAuthentication`` ``mlcc-aws``); ``False``: none (the
    deployments then cannot autoscale)."""
    read_buckets: Sequence[s3.IBucket] = ()
    """Buckets the S3 CSI driver mounts read-only (``s3.IBucket``: ``ModelBuckets.bucket(key)``, or
    ``s3.Bucket.from_bucket_name(scope, id, name)``); default ``()`` (add some with
    :meth:`ServingCluster.grant_model_read`)."""
    tls_bucket: s3.IBucket | None = None
    """The bucket the HyperPod inference operator writes TLS certificates to (``s3.IBucket``; the
    driver gets read access); default ``None``: none."""
    kubernetes_version: str | None = None
    """The cluster's Kubernetes version (``1.35``); default ``None``: the version pinned in
    ``versions.json``."""
    kubectl_layer: lambda_.ILayerVersion | None = None
    """The kubectl Lambda layer (its kubectl of the cluster's minor version); default ``None``: the
    layer package pinned in ``versions.json`` (child ``KubectlLayer``); required with another
    ``kubernetes_version``."""
    load_balancer_groups: Mapping[str, Sequence[str]] = field(default_factory=_internal_only)
    """The load balancer schemes (``internal``, ``internet-facing``) the cluster serves, each with
    its groups: every listed scheme gets the IngressClass ``mlcc-<scheme>`` (a load balancer per
    Ingress) and one ``mlcc-<scheme>-<group>`` per group (one load balancer shared by the group's
    Ingresses). Default ``{"internal": ()}``: internal endpoints, no groups. ``{}``: no IngressClass
    (deployments then need ``endpoint.scheme: none``)."""
    load_balancer_subnets: Mapping[str, Sequence[ec2.ISubnet]] | None = None
    """With ``vpc`` only (required then for every scheme of ``load_balancer_groups``): each scheme's
    subnets, two or more in distinct zones, with CIDRs known at synth
    (``ec2.Subnet.from_subnet_attributes(..., ipv4_cidr_block=...)``), holding nothing but load
    balancers (the deployments' NetworkPolicies admit their whole CIDRs) and tagged
    ``kubernetes.io/role/internal-elb`` (internal) or ``kubernetes.io/role/elb`` (internet-facing),
    as Auto Mode requires (tagged here when the app creates them). Default ``None``: the VPC
    ServingCluster creates has its own (see the cluster_endpoint module)."""
    nat_gateways: int | None = None
    """The NAT gateways of the VPC ServingCluster creates, 1 to one per zone; default ``None``: one
    per zone (a zone's nodes keep their egress when another zone fails). A development cluster may
    pass 1 (one NAT gateway's hourly charge; a zone outage then cuts every zone's egress;
    :mod:`mlcc_constructs.core.platform.vpc_network`). Only without ``vpc``."""
    pull_through_secrets: Mapping[str, str] | None = None
    """The ECR pull through cache (children ``PullThroughCache*`` and ``ImageCachePullPolicy``,
    :mod:`mlcc_constructs.aws.image_cache`): upstream registry -> the existing Secrets Manager
    secret (name beginning ``ecr-pullthroughcache/``, or its ARN) of each upstream that needs
    credentials (``{"docker-hub": "ecr-pullthroughcache/docker-hub"}``); default ``None``: no pull
    through cache (deployments then render without ``RenderContext.image_registry``)."""
    readiness_waiter: bool = True
    """Default ``True``: the cluster's deploy waiter (child ``MlccReadiness``,
    :class:`~mlcc_constructs.aws.readiness.ReadinessProvider`: two Lambdas, a Step Functions waiter,
    their roles and log groups, a security group and an access entry), which each ``ServedModel``
    given ``ServingCluster.readiness`` uses; ``False``: none (each stack that waits makes its
    own)."""
    leader_worker_set: bool = False
    """Default ``False``: install LeaderWorkerSet (child ``LeaderWorkerSet``, the pinned lws Helm
    chart in ``lws-system``, :mod:`mlcc_constructs.aws.cluster_leader_worker_set`), which a
    deployment over more than one node (``nodes`` > 1 on eks) needs; set it when any deployment is
    multi-node. Off by default so a cluster of single-node deployments keeps its template and runs
    no controller."""

    def __post_init__(self) -> None:
        check_fields(self)
        raise_if_any(
            [
                *_resource_problems(self),
                *_network_problems(self),
                *_version_problems(self),
                *_endpoint_problems(self),
                *self._gpu_pool[1],
                *_gpu_pool_problems(self),
                *_egress_problems(self),
            ]
        )

    @property
    def gpu_pool_families(self) -> tuple[str, ...]:
        """The families the GPU NodePool offers: ``gpu_instance_families`` and those of
        ``gpu_instance_types`` (read once, when the props are built), sorted, each once."""
        return self._gpu_pool[0]

    @cached_property
    def _gpu_pool(self) -> tuple[tuple[str, ...], list[Problem]]:
        return pool_families(
            self.gpu_instance_families,
            self.gpu_instance_types,
            where=_PROPS,
            fields=("gpu_instance_families", "gpu_instance_types"),
        )


def _egress_problems(props: ServingClusterProps) -> list[Problem]:
    problems: list[Problem] = []
    if props.nat_gateways is not None and props.vpc is not None:
        problems.append(
            _problem(
                "nat_gateways",
                "nat_gateways apply only to the VPC ServingCluster creates",
                props.nat_gateways,
                fix="leave nat_gateways unset (the team's VPC has its own), or pass no vpc",
            )
        )
    elif props.nat_gateways is not None:
        zones = len(set(props.availability_zones)) or MAX_ZONES
        problems.extend(nat_gateway_problems(props.nat_gateways, zones=zones, where=_PROPS))
    if props.pull_through_secrets is not None:
        _, found = parse_pull_through_secrets(
            dict(props.pull_through_secrets), account=None, region=None, where=_PROPS
        )
        problems.extend(
            dataclasses.replace(
                problem, pointer=problem.pointer.replace(f"/{SECRETS_KEY}", "/pull_through_secrets")
            )
            for problem in found
        )
    return problems


def _gpu_pool_problems(props: ServingClusterProps) -> list[Problem]:
    problems = (
        gpu_limit_problems(props.gpu_limit, (), where=_PROPS) if props.gpu_limit is not None else []
    )
    try:
        parse_maintenance_window(
            props.gpu_maintenance_window, where=_PROPS, pointer="/gpu_maintenance_window"
        )
    except MlccError as error:
        problems.extend(error.problems)
    for name in ("control_plane_log_days", "flow_log_days"):
        problems.extend(retention_problems(getattr(props, name), where=_PROPS, pointer=f"/{name}"))
    return problems


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
        problems.append(bucket_problem(bucket, where=_PROPS, pointer=f"/read_buckets/{index}"))
    problems.append(bucket_problem(props.tls_bucket, where=_PROPS, pointer="/tls_bucket"))
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


def _endpoint_problems(props: ServingClusterProps) -> list[Problem]:
    problems = subnet_problems(
        props.load_balancer_groups,
        props.load_balancer_subnets,
        # A VPC given as text is reported as such; it has no subnets to ask for.
        team_vpc=props.vpc is not None and not isinstance(props.vpc, str),
        where=_PROPS,
    )
    zones = list(props.availability_zones)
    if props.vpc is None and len(zones) > MAX_ZONES:
        problems.append(
            _problem(
                "availability_zones",
                f"the VPC ServingCluster creates has load balancer subnets for {MAX_ZONES} "
                "zones (REFERENCE_CIDRS)",
                zones,
                allowed=f"{_MIN_ZONES} to {MAX_ZONES} zones",
                fix=f"name at most {MAX_ZONES} zones, or pass the team's vpc= with its "
                "load_balancer_subnets",
            )
        )
    return problems
