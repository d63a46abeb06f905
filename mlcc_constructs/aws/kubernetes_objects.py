"""``KubernetesObjects``: Kubernetes objects applied by CloudFormation, one resource per object.

Each object becomes its own ``aws_eks_v2.KubernetesManifest`` applied by the cluster's kubectl
provider, whose logical id is :func:`mlcc_constructs.core.serving.manifest_ids.manifest_logical_id`
of the object (kind, namespace, name): changing one object modifies exactly its resource.
Objects are applied exactly as given: ``prune`` is off (no ``aws.cdk.eks/prune-*`` label is
added), so what the cluster gets equals what ``mlcc render`` and ``dist/`` show. ``overwrite``
is on: an object someone already applied by hand (``kubectl apply -f dist/...``) is adopted
instead of failing the deployment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.core.serving.manifest_ids import unique_ids
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class KubernetesObjectsProps:
    """Props of :class:`KubernetesObjects`."""

    cluster: eks.ICluster | eks.Cluster
    """The EKS cluster whose kubectl provider applies the objects."""
    objects: Sequence[Mapping[str, Any]]
    """The Kubernetes objects, in apply order."""
    ordered: bool = True
    """Default ``True``: each object's resource depends on the one before it, so CloudFormation
    applies them in order (as ``kubectl apply -f`` would) and deletes them in reverse."""
    retain: bool = False
    """Default ``False``; ``True`` keeps the objects in the cluster when their resources leave the
    stack (``RemovalPolicy.RETAIN``), e.g. for namespaces that may hold objects the app does not
    own."""

    def __post_init__(self) -> None:
        check_fields(self)


def require_kubectl_provider(cluster: eks.ICluster | eks.Cluster, *, where: str) -> None:
    """Refuse a cluster without the kubectl provider that applies objects and charts."""
    if cluster.kubectl_provider is None:
        raise fail(
            "the cluster has no kubectl provider to apply Kubernetes objects with",
            where=where,
            fix="create the cluster with kubectl_provider_options=..., or import it with "
            "eks.Cluster.from_cluster_attributes(..., kubectl_provider="
            "eks.KubectlProvider.from_kubectl_provider_attributes(...))",
        )


class KubernetesObjects(Construct):
    """One ``KubernetesManifest`` per object; its child id and logical id are the object's id."""

    def __init__(self, scope: Construct, id: str, *, props: KubernetesObjectsProps) -> None:
        super().__init__(scope, id)
        require_kubectl_provider(props.cluster, where=self.node.path)
        ids = unique_ids(props.objects, where=self.node.path)
        manifests: dict[str, eks.KubernetesManifest] = {}
        previous: eks.KubernetesManifest | None = None
        for logical_id, obj in zip(ids, props.objects, strict=True):
            manifest = eks.KubernetesManifest(
                self,
                logical_id,
                cluster=cast(eks.ICluster, props.cluster),
                manifest=[dict(obj)],
                prune=False,
                overwrite=True,
                removal_policy=cdk.RemovalPolicy.RETAIN if props.retain else None,
            )
            resource = manifest.node.find_child("Resource").node.default_child
            assert isinstance(resource, cdk.CfnResource)
            resource.override_logical_id(logical_id)
            if props.ordered and previous is not None:
                manifest.node.add_dependency(previous)
            manifests[logical_id] = manifest
            previous = manifest
        self.manifests: Mapping[str, eks.KubernetesManifest] = MappingProxyType(manifests)
