"""``ServingCluster``: an EKS Auto Mode cluster ready to serve models. It is an
:class:`~mlcc_constructs.aws.imported_cluster.IServingCluster`, what serving on a cluster needs;
``ServingCluster.from_cluster_attributes`` makes one of a team's own cluster.

``ServingCluster`` creates (children; their ids are a contract, see *Logical ids*):

* ``Vpc`` (only without ``vpc``): one public and one private subnet (with egress) per zone,
  ``nat_gateways`` NAT gateways (default: one per zone), an S3
  gateway endpoint (model weights and image layers come from S3 through it, not the NAT
  gateway), interface endpoints for ECR (api, dkr), STS and CloudWatch Logs with their
  security group (:mod:`mlcc_constructs.aws.cluster_network`) and a flow log.
* ``PullThroughCache<Upstream>`` and ``ImageCachePullPolicy`` (only with
  ``pull_through_secrets``): the ECR pull through cache rules and the node role's grant to pull
  through them (:mod:`mlcc_constructs.aws.image_cache`).
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
  (:data:`S3CSI_IDS`): the Mountpoint S3 CSI driver, its node
  pod tolerating the GPU taint, reading ``read_buckets`` (and the TLS bucket; more with
  :meth:`ServingCluster.grant_model_read`).

The cluster side of the deployments' endpoints (:mod:`mlcc_constructs.aws.cluster_endpoint`):

* ``LoadBalancerSubnets`` (only without ``vpc``): per scheme of ``load_balancer_groups``, one
  subnet per zone that holds the load balancers only, at ``REFERENCE_CIDRS``.
* ``IngressClasses`` (with a scheme): per scheme the ``IngressClassParams`` and ``IngressClass``
  ``mlcc-<scheme>``, and ``mlcc-<scheme>-<group>`` per group, their ALBs in that scheme's load
  balancer subnets (each ALB costs its hourly charge plus LCUs).
* ``NetworkPolicyController``: the ConfigMap ``kube-system/amazon-vpc-cni`` that makes Auto Mode
  enforce NetworkPolicies.
* ``SecretsStoreCsiAddon``: the EKS add-on ``aws-secrets-store-csi-driver-provider`` (the Secrets
  Store CSI driver and the AWS provider, secret sync on, tolerating the GPU taint).
* ``PrometheusWorkspace``, ``PrometheusScraper``, ``KedaRole``, ``Keda`` (the kedacore Helm
  chart), ``KedaAuthentication`` (the ``ClusterTriggerAuthentication`` ``mlcc-aws``): the
  metrics the deployments scale on (:mod:`mlcc_constructs.aws.cluster_metrics`), with
  ``scaling_metrics``.
* ``MlccReadiness`` (with ``readiness_waiter``, the default): the deploy waiter of every
  ``ServedModel`` given ``ServingCluster.readiness`` (:mod:`mlcc_constructs.aws.readiness`).
* ``LeaderWorkerSet`` (with ``leader_worker_set``): the pinned lws Helm chart, the controller
  and CRD of multi-node deployments (:mod:`mlcc_constructs.aws.cluster_leader_worker_set`).
* ``ServingDashboard``: a CloudWatch dashboard of the load balancers' latency, 5xx, requests
  and healthy targets (:mod:`mlcc_constructs.aws.cluster_dashboard`).
* ``ControlPlaneLogRetention``: the control-plane log group's retention
  (:mod:`mlcc_constructs.aws.cluster_logs`).
* ``GpuCapacity/NodeClass``: the GPU NodePool's own NodeClass ``mlcc-gpu`` (the cluster's Auto
  Mode node role, its subnets and cluster security group; network policies ``DefaultAllow``;
  200Gi of ephemeral storage).

**Logical ids.** CloudFormation logical ids come from construct paths, and a changed logical
id replaces the resource. The children's ids above are a contract: a team's
``ServingCluster(stack, "Serving")`` has ``Serving/Cluster``, ``Serving/S3CsiRole``, ... and
keeps them. A stack deployed with these resources as its own children (the app's
``mlcc-<profile>-eks-cluster``: ``Cluster``, ``S3CsiRole``, ``S3CsiDriverAddon``, policy
``S3CsiRoleDefaultPolicyE2B11437``) keeps them with a subclass whose :meth:`_children_scope`
returns the scope (``stacks/eks_cluster_stack.py``): the children are created in the stack
with the same ids, and their construct paths are exactly what they were. Not a construct id
``Default`` (which CDK leaves out of logical ids): CDK also writes
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

import importlib
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import cast

import aws_cdk as cdk
from aws_cdk import (
    aws_ec2 as ec2,
    aws_ecr as ecr,
    aws_eks_v2 as eks,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_s3 as s3,
)
from constructs import Construct

from mlcc_constructs.aws._eks_findings import acknowledge_cluster_findings
from mlcc_constructs.aws._outputs import add_stack_outputs
from mlcc_constructs.aws.buckets import require_bucket
from mlcc_constructs.aws.cluster_dashboard import add_serving_dashboard
from mlcc_constructs.aws.cluster_endpoint import (
    EndpointComponents,
    add_endpoint_components,
    create_load_balancer_subnets,
    known_cidr,
    use_team_subnets,
)
from mlcc_constructs.aws.cluster_leader_worker_set import add_leader_worker_set
from mlcc_constructs.aws.cluster_logs import retain_control_plane_logs, retain_flow_logs
from mlcc_constructs.aws.cluster_metrics import ClusterMetrics, add_cluster_metrics
from mlcc_constructs.aws.cluster_network import add_interface_endpoints
from mlcc_constructs.aws.gpu_node_pool import GpuNodeClass, GpuNodePool, GpuNodePoolProps
from mlcc_constructs.aws.image_cache import add_pull_through_cache
from mlcc_constructs.aws.imported_cluster import (
    ImportedServingCluster,
    ImportedServingClusterProps,
    IServingCluster,
)
from mlcc_constructs.aws.readiness import PROVIDER_ID, ReadinessProvider
from mlcc_constructs.aws.s3_csi import S3CsiDriver, S3CsiDriverProps
from mlcc_constructs.aws.serving_cluster_props import ServingClusterProps as ServingClusterProps
from mlcc_constructs.core.platform.cluster_access import ADMIN_POLICY, admin_access_id
from mlcc_constructs.core.platform.gpu_capacity import (
    s3_csi_addon_configuration,
)
from mlcc_constructs.core.platform.load_balancing import SCHEMES, LoadBalancerScheme
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.platform.vpc_network import VPC_CIDR
from mlcc_constructs.core.serving.endpoint.outputs import cluster_outputs
from mlcc_constructs.core.support.errors import fail

# Logical ids are a contract with the deployed stack: a changed id replaces the resource.
S3CSI_IDS = ("S3CsiRole", "S3CsiDriverAddon")
"""The construct ids of the S3 CSI driver's role and add-on, beside the ``S3CsiDriver``."""


class _ClusterS3CsiDriver(S3CsiDriver):
    """ServingCluster's S3 CSI driver: its role and add-on beside it (:data:`S3CSI_IDS`)."""

    _ROLE_ID, _ADDON_ID = S3CSI_IDS
    _BESIDE = True


_CONTROL_PLANE_LOGS = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)


class ServingCluster(Construct):
    """An EKS Auto Mode cluster with what serving needs (children: see the module).

    Attributes: ``vpc``, ``cluster``, ``cluster_name`` (text when ``cluster_name`` is given, else
    a token), ``kubectl_layer``, ``gpu_node_pool`` (``None`` without GPU families) and
    ``gpu_instance_families`` (the families it offers),
    ``oidc_provider``, ``s3_csi`` and ``s3_csi_role``; for the endpoints
    ``load_balancer_subnets`` and ``load_balancer_cidrs`` (scheme -> the subnets, their CIDRs:
    what the deployments' NetworkPolicies admit, ``RenderContext.load_balancer_cidrs``) and
    ``endpoint_components`` (the IngressClasses, the network policy ConfigMap, the add-on);
    for scaling ``metrics`` (:class:`~mlcc_constructs.aws.cluster_metrics.ClusterMetrics`: the
    Prometheus workspace and scraper, KEDA) and ``prometheus_query_url`` (the workspace's query
    base URL, ``RenderContext.prometheus_query_url``; ``None`` without ``scaling_metrics``);
    ``leader_worker_set`` (the lws ``HelmChart``; ``None`` without ``leader_worker_set``: a
    multi-node deployment's objects depend on it);
    for the deploys ``readiness`` (the waiter to pass as ``ServedModelProps.readiness``;
    ``None`` without ``readiness_waiter``).
    """

    def __init__(
        self, scope: Construct, id: str, *, props: ServingClusterProps | None = None
    ) -> None:
        super().__init__(scope, id)
        props = self._props = props or ServingClusterProps()
        owner = self._children_scope(scope)
        self.vpc: ec2.IVpc = props.vpc or _new_vpc(
            owner,
            props.availability_zones,
            # Default: one per zone (None: the stack's zones, one each, as CDK's default).
            props.nat_gateways
            if props.nat_gateways is not None
            else len(props.availability_zones) or None,
        )
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
        self.control_plane_log_retention = retain_control_plane_logs(
            owner, self.cluster, self.cluster_name, props.control_plane_log_days
        )
        if props.vpc is None:
            assert isinstance(self.vpc, ec2.Vpc)
            retain_flow_logs(self.vpc, props.flow_log_days)
            add_interface_endpoints(self.vpc)
        self.pull_through_rules: tuple[ecr.CfnPullThroughCacheRule, ...] = (
            add_pull_through_cache(
                owner,
                node_role=_auto_mode_node_role(self.cluster),
                secrets=props.pull_through_secrets,
            )
            if props.pull_through_secrets is not None
            else ()
        )
        admin = eks.AccessPolicy.from_access_policy_name(
            ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
        )
        for role in props.admin_roles:
            self.cluster.grant_access(_access_id(role), role.role_arn, [admin])
        self.gpu_instance_families: tuple[str, ...] = props.gpu_pool_families
        """The instance families the GPU NodePool offers (none without a pool): what a
        ``ServedModel``'s instance types must be of."""
        self.gpu_node_pool: GpuNodePool | None = (
            GpuNodePool(
                owner,
                "GpuCapacity",
                props=GpuNodePoolProps(
                    cluster=self.cluster,
                    # The families read once from the cluster's props: the pool offers exactly
                    # these (no type is looked up again).
                    instance_families=self.gpu_instance_families,
                    gpu_limit=props.gpu_limit,
                    maintenance_window=props.gpu_maintenance_window,
                    node_class=GpuNodeClass(
                        role=_auto_mode_node_role(self.cluster),
                        subnets=_select(self.vpc, subnets).subnets,
                        security_groups=[self.cluster.cluster_security_group],
                    ),
                ),
            )
            if self.gpu_instance_families
            else None
        )
        # The native AWS::IAM::OIDCProvider: no custom-resource Lambda.
        self.oidc_provider = eks.OidcProviderNative(
            owner, "OidcProvider", url=self.cluster.cluster_open_id_connect_issuer_url
        )
        self.s3_csi: S3CsiDriver = _ClusterS3CsiDriver(
            owner,
            "S3CsiDriver",
            props=S3CsiDriverProps(
                cluster=self.cluster,
                oidc_provider=self.oidc_provider,
                read_buckets=props.read_buckets,
                tls_bucket=props.tls_bucket,
                configuration_values=s3_csi_addon_configuration(),
            ),
        )
        self.s3_csi_role: iam.IRole = self.s3_csi.role
        groups = cast(Mapping[LoadBalancerScheme, Sequence[str]], props.load_balancer_groups)
        self.load_balancer_subnets: Mapping[str, tuple[ec2.ISubnet, ...]] = MappingProxyType(
            _load_balancer_subnets(
                owner,
                self.vpc,
                props,
                schemes=[s for s in SCHEMES if s in groups],
                node_subnets=_select(self.vpc, subnets).subnets,
            )
        )
        self.load_balancer_cidrs: Mapping[str, tuple[str, ...]] = MappingProxyType(
            {
                scheme: tuple(known_cidr(subnet) or "" for subnet in chosen)
                for scheme, chosen in self.load_balancer_subnets.items()
            }
        )
        self.metrics: ClusterMetrics | None = (
            add_cluster_metrics(
                owner,
                self.cluster,
                oidc_provider=self.oidc_provider,
                # The scraper's interfaces go where the deployments' NetworkPolicies admit
                # traffic from already: the internal load balancer subnets (no pods there);
                # the node subnets on a cluster without them.
                subnets=self.load_balancer_subnets.get("internal")
                or _select(self.vpc, subnets).subnets,
                alias=props.cluster_name,
            )
            if props.scaling_metrics
            else None
        )
        self.prometheus_query_url: str | None = (
            self.metrics.prometheus_query_url if self.metrics is not None else None
        )
        self.readiness: ReadinessProvider | None = (
            ReadinessProvider(owner, PROVIDER_ID, cluster=self.cluster, subnets=subnets)
            if props.readiness_waiter
            else None
        )
        # Multi-node serving's controller (a separate step so the cluster's other children
        # keep their order and ids).
        self.leader_worker_set: eks.HelmChart | None = (
            add_leader_worker_set(owner, self.cluster) if props.leader_worker_set else None
        )
        self.dashboard = add_serving_dashboard(owner, props.cluster_name)
        self.endpoint_components: EndpointComponents = add_endpoint_components(
            owner,
            self.cluster,
            groups=groups,
            subnets=cast(
                Mapping[LoadBalancerScheme, Sequence[ec2.ISubnet]], self.load_balancer_subnets
            ),
        )

    def add_outputs(self, *, prefix: str | None = None) -> list[cdk.CfnOutput]:
        """Stack outputs that say how to reach the cluster with kubectl (``KubeconfigCommand``
        for its first admin role, ``ApiEndpointAccess``:
        :func:`~mlcc_constructs.core.serving.endpoint.outputs.cluster_outputs`), their logical
        ids ``<prefix><key>`` (default: this construct's id)."""
        found = cluster_outputs(
            cluster_name=self.cluster_name,
            region=cdk.Stack.of(self).region,
            admin_role_arns=[role.role_arn for role in self._props.admin_roles],
            public_cidrs=self._props.endpoint_public_cidrs,
        )
        return add_stack_outputs(self, found, self.node.id if prefix is None else prefix)

    def _children_scope(self, scope: Construct) -> Construct:
        """Where the children go: this construct (``<id>/Cluster``, ...). A subclass returns
        ``scope`` for a stack whose deployed resources were the stack's own children, so their
        construct paths and logical ids stay as they were (see *Logical ids* in the module)."""
        return self

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
        load_balancer_cidrs: Mapping[str, Sequence[str]] | None = None,
        prometheus_query_url: str | None = None,
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
                load_balancer_cidrs=MappingProxyType(dict(load_balancer_cidrs or {})),
                prometheus_query_url=prometheus_query_url,
            ),
        )

    def grant_model_read(self, bucket: s3.IBucket) -> s3.IBucket:
        """Let the S3 CSI driver mount ``bucket`` read-only (see
        :meth:`~mlcc_constructs.aws.s3_csi.S3CsiDriver.grant_read`); returns the bucket."""
        return self.s3_csi.grant_read(
            require_bucket(bucket, where="ServingCluster.grant_model_read")
        )


def _new_vpc(scope: Construct, zones: Sequence[str], nat_gateways: int | None) -> ec2.Vpc:
    return ec2.Vpc(
        scope,
        "Vpc",
        availability_zones=list(zones) or None,
        ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
        nat_gateways=nat_gateways,
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


def _load_balancer_subnets(
    owner: Construct,
    vpc: ec2.IVpc,
    props: ServingClusterProps,
    *,
    schemes: Sequence[LoadBalancerScheme],
    node_subnets: Sequence[ec2.ISubnet],
) -> dict[str, tuple[ec2.ISubnet, ...]]:
    """The load balancer subnets by scheme: created in the VPC ServingCluster creates, the
    team's otherwise (checked against the nodes' and the VPC's other subnets)."""
    if props.vpc is None:
        assert isinstance(vpc, ec2.Vpc)
        created = create_load_balancer_subnets(owner, vpc, schemes)
        return {scheme: tuple(chosen) for scheme, chosen in created.items()}
    given = props.load_balancer_subnets or {}
    chosen = {scheme: tuple(given[scheme]) for scheme in schemes}
    use_team_subnets(vpc, chosen, node_subnets=node_subnets, where="ServingClusterProps")
    return {str(scheme): group for scheme, group in chosen.items()}


def _auto_mode_node_role(cluster: eks.Cluster) -> iam.IRole:
    """The node role ``aws_eks_v2`` creates for Auto Mode (its child ``<id>nodePoolRole``; the
    cluster exposes it under no attribute). EKS creates that role's access entry with the
    cluster, so a NodeClass naming it needs no access entry of its own
    (``automode/create-node-class.adoc``, awsdocs/amazon-eks-user-guide 0026c9df)."""
    role = cluster.node.try_find_child(f"{cluster.node.id}nodePoolRole")
    if not isinstance(role, iam.Role):
        raise fail(
            "the cluster has no Auto Mode node role where aws_eks_v2 creates it",
            where=cluster.node.path,
            value=f"{cluster.node.id}nodePoolRole",
            fix="keep Auto Mode's built-in node pools on (aws_eks_v2 then creates the role), or "
            "report the aws-cdk-lib version this runs with",
        )
    return role


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
