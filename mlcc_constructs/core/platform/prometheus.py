"""The cluster's Amazon Managed Service for Prometheus workspace and its managed scraper.

* ``AWS::APS::Workspace``: its ``PrometheusEndpoint`` attribute is the workspace's Prometheus
  API, ``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/api/v1/`` (the
  ``prometheusEndpoint`` example of the AMP API). KEDA's ``prometheus`` trigger appends
  ``/api/v1/query`` to its ``serverAddress``, so the cluster's ``prometheus_query_url`` is that
  endpoint without its :data:`API_SUFFIX` (the query base URL).
* ``AWS::APS::Scraper``: an agentless collector in the cluster's VPC (one network interface per
  subnet: at least two subnets in two zones, the cluster's security group; the internal load
  balancer subnets, which the deployments' NetworkPolicies admit), writing to the workspace.
  The cluster's authentication mode is ``API``, so the scraper gets its EKS access entry
  automatically ("any scrapers you create ... will automatically have the correct access
  entry policy created for you"); the API endpoint must include private access, which it does.
  https://docs.aws.amazon.com/prometheus/latest/userguide/AMP-collector-how-to.html.
* The scrape configuration (:func:`scrape_configuration`, base64 in ``ConfigurationBlob``)
  scrapes every pod annotated ``prometheus.io/scrape: "true"`` at ``prometheus.io/port`` and
  ``prometheus.io/path`` (default ``/metrics``), every :data:`SCRAPE_INTERVAL` (the managed
  collector's minimum is 30 seconds). Its only discovery is ``kubernetes_sd_configs`` (the one
  the managed collector supports), so it needs no DNS name but the API server's.
"""

from __future__ import annotations

import base64

SCRAPE_INTERVAL = "30s"
API_SUFFIX = "/api/v1"
SCRAPE_ANNOTATION = "prometheus.io/scrape"
PORT_ANNOTATION = "prometheus.io/port"
PATH_ANNOTATION = "prometheus.io/path"
JOB = "mlcc-pods"


def scrape_annotations(port: int, path: str) -> dict[str, str]:
    """The pod annotations that make the cluster's scraper collect ``path`` on ``port``
    (:func:`scrape_configuration` keeps exactly the pods that carry them)."""
    return {SCRAPE_ANNOTATION: "true", PORT_ANNOTATION: str(port), PATH_ANNOTATION: path}


def _annotation(name: str) -> str:
    """The service-discovery label of a pod annotation (``__meta_kubernetes_pod_annotation_*``)."""
    return "__meta_kubernetes_pod_annotation_" + "".join(ch if ch.isalnum() else "_" for ch in name)


def scrape_configuration() -> str:
    """The scraper's Prometheus configuration (YAML): the annotated pods, with their namespace,
    pod and container names and the pod's labels as metric labels."""
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL},
        "scrape_configs": [
            {
                "job_name": JOB,
                "kubernetes_sd_configs": [{"role": "pod"}],
                "relabel_configs": [
                    {
                        "source_labels": [_annotation(SCRAPE_ANNOTATION)],
                        "action": "keep",
                        "regex": "true",
                    },
                    {
                        "source_labels": [_annotation(PATH_ANNOTATION)],
                        "action": "replace",
                        "target_label": "__metrics_path__",
                        "regex": "(.+)",
                    },
                    {
                        "source_labels": ["__meta_kubernetes_pod_ip", _annotation(PORT_ANNOTATION)],
                        "action": "replace",
                        "regex": "(.+);([0-9]+)",
                        "replacement": "$1:$2",
                        "target_label": "__address__",
                    },
                    {"action": "labelmap", "regex": "__meta_kubernetes_pod_label_(.+)"},
                    {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                    {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                    {
                        "source_labels": ["__meta_kubernetes_pod_container_name"],
                        "target_label": "container",
                    },
                ],
            }
        ],
    }
    import yaml  # here, not at the top: `mlcc render` never asks for it (start-up)

    text: str = yaml.safe_dump(config, sort_keys=False, default_flow_style=False)
    return text


def configuration_blob() -> str:
    """:func:`scrape_configuration`, base64-encoded (the ``ConfigurationBlob``)."""
    return base64.b64encode(scrape_configuration().encode("utf-8")).decode("ascii")
