"""KEDA on the eks cluster: how it is installed, the identity it queries AWS with, and the one
``ClusterTriggerAuthentication`` every ScaledObject names.

* **Install.** KEDA is not among the EKS add-ons on record; it is installed from its Helm chart
  (``helm install keda kedacore/keda --namespace keda --create-namespace``,
  https://keda.sh/deploy), repository :data:`CHART_REPOSITORY`, chart :data:`CHART`, the
  version pinned in ``versions.json`` (``keda``). The chart's pods carry no toleration of the GPU
  taint, so KEDA never runs on (or keeps awake) a GPU node.
* **Identity.** The operator's service account ``keda:keda-operator`` is annotated with an IAM
  role (IRSA: the chart's ``podIdentity.aws.irsa.enabled`` and ``.roleArn``,
  https://keda.sh/docs/2.20/authentication-providers/aws/) whose permissions are
  :func:`keda_statements`: the Prometheus query actions on exactly the cluster's workspace, and
  ``cloudwatch:GetMetricData`` for the scale-to-zero wake-up trigger on the load balancer's
  request count. ``GetMetricData`` has no resource-level permission (no resource type in
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatch.html),
  so its statement names ``*``.
* **Authentication.** :func:`cluster_trigger_authentication` is the
  ``ClusterTriggerAuthentication`` :data:`TRIGGER_AUTHENTICATION`: ``podIdentity`` with
  ``provider: aws`` and ``identityOwner: keda`` (the role of the KEDA operator; "If not set,
  'keda' is default value", same page). A ScaledObject's trigger names it with
  ``authenticationRef: {name: mlcc-aws, kind: ClusterTriggerAuthentication}``.
* **The HyperPod inference operator.** Its add-on installs a KEDA of its own unless its
  configuration says ``keda.enabled: false``. Two KEDA installations on one cluster fight over
  the same CRDs, the HPAs they create and the one ``external.metrics.k8s.io`` APIService ("KEDA
  must be the only installed metric adapter"), so the app's inference-operator stack turns the
  add-on's KEDA off and the operator's ScaledObjects are served by this one
  (:mod:`mlcc_constructs.core.platform.inference_operator`).

Prometheus labels: the cluster's managed scraper keeps the engine's own labels (the manifest's
``metrics.model_label``, the served model name) and adds :data:`NAMESPACE_LABEL` (the pod's
namespace, from Kubernetes service discovery), so a query selects one deployment's series.
"""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.platform.iam_statement import Statement
from mlcc_constructs.core.platform.labels import MANAGED_BY

TRIGGER_AUTHENTICATION = "mlcc-aws"
"""The ``ClusterTriggerAuthentication`` (``podIdentity.provider: aws``) the cluster side makes
and every ScaledObject trigger references."""
TRIGGER_AUTHENTICATION_KIND = "ClusterTriggerAuthentication"
NAMESPACE_LABEL = "namespace"
"""The label the managed scraper puts the pod's namespace in (a contract with the cluster
side's scrape configuration)."""
LOAD_BALANCER_TAG = "MlccDeployment"
"""The AWS tag whose value (``<namespace>.<name>``) marks a scale-to-zero deployment's load
balancer, so CloudWatch Metrics Insights finds its metrics by tag (``WHERE tag.<key> = ...``)
without the id the load balancer gets only when it is created."""
NAMESPACE = "keda"
SERVICE_ACCOUNT = "keda-operator"
RELEASE = "keda"
CHART = "keda"
CHART_REPOSITORY = "https://kedacore.github.io/charts"
API_VERSION = "keda.sh/v1alpha1"
"""The ScaledObject API (keda.sh/docs/2.21/reference/scaledobject-spec)."""
PROMETHEUS_QUERY_ACTIONS = (
    "aps:GetLabels",
    "aps:GetMetricMetadata",
    "aps:GetSeries",
    "aps:QueryMetrics",
)


def service_account_subject() -> str:
    """The OIDC ``sub`` of the KEDA operator's service account."""
    return f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"


def chart_values(role_arn: str) -> dict[str, Any]:
    """The chart's values: the operator's service account is the IRSA identity ``role_arn``
    (a token at synth). Nothing tolerates the GPU taint."""
    return {"podIdentity": {"aws": {"irsa": {"enabled": True, "roleArn": role_arn}}}}


def cluster_trigger_authentication() -> dict[str, Any]:
    """The ``ClusterTriggerAuthentication`` :data:`TRIGGER_AUTHENTICATION` (module doc)."""
    return {
        "apiVersion": API_VERSION,
        "kind": TRIGGER_AUTHENTICATION_KIND,
        "metadata": {"name": TRIGGER_AUTHENTICATION, "labels": dict(MANAGED_BY)},
        "spec": {"podIdentity": {"provider": "aws", "identityOwner": "keda"}},
    }


def keda_statements(workspace_arn: str) -> tuple[Statement, ...]:
    """KEDA's permissions: query exactly ``workspace_arn``; read CloudWatch metric data."""
    return (
        Statement(
            sid="PrometheusQuery",
            actions=PROMETHEUS_QUERY_ACTIONS,
            resources=(workspace_arn,),
        ),
        Statement(
            sid="CloudWatchMetricData",
            actions=("cloudwatch:GetMetricData",),
            resources=("*",),
            why="cloudwatch:GetMetricData has no resource-level permission (Service "
            "Authorization Reference, Amazon CloudWatch); the wake-up trigger reads the load "
            "balancer's RequestCount",
        ),
    )
