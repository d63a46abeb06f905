"""The cluster side of the deployments' endpoints, as :class:`ServingCluster` creates it: the
load balancer subnets, one ``IngressClass`` and ``IngressClassParams`` per scheme and group, the
ConfigMap that makes Auto Mode enforce NetworkPolicies, and the Secrets Store CSI driver add-on
(the rules and facts are the core's: :mod:`mlcc_constructs.core.platform.load_balancing` and
:mod:`mlcc_constructs.core.platform.endpoint_components`).

**Load balancer subnets.** A deployment's NetworkPolicy admits the engine port from the load
balancer subnets' CIDRs, so those subnets hold load balancers only. In the VPC a
``ServingCluster`` creates they are its children ``LoadBalancerSubnets/Internal<n>`` (private:
their route table has only the VPC's local route, an internal ALB needs no egress) and
``LoadBalancerSubnets/InternetFacing<n>`` (public: a default route to the VPC's internet
gateway, no public address for what launches in them), one per zone at
:data:`~mlcc_constructs.core.platform.load_balancing.REFERENCE_CIDRS`, outside the VPC's other
subnets (checked). A team's own VPC brings its own (``load_balancer_subnets``), whose CIDRs must
be known at synth: they are written into the NetworkPolicies. Each carries the subnet role tag
Auto Mode requires of load balancer subnets (``SUBNET_ROLE_TAGS``); the ``IngressClassParams``
also name them by id, so an ALB of the class lands nowhere else. ``aws_eks_v2`` tags only the
VPC's own public and private subnet lists, which these are not part of.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.platform.endpoint_components import (
    SECRETS_STORE_ADDON,
    network_policy_config_map,
    secrets_store_addon_configuration,
)
from mlcc_constructs.core.platform.load_balancing import (
    INTERNET_ROUTE,
    SCHEMES,
    SUBNET_ROLE_TAGS,
    LoadBalancerScheme,
    group_problems,
    ingress_classes,
    overlap_problems,
    reference_cidrs,
)
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import Problem, json_pointer, raise_if_any

SUBNET_IDS: Mapping[str, str] = {"internal": "Internal", "internet-facing": "InternetFacing"}
_FIX_TEAM_SUBNETS = (
    "pass ec2.Subnet.from_subnet_attributes(scope, id, subnet_id=..., ipv4_cidr_block=..., "
    "availability_zone=...) for a subnet the app does not create"
)


@dataclass(frozen=True, kw_only=True)
class EndpointComponents:
    """What :func:`add_endpoint_components` created."""

    ingress_classes: KubernetesObjects | None
    """The IngressClasses and their IngressClassParams; ``None`` without a scheme."""
    network_policy: KubernetesObjects
    """The ConfigMap that makes Auto Mode enforce NetworkPolicies."""
    secrets_store: eks.CfnAddon
    """The Secrets Store CSI add-on."""


def known_cidr(subnet: ec2.ISubnet) -> str | None:
    """The subnet's IPv4 CIDR if it is known at synth (not a token, not missing)."""
    try:
        cidr = subnet.ipv4_cidr_block
    except RuntimeError:  # jsii: an imported subnet without ipv4_cidr_block
        return None
    return None if cdk.Token.is_unresolved(cidr) else cidr


def _known_zone(subnet: ec2.ISubnet) -> str | None:
    try:
        zone = subnet.availability_zone
    except RuntimeError:  # jsii: an imported subnet without availability_zone
        return None
    return None if cdk.Token.is_unresolved(zone) else zone


def subnet_problems(
    groups: Mapping[str, Sequence[str]],
    subnets: Mapping[str, Sequence[ec2.ISubnet]] | None,
    *,
    team_vpc: bool,
    where: str,
) -> list[Problem]:
    """Problems of ``load_balancer_groups`` and ``load_balancer_subnets`` (module doc): the
    team's VPC needs subnets for every scheme it serves, with known CIDRs, two zones or more;
    the VPC a ``ServingCluster`` creates takes none."""
    problems = [
        dataclasses.replace(p, where=where)
        for p in group_problems(groups, pointer="/load_balancer_groups")
    ]
    schemes = [s for s in SCHEMES if s in groups]
    if subnets is None:
        problems += [
            Problem(
                message=f"the team's VPC has no load balancer subnets for scheme {scheme}: "
                "ServingCluster creates them only in a VPC of its own",
                where=where,
                pointer="/load_balancer_subnets",
                allowed="a mapping of scheme to two or more ec2.ISubnet (one per zone) that "
                "hold nothing but load balancers",
                fix=f"pass load_balancer_subnets={{'{scheme}': [subnet_a, subnet_b]}}, or "
                "load_balancer_groups={} for no IngressClass (the deployments' endpoint "
                "scheme must then be none)",
            )
            for scheme in (schemes if team_vpc else ())
        ]
        return problems
    if not team_vpc:
        return [
            *problems,
            Problem(
                message="load_balancer_subnets apply only to the team's VPC: ServingCluster "
                "creates the load balancer subnets of the VPC it creates",
                where=where,
                pointer="/load_balancer_subnets",
                fix="pass vpc= (the subnets' VPC), or leave load_balancer_subnets unset",
            ),
        ]
    problems += [
        Problem(
            message=f"scheme {scheme} has an IngressClass and no load balancer subnets",
            where=where,
            pointer=json_pointer("load_balancer_subnets", scheme),
            allowed=", ".join(str(s) for s in subnets) or "no scheme",
            fix=f"add two or more subnets for {scheme}, or remove it from load_balancer_groups",
        )
        for scheme in schemes
        if scheme not in subnets
    ]
    for scheme, entries in subnets.items():
        problems += _scheme_subnet_problems(scheme, entries, groups, where)
    return problems


def _scheme_subnet_problems(
    scheme: str, entries: Sequence[ec2.ISubnet], groups: Mapping[str, object], where: str
) -> list[Problem]:
    pointer = json_pointer("load_balancer_subnets", scheme)
    if scheme not in SCHEMES or scheme not in groups:
        return [
            Problem(
                message="not a load balancer scheme"
                if scheme not in SCHEMES
                else "subnets for a scheme load_balancer_groups does not list (it would get no "
                "IngressClass)",
                where=where,
                pointer=pointer,
                value=scheme,
                allowed=", ".join(SCHEMES) if scheme not in SCHEMES else ", ".join(groups),
                fix="key the subnets by scheme"
                if scheme not in SCHEMES
                else f"add {scheme!r} to load_balancer_groups, or drop its subnets",
            )
        ]
    if isinstance(entries, str) or len(entries) < 2:
        return [
            Problem(
                message="a load balancer spans two availability zones or more: give one subnet "
                "per zone",
                where=where,
                pointer=pointer,
                value=entries if isinstance(entries, str) else len(entries),
                allowed="two or more ec2.ISubnet in distinct zones",
                fix=_FIX_TEAM_SUBNETS,
            )
        ]
    problems: list[Problem] = []
    zones: dict[str, int] = {}
    for index, subnet in enumerate(entries):
        at = f"{pointer}/{index}"
        if isinstance(subnet, str):
            problems.append(
                Problem(
                    message="a subnet id is not a subnet",
                    where=where,
                    pointer=at,
                    value=subnet,
                    allowed="ec2.ISubnet",
                    fix=_FIX_TEAM_SUBNETS,
                )
            )
            continue
        if known_cidr(subnet) is None:
            problems.append(
                Problem(
                    message="the subnet's IPv4 CIDR is not known at synth: the deployments' "
                    "NetworkPolicies admit the load balancers by it",
                    where=where,
                    pointer=at,
                    value=subnet.node.path,
                    fix="import it with its CIDR: ec2.Subnet.from_subnet_attributes(scope, id, "
                    "subnet_id=..., ipv4_cidr_block='10.0.16.0/24', availability_zone=...)",
                )
            )
        zone = _known_zone(subnet)
        if zone is not None and zone in zones:
            problems.append(
                Problem(
                    message=f"two of the scheme's subnets are in {zone} (subnet {zones[zone]} "
                    "too): a load balancer takes one subnet per zone",
                    where=where,
                    pointer=at,
                    value=subnet.node.path,
                    fix="give one subnet per availability zone",
                )
            )
        elif zone is not None:
            zones[zone] = index
    return problems


def create_load_balancer_subnets(
    scope: Construct, vpc: ec2.Vpc, schemes: Sequence[LoadBalancerScheme]
) -> dict[LoadBalancerScheme, tuple[ec2.Subnet, ...]]:
    """The load balancer subnets of the VPC a ``ServingCluster`` creates (module doc), children
    of ``scope``'s new ``LoadBalancerSubnets``; refused if they would overlap its subnets."""
    zones = vpc.availability_zones
    cidrs = reference_cidrs(len(zones), schemes)
    others = [s.ipv4_cidr_block for s in (*vpc.public_subnets, *vpc.private_subnets)]
    raise_if_any(
        overlap_problems(
            cidrs,
            vpc_cidr=ec2.Vpc.DEFAULT_CIDR_RANGE,  # _new_vpc sets no other range
            subnet_cidrs=[*others, *(s.ipv4_cidr_block for s in vpc.isolated_subnets)],
            where=vpc.node.path,
            pointer="/load_balancer_cidrs",
        )
    )
    container = Construct(scope, "LoadBalancerSubnets")
    created: dict[LoadBalancerScheme, tuple[ec2.Subnet, ...]] = {}
    for scheme, blocks in cidrs.items():
        subnets: list[ec2.Subnet] = []
        for index, (zone, block) in enumerate(zip(zones, blocks, strict=True), start=1):
            subnet_id = f"{SUBNET_IDS[scheme]}{index}"
            subnet_class = ec2.PublicSubnet if INTERNET_ROUTE[scheme] else ec2.PrivateSubnet
            subnet = subnet_class(
                container,
                subnet_id,
                availability_zone=zone,
                cidr_block=block,
                vpc_id=vpc.vpc_id,
                # Only load balancers live here; an internet-facing ALB has its own addresses.
                map_public_ip_on_launch=False,
            )
            if isinstance(subnet, ec2.PublicSubnet):
                assert vpc.internet_gateway_id is not None  # _new_vpc has public subnets
                subnet.add_default_internet_route(
                    vpc.internet_gateway_id, vpc.internet_connectivity_established
                )
            _tag_role(subnet, scheme)
            subnets.append(subnet)
        created[scheme] = tuple(subnets)
    return created


def _tag_role(subnet: ec2.ISubnet, scheme: LoadBalancerScheme) -> None:
    """Tag the subnet itself (not its route table) with the scheme's role tag; an imported
    subnet has no resource here and keeps its own tags."""
    resource = subnet.node.default_child
    if isinstance(resource, ec2.CfnSubnet):
        cdk.Tags.of(resource).add(SUBNET_ROLE_TAGS[scheme], "1")


def use_team_subnets(
    vpc: ec2.IVpc,
    subnets: Mapping[LoadBalancerScheme, Sequence[ec2.ISubnet]],
    *,
    node_subnets: Sequence[ec2.ISubnet],
    where: str,
) -> None:
    """Refuse team load balancer subnets that are or overlap the cluster's node subnets, the
    VPC's other subnets (those whose CIDRs are known) or each other (the NetworkPolicies admit
    every address in them), and tag the ones the app creates with their scheme's role tag."""
    nodes = {s.subnet_id for s in node_subnets}  # a token names one subnet too
    problems = [
        Problem(
            message="the cluster's nodes and pods run in this subnet: a NetworkPolicy admitting "
            "it would admit every pod",
            where=where,
            pointer=json_pointer("load_balancer_subnets", scheme, index),
            value=subnet.node.path,
            fix="give the load balancers subnets of their own",
        )
        for scheme, group in subnets.items()
        for index, subnet in enumerate(group)
        if subnet.subnet_id in nodes
    ]
    raise_if_any(problems)
    chosen = {s.subnet_id for group in subnets.values() for s in group}
    listed = (*vpc.public_subnets, *vpc.private_subnets, *vpc.isolated_subnets)
    others = [
        cidr
        for s in (*(s for s in listed if s.subnet_id not in chosen), *node_subnets)
        if (cidr := known_cidr(s)) is not None
    ]
    try:
        vpc_cidr: str | None = vpc.vpc_cidr_block
    except RuntimeError:  # jsii: an imported VPC without its CIDR
        vpc_cidr = None
    raise_if_any(
        overlap_problems(
            {scheme: [known_cidr(s) or "" for s in group] for scheme, group in subnets.items()},
            vpc_cidr=None if vpc_cidr is None or cdk.Token.is_unresolved(vpc_cidr) else vpc_cidr,
            subnet_cidrs=sorted(set(others)),
            where=where,
            pointer="/load_balancer_subnets",
        )
    )
    for scheme, group in subnets.items():
        for subnet in group:
            _tag_role(subnet, scheme)


def add_endpoint_components(
    scope: Construct,
    cluster: eks.Cluster,
    *,
    groups: Mapping[LoadBalancerScheme, Sequence[str]],
    subnets: Mapping[LoadBalancerScheme, Sequence[ec2.ISubnet]],
) -> EndpointComponents:
    """The cluster's IngressClasses (``IngressClasses``), the network policy ConfigMap
    (``NetworkPolicyController``) and the Secrets Store CSI add-on (``SecretsStoreCsiAddon``),
    children of ``scope`` (module doc)."""
    classes = ingress_classes(
        groups, {scheme: [s.subnet_id for s in subnets[scheme]] for scheme in groups}
    )
    return EndpointComponents(
        ingress_classes=KubernetesObjects(
            scope,
            "IngressClasses",
            # Params before classes (the list's order); no object depends on another's state.
            props=KubernetesObjectsProps(cluster=cluster, objects=classes),
        )
        if classes
        else None,
        network_policy=KubernetesObjects(
            scope,
            "NetworkPolicyController",
            props=KubernetesObjectsProps(cluster=cluster, objects=[network_policy_config_map()]),
        ),
        secrets_store=eks.CfnAddon(
            scope,
            "SecretsStoreCsiAddon",
            addon_name=SECRETS_STORE_ADDON,
            cluster_name=cluster.cluster_name,
            addon_version=pinned().addon(SECRETS_STORE_ADDON),
            # The provider reads each pod's secrets as the pod's own identity (EKS Pod Identity,
            # the SecretProviderClass's usePodIdentity): the add-on itself needs no role.
            resolve_conflicts="OVERWRITE",
            configuration_values=json.dumps(secrets_store_addon_configuration(), sort_keys=True),
        ),
    )
