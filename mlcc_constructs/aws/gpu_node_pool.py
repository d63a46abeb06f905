"""``GpuNodePool``: the EKS Auto Mode ``NodePool`` (``karpenter.sh/v1``) that launches GPU nodes.

Auto Mode's built-in ``system`` and ``general-purpose`` node pools launch only C, M and R
instances, so a pod asking for ``nvidia.com/gpu`` stays Pending without a pool of its own. This
construct applies the pool :func:`mlcc_constructs.core.platform.gpu_capacity.gpu_node_pool`
describes (the given instance families, on-demand, amd64, consolidated only when empty, limited
to ``gpu_limit`` GPUs, drift only inside a maintenance window, nodes expiring after 336h, tainted
``nvidia.com/gpu:NoSchedule``, which the rendered Deployments and the S3 CSI driver's node pod
tolerate) through the cluster's kubectl provider, on the built-in ``default`` NodeClass or, with
``node_class`` (:class:`GpuNodeClass`), on a NodeClass of its own
(:func:`~mlcc_constructs.core.platform.gpu_capacity.gpu_node_class`: network policies said
``DefaultAllow``, 200Gi of ephemeral storage).

Children: ``Resource`` (the pool) and, with ``node_class``, ``NodeClass`` (applied first), each a
:class:`~mlcc_constructs.aws.kubernetes_objects.KubernetesObjects`; an object's CloudFormation
logical id is a function of its kind and name (``NodePoolMlccGpu`` + 8 hex digits), wherever the
construct sits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks, aws_iam as iam
from constructs import Construct

from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.platform.gpu_capacity import (
    EPHEMERAL_STORAGE,
    NODE_CLASS,
    NODE_CLASS_NAME,
    NODE_POOL_NAME,
    gpu_node_class,
    gpu_node_pool,
    pool_families,
)
from mlcc_constructs.core.platform.gpu_disruption import (
    EXPIRE_AFTER,
    TERMINATION_GRACE_PERIOD,
    gpu_limit_problems,
    lifetime_problems,
    parse_maintenance_window,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class GpuNodeClass:
    """The GPU pool's own Auto Mode ``NodeClass``: what the built-in ``default`` one has (the
    node role, subnets and security groups), plus the pool's settings (module doc).
    """

    role: iam.IRole
    """The Auto Mode node role (a ``ServingCluster`` passes the one ``aws_eks_v2`` created: EKS made
    its access entry when it created the cluster; another role needs an ``EC2`` access entry with
    ``AmazonEKSAutoNodePolicy`` first)."""
    subnets: Sequence[ec2.ISubnet]
    """The nodes' subnets (the cluster's private subnets), at least one."""
    security_groups: Sequence[ec2.ISecurityGroup]
    """The nodes' security groups (the cluster security group), at least one."""
    name: str = NODE_CLASS_NAME
    """The NodeClass's name; default ``mlcc-gpu`` (never ``default``, the built-in's)."""
    ephemeral_storage: str = EPHEMERAL_STORAGE
    """Each node's ephemeral storage; default ``200Gi``."""

    def __post_init__(self) -> None:
        check_fields(self)
        where = "GpuNodeClass"
        problems = []
        if isinstance(self.role, str):
            problems.append(
                Problem(
                    message="a role name or ARN is not a role",
                    where=where,
                    pointer="/role",
                    value=self.role,
                    allowed="iam.IRole",
                    fix="pass iam.Role.from_role_arn(scope, id, arn)",
                )
            )
        for field in ("subnets", "security_groups"):
            values = getattr(self, field)
            if not values or any(isinstance(v, str) for v in values):
                problems.append(
                    Problem(
                        message=f"a NodeClass selects its {field.replace('_', ' ')} by object, "
                        "at least one",
                        where=where,
                        pointer=json_pointer(field),
                        value=list(values),
                        allowed="ec2.ISubnet objects"
                        if field == "subnets"
                        else "ec2.ISecurityGroup objects",
                        fix="pass the cluster's private subnets and its cluster security group",
                    )
                )
        if self.name == NODE_CLASS["name"]:
            problems.append(
                Problem(
                    message="the built-in NodeClass is named default",
                    where=where,
                    pointer="/name",
                    value=self.name,
                    fix=f"name it otherwise, e.g. {NODE_CLASS_NAME}",
                )
            )
        raise_if_any(problems)


@dataclass(frozen=True, kw_only=True)
class GpuNodePoolProps:
    """Props of :class:`GpuNodePool`. The pool offers the union of ``instance_families`` and
    the families of ``instance_types``; at least one of them must be given.
    """

    cluster: eks.ICluster | eks.Cluster
    """The EKS Auto Mode cluster whose kubectl provider applies the pool."""
    instance_families: Sequence[str] = ()
    """Instance families (``g5``, ``p5``); default ``()``."""
    instance_types: Sequence[str] = ()
    """Instance types of the instance catalog (``ml.g5.12xlarge`` or ``g5.12xlarge``), whose
    families the pool offers; default ``()``."""
    name: str = NODE_POOL_NAME
    """The NodePool's name; default ``mlcc-gpu``."""
    node_class: GpuNodeClass | None = None
    """The pool's own NodeClass (:class:`GpuNodeClass`); default ``None``: the built-in ``default``
    NodeClass."""
    gpu_limit: int | None = None
    """The most ``nvidia.com/gpu`` the pool's nodes hold together (``limits``); default ``None``: no
    limit (the app passes its deployments' max replicas x GPUs per pod)."""
    maintenance_window: str | None = None
    """When drift may replace nodes, one at a time, ``'<daily|sun|...|sat> HH:MM <hours>h'`` UTC;
    default ``None``: never (expiry still does)."""
    expire_after: str = EXPIRE_AFTER
    """Each node's lifetime; default ``336h`` (Auto Mode's; at most 21 days)."""
    termination_grace_period: str = TERMINATION_GRACE_PERIOD
    """How long a node being removed waits for its pods to drain; default ``2h``. See
    :mod:`mlcc_constructs.core.platform.gpu_disruption`."""

    def __post_init__(self) -> None:
        check_fields(self)
        problems = list(self._pool[1])
        problems.extend(
            lifetime_problems(
                expire_after=self.expire_after,
                termination_grace_period=self.termination_grace_period,
                where="GpuNodePoolProps",
            )
        )
        if self.gpu_limit is not None:
            problems.extend(gpu_limit_problems(self.gpu_limit, (), where="GpuNodePoolProps"))
        try:
            parse_maintenance_window(
                self.maintenance_window, where="GpuNodePoolProps", pointer="/maintenance_window"
            )
        except MlccError as error:
            problems.extend(error.problems)
        if not self.instance_families and not self.instance_types:
            problems.append(
                Problem(
                    message="a GPU node pool needs instance families or instance types",
                    where="GpuNodePoolProps",
                    fix="pass instance_families=['g5', ...] or instance_types=['ml.g5.12xlarge', "
                    "...] (or create no pool)",
                )
            )
        raise_if_any(problems)

    @property
    def families(self) -> tuple[str, ...]:
        """The families the pool offers: ``instance_families`` and those of ``instance_types``
        (read once, when the props are built), sorted, each once."""
        return self._pool[0]

    @cached_property
    def _pool(self) -> tuple[tuple[str, ...], list[Problem]]:
        return pool_families(self.instance_families, self.instance_types, where="GpuNodePoolProps")


class GpuNodePool(Construct):
    """A GPU ``NodePool`` on an Auto Mode cluster; ``families`` are the families it offers,
    ``object`` the NodePool object, ``manifest`` its ``KubernetesManifest``; ``node_class`` the
    NodeClass object (``None`` on the built-in one) and ``node_class_manifest`` its manifest."""

    def __init__(self, scope: Construct, id: str, *, props: GpuNodePoolProps) -> None:
        super().__init__(scope, id)
        self.families: tuple[str, ...] = props.families
        own = props.node_class
        self.node_class: Mapping[str, Any] | None = (
            gpu_node_class(
                role=own.role.role_name,
                subnet_ids=[subnet.subnet_id for subnet in own.subnets],
                security_group_ids=[group.security_group_id for group in own.security_groups],
                name=own.name,
                ephemeral_storage=own.ephemeral_storage,
            )
            if own is not None
            else None
        )
        self.object: Mapping[str, Any] = gpu_node_pool(
            self.families,
            name=props.name,
            node_class=own.name if own is not None else None,
            gpu_limit=props.gpu_limit,
            maintenance_window=parse_maintenance_window(
                props.maintenance_window, where="GpuNodePoolProps", pointer="/maintenance_window"
            ),
            expire_after=props.expire_after,
            termination_grace_period=props.termination_grace_period,
        )
        self.node_pool_name: str = props.name
        self.node_class_manifest: eks.KubernetesManifest | None = None
        if self.node_class is not None:
            (self.node_class_manifest,) = KubernetesObjects(
                self,
                "NodeClass",
                props=KubernetesObjectsProps(cluster=props.cluster, objects=[self.node_class]),
            ).manifests.values()
        objects = KubernetesObjects(
            self,
            "Resource",
            props=KubernetesObjectsProps(cluster=props.cluster, objects=[self.object]),
        )
        (self.manifest,) = objects.manifests.values()
        if self.node_class_manifest is not None:  # the pool's class exists before the pool
            self.manifest.node.add_dependency(self.node_class_manifest)
