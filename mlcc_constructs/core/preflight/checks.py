"""The account checks that are not compute: CDK bootstrap, HyperPod's Kubernetes version, EKS
add-on builds, secrets, certificates, hosted zones, staged models and IAM roles. Each is a pure
function of (:class:`~mlcc_constructs.core.preflight.needs.AppNeeds`,
:class:`~mlcc_constructs.core.preflight.facts.AccountFacts`) -> findings; :func:`all_findings`
runs every check, the compute ones (:mod:`.quotas`) included."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from mlcc_constructs.core.platform.image_cache import SECRET_PREFIX
from mlcc_constructs.core.platform.versions import VERSIONS_FILE, hyperpod_version_warning
from mlcc_constructs.core.preflight.facts import AccountFacts, Certificate, Unavailable
from mlcc_constructs.core.preflight.findings import Finding, Status, could_not_check
from mlcc_constructs.core.preflight.needs import (
    API_KEY_PURPOSE,
    AppNeeds,
    CertificateNeed,
    ModelNeed,
    SecretNeed,
)
from mlcc_constructs.core.preflight.quotas import (
    capacity_findings,
    ec2_quota_findings,
    hyperpod_quota_findings,
    offering_findings,
)

MODEL_BYTES_TOLERANCE = 0.05
"""How far the staged weights' total size may be from ``model_bytes`` (5%: the files hold a
small safetensors header beside the tensors ``metadata.total_size`` counts)."""
CERTIFICATE_WARNING_DAYS = 30
"""A certificate expiring within this many days is a warning (ACM renews only the certificates
it can validate)."""
CONFIG_FILE = "config.json"
WEIGHTS_INDEX = "model.safetensors.index.json"
SINGLE_WEIGHTS = "model.safetensors"
PULL_THROUGH_PURPOSE = "ecr_pull_through_secrets"


def _unavailable(looked: object, what: str) -> str | None:
    """The could-not-check text of a fact that could not be read (``None``: it was read)."""
    if isinstance(looked, Unavailable):
        return f"{what} could not be read: {looked.reason}"
    return None


def bootstrap_findings(needs: AppNeeds, facts: AccountFacts, *, qualifier: str) -> list[Finding]:
    """The environment is CDK-bootstrapped at a version the synthesised app needs."""
    if not needs.bootstrap:
        return []
    parameter = f"/cdk-bootstrap/{qualifier}/version"
    target = f"aws://{needs.account or '<account>'}/{needs.region}"
    fix = f"npx cdk bootstrap {target}"
    base = {"check": "cdk-bootstrap", "subject": f"{parameter} in {target}"}
    required = facts.bootstrap_required
    needed = f"version {required} or later" if required else "the version cdk.out names"
    looked = facts.bootstrap_version
    reason = _unavailable(looked, "the parameter")
    if reason:
        return [
            could_not_check(
                base,
                found=reason,
                needed=needed,
                fix="allow ssm:GetParameter on the bootstrap parameter",
            )
        ]
    if looked is None:
        return [Finding(**base, status="blocker", found="not bootstrapped", needed=needed, fix=fix)]
    assert isinstance(looked, int)
    if required is None:
        return [
            could_not_check(
                base,
                found=f"version {looked}; the app's required version is unknown (no cdk.out)",
                needed=needed,
                fix="run make synth (or npx cdk synth) first, then preflight",
            )
        ]
    if looked < required:
        return [
            Finding(**base, status="blocker", found=f"version {looked}", needed=needed, fix=fix)
        ]
    return [Finding(**base, status="ok", found=f"version {looked}", needed=needed)]


def cluster_kubernetes(needs: AppNeeds, facts: AccountFacts) -> str | None:
    """The cluster's Kubernetes version: a named cluster's as read (``None`` when it could not
    be), else the one the app pins (or spec mode's ``--kubernetes-version``)."""
    if needs.cluster is not None:
        return facts.cluster_version if isinstance(facts.cluster_version, str) else None
    return needs.kubernetes


def cluster_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """A named cluster (spec mode's ``--cluster``) exists and its version can be read."""
    if needs.cluster is None:
        return []
    base = {
        "check": "eks-cluster",
        "subject": f"EKS cluster {needs.cluster} in {needs.region}",
        "needed": "an existing cluster (the add-on builds are checked for its version)",
    }
    looked = facts.cluster_version
    reason = _unavailable(looked, "the cluster")
    if reason:
        return [could_not_check(base, found=reason, fix="allow eks:DescribeCluster")]
    if looked is None:
        return [
            Finding(
                **base,
                status="blocker",
                found="no such cluster",
                fix=f"check --cluster and --region (aws eks list-clusters --region {needs.region})",
            )
        ]
    return [Finding(**base, status="ok", found=f"Kubernetes {looked}")]


def hyperpod_version_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """The cluster's Kubernetes version among the versions HyperPod documents (a warning: the
    documentation lags, and the pin is the only version in EKS standard support; see
    ``hyperpod_kubernetes_documented`` in versions.json)."""
    kubernetes = cluster_kubernetes(needs, facts)
    if not needs.hyperpod or kubernetes is None:
        return []
    documented = ", ".join(needs.hyperpod_documented)
    base = {
        "check": "hyperpod-version",
        "subject": f"Kubernetes {kubernetes} for SageMaker HyperPod",
        "needed": f"a version HyperPod documents ({documented})",
    }
    warning = hyperpod_version_warning(kubernetes, needs.hyperpod_documented)
    if warning is None:
        return [Finding(**base, status="ok", found=f"Kubernetes {kubernetes}")]
    return [
        Finding(
            **base,
            status="warning",
            found=warning,
            fix="if the page names the version now, add it to mlcc_constructs/data/"
            f"{VERSIONS_FILE} hyperpod_kubernetes_documented with its source; if it does not, "
            "creating the HyperPod cluster may fail after 25-35 minutes",
        )
    ]


def addon_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each pinned EKS add-on build exists for the cluster's Kubernetes version."""
    kubernetes = cluster_kubernetes(needs, facts)
    if kubernetes is None:  # a named cluster that could not be read says so itself
        return []
    findings = []
    for name, version in needs.addons:
        looked = facts.addon_versions.get(name)
        base = {
            "check": "addon-build",
            "subject": f"{name} {version} on Kubernetes {kubernetes}",
            "needed": f"build {version} (pinned in mlcc_constructs/data/{VERSIONS_FILE})",
        }
        reason = _unavailable(looked, "the add-on's builds")
        if reason or looked is None:
            findings.append(
                could_not_check(
                    base,
                    found=reason or "not read",
                    fix="allow eks:DescribeAddonVersions, or check by hand: aws eks "
                    f"describe-addon-versions --addon-name {name} --kubernetes-version "
                    f"{kubernetes} --region {needs.region}",
                )
            )
            continue
        assert isinstance(looked, tuple)
        if version in looked:
            findings.append(Finding(**base, status="ok", found=f"{version} is available"))
            continue
        shown = ", ".join(looked[:5]) or "no build of this add-on"
        findings.append(
            Finding(
                **base,
                status="blocker",
                found=f"available for Kubernetes {kubernetes}: {shown}",
                fix=f"pin one of them as eks_addons/{name} in mlcc_constructs/data/"
                f"{VERSIONS_FILE} (with its source): a missing build rolls back the cluster stack",
            )
        )
    return findings


def secret_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each named Secrets Manager secret exists (its metadata only; never its value)."""
    findings = []
    for need in needs.secrets:
        looked = facts.secrets.get(need.secret)
        base = {
            "check": "secret",
            "subject": f"{need.secret} ({need.purpose})",
            "needed": f"a Secrets Manager secret in {need.region} the deploy role may describe",
            "where": need.where,
        }
        reason = _unavailable(looked, "the secret's metadata")
        if reason:
            findings.append(
                could_not_check(
                    base,
                    found=reason,
                    fix="allow secretsmanager:DescribeSecret on the secret",
                )
            )
        elif looked is None:
            findings.append(
                Finding(**base, status="blocker", found="no such secret", fix=_create(need))
            )
        else:
            findings.append(Finding(**base, status="ok", found=f"exists ({looked})"))
    return findings


def _create(need: SecretNeed) -> str:
    """The command that creates the missing secret ``need`` names."""
    secret, region, purpose = need.secret, need.region, need.purpose
    if purpose.startswith(PULL_THROUGH_PURPOSE):
        return (
            f"aws secretsmanager create-secret --name {secret} --region {region} "
            "--secret-string file://docker-hub.json (keys username and accessToken; ECR takes "
            f"only names beginning with {SECRET_PREFIX})"
        )
    if purpose == API_KEY_PURPOSE:
        return (
            f"aws secretsmanager create-secret --name {secret} --region {region} "
            '--secret-string "$(openssl rand -hex 32)" (the key clients send)'
        )
    return (
        f"aws secretsmanager create-secret --name {secret} --region {region} --secret-string "
        "file://value.txt (the value the deployment's env reads), or correct the name"
    )


def covers(name: str, hostname: str) -> bool:
    """Whether a certificate name covers ``hostname``: equal (case-insensitive), or a wildcard
    ``*.example.com`` standing for exactly one leftmost label."""
    name, hostname = name.lower().rstrip("."), hostname.lower().rstrip(".")
    if name == hostname:
        return True
    if name.startswith("*."):
        head, _, rest = hostname.partition(".")
        return bool(head) and rest == name[2:]
    return False


def certificate_findings(needs: AppNeeds, facts: AccountFacts, *, now: datetime) -> list[Finding]:
    """Each endpoint certificate is ISSUED, in the deployment's region, unexpired (a warning
    within :data:`CERTIFICATE_WARNING_DAYS`) and covers the endpoint's hostname."""
    findings = []
    for need in needs.certificates:
        looked = facts.certificates.get(need.arn)
        base = {
            "check": "certificate",
            "subject": need.arn,
            "needed": f"ISSUED, in {need.region}, unexpired"
            + (f", covering {need.hostname}" if need.hostname else ""),
            "where": need.where,
        }
        reason = _unavailable(looked, "the certificate")
        if reason:
            findings.append(
                could_not_check(
                    base,
                    found=reason,
                    fix="allow acm:DescribeCertificate",
                )
            )
            continue
        status, found, fix = _certificate_verdict(need, looked, now)
        findings.append(Finding(**base, status=status, found=found, fix=fix))
    return findings


def _certificate_verdict(
    need: CertificateNeed, certificate: object, now: datetime
) -> tuple[Status, str, str]:
    """The status, found and fix of one certificate."""
    arn_region = need.arn.split(":")[3] if need.arn.count(":") >= 5 else ""
    request = (
        f"aws acm request-certificate --domain-name {need.hostname or '<host>'} "
        f"--validation-method DNS --region {need.region}"
    )
    if arn_region and arn_region != need.region:
        return (
            "blocker",
            f"a certificate of {arn_region}",
            f"the load balancer takes a certificate of its own region: {request}",
        )
    if not isinstance(certificate, Certificate):
        return ("blocker", "no such certificate", request)
    if certificate.status != "ISSUED":
        return (
            "blocker",
            f"status {certificate.status}",
            "complete the certificate's DNS validation (aws acm describe-certificate "
            f"--certificate-arn {need.arn} shows the record), or {request}",
        )
    expires = certificate.not_after
    if expires is not None and expires <= now:
        return ("blocker", f"expired {expires:%Y-%m-%d}", request)
    names = (certificate.domain_name, *certificate.alternative_names)
    if need.hostname and not any(covers(n, need.hostname) for n in names):
        return (
            "blocker",
            f"covers {', '.join(names)}",
            f"{request}, or set endpoint.hostname to a name it covers",
        )
    if expires is not None and expires - now < timedelta(days=CERTIFICATE_WARNING_DAYS):
        return (
            "warning",
            f"ISSUED, expires {expires:%Y-%m-%d}",
            "renew it (ACM renews DNS-validated certificates whose record is in place)",
        )
    until = f", until {expires:%Y-%m-%d}" if expires else ""
    return ("ok", f"ISSUED{until}, covers {', '.join(names)}", "")


def hosted_zone_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each hosted zone exists and its name holds the endpoint's hostname."""
    findings = []
    for need in needs.hosted_zones:
        looked = facts.hosted_zones.get(need.zone_id)
        base = {
            "check": "hosted-zone",
            "subject": need.zone_id,
            "needed": f"a Route 53 hosted zone holding {need.hostname}",
            "where": need.where,
        }
        reason = _unavailable(looked, "the hosted zone")
        if reason:
            findings.append(
                could_not_check(
                    base,
                    found=reason,
                    fix="allow route53:GetHostedZone",
                )
            )
        elif looked is None:
            findings.append(
                Finding(
                    **base,
                    status="blocker",
                    found="no such hosted zone",
                    fix="aws route53 list-hosted-zones-by-name shows the zone ids; correct "
                    "endpoint.hosted_zone_id",
                )
            )
        else:
            zone = str(looked).rstrip(".").lower()
            host = need.hostname.rstrip(".").lower()
            if host == zone or host.endswith("." + zone):
                findings.append(Finding(**base, status="ok", found=f"zone {zone}"))
            else:
                findings.append(
                    Finding(
                        **base,
                        status="blocker",
                        found=f"zone {zone}",
                        fix=f"name the zone that holds {need.hostname}, or a hostname in {zone}",
                    )
                )
    return findings


def model_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each ``s3://`` model holds ``config.json`` and its weights (the safetensors index, or one
    ``model.safetensors``), their total size within :data:`MODEL_BYTES_TOLERANCE` of
    ``model_bytes`` when the spec gives it."""
    findings = []
    for need in needs.models:
        looked = facts.models.get(need.uri)
        base = {
            "check": "model",
            "subject": need.uri,
            "needed": f"{CONFIG_FILE} and the weights ({WEIGHTS_INDEX} or {SINGLE_WEIGHTS})"
            + (f", about {need.model_bytes} bytes" if need.model_bytes else ""),
            "where": need.where,
        }
        reason = _unavailable(looked, "the prefix")
        if reason:
            findings.append(
                could_not_check(
                    base,
                    found=reason,
                    fix=f"allow s3:ListBucket on {need.bucket}",
                )
            )
            continue
        status, found, fix = _model_verdict(need, looked)
        findings.append(Finding(**base, status=status, found=found, fix=fix))
    return findings


def _model_verdict(need: ModelNeed, objects: object) -> tuple[Status, str, str]:
    stage = f"stage the model: aws s3 sync <local model folder> {need.uri}"
    if objects is None:
        return ("blocker", f"bucket {need.bucket} does not exist", stage)
    assert isinstance(objects, tuple)
    keys = {o.key for o in objects}
    missing = [CONFIG_FILE] if CONFIG_FILE not in keys else []
    if WEIGHTS_INDEX not in keys and SINGLE_WEIGHTS not in keys:
        missing.append(WEIGHTS_INDEX)
    if missing:
        found = f"{len(objects)} objects, no {' and no '.join(missing)}"
        return ("blocker", found if objects else "nothing staged", stage)
    weights = sum(o.size for o in objects if o.key.endswith(".safetensors"))
    expected = need.model_bytes
    if expected is not None and abs(weights - expected) > MODEL_BYTES_TOLERANCE * expected:
        return (
            "blocker",
            f"{weights} bytes of .safetensors files",
            "set model_bytes to the staged index's metadata.total_size, or stage the model "
            f"of that size ({stage})",
        )
    return ("ok", f"staged: {weights} bytes of weights", "")


def role_findings(needs: AppNeeds, facts: AccountFacts) -> list[Finding]:
    """Each admin role ARN names an existing IAM role."""
    findings = []
    for need in needs.roles:
        looked = facts.roles.get(need.arn)
        base = {
            "check": "iam-role",
            "subject": need.arn,
            "needed": "an existing IAM role (granted cluster-admin through an EKS access entry)",
            "where": need.where,
        }
        reason = _unavailable(looked, "the role")
        if reason:
            findings.append(could_not_check(base, found=reason, fix="allow iam:GetRole"))
        elif looked is None:
            findings.append(
                Finding(
                    **base,
                    status="blocker",
                    found="no such role",
                    fix="create the role, or correct admin_role_arns (the access entry fails "
                    "for a principal that does not exist)",
                )
            )
        else:
            findings.append(Finding(**base, status="ok", found="exists"))
    return findings


def all_findings(
    needs: AppNeeds, facts: AccountFacts, *, now: datetime, qualifier: str
) -> list[Finding]:
    """Every check's findings, in the order of :data:`~.findings.CHECKS`."""
    checks: list[Callable[[], list[Finding]]] = [
        lambda: bootstrap_findings(needs, facts, qualifier=qualifier),
        lambda: ec2_quota_findings(needs, facts),
        lambda: offering_findings(needs, facts),
        lambda: capacity_findings(needs, facts),
        lambda: hyperpod_quota_findings(needs, facts),
        lambda: cluster_findings(needs, facts),
        lambda: hyperpod_version_findings(needs, facts),
        lambda: addon_findings(needs, facts),
        lambda: secret_findings(needs, facts),
        lambda: certificate_findings(needs, facts, now=now),
        lambda: hosted_zone_findings(needs, facts),
        lambda: model_findings(needs, facts),
        lambda: role_findings(needs, facts),
    ]
    return [finding for check in checks for finding in check()]
