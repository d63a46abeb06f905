"""What an EKS Auto Mode cluster runs so its deployments' endpoints work as rendered, besides
their load balancers (:mod:`~mlcc_constructs.core.platform.load_balancing`): enforcement of their
NetworkPolicies, and the Secrets Store CSI driver with the AWS provider that syncs their
Secrets Manager values (:mod:`mlcc_constructs.core.serving.prepare.secrets`).

**Network policies.** Auto Mode enforces NetworkPolicies only once its Network Policy
Controller is enabled by the ConfigMap ``kube-system/amazon-vpc-cni`` with
``enable-network-policy-controller: "true"`` ("To use network policies with EKS Auto Mode, you
first need to enable the Network Policy Controller by applying a ConfigMap to your cluster":
EKS User Guide ``automode/auto-net-pol.adoc`` at awsdocs/amazon-eks-user-guide 01385604). Without
it a deployment's NetworkPolicy is accepted and ignored: every pod could call the engine.

**Secret sync.** The EKS add-on ``aws-secrets-store-csi-driver-provider`` installs the AWS
provider (ASCP) and, as a dependency of its chart, the Secrets Store CSI driver
(``secrets-store-csi-driver.install: true`` by default in the chart's ``values.yaml``,
aws/secrets-store-csi-driver-provider-aws a74182c); its configuration values are that chart's
values ("install the add-on with the default configuration", linking that ``values.yaml``:
https://docs.aws.amazon.com/secretsmanager/latest/userguide/ascp-eks-installation.html). The
driver writes the synced Kubernetes Secret only with its sub-chart's ``syncSecret.enabled``
(default ``false``: it installs the RBAC the sync needs), and only while a pod mounts the
volume. The add-on validates only the provider's options against its schema, not the driver's
(same page, "Add-on schema validation scope").
"""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.platform.gpu_capacity import gpu_toleration
from mlcc_constructs.core.platform.labels import MANAGED_BY

SECRETS_STORE_ADDON = "aws-secrets-store-csi-driver-provider"
DRIVER_CHART = "secrets-store-csi-driver"  # the provider chart's key for the driver sub-chart


def network_policy_config_map() -> dict[str, Any]:
    """The ConfigMap that turns on Auto Mode's Network Policy Controller (module doc)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "amazon-vpc-cni",
            "namespace": "kube-system",
            "labels": dict(MANAGED_BY),
        },
        "data": {"enable-network-policy-controller": "true"},
    }


def secrets_store_addon_configuration() -> dict[str, Any]:
    """``ConfigurationValues`` of the ``aws-secrets-store-csi-driver-provider`` add-on.

    * ``tolerations``: the provider's DaemonSet tolerates the GPU nodes' taint, so it runs where
      the engine pods mount their secrets (the chart's default is ``[]``; its daemonset template
      renders the list as given).
    * ``secrets-store-csi-driver.syncSecret.enabled``: the driver syncs the mounted values into
      the deployment's Secret ``<name>-secrets`` (module doc).

    The driver's own DaemonSet is left at its chart default, ``linux.tolerations: [{operator:
    Exists}]``, which tolerates every taint (kubernetes-sigs/secrets-store-csi-driver
    ``charts/secrets-store-csi-driver/values.yaml`` at 0aad886, since chart v1.3.0, 48b6ca07):
    a list given there would replace that default, not add to it. Rotation stays off (the
    chart's default): the engine reads the values as env at start, so a rotated secret takes
    effect when the pods restart.
    """
    return {
        "tolerations": [gpu_toleration()],
        DRIVER_CHART: {"syncSecret": {"enabled": True}},
    }
