"""The cluster VPC's egress: its NAT gateways and its interface endpoints.

* **NAT gateways** (``nat_gateways``): one per zone, so a zone's nodes keep their egress when
  another zone fails; a dev profile gets one (a NAT gateway is billed per hour, and a dev
  cluster tolerates a zone outage). More than the VPC's zones is refused: a zone holds one
  public subnet, so a second gateway there would route nothing.
* **Interface endpoints**: ECR's API and registry (image pulls: manifests and the pull
  through cache), STS (IRSA and Pod Identity credentials) and CloudWatch Logs, in the private
  subnets with private DNS, beside the S3 gateway endpoint (image layers and model weights):
  the nodes reach them without the NAT gateway. Each is billed per hour per zone. The first
  pull of an image through a pull through cache rule still needs the NAT gateway when ECR is
  reached through interface endpoints
  (https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html, considerations):
  the count is at least 1.
"""

from __future__ import annotations

from mlcc_constructs.core.support.errors import Problem

DEV_PROFILES = frozenset({"dev"})
"""Profiles of development clusters: a single replica is expected (no warning) and the VPC
has one NAT gateway by default."""
NAT_GATEWAYS_KEY = "nat_gateways"
"""CDK context key: the VPC's NAT gateway count."""
ENDPOINT_PORT = 443
VPC_CIDR = "10.0.0.0/16"
"""The CIDR of the VPC ServingCluster creates (aws-cdk-lib's default, written out: the
endpoints' security group admits exactly it, and the load balancer subnets'
``REFERENCE_CIDRS`` lie in it)."""

INTERFACE_ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("EcrApiEndpoint", "ecr.api"),
    ("EcrDkrEndpoint", "ecr.dkr"),
    ("StsEndpoint", "sts"),
    ("LogsEndpoint", "logs"),
)
"""(child id, service short name of ``com.amazonaws.<region>.<name>``) of each interface
endpoint the VPC gets. Image pulls from a private ECR need ``ecr.api``, ``ecr.dkr`` and the S3
gateway endpoint (the layers are in S3)
(https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html); STS serves the pods'
web identity credentials; ``logs`` receives the nodes' and pods' log streams."""


def default_nat_gateways(profile: str | None, zones: int | None) -> int | None:
    """1 for a dev profile; otherwise one per zone (``None`` when the zones are the stack's,
    known at deploy time: CDK then creates one per zone)."""
    if profile in DEV_PROFILES:
        return 1
    return zones


def nat_gateway_problems(
    value: object, *, zones: int, where: str, pointer: str = f"/{NAT_GATEWAYS_KEY}"
) -> list[Problem]:
    """Why ``value`` is not a NAT gateway count for a VPC of ``zones`` zones (``-c`` gives
    text)."""
    count = parse_nat_gateways(value)
    if count is not None and 1 <= count <= zones:
        return []
    if count is not None and count > zones:
        message = f"more NAT gateways than the VPC's {zones} availability zones"
    else:
        message = "not a NAT gateway count"
    return [
        Problem(
            message=message,
            where=where,
            pointer=pointer,
            value=value,
            allowed=f"an integer from 1 to {zones} (one per zone at most: one public subnet each)",
            fix=f"pass -c {NAT_GATEWAYS_KEY}={zones} (one per zone) or 1 (one shared; a zone "
            "outage then cuts every zone's egress)",
        )
    ]


def parse_nat_gateways(value: object) -> int | None:
    """``value`` as a count (``-c nat_gateways=2`` gives ``"2"``), or ``None`` when it is not a
    whole number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None
