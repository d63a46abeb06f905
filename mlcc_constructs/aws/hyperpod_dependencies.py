"""``HyperPodDependencies``: the components of SageMaker HyperPod's dependency Helm chart that an
inference cluster needs, installed on the EKS cluster by CloudFormation before the HyperPod
cluster is created (:mod:`mlcc_constructs.core.platform.hyperpod_dependencies`).

Children:

* one ``aws_eks_v2.HelmChart`` per published chart the instance groups need, its id the chart
  name in PascalCase (``NvidiaDevicePlugin``, ``AwsEfaK8sDevicePlugin``), version pinned in
  ``versions.json``, applied by the cluster's kubectl provider;
* ``Namespace``: ``aws-hyperpod`` (retained: HyperPod runs its own pods in it);
* ``Objects``: the health monitoring agent (RBAC and DaemonSet), the deep health checks' service
  account and permissions and HyperPod's patching permissions, one ``KubernetesManifest`` each,
  applied after the namespace.

The cluster may belong to another stack (its kubectl provider is referenced across stacks, as
the inference-operator stack applies its namespace).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.aws.kubernetes_objects import (
    KubernetesObjects,
    KubernetesObjectsProps,
    require_kubectl_provider,
)
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.hyperpod_dependencies import (
    charts,
    dependency_objects,
    namespace_object,
)
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class HyperPodDependenciesProps:
    """Props of :class:`HyperPodDependencies`."""

    cluster: eks.ICluster | eks.Cluster
    """The EKS cluster that orchestrates the HyperPod cluster (its kubectl provider installs the
    charts and applies the objects)."""
    instance_types: Sequence[InstanceType]
    """The HyperPod instance groups' types, as catalog entries (``InstanceGroup.instance``, or
    ``lookup("ml.g5.12xlarge")`` of :mod:`mlcc_constructs.core.platform.catalog`); the device
    plugins and the agent run on exactly these."""

    def __post_init__(self) -> None:
        check_fields(self)


class HyperPodDependencies(Construct):
    """The charts (``charts``: chart name → ``HelmChart``), the ``namespace`` and the
    ``objects``; a resource that needs them all depends on this construct."""

    def __init__(self, scope: Construct, id: str, *, props: HyperPodDependenciesProps) -> None:
        super().__init__(scope, id)
        region = cdk.Stack.of(self).region
        if cdk.Token.is_unresolved(region):
            raise fail(
                "HyperPod's health monitoring agent image is chosen by region at synth",
                where=self.node.path,
                fix="create the stack with env=cdk.Environment(account=..., region=...)",
            )
        objects = dependency_objects(
            props.instance_types, region=region, where=f"{cdk.Stack.of(self).stack_name} env"
        )
        require_kubectl_provider(props.cluster, where=self.node.path)
        cluster = cast(eks.ICluster, props.cluster)
        self.charts: dict[str, eks.HelmChart] = {
            chart.name: eks.HelmChart(
                self,
                "".join(part.capitalize() for part in chart.name.split("-")),
                cluster=cluster,
                chart=chart.name,
                repository=chart.repository,
                version=chart.version,
                release=chart.name,
                namespace=chart.namespace,
                create_namespace=False,  # kube-system
                values=dict(chart.values),
                wait=True,
            )
            for chart in charts(props.instance_types)
        }
        self.namespace = KubernetesObjects(
            self,
            "Namespace",
            props=KubernetesObjectsProps(
                cluster=cluster, objects=[namespace_object()], retain=True
            ),
        )
        self.objects = KubernetesObjects(
            self,
            "Objects",
            props=KubernetesObjectsProps(cluster=cluster, objects=objects, ordered=False),
        )
        self.objects.node.add_dependency(self.namespace)
