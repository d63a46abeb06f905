"""``GpuNodePool``: the EKS Auto Mode ``NodePool`` (``karpenter.sh/v1``) that launches GPU nodes.

Auto Mode's built-in ``system`` and ``general-purpose`` node pools launch only C, M and R
instances, so a pod asking for ``nvidia.com/gpu`` stays Pending without a pool of its own. This
construct applies the pool :func:`mlcc_constructs.core.platform.gpu_capacity.gpu_node_pool`
describes (the built-in ``default`` node class, the given instance families, on-demand, amd64,
consolidated only when empty, tainted ``nvidia.com/gpu:NoSchedule``, which the rendered
Deployments and the S3 CSI driver's node pod tolerate) through the cluster's kubectl provider.

Child: ``Resource`` (:class:`~mlcc_constructs.aws.kubernetes_objects.KubernetesObjects`); the
pool's CloudFormation logical id is a function of its kind and name
(``NodePoolMlccGpu`` + 8 hex digits), wherever the construct sits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.platform.catalog import instance_names, lookup
from mlcc_constructs.core.platform.gpu_capacity import (
    NODE_POOL_NAME,
    gpu_node_pool,
    instance_families,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields


@cache
def catalog_families() -> tuple[str, ...]:
    """The instance families of the instance catalog (``g5``, ``p5``, ...), sorted."""
    return tuple(sorted({lookup(name).family for name in instance_names()}))


def capacity_problems(
    families: Sequence[str],
    types: Sequence[str],
    *,
    where: str,
    fields: tuple[str, str] = ("instance_families", "instance_types"),
) -> list[Problem]:
    """Every family that is not one of the catalog's and every type the catalog does not know
    (``where``: the props, e.g. ``GpuNodePoolProps``; ``fields``: the names of the two
    fields there)."""
    problems: list[Problem] = []
    for index, family in enumerate(families):
        if family not in catalog_families():
            problems.append(
                Problem(
                    message="not an instance family of the instance catalog",
                    where=where,
                    pointer=json_pointer(fields[0], index),
                    value=family,
                    allowed=", ".join(catalog_families()),
                    fix="name the family of a catalog instance type (ml.g5.12xlarge: g5)",
                )
            )
    for index, name in enumerate(types):
        try:
            lookup(name)
        except MlccError as error:
            problems.extend(
                dataclasses.replace(problem, where=where, pointer=json_pointer(fields[1], index))
                for problem in error.problems
            )
    return problems


@dataclass(frozen=True, kw_only=True)
class GpuNodePoolProps:
    """Props of :class:`GpuNodePool`. The pool offers the union of ``instance_families`` and
    the families of ``instance_types``; at least one of them must be given.

    ``cluster``: the EKS Auto Mode cluster whose kubectl provider applies the pool.
    ``instance_families``: instance families (``g5``, ``p5``); default ``()``.
    ``instance_types``: instance types of the instance catalog (``ml.g5.12xlarge`` or
    ``g5.12xlarge``), whose families the pool offers; default ``()``.
    ``name``: the NodePool's name; default ``mlcc-gpu``.
    """

    cluster: eks.ICluster | eks.Cluster
    instance_families: Sequence[str] = ()
    instance_types: Sequence[str] = ()
    name: str = NODE_POOL_NAME

    def __post_init__(self) -> None:
        check_fields(self)
        problems = capacity_problems(
            self.instance_families, self.instance_types, where="GpuNodePoolProps"
        )
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


class GpuNodePool(Construct):
    """A GPU ``NodePool`` on an Auto Mode cluster; ``families`` are the families it offers,
    ``object`` the NodePool object, ``manifest`` its ``KubernetesManifest``."""

    def __init__(self, scope: Construct, id: str, *, props: GpuNodePoolProps) -> None:
        super().__init__(scope, id)
        self.families: tuple[str, ...] = tuple(
            sorted({*props.instance_families, *instance_families(props.instance_types)})
        )
        self.object: Mapping[str, Any] = gpu_node_pool(self.families, name=props.name)
        self.node_pool_name: str = props.name
        objects = KubernetesObjects(
            self,
            "Resource",
            props=KubernetesObjectsProps(cluster=props.cluster, objects=[self.object]),
        )
        (self.manifest,) = objects.manifests.values()
