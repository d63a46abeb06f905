"""Compute checks: EC2 On-Demand vCPU quotas, instance offerings in the app's zones, P-family
capacity, and SageMaker HyperPod's per-type cluster quotas.

**vCPU demand.** Each EC2 On-Demand quota (``data/preflight_quotas.json``) caps the vCPUs of its
families' running instances. A deployment's demand on a quota is its peak GPU nodes
(:func:`~mlcc_constructs.core.preflight.needs.peak_nodes`) x the most vCPUs among its instance
types in that quota's families (the catalog's ``vcpus``): the node pool may launch any of its
fallbacks, so the worst case is counted. Demands of all deployments add up per quota. The quota
also covers instances the account already runs: with their usage read (the quota's CloudWatch
usage metric), a quota that covers the app only when they stop is a warning.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.preflight.facts import AccountFacts, Quota, Unavailable
from mlcc_constructs.core.preflight.findings import Finding, could_not_check
from mlcc_constructs.core.preflight.needs import AppNeeds, InstanceNeed

QUOTAS_FILE = "preflight_quotas.json"
_FAMILY_LETTERS = re.compile(r"^(?P<letters>[a-z]+)")
P_FAMILY = "p"
"""The family letters whose on-demand capacity is scarce without a reservation."""


@dataclass(frozen=True, kw_only=True)
class QuotaRule:
    """One EC2 On-Demand vCPU quota: its ``code``, ``name`` and the family letters it covers."""

    code: str
    name: str
    families: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class QuotaDemand:
    """The app's peak vCPUs on one quota, and who asks (``where``: each deployment)."""

    rule: QuotaRule
    vcpus: int
    where: tuple[str, ...]


@cache
def quota_rules() -> tuple[QuotaRule, ...]:
    """The EC2 On-Demand quotas of ``data/preflight_quotas.json``."""
    document = json.loads(data_path(QUOTAS_FILE).read_text(encoding="utf-8"))
    return tuple(
        QuotaRule(code=row["code"], name=row["name"], families=tuple(row["families"]))
        for row in document["ec2_on_demand"]
    )


@cache
def hyperpod_quota_name(instance_type: str) -> str:
    """The SageMaker quota a HyperPod cluster's ``instance_type`` instances count against
    (``ml.p5.48xlarge for cluster usage``)."""
    document = json.loads(data_path(QUOTAS_FILE).read_text(encoding="utf-8"))
    pattern: str = document["sagemaker_hyperpod"]["name_pattern"]
    return pattern.format(instance_type=instance_type)


def family_letters(instance: InstanceType) -> str:
    """The letters of an instance type's family (``g`` for ``g6e``, ``p`` for ``p5en``)."""
    match = _FAMILY_LETTERS.match(instance.family)
    return match["letters"] if match else instance.family


def rule_of(instance: InstanceType) -> QuotaRule | None:
    """The quota an instance type counts against (``None``: no quota on record for it)."""
    letters = family_letters(instance)
    return next((r for r in quota_rules() if letters in r.families), None)


def quota_demands(instances: Sequence[InstanceNeed]) -> list[QuotaDemand]:
    """The app's peak vCPUs per quota (module doc), in the data file's order."""
    found: dict[str, tuple[int, list[str]]] = {}
    for need in instances:
        most: dict[str, int] = {}
        for instance in need.types:
            rule = rule_of(instance)
            if rule is not None:
                most[rule.code] = max(most.get(rule.code, 0), instance.vcpus)
        for code, vcpus in most.items():
            total, where = found.get(code, (0, []))
            found[code] = (total + need.peak_nodes * vcpus, [*where, need.where])
    return [
        QuotaDemand(rule=rule, vcpus=found[rule.code][0], where=tuple(found[rule.code][1]))
        for rule in quota_rules()
        if rule.code in found
    ]


def increase_command(code: str, value: int, region: str, *, service: str = "ec2") -> str:
    """The exact Service Quotas request for ``value``."""
    return (
        f"aws service-quotas request-service-quota-increase --service-code {service} "
        f"--quota-code {code} --desired-value {value} --region {region}"
    )


def ec2_quota_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """One finding per EC2 On-Demand quota the app's GPU nodes count against."""
    findings = []
    for demand in quota_demands(needs.instances):
        rule = demand.rule
        subject = f"{rule.name} ({rule.code}) in {needs.region}"
        needed = f"{demand.vcpus} vCPUs at peak (max replicas x nodes, plus a surge copy)"
        where = ", ".join(demand.where)
        looked = facts.ec2_quotas.get(rule.code)
        base = {"check": "ec2-quota", "subject": subject, "needed": needed, "where": where}
        if isinstance(looked, Unavailable) or looked is None:
            reason = looked.reason if isinstance(looked, Unavailable) else "no such quota"
            findings.append(
                could_not_check(
                    base,
                    found=f"the quota could not be read: {reason}",
                    fix="allow servicequotas:GetServiceQuota, or check by hand: aws "
                    f"service-quotas get-service-quota --service-code ec2 --quota-code "
                    f"{rule.code} --region {needs.region}",
                )
            )
            continue
        findings.append(_quota_finding(rule, looked, demand.vcpus, needs.region, base))
    return findings


def _quota_finding(
    rule: QuotaRule, quota: Quota, vcpus: int, region: str, base: dict[str, str]
) -> Finding:
    if quota.name != rule.name:
        return could_not_check(
            base,
            found=f"quota {rule.code} is {quota.name!r}, not {rule.name!r}",
            fix=f"correct {rule.code} in mlcc_constructs/data/{QUOTAS_FILE}",
        )
    value = int(quota.value)
    used = math.ceil(quota.in_use) if quota.in_use is not None else None
    if value < vcpus:
        return Finding(
            **base,
            status="blocker",
            found=f"{value} vCPUs" + (f", {used} in use" if used else ""),
            fix=increase_command(rule.code, vcpus + (used or 0), region),
        )
    if used is None:
        why = f" ({quota.in_use_note})" if quota.in_use_note else ""
        return Finding(
            **base,
            status="ok",
            found=f"{value} vCPUs; what running instances use of it was not read{why}",
        )
    if value - used < vcpus:
        return Finding(
            **base,
            status="warning",
            found=f"{value} vCPUs, {used} in use by running instances: {value - used} free",
            fix=increase_command(rule.code, vcpus + used, region) + ", or stop instances",
        )
    return Finding(**base, status="ok", found=f"{value} vCPUs, {used} in use")


def offering_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each instance type offered in at least one of the app's zones (the node pool launches in
    any of them): a blocker for a deployment's preferred type, a warning for a fallback."""
    findings = []
    zones = set(needs.zones)
    seen: set[tuple[str, str]] = set()
    for need in needs.instances:
        for index, instance in enumerate(need.types):
            name = instance.node_name
            if (name, need.where) in seen:
                continue
            seen.add((name, need.where))
            looked = facts.offerings.get(name)
            subject = f"{name} in {needs.region}"
            wanted = sorted(zones) or [f"any zone of {needs.region}"]
            needed = f"offered in one of {', '.join(wanted)}"
            base = {"check": "instance-offering", "subject": subject, "needed": needed}
            if isinstance(looked, Unavailable) or looked is None:
                reason = looked.reason if isinstance(looked, Unavailable) else "not read"
                findings.append(
                    could_not_check(
                        base,
                        found=f"offerings could not be read: {reason}",
                        fix="allow ec2:DescribeInstanceTypeOfferings",
                        where=need.where,
                    )
                )
                continue
            offered = sorted(set(looked) & zones) if zones else sorted(looked)
            if offered:
                findings.append(
                    Finding(**base, status="ok", found=f"offered in {', '.join(offered)}")
                )
                continue
            elsewhere = ", ".join(sorted(looked)) or "no zone of the region"
            findings.append(
                Finding(
                    **base,
                    status="blocker" if index == 0 else "warning",
                    found=f"offered in {elsewhere}",
                    fix=f"pick zones that offer {name} (-c availability_zones=...), another "
                    "region, or another instance type",
                    where=need.where,
                )
            )
    return findings


def capacity_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """P-family types need capacity: an active capacity reservation or Capacity Block of the type
    with room for the peak nodes, else a warning (on-demand P capacity is often unavailable)."""
    findings = []
    for need in needs.instances:
        instance = need.preferred
        if family_letters(instance) != P_FAMILY:
            continue
        name = instance.node_name
        base = {
            "check": "capacity",
            "subject": f"{name} capacity in {needs.region}",
            "needed": f"{need.peak_nodes} instances at peak",
            "where": need.where,
        }
        looked = facts.reservations
        if isinstance(looked, Unavailable) or looked is None:
            reason = looked.reason if isinstance(looked, Unavailable) else "not read"
            findings.append(
                could_not_check(
                    base,
                    found=f"capacity reservations could not be read: {reason}",
                    fix="allow ec2:DescribeCapacityReservations",
                )
            )
            continue
        zones = set(needs.zones)
        held = [
            r
            for r in looked
            if r.instance_type == name
            and r.state in ("active", "scheduled", "payment-pending")
            and (not zones or r.zone in zones)
        ]
        room = sum(r.total for r in held)
        if room >= need.peak_nodes:
            kinds = ", ".join(sorted({f"{r.kind} in {r.zone}" for r in held}))
            findings.append(
                Finding(**base, status="ok", found=f"{room} reserved instances ({kinds})")
            )
            continue
        findings.append(
            Finding(
                **base,
                status="warning",
                found=f"{room} reserved instances (capacity reservations and Capacity Blocks)",
                fix=f"reserve {name} capacity (an On-Demand Capacity Reservation or an EC2 "
                "Capacity Block for ML) in the app's zones: on-demand "
                f"{family_letters(instance).upper()} instances are often unavailable, and the "
                "pods would stay Pending",
            )
        )
    return findings


def hyperpod_quota_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each instance type of a created HyperPod cluster within its SageMaker cluster quota."""
    findings = []
    for group in needs.hyperpod_groups:
        quota_name = hyperpod_quota_name(group.instance_type)
        base = {
            "check": "hyperpod-quota",
            "subject": f"{quota_name} in {needs.region}",
            "needed": f"{group.count} instances (the instance groups' counts)",
            "where": group.where,
        }
        looked = facts.hyperpod_quotas.get(group.instance_type)
        if isinstance(looked, Unavailable) or looked is None:
            reason = looked.reason if isinstance(looked, Unavailable) else "no quota of that name"
            findings.append(
                could_not_check(
                    base,
                    found=f"the quota could not be read: {reason}",
                    fix="allow servicequotas:ListServiceQuotas, or check the SageMaker quota "
                    f"{quota_name!r} in the Service Quotas console",
                )
            )
            continue
        value = math.floor(looked.value)
        if value >= group.count:
            findings.append(Finding(**base, status="ok", found=f"{value} instances"))
            continue
        findings.append(
            Finding(
                **base,
                status="blocker",
                found=f"{value} instances",
                fix="request the SageMaker quota increase in the Service Quotas console (service "
                f"Amazon SageMaker, quota {quota_name!r}, value {group.count}), or with "
                + increase_command(
                    looked.code
                    or "<the quota's code: aws service-quotas list-service-quotas "
                    "--service-code sagemaker>",
                    group.count,
                    needs.region,
                    service="sagemaker",
                )
                + "; CreateCluster fails after 25-35 minutes otherwise",
            )
        )
    return findings
