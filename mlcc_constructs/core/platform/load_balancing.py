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
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.support.errors import Problem

LoadBalancerScheme = Literal["internal", "internet-facing"]
SCHEMES: tuple[LoadBalancerScheme, ...] = ("internal", "internet-facing")

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


def cidr_problems(cidrs: Mapping[str, Sequence[str]], *, pointer: str) -> list[Problem]:
    """Problems of load balancer CIDRs by scheme: known schemes, at least two IPv4 networks
    each (an ALB spans two zones or more)."""
    problems: list[Problem] = []
    for scheme, networks in cidrs.items():
        where = f"{pointer}/{scheme}"
        if scheme not in SCHEMES:
            problems.append(
                Problem(
                    message="not a load balancer scheme",
                    pointer=where,
                    value=scheme,
                    allowed=", ".join(SCHEMES),
                )
            )
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
