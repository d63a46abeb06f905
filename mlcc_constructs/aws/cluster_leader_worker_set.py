"""The cluster side of multi-node serving: the LeaderWorkerSet controller and CRD
(:mod:`mlcc_constructs.core.platform.leader_worker_set_install`).

Child (of the ``ServingCluster``'s owner; a new id): ``LeaderWorkerSet``, the lws Helm chart
(``oci://registry.k8s.io/lws/charts/lws``, version pinned in ``versions.json``) in namespace
``lws-system``, applied by the cluster's kubectl provider (``aws_eks_v2.HelmChart``), waited
for (the controller's webhook must answer before a ``LeaderWorkerSet`` is applied).
"""

from __future__ import annotations

from typing import cast

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.core.platform.leader_worker_set_install import (
    CHART,
    CHART_REPOSITORY,
    NAMESPACE,
    RELEASE,
    chart_values,
)
from mlcc_constructs.core.platform.versions import pinned

CHILD_ID = "LeaderWorkerSet"


def add_leader_worker_set(owner: Construct, cluster: eks.Cluster) -> eks.HelmChart:
    """Install LeaderWorkerSet on ``cluster`` as the child ``LeaderWorkerSet`` of ``owner``."""
    version = pinned().leader_worker_set
    return eks.HelmChart(
        owner,
        CHILD_ID,
        cluster=cast(eks.ICluster, cluster),
        chart=CHART,
        repository=CHART_REPOSITORY,
        version=version,
        release=RELEASE,
        namespace=NAMESPACE,
        create_namespace=True,
        values=chart_values(version),
        wait=True,
    )
