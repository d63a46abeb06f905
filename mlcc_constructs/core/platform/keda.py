"""KEDA facts the serving side and the cluster side share (one place each).

KEDA (pinned in ``versions.json`` ``keda``) scales an eks deployment through a ``ScaledObject``
(``keda.sh/v1alpha1``). Its triggers authenticate to AWS through one
``ClusterTriggerAuthentication`` the cluster side creates, named :data:`TRIGGER_AUTHENTICATION`,
with ``podIdentity: {provider: aws}``: the KEDA operator's own EKS Pod Identity role, which
queries the Amazon Managed Service for Prometheus workspace (``aps:QueryMetrics``) and reads
CloudWatch (``cloudwatch:GetMetricData``, for scale to zero). The serving side only names it.

Prometheus labels: the cluster's managed scraper keeps the engine's own labels (the manifest's
``metrics.model_label``, the served model name) and adds :data:`NAMESPACE_LABEL` (the pod's
namespace, from Kubernetes service discovery), so a query selects one deployment's series.
"""

from __future__ import annotations

API_VERSION = "keda.sh/v1alpha1"
"""The ScaledObject API (keda.sh/docs/2.22/reference/scaledobject-spec)."""
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
