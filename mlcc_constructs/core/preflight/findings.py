"""What a preflight check reports: one :class:`Finding` per thing checked, and the report of
them all (the exit code, the JSON document, the table).

A finding is ``ok`` (checked, and it holds), ``warning`` (a deploy may still work; the risk is
named), ``blocker`` (the deploy would fail; exit 1) or ``could-not-check`` (the check could not
run: access denied, the API not available in the region, no synthesised app). A check that did
not run is never reported as passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["ok", "warning", "blocker", "could-not-check"]
STATUSES: tuple[Status, ...] = ("blocker", "could-not-check", "warning", "ok")
"""Every status, worst first (the order the report lists findings in)."""


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One check's result.

    ``check``: the check's name (``ec2-quota``, ``secret``, ...: :data:`CHECKS`).
    ``subject``: what was checked (``secret team/hf-token``).
    ``status``: ``ok``, ``warning``, ``blocker`` or ``could-not-check``.
    ``found``: what the account holds (never a secret's value).
    ``needed``: what the app needs.
    ``fix``: how to make it hold (empty when ``ok``).
    ``where``: who needs it (a deployment's place in cdk.json or a spec file, a context key).
    """

    check: str
    subject: str
    status: Status
    found: str
    needed: str
    fix: str = ""
    where: str = ""

    def as_json(self) -> dict[str, str]:
        """The finding as the JSON report holds it."""
        document = {
            "check": self.check,
            "subject": self.subject,
            "status": self.status,
            "found": self.found,
            "needed": self.needed,
        }
        if self.fix:
            document["fix"] = self.fix
        if self.where:
            document["where"] = self.where
        return document


def could_not_check(base: Mapping[str, str], **fields: str) -> Finding:
    """The finding of a check that could not run (``base``: the check, subject, needed and
    where it shares with its other outcomes; ``fields``: ``found``, ``fix`` and the rest):
    never reported as passed."""
    return Finding(**base, **fields, status="could-not-check")


CHECKS: dict[str, str] = {
    "cdk-bootstrap": "CDK bootstrap stack version (SSM GetParameter /cdk-bootstrap/<qualifier>/"
    "version) against the synthesised app's requiresBootstrapStackVersion",
    "ec2-quota": "EC2 On-Demand vCPU quota per family (Service Quotas GetServiceQuota; what "
    "running instances use of it: CloudWatch GetMetricStatistics on its usage metric) against "
    "the app's peak GPU nodes",
    "instance-offering": "instance type offered in the app's zones "
    "(EC2 DescribeInstanceTypeOfferings, location type availability-zone)",
    "capacity": "P-family capacity: a capacity reservation or Capacity Block "
    "(EC2 DescribeCapacityReservations)",
    "hyperpod-quota": "SageMaker HyperPod cluster quota per instance type "
    "(Service Quotas ListServiceQuotas, service sagemaker)",
    "hyperpod-version": "the cluster's Kubernetes version among the versions HyperPod documents "
    "(pinned: data/versions.json hyperpod_kubernetes_documented; no AWS call)",
    "eks-cluster": "spec mode's --cluster exists, and its Kubernetes version (EKS DescribeCluster)",
    "addon-build": "each pinned EKS add-on build exists for the cluster's Kubernetes version "
    "(EKS DescribeAddonVersions)",
    "secret": "each Secrets Manager secret the app names exists (Secrets Manager DescribeSecret; "
    "never its value)",
    "certificate": "each ACM certificate is ISSUED, unexpired, in the region and covers its "
    "hostname (ACM DescribeCertificate)",
    "hosted-zone": "each Route 53 hosted zone exists and holds its hostname "
    "(Route 53 GetHostedZone)",
    "model": "each s3:// model prefix holds config.json and the weights, near model_bytes "
    "(S3 ListObjectsV2)",
    "iam-role": "each admin role ARN exists (IAM GetRole)",
}
"""Every check preflight runs, with the AWS API it calls."""


def exit_code(findings: Sequence[Finding], *, strict: bool = False) -> int:
    """1 when any finding is a blocker (or, ``strict``, could not be checked), else 0."""
    failing = {"blocker", "could-not-check"} if strict else {"blocker"}
    return 1 if any(f.status in failing for f in findings) else 0


def ordered(findings: Sequence[Finding]) -> list[Finding]:
    """The findings worst first, then by check and subject (a stable report)."""
    return sorted(findings, key=lambda f: (STATUSES.index(f.status), f.check, f.subject))


def counts(findings: Sequence[Finding]) -> dict[str, int]:
    """How many findings of each status."""
    return {status: sum(1 for f in findings if f.status == status) for status in STATUSES}


def summary(findings: Sequence[Finding]) -> str:
    """``preflight: 2 blockers, 1 could not be checked, 0 warnings, 9 ok``."""
    found = counts(findings)
    blockers = found["blocker"]
    return (
        f"preflight: {blockers} blocker{'s' if blockers != 1 else ''}, "
        f"{found['could-not-check']} could not be checked, {found['warning']} "
        f"warning{'s' if found['warning'] != 1 else ''}, {found['ok']} ok"
    )


def report_document(findings: Sequence[Finding]) -> dict[str, Any]:
    """The JSON report's body: the counts and every finding, worst first."""
    return {
        "summary": counts(findings),
        "findings": [f.as_json() for f in ordered(findings)],
    }


def report_table(findings: Sequence[Finding]) -> str:
    """The text report: one block per finding, worst first, then the summary line."""
    lines: list[str] = []
    for finding in ordered(findings):
        lines.append(f"{finding.status.upper():<16}{finding.check}: {finding.subject}")
        lines.append(f"{'':16}found:  {finding.found}")
        lines.append(f"{'':16}needed: {finding.needed}")
        if finding.fix:
            lines.append(f"{'':16}fix:    {finding.fix}")
        if finding.where:
            lines.append(f"{'':16}for:    {finding.where}")
    lines.append(summary(findings))
    return "\n".join(lines) + "\n"
