"""EKS Auto Mode's built-in load balancing, as both sides use it: the cluster side creates one
``IngressClass`` and its ``IngressClassParams`` per scheme and load balancer group
(:func:`ingress_class_objects`) and places the load balancers in subnets of their own; a
deployment's Ingress names its class (:func:`ingress_class_name`) and its NetworkPolicy admits
the engine port from those subnets' CIDRs only.

**Why subnets of their own.** An ALB in IP target mode forwards from the private addresses of
its network interfaces (ELB: "ELB nodes use the private IP addresses that are associated with
their elastic network interfaces as the source IP address for forwarded requests"), and with
the VPC CNI every pod has a VPC address too: a NetworkPolicy that admits the load balancer's
subnets admits every pod in them. The pods' subnets never host a load balancer, so the load
balancers get subnets that hold nothing else: :data:`REFERENCE_CIDRS` in the VPC a
``ServingCluster`` creates (outside what CDK allocates for its public and private subnets), the
team's own subnets otherwise. These CIDRs are an input both sides read, not something derived
from the VPC: the deployments are prepared (and size the GPU NodePool) before the cluster
exists.

Facts (EKS User Guide, ``automode/auto-configure-alb.adoc`` at awsdocs/amazon-eks-user-guide
1eb6aa42): the IngressClass's controller is ``eks.amazonaws.com/alb`` and its parameters an
``eks.amazonaws.com/v1`` ``IngressClassParams``; annotations on an IngressClass are not read,
the load balancer group is set in the IngressClassParams only (``group.name``; the Ingress
annotation ``alb.ingress.kubernetes.io/group.name`` is not supported), and load balancer
attributes such as ``idle_timeout.timeout_seconds`` go in its ``loadBalancerAttributes``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.support.errors import Problem, fail

LoadBalancerScheme = Literal["internal", "internet-facing"]
SCHEMES: tuple[LoadBalancerScheme, ...] = ("internal", "internet-facing")

GROUP = re.compile(r"^[a-z0-9]([-a-z0-9]{0,41}[a-z0-9])?$")
"""A load balancer group's name (it names the IngressClass ``mlcc-<scheme>-<group>``)."""
CONTROLLER = "eks.amazonaws.com/alb"
PARAMS_API_VERSION = "eks.amazonaws.com/v1"
PARAMS_KIND = "IngressClassParams"

IDLE_TIMEOUT_SECONDS = 600
"""The ALB's idle timeout (the ELBv2 attribute ``idle_timeout.timeout_seconds``, 1-4000 s,
default 60). A streaming chat completion sends nothing until its first token, and a long prompt
queued behind others on a busy engine can take minutes to prefill: 60 s would cut it off."""


REFERENCE_CIDRS: Mapping[LoadBalancerScheme, tuple[str, ...]] = MappingProxyType(
    {
        # One /24 per availability zone (an ALB needs two zones or more); a ServingCluster's
        # VPC (10.0.0.0/16) allocates its public /24s from 10.0.0.0 and its private /19s from
        # 10.0.32.0, so 10.0.16.0/20 stays free for up to six zones.
        "internal": ("10.0.16.0/24", "10.0.17.0/24", "10.0.18.0/24"),
        "internet-facing": ("10.0.20.0/24", "10.0.21.0/24", "10.0.22.0/24"),
    }
)
"""The load balancer subnets of the VPC a ``ServingCluster`` creates, by scheme (module doc);
what a deployment's NetworkPolicy admits when its render context names no others."""
MAX_ZONES = len(REFERENCE_CIDRS["internal"])
"""The zones a ``ServingCluster``'s VPC has load balancer subnets for."""

SUBNET_ROLE_TAGS: Mapping[LoadBalancerScheme, str] = MappingProxyType(
    {"internal": "kubernetes.io/role/internal-elb", "internet-facing": "kubernetes.io/role/elb"}
)
"""The tag (value ``1``) Auto Mode requires on the subnets of a scheme's load balancers ("At
this time, subnets used for load balancing by EKS Auto Mode are required to have one of the
following tags": EKS User Guide ``automode/tag-subnets-auto.adoc`` at awsdocs/
amazon-eks-user-guide 1b1d3dfc), even when an ``IngressClassParams`` names them by id."""


INTERNET_ROUTE: Mapping[LoadBalancerScheme, bool] = MappingProxyType(
    {"internal": False, "internet-facing": True}
)
"""Whether a scheme's load balancer subnets route to the internet gateway: an internet-facing
ALB is reached from it; an internal one needs no route but the VPC's local one."""


def ingress_class_name(scheme: LoadBalancerScheme, group: str | None = None) -> str:
    """``mlcc-<scheme>`` (a load balancer per Ingress) or ``mlcc-<scheme>-<group>`` (every
    Ingress of the class shares one)."""
    return f"mlcc-{scheme}" + (f"-{group}" if group else "")


def ingress_class_objects(
    scheme: LoadBalancerScheme, group: str | None, *, subnet_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """The ``IngressClassParams`` and ``IngressClass`` (cluster-scoped, in that order) of
    ``scheme`` and ``group``, whose load balancers live in ``subnet_ids`` (the subnets the
    deployments' NetworkPolicies admit the load balancer from)."""
    name = ingress_class_name(scheme, group)
    spec: dict[str, Any] = {
        "scheme": scheme,
        "subnets": {"ids": list(subnet_ids)},
        "loadBalancerAttributes": [
            {"key": "idle_timeout.timeout_seconds", "value": str(IDLE_TIMEOUT_SECONDS)}
        ],
    }
    if group:
        spec["group"] = {"name": name}
    labels = dict(MANAGED_BY)
    return [
        {
            "apiVersion": PARAMS_API_VERSION,
            "kind": PARAMS_KIND,
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "controller": CONTROLLER,
                "parameters": {
                    "apiGroup": PARAMS_API_VERSION.split("/")[0],
                    "kind": PARAMS_KIND,
                    "name": name,
                },
            },
        },
    ]


def reference_cidrs(
    zone_count: int, schemes: Iterable[LoadBalancerScheme] = SCHEMES
) -> dict[LoadBalancerScheme, tuple[str, ...]]:
    """The load balancer subnets' CIDRs of a ``ServingCluster``'s VPC with ``zone_count`` zones
    (one subnet per zone and scheme): the first ``zone_count`` of :data:`REFERENCE_CIDRS` for
    each of ``schemes``. Both sides read this: the cluster creates these subnets, and the app's
    deployments are rendered with them. More than :data:`MAX_ZONES` zones raise ``ValueError``
    (``ServingClusterProps`` refuses them first)."""
    if not 0 < zone_count <= MAX_ZONES:
        raise ValueError(f"load balancer subnets exist for 1-{MAX_ZONES} zones, not {zone_count}")
    wanted = set(schemes)
    return {s: REFERENCE_CIDRS[s][:zone_count] for s in SCHEMES if s in wanted}


def ingress_classes(
    groups: Mapping[LoadBalancerScheme, Sequence[str]],
    subnet_ids: Mapping[LoadBalancerScheme, Sequence[str]],
) -> list[dict[str, Any]]:
    """Every scheme's ``IngressClassParams`` and ``IngressClass`` (:func:`ingress_class_objects`),
    in a stable order: per scheme of ``groups`` (in :data:`SCHEMES` order) its own class
    ``mlcc-<scheme>``, then one per group (sorted), each placing its load balancers in
    ``subnet_ids[scheme]``."""
    objects: list[dict[str, Any]] = []
    for scheme in (s for s in SCHEMES if s in groups):
        for group in (None, *sorted(set(groups[scheme]))):
            objects += ingress_class_objects(scheme, group, subnet_ids=subnet_ids[scheme])
    return objects


def _unknown_scheme(scheme: str, pointer: str, fix: str = "") -> Problem:
    return Problem(
        message="not a load balancer scheme",
        pointer=pointer,
        value=scheme,
        allowed=", ".join(SCHEMES),
        fix=fix,
    )


def group_problems(groups: Mapping[str, Sequence[str]], *, pointer: str) -> list[Problem]:
    """Problems of load balancer groups by scheme: known schemes, group names that can name an
    IngressClass, a list (not a string) per scheme."""
    problems: list[Problem] = []
    for scheme, names in groups.items():
        where = f"{pointer}/{scheme}"
        if scheme not in SCHEMES:
            problems.append(
                _unknown_scheme(
                    scheme, where, fix="key the groups by scheme, e.g. {'internal': ['shared']}"
                )
            )
            continue
        if isinstance(names, str):
            problems.append(
                Problem(
                    message="a scheme's groups are a list of names",
                    pointer=where,
                    value=names,
                    fix=f"pass [{names!r}] (or [] for the scheme's own class only)",
                )
            )
            continue
        problems += [
            Problem(
                message="not a load balancer group name",
                pointer=f"{where}/{index}",
                value=name,
                allowed="1-43 lower-case letters, digits and '-' (it names the IngressClass "
                "mlcc-<scheme>-<group>)",
            )
            for index, name in enumerate(names)
            if not isinstance(name, str) or not GROUP.match(name)
        ]
    return problems


def overlap_problems(
    cidrs: Mapping[LoadBalancerScheme, Sequence[str]] | Mapping[str, Sequence[str]],
    *,
    vpc_cidr: str | None,
    subnet_cidrs: Sequence[str],
    where: str,
    pointer: str,
) -> list[Problem]:
    """Problems of load balancer subnet CIDRs in a VPC: each inside ``vpc_cidr`` (``None``:
    unknown, not compared), overlapping none of the VPC's other subnets (``subnet_cidrs``) nor
    each other. A NetworkPolicy admits these CIDRs, so a pod or node address inside one would
    be admitted too."""
    problems: list[Problem] = []
    vpc = ipaddress.IPv4Network(vpc_cidr) if vpc_cidr is not None else None
    seen: list[ipaddress.IPv4Network] = [ipaddress.IPv4Network(c) for c in subnet_cidrs]
    for scheme, networks in cidrs.items():
        for index, text in enumerate(networks):
            network = ipaddress.IPv4Network(text)
            clash = next((other for other in seen if network.overlaps(other)), None)
            outside = vpc is not None and not network.subnet_of(vpc)
            if outside or clash is not None:
                problems.append(
                    Problem(
                        message="a load balancer subnet must lie in its VPC and hold nothing "
                        "else: the NetworkPolicies admit its whole CIDR"
                        + (f", and it is outside the VPC's {vpc_cidr}" if outside else "")
                        + (f", and it overlaps {clash}" if clash is not None else ""),
                        where=where,
                        pointer=f"{pointer}/{scheme}/{index}",
                        value=text,
                        allowed="a range of the VPC that no other subnet uses",
                        fix="give the VPC's other subnets addresses outside the load balancer "
                        "subnets (REFERENCE_CIDRS in core/platform/load_balancing.py)",
                    )
                )
            seen.append(network)
    return problems


def cidr_problems(cidrs: Mapping[str, Sequence[str]], *, pointer: str) -> list[Problem]:
    """Problems of load balancer CIDRs by scheme: known schemes, at least two IPv4 networks
    each (an ALB spans two zones or more)."""
    problems: list[Problem] = []
    for scheme, networks in cidrs.items():
        where = f"{pointer}/{scheme}"
        if scheme not in SCHEMES:
            problems.append(_unknown_scheme(scheme, where))
            continue
        if isinstance(networks, str) or len(networks) < 2:
            problems.append(
                Problem(
                    message="a load balancer spans two availability zones or more: name a "
                    "subnet CIDR for each",
                    pointer=where,
                    value=networks,
                    allowed="a list of two or more IPv4 CIDRs",
                )
            )
            continue
        for index, network in enumerate(networks):
            try:
                ipaddress.IPv4Network(network)
            except (ValueError, TypeError):
                problems.append(
                    Problem(
                        message="not an IPv4 network",
                        pointer=f"{where}/{index}",
                        value=network,
                        allowed="a CIDR such as 10.0.16.0/24 (host bits zero)",
                    )
                )
    return problems


def load_balancer_cidrs(
    cidrs: Mapping[str, Sequence[str]] | None, scheme: LoadBalancerScheme
) -> tuple[str, ...]:
    """The CIDRs of ``scheme``'s load balancer subnets: ``cidrs``' (a render context's), else
    :data:`REFERENCE_CIDRS`."""
    source = REFERENCE_CIDRS if cidrs is None else cidrs
    return tuple(source.get(scheme, ()))


# The Route 53 hosted zone of Application Load Balancers per region: what an alias record to an
# ALB names as its target's zone ("Route 53 Hosted Zone ID (Application Load Balancers, Classic
# Load Balancers)", https://docs.aws.amazon.com/general/latest/gr/elb.html, read 2026-12-06).
# Only the regions read there; another region's alias is refused, never guessed.
ALB_HOSTED_ZONES: Mapping[str, str] = MappingProxyType(
    {
        "us-east-1": "Z35SXDOTRQ7X7K",
        "us-east-2": "Z3AADJGX6KTTL2",
        "us-west-1": "Z368ELLRRE2KJ0",
        "us-west-2": "Z1H1FL5HABSF5",
        "af-south-1": "Z268VQBMOI5EKX",
        "ap-east-1": "Z3DQVH9N71FHZ0",
    }
)


def alb_hosted_zone(region: str, *, where: str, pointer: str) -> str:
    """The ALB hosted zone of ``region`` (:data:`ALB_HOSTED_ZONES`); another region is refused,
    naming the page that lists it."""
    zone = ALB_HOSTED_ZONES.get(region)
    if zone is None:
        raise fail(
            f"no Application Load Balancer hosted zone id of region {region} is on record, so "
            "no alias record can point at the load balancer",
            where=where,
            pointer=pointer,
            value=region,
            allowed=", ".join(sorted(ALB_HOSTED_ZONES)),
            fix="add the region's zone from https://docs.aws.amazon.com/general/latest/gr/elb.html "
            "to ALB_HOSTED_ZONES, or drop endpoint.hosted_zone_id and point the name yourself",
        )
    return zone
