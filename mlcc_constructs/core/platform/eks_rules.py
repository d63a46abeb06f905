"""Rules for EKS clusters as CloudFormation declares them (``AWS::EKS::Cluster`` properties),
as pure predicates: the project's cdk-nag pack (``mlcc_constructs.aws.nag``) applies them to
every cluster, whichever construct made it. cdk-nag's AwsSolutions EKS rules only look at
``aws_eks.CfnCluster`` and never see an ``aws_eks_v2`` cluster.

* **Public endpoint without CIDR limits**: ``ResourcesVpcConfig.EndpointPublicAccess`` is true
  (CloudFormation's default) and ``PublicAccessCidrs`` is absent (default ``0.0.0.0/0``) or
  holds ``0.0.0.0/0``.
* **Control-plane logging**: ``Logging.ClusterLogging.EnabledTypes`` must enable every
  control-plane log type (as AwsSolutions-EKS2 asks): api, audit, authenticator,
  controllerManager, scheduler.

A value CloudFormation only knows at deploy time (a ``Ref``, a condition) cannot be shown to
comply, so it is reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CLUSTER_TYPE = "AWS::EKS::Cluster"
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
_ANYWHERE = "0.0.0.0/0"


def public_endpoint_problem(properties: Mapping[str, Any]) -> str | None:
    """Why the cluster's API endpoint is open to the internet, or ``None``."""
    config = properties.get("ResourcesVpcConfig")
    if not isinstance(config, Mapping):
        return "ResourcesVpcConfig is not a literal object"
    public = config.get("EndpointPublicAccess", True)
    if public is False:
        return None
    if not isinstance(public, bool):
        return "EndpointPublicAccess is only known at deploy time"
    cidrs = config.get("PublicAccessCidrs")
    if cidrs is None:
        return "the public endpoint has no PublicAccessCidrs (CloudFormation allows 0.0.0.0/0)"
    if not isinstance(cidrs, list) or not all(isinstance(c, str) for c in cidrs):
        return "PublicAccessCidrs is only known at deploy time"
    if _ANYWHERE in cidrs or not cidrs:
        return "PublicAccessCidrs allows 0.0.0.0/0"
    return None


def missing_log_types(properties: Mapping[str, Any]) -> tuple[str, ...]:
    """The control-plane log types the cluster does not enable (empty: all enabled)."""
    logging = properties.get("Logging")
    enabled: set[str] = set()
    if isinstance(logging, Mapping):
        cluster_logging = logging.get("ClusterLogging")
        if isinstance(cluster_logging, Mapping):
            types = cluster_logging.get("EnabledTypes")
            if isinstance(types, list):
                enabled = {str(t["Type"]) for t in types if isinstance(t, Mapping) and "Type" in t}
    return tuple(t for t in LOG_TYPES if t not in enabled)
