"""The cluster side of scaling on metrics: the Amazon Managed Service for Prometheus workspace and
its managed scraper (:mod:`mlcc_constructs.core.platform.prometheus`), and KEDA with its identity
and the ``ClusterTriggerAuthentication`` ``mlcc-aws`` (:mod:`mlcc_constructs.core.platform.keda`).

Children (of the ``ServingCluster``'s owner; new ids):

* ``PrometheusWorkspace`` (``AWS::APS::Workspace``) and ``PrometheusScraper``
  (``AWS::APS::Scraper``: its network interfaces in the given subnets, which a ``ServingCluster``
  chooses as its internal load balancer subnets, with the cluster security group; the workspace
  as destination). The collector scrapes through those interfaces (a VPC's local route reaches
  every pod and the API endpoint's interfaces) and writes to the workspace through the
  service's own VPC endpoint ("The scraped data never travels on the public internet",
  https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector.html), so subnets with
  no route out serve. The deployments' NetworkPolicies admit the internal load balancer
  subnets' CIDRs already, so a scrape reaches the engine's port.
* ``KedaRole``: trusted by exactly ``system:serviceaccount:keda:keda-operator`` (IRSA), with the
  Prometheus query actions on the workspace and ``cloudwatch:GetMetricData``.
* ``Keda``: the kedacore Helm chart ``keda`` (version pinned in ``versions.json``) in namespace
  ``keda``, applied by the cluster's kubectl provider (``aws_eks_v2.HelmChart``).
* ``KedaAuthentication``: the ``ClusterTriggerAuthentication`` ``mlcc-aws``, applied after the
  chart (its CRD comes with the chart).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_aps as aps, aws_ec2 as ec2, aws_eks_v2 as eks, aws_iam as iam
from constructs import Construct

from mlcc_constructs.aws._iam import grant, irsa_principal
from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.platform.keda import (
    CHART,
    CHART_REPOSITORY,
    NAMESPACE,
    RELEASE,
    chart_values,
    cluster_trigger_authentication,
    keda_statements,
    service_account_subject,
)
from mlcc_constructs.core.platform.prometheus import API_SUFFIX, configuration_blob
from mlcc_constructs.core.platform.versions import pinned


@dataclass(frozen=True, kw_only=True)
class ClusterMetrics:
    """What :func:`add_cluster_metrics` created."""

    workspace: aps.CfnWorkspace
    """The Amazon Managed Service for Prometheus workspace."""
    scraper: aps.CfnScraper
    """The managed scraper of the cluster's annotated pods."""
    prometheus_query_url: str
    """The workspace's query base URL (a token)."""
    keda_role: iam.Role
    """KEDA's IRSA role (reads the workspace and CloudWatch metric data)."""
    keda_chart: eks.HelmChart
    """The pinned KEDA Helm chart."""
    keda_authentication: eks.KubernetesManifest
    """The ``ClusterTriggerAuthentication`` ``mlcc-aws``'s manifest."""


def add_cluster_metrics(
    owner: Construct,
    cluster: eks.Cluster,
    *,
    oidc_provider: iam.IOpenIdConnectProvider,
    subnets: Sequence[ec2.ISubnet],
    alias: str | None,
) -> ClusterMetrics:
    """Create the workspace, the scraper and KEDA in ``owner`` (module doc)."""
    workspace = aps.CfnWorkspace(owner, "PrometheusWorkspace", alias=alias)
    scraper = aps.CfnScraper(
        owner,
        "PrometheusScraper",
        alias=alias,
        destination=aps.CfnScraper.DestinationProperty(
            amp_configuration=aps.CfnScraper.AmpConfigurationProperty(
                workspace_arn=workspace.attr_arn
            )
        ),
        scrape_configuration=aps.CfnScraper.ScrapeConfigurationProperty(
            configuration_blob=configuration_blob()
        ),
        source=aps.CfnScraper.SourceProperty(
            eks_configuration=aps.CfnScraper.EksConfigurationProperty(
                cluster_arn=cluster.cluster_arn,
                subnet_ids=[subnet.subnet_id for subnet in subnets],
                security_group_ids=[cluster.cluster_security_group_id],
            )
        ),
    )
    # The query base URL: PrometheusEndpoint without its /api/v1/ (KEDA appends /api/v1/query).
    query_url = cdk.Fn.select(0, cdk.Fn.split(API_SUFFIX, workspace.attr_prometheus_endpoint))
    role = iam.Role(
        owner,
        "KedaRole",
        assumed_by=irsa_principal(owner, "KedaRoleTrust", oidc_provider, service_account_subject()),
        description="KEDA operator: query the cluster's Prometheus workspace, read CloudWatch "
        "metric data",
    )
    grant(role, keda_statements(workspace.attr_arn))
    chart = eks.HelmChart(
        owner,
        "Keda",
        cluster=cast(eks.ICluster, cluster),
        chart=CHART,
        repository=CHART_REPOSITORY,
        version=pinned().keda,
        release=RELEASE,
        namespace=NAMESPACE,
        create_namespace=True,
        values=chart_values(role.role_arn),
        wait=True,
    )
    chart.node.add_dependency(role)
    (authentication,) = KubernetesObjects(
        owner,
        "KedaAuthentication",
        props=KubernetesObjectsProps(cluster=cluster, objects=[cluster_trigger_authentication()]),
    ).manifests.values()
    authentication.node.add_dependency(chart)
    return ClusterMetrics(
        workspace=workspace,
        scraper=scraper,
        prometheus_query_url=query_url,
        keda_role=role,
        keda_chart=chart,
        keda_authentication=authentication,
    )
