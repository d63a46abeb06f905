"""Stack ``mlcc-<profile>-eks-cluster``: the app's :class:`ServingCluster` (VPC, EKS Auto Mode
cluster with its kubectl provider, admin access entries, the GPU NodePool, OIDC provider, S3 CSI
driver reading the descriptor's buckets, and the cluster side of the deployments' endpoints:
load balancer subnets, IngressClasses, network policy enforcement, the Secrets Store CSI
driver; the VPC's NAT gateways and interface endpoints, the ECR pull through cache)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from mlcc_constructs.aws.serving_cluster import ServingCluster, ServingClusterProps
from mlcc_constructs.aws.stack_environment import app_bucket, stack_env
from mlcc_constructs.core.platform.app_settings import (
    AppEnvironment,
    EgressSettings,
    GpuPoolSettings,
)
from mlcc_constructs.core.platform.cluster_access import (
    NO_ADMIN_WARNING,
    admin_access_id,
    no_admin_warning,
)
from mlcc_constructs.core.platform.image_cache import NO_CACHE_NOTE
from mlcc_constructs.core.platform.vpc_network import default_nat_gateways

READ_BUCKETS = ("core", "training", "adapters")
"""The buckets of ``stacks/buckets.json`` the S3 CSI driver mounts read-only (and ``tls``)."""


class StackChildrenServingCluster(ServingCluster):
    """The app's ServingCluster: its children are the stack's own (``Cluster``, ``S3CsiRole``,
    ``S3CsiDriverAddon``, ...), as they were when ``mlcc-<profile>-eks-cluster`` was first
    deployed, so their construct paths and logical ids stay what the deployed stack has (a
    changed logical id replaces the resource)."""

    def _children_scope(self, scope: Construct) -> Construct:
        return scope


class EksClusterStack(cdk.Stack):
    """The EKS cluster ``mlcc-<profile>-eks`` with the Mountpoint S3 CSI driver add-on."""

    def __init__(
        self,
        scope: Construct,
        *,
        environment: AppEnvironment,
        gpu_families: Sequence[str] = (),
        load_balancer_groups: Mapping[str, Sequence[str]] | None = None,
        gpu_pool: GpuPoolSettings | None = None,
        egress: EgressSettings | None = None,
        leader_worker_set: bool = False,
    ) -> None:
        """``gpu_families``: the instance families the GPU NodePool offers (none: no pool);
        ``load_balancer_groups``: the schemes and groups the IngressClasses serve (default
        ``None``: internal only, no groups); ``gpu_pool``: the pool's limit and maintenance
        window (default ``None``: no limit, no window); ``egress``: the NAT gateway count and the
        pull through cache's secrets (default ``None``: the profile's NAT gateways, no pull
        through cache); ``leader_worker_set``: install LeaderWorkerSet, which multi-node
        deployments need (default ``False``: the app sets it when a deployment has nodes > 1)."""
        super().__init__(
            scope,
            environment.stack_name("eks-cluster"),
            # The app's stack name in a fleet stage too (a stage would prefix it).
            stack_name=environment.stack_name("eks-cluster"),
            env=stack_env(environment),
            description=f"mlcc EKS cluster mlcc-{environment.profile}-eks",
        )
        # Answer the availability-zone context lookup with the app's declared zones
        # (cdk.json / -c availability_zones): synth never calls AWS, and the in-process
        # template equals the CLI's.
        self.node.set_context(
            f"availability-zones:account={environment.account}:region={environment.region}",
            list(environment.availability_zones),
        )
        if egress is not None and egress.pull_through_secrets is None:
            cdk.Annotations.of(self).add_info(NO_CACHE_NOTE)
        if (warning := no_admin_warning(environment.admin_role_arns)) is not None:
            cdk.Annotations.of(self).add_warning_v2(NO_ADMIN_WARNING, warning)
        admins = [
            iam.Role.from_role_arn(self, f"{admin_access_id(arn)}Role", arn)
            for arn in environment.admin_role_arns
        ]
        self.serving_cluster: ServingCluster = StackChildrenServingCluster(
            self,
            "ServingCluster",
            props=ServingClusterProps(
                cluster_name=f"mlcc-{environment.profile}-eks",
                availability_zones=environment.availability_zones,
                admin_roles=admins,
                endpoint_public_cidrs=environment.endpoint_public_cidrs,
                gpu_instance_families=gpu_families,
                gpu_limit=gpu_pool.gpu_limit if gpu_pool and gpu_pool.gpu_limit else None,
                gpu_maintenance_window=gpu_pool.maintenance_window if gpu_pool else None,
                read_buckets=[app_bucket(self, environment, key) for key in READ_BUCKETS],
                tls_bucket=app_bucket(self, environment, "tls"),
                load_balancer_groups=(
                    {"internal": ()} if load_balancer_groups is None else load_balancer_groups
                ),
                nat_gateways=egress.nat_gateways
                if egress
                else default_nat_gateways(
                    environment.profile, len(environment.availability_zones) or None
                ),
                pull_through_secrets=egress.pull_through_secrets if egress else None,
                leader_worker_set=leader_worker_set,
            ),
        )
        if (waiter := self.serving_cluster.readiness) is not None:
            # What every serving stack's deploy wait imports, exported whatever the selection
            # (`-c deployments=...`) builds: the stack is the same with one serving stack or all.
            for value in (waiter.service_token, waiter.endpoint, waiter.certificate_authority):
                self.export_value(value)
        self.serving_cluster.add_outputs(prefix="")  # KubeconfigCommand, ApiEndpointAccess
        # The VPC id: serving stacks deployed before the waiter moved here import it (their own
        # waiter's security group), and CloudFormation refuses to remove an export in use, so
        # it stays exported (a later release may drop it once every serving stack is updated).
        self.export_value(self.serving_cluster.vpc.vpc_id)
