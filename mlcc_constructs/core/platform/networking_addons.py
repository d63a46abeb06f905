"""The EKS networking add-ons a HyperPod cluster needs on an EKS Auto Mode cluster: which of
them the HyperPod cluster waits for, and where CoreDNS runs.

Auto Mode nodes bring their own pod networking and DNS ("With Amazon EKS Auto Mode, you don't
need to install or upgrade networking add-ons",
https://docs.aws.amazon.com/eks/latest/userguide/managing-coredns.html), so an Auto Mode
cluster has none of these add-ons; HyperPod nodes are ordinary EC2 nodes and "SageMaker
HyperPod requires the Amazon VPC CNI plugin version 1.18.3 or later"
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html).

How each schedules while only Auto Mode nodes exist (the add-ons are created then):

* ``vpc-cni``: a DaemonSet whose node affinity excludes ``eks.amazonaws.com/compute-type``
  ``fargate``, ``hybrid`` and ``auto`` (aws/amazon-vpc-cni-k8s ``charts/aws-vpc-cni/values.yaml``
  at b5218838); AWS lists its compatible compute types as "EC2" only
  (https://docs.aws.amazon.com/eks/latest/userguide/workloads-add-ons-available-eks.html). On
  Auto Mode nodes alone it wants no pod, so there is nothing to wait for.
* ``kube-proxy``: a DaemonSet; compatible compute types "EC2, EKS Hybrid Nodes" (same page),
  not Auto Mode: no pod on Auto Mode nodes either. (Its manifest is not published; the page is
  the evidence.)
* ``coredns``: a Deployment; compatible compute types "EC2, Fargate, EKS Auto Mode, EKS Hybrid
  Nodes" (same page). Auto Mode's built-in ``system`` pool is tainted ``CriticalAddonsOnly``
  and "Many EKS addons, such as CoreDNS, tolerate this taint"
  (https://docs.aws.amazon.com/eks/latest/userguide/set-builtin-node-pools.html), and its
  ``general-purpose`` pool takes untainted pods: Auto Mode launches a node for CoreDNS, it does
  not wait for HyperPod nodes.

The HyperPod cluster waits for the VPC CNI and kube-proxy (its nodes are not Ready without a
CNI, and the CNI reaches the API server through the ``kubernetes`` Service kube-proxy routes),
not for CoreDNS: DNS serves pods, not the nodes joining. Whether CloudFormation would wait on
an unhealthy add-on matters less then: the Terraform provider's maintainers' tracker reports
the ``AWS::EKS::Addon`` handler treating ``DEGRADED`` as a successful terminal state
(https://github.com/hashicorp/terraform-provider-aws/issues/44669), while ``CREATE_FAILED``
fails the stack.

CoreDNS prefers Auto Mode nodes (a preferred term on ``eks.amazonaws.com/compute-type: auto``,
the label Auto Mode sets on its nodes: ``automode/associate-workload.adoc``,
awsdocs/amazon-eks-user-guide 4d52b4d0): DNS for the HyperPod pods then survives a HyperPod
node's replacement or patching and takes none of the HyperPod capacity. It does not tolerate
the GPU taint (``nvidia.com/gpu``): GPU nodes are for the engines, and CoreDNS has CPU nodes to
run on. On a cluster without Auto Mode the preferred term matches no node and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

# The labels CoreDNS's default node affinity requires (re-stated: configuration ``affinity``
# replaces the default wholesale) and the label of its pods (its default anti-affinity).
_OS_ARCH = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
)
COMPUTE_TYPE_LABEL = "eks.amazonaws.com/compute-type"
AUTO_MODE = "auto"


def coredns_configuration() -> dict[str, Any]:
    """``ConfigurationValues`` of the ``coredns`` add-on: its default placement (Linux,
    amd64/arm64, replicas spread over hosts) plus a preference for Auto Mode nodes. The
    add-on's schema takes ``affinity`` (``aws eks describe-addon-configuration --addon-name
    coredns``; AWS's add-on advanced-configuration blog sets it the same way); its default
    tolerations (``CriticalAddonsOnly``) are kept by not setting ``tolerations``."""
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in _OS_ARCH]}]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "preference": {
                            "matchExpressions": [
                                {
                                    "key": COMPUTE_TYPE_LABEL,
                                    "operator": "In",
                                    "values": [AUTO_MODE],
                                }
                            ]
                        },
                    }
                ],
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {
                                "matchExpressions": [
                                    {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}
                                ]
                            },
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        }
    }


@dataclass(frozen=True, kw_only=True)
class NetworkingAddon:
    """One networking add-on of the HyperPod cluster.

    ``name``: the EKS add-on name. ``child_id``: its construct id (a logical-id contract).
    ``before_nodes``: the HyperPod cluster is created after it (its nodes need it to join).
    ``configuration``: its ``ConfigurationValues``; default ``None`` (EKS's defaults).
    """

    name: str
    child_id: str
    before_nodes: bool
    configuration: Mapping[str, Any] | None = None


def vpc_cni_configuration() -> dict[str, Any]:
    """``ConfigurationValues`` of the ``vpc-cni`` add-on: its network policy agent on.

    The add-on's chart renders the ConfigMap ``kube-system/amazon-vpc-cni`` with
    ``enable-network-policy-controller`` from its ``enableNetworkPolicy`` value, ``"false"``
    unless configured (aws/amazon-vpc-cni-k8s ``charts/aws-vpc-cni/templates/configmap.yaml``;
    EKS User Guide ``cni-network-policy-configure``: "Enable the network policy parameter for
    the add-on"). That ConfigMap is the switch Auto Mode reads too
    (:func:`~mlcc_constructs.core.platform.endpoint_components.network_policy_config_map`): an
    add-on created with ``ResolveConflicts: OVERWRITE`` and no configuration would turn every
    NetworkPolicy of the cluster off. Configured so, both owners of the key agree, and the
    HyperPod nodes' own agent enforces the policies of the pods it runs."""
    return {"enableNetworkPolicy": "true"}


NETWORKING_ADDONS = (
    NetworkingAddon(
        name="vpc-cni",
        child_id="VpcCniAddon",
        before_nodes=True,
        configuration=MappingProxyType(vpc_cni_configuration()),
    ),
    NetworkingAddon(name="kube-proxy", child_id="KubeProxyAddon", before_nodes=True),
    NetworkingAddon(
        name="coredns",
        child_id="CoreDnsAddon",
        before_nodes=False,
        configuration=MappingProxyType(coredns_configuration()),
    ),
)
