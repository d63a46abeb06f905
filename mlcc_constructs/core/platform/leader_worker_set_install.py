"""LeaderWorkerSet (kubernetes-sigs/lws) on the eks cluster: how the cluster side installs the
controller and CRD that a multi-node deployment's ``LeaderWorkerSet`` objects need.

* **Method.** LWS is not an EKS add-on; its installation guide documents a released version by
  Helm from the OCI chart ``oci://registry.k8s.io/lws/charts/lws`` (``helm install lws ...
  --version=$CHART_VERSION --namespace lws-system --create-namespace --wait``), or by the
  release's ``manifests.yaml`` (kubernetes-sigs/lws ``site/content/en/docs/installation/_index.md``
  at v0.10.0, "Install by Helm"). The Helm chart is used, as KEDA's is, through the cluster's
  kubectl provider; its version is pinned in ``versions.json`` (``leader_worker_set``).
* **Images.** The chart's own default values name ``registry.k8s.io/lws/lws`` with tag ``main``
  and ``pullPolicy: Always`` (``charts/lws/values.yaml`` at v0.10.0; its ``appVersion`` is
  ``v0.10.0``), so :func:`chart_values` pins the manager image's tag to the release
  (``v<version>``) and pulls it only when absent: a node restart never pulls a moving tag.
  The image comes from registry.k8s.io like the chart (the cluster's pull-through cache rules
  are for the engines' registries; KEDA's images come from their upstream the same way).
* **CRDs.** Helm installs the chart's CRDs on the first install only and never upgrades them
  (same guide, "Upgrade by Helm"): a version bump of ``leader_worker_set`` must apply the new
  release's CRD (``kubectl apply --server-side``) before the chart; docs/guides/multi-node.md
  says so.
* The controller's pods tolerate nothing, so they never run on (or keep awake) a GPU node.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "lws-system"
RELEASE = "lws"
CHART = "lws"
CHART_REPOSITORY = "oci://registry.k8s.io/lws/charts/lws"
"""The OCI chart reference (the kubectl provider's Helm handler pulls ``oci://`` charts with
``helm pull <repository> --version <version>``; registry.k8s.io needs no login)."""
MANAGER_IMAGE = "registry.k8s.io/lws/lws"
"""The controller manager's image repository (the chart's ``image.manager.repository``)."""


def chart_values(version: str) -> dict[str, Any]:
    """The chart's values for chart ``version`` (``0.10.0``): the manager image at the release
    tag ``v<version>``, pulled if not present (module doc)."""
    return {
        "image": {
            "manager": {
                "repository": MANAGER_IMAGE,
                "tag": f"v{version}",
                "pullPolicy": "IfNotPresent",
            }
        }
    }
