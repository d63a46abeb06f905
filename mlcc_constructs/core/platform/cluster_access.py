"""Who reaches the EKS cluster: admin IAM roles and the CIDRs of the public API endpoint.

Both come from CDK context (``cdk.json``; ``-c key=a,b`` on the command line). Each admin
role gets an EKS access entry with ``AmazonEKSClusterAdminPolicy`` at cluster scope
(https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html). With no
CIDRs the API endpoint is private (reached from the VPC); with CIDRs it is also public, for
those networks only. ``0.0.0.0/0`` is refused: it is the unlimited public endpoint.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re

from mlcc_constructs.core.platform.context_values import decode_context
from mlcc_constructs.core.support.errors import Problem, json_pointer, raise_if_any

ROLE_ARN = re.compile(
    r"^arn:aws(?:-cn|-us-gov|-iso[a-z]*)?:iam::[0-9]{12}:role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}$"
)
_ASSUMED = re.compile(r"^arn:aws[a-z-]*:sts::([0-9]{12}):assumed-role/([\w+=,.@-]+)/")
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def context_list(value: object, key: str = "") -> tuple[str, ...]:
    """A list from context: cdk.json holds a JSON list, ``-c key=a,b`` a comma-separated string
    and ``-c key='["a","b"]'`` a JSON list's text (decoded, not split)."""
    value = decode_context(value, key)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if isinstance(value, (list, tuple)):
        return tuple(str(item).strip() for item in value)
    return (str(value),)


def admin_role_arns(value: object, *, where: str, key: str = "admin_role_arns") -> tuple[str, ...]:
    """The admin role ARNs of ``value``, in order, duplicates dropped; every malformed ARN is a
    problem naming it, raised at once."""
    problems = []
    arns: list[str] = []
    for index, arn in enumerate(context_list(value, key)):
        if ROLE_ARN.match(arn):
            if arn not in arns:
                arns.append(arn)
            continue
        assumed = _ASSUMED.match(arn)
        fix = (
            f"use the role itself: arn:aws:iam::{assumed[1]}:role/{assumed[2]}"
            if assumed
            else f"pass -c {key}=arn:aws:iam::<account>:role/<name>[,...] or edit cdk.json"
        )
        problems.append(
            Problem(
                message="not an IAM role ARN",
                where=where,
                pointer=json_pointer(key, index),
                value=arn,
                allowed="arn:aws:iam::<12-digit account>:role/[<path>/]<name>",
                fix=fix,
            )
        )
    raise_if_any(problems)
    return tuple(arns)


def endpoint_cidrs(
    value: object, *, where: str, key: str = "endpoint_public_cidrs"
) -> tuple[str, ...]:
    """The IPv4 CIDRs allowed to reach the public API endpoint (empty: private endpoint)."""
    problems = []
    cidrs: list[str] = []
    for index, text in enumerate(context_list(value, key)):
        pointer = json_pointer(key, index)
        try:
            network = ipaddress.IPv4Network(text, strict=True)
        except ValueError as error:
            problems.append(
                Problem(
                    message=f"not an IPv4 CIDR block ({error})",
                    where=where,
                    pointer=pointer,
                    value=text,
                    allowed="a network such as 203.0.113.0/24 or one address as 198.51.100.7/32",
                    fix=f"pass -c {key}=203.0.113.0/24[,...] or edit cdk.json",
                )
            )
            continue
        if network.prefixlen == 0:
            problems.append(
                Problem(
                    message="0.0.0.0/0 would open the cluster's API endpoint to the internet",
                    where=where,
                    pointer=pointer,
                    value=text,
                    allowed="the networks your administrators and CI reach the cluster from",
                    fix=f"name those networks, or leave {key} empty for a private endpoint",
                )
            )
            continue
        if str(network) not in cidrs:
            cidrs.append(str(network))
    if not problems and covers_every_address(cidrs):
        problems.append(
            Problem(
                message="together these networks cover every IPv4 address: the cluster's API "
                "endpoint would be open to the internet, as with 0.0.0.0/0",
                where=where,
                pointer=json_pointer(key),
                value=",".join(cidrs),
                allowed="the networks your administrators and CI reach the cluster from",
                fix=f"name those networks, or leave {key} empty for a private endpoint",
            )
        )
    raise_if_any(problems)
    return tuple(cidrs)


def covers_every_address(cidrs: list[str]) -> bool:
    """Whether the IPv4 networks ``cidrs`` together hold every IPv4 address (``0.0.0.0/1`` and
    ``128.0.0.0/1``, say): collapsed, they are the one network ``0.0.0.0/0``."""
    collapsed = list(ipaddress.collapse_addresses(ipaddress.IPv4Network(c) for c in cidrs))
    return len(collapsed) == 1 and collapsed[0].prefixlen == 0


def admin_access_id(arn: str) -> str:
    """A stable construct id for the access entry of ``arn`` (its role name, letters and digits,
    and a hash of the whole ARN): adding or removing another role never renames it."""
    name = "".join(ch for ch in arn.rsplit("/", 1)[-1].title() if ch.isalnum())[:48]
    return f"AdminAccess{name}{hashlib.sha256(arn.encode()).hexdigest()[:8].upper()}"


NO_ADMIN_WARNING = "mlcc:no-cluster-admin"
"""The id of the synth warning for a cluster without admin roles."""


def no_admin_warning(arns: tuple[str, ...], *, key: str = "admin_role_arns") -> str | None:
    """The warning for a cluster with no admin role (``None``: ``arns`` names one): the app
    grants no person's role cluster-admin through an access entry."""
    if arns:
        return None
    return (
        f"{key} is empty: the cluster gets no admin access entry, so no person's role is "
        f"granted kubectl access to it. Fix: list your administrators' IAM roles, e.g. -c {key}="
        f"arn:aws:iam::<account>:role/<name>[,...] or {key} in cdk.json"
    )
