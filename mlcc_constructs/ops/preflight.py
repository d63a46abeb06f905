"""The AWS facts ``mlcc preflight`` checks, gathered with read-only calls (the rules are in
:mod:`mlcc_constructs.core.preflight`).

Every call is a Describe/Get/List: SSM GetParameter (the CDK bootstrap version), Service Quotas
GetServiceQuota and ListServiceQuotas, CloudWatch GetMetricStatistics (a quota's usage), EC2
DescribeInstanceTypeOfferings and DescribeCapacityReservations, EKS DescribeCluster and
DescribeAddonVersions, Secrets Manager DescribeSecret (a secret's metadata: no code path here
reads a secret's value), ACM DescribeCertificate, Route 53 GetHostedZone, S3 ListObjectsV2 and
IAM GetRole. A "does not exist" answer is ``None``; access denied, an API the region (or the
endpoint) does not serve, or any other error is
:class:`~mlcc_constructs.core.preflight.facts.Unavailable` with its reason, so a check that
could not run is never a pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from mlcc_constructs.core.preflight.facts import (
    AccountFacts,
    Certificate,
    Looked,
    Quota,
    Reservation,
    StagedObject,
    Unavailable,
)
from mlcc_constructs.core.preflight.needs import AppNeeds
from mlcc_constructs.core.preflight.quotas import (
    P_FAMILY,
    family_letters,
    hyperpod_quota_name,
    quota_demands as _quota_demands,
)

Clients = Callable[[str, str], Any]
"""``(service, region)`` -> a boto3 client (the CLI's: its credentials and ``--endpoint-url``)."""

DEFAULT_QUALIFIER = "hnb659fds"
"""The CDK bootstrap qualifier when the app's context sets none (CDK's default)."""
QUALIFIER_KEY = "@aws-cdk/core:bootstrapQualifier"

# Error codes each API answers for "it does not exist" (botocore's service models).
_MISSING = {
    "ParameterNotFound",  # SSM
    "NoSuchResourceException",  # Service Quotas
    "ResourceNotFoundException",  # Secrets Manager, ACM, EKS
    "NoSuchHostedZone",  # Route 53
    "NoSuchBucket",  # S3
    "NoSuchEntity",  # IAM
}


def _looked(call: Callable[[], Any]) -> Any:
    """``call()``, ``None`` when AWS says the thing does not exist, else :class:`Unavailable`
    with the reason for any error (access denied, an unserved API, a network failure)."""
    from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]
    from botocore.parsers import ResponseParserError  # type: ignore[import-untyped]

    try:
        return call()
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in _MISSING:
            return None
        return Unavailable(reason=_reason(code or type(error).__name__, error))
    except (BotoCoreError, ResponseParserError) as error:  # e.g. an endpoint without the API
        return Unavailable(reason=_reason(type(error).__name__, error))


REASON_CHARACTERS = 200
"""The most of an error's message a finding repeats (an endpoint may answer a page of HTML)."""


def _reason(name: str, error: BaseException) -> str:
    """``Name: message`` on one line, at most :data:`REASON_CHARACTERS` of the message."""
    message = " ".join(str(error).split())
    if len(message) > REASON_CHARACTERS:
        message = message[:REASON_CHARACTERS] + "..."
    return f"{name}: {message}"


def arn_region(arn: str, default: str) -> str:
    """The region an ARN names (``default`` for a name or a region-less ARN)."""
    parts = arn.split(":")
    return parts[3] if arn.startswith("arn:") and len(parts) > 5 and parts[3] else default


def required_bootstrap(cdk_out: Path) -> tuple[int | None, str | None]:
    """The bootstrap version the synthesised app needs (the highest of its stacks'
    ``requiresBootstrapStackVersion`` in ``cdk.out/manifest.json``) and the SSM parameter its
    stacks name (``bootstrapStackVersionSsmParameter``); ``(None, None)`` without cdk.out."""
    manifest = cdk_out / "manifest.json"
    if not manifest.is_file():
        return None, None
    artifacts = json.loads(manifest.read_text(encoding="utf-8")).get("artifacts", {})
    versions: list[int] = []
    parameters: set[str] = set()
    for artifact in artifacts.values():
        properties = artifact.get("properties", {})
        if "requiresBootstrapStackVersion" in properties:
            versions.append(int(properties["requiresBootstrapStackVersion"]))
        if "bootstrapStackVersionSsmParameter" in properties:
            parameters.add(str(properties["bootstrapStackVersionSsmParameter"]))
    return (max(versions) if versions else None), (min(parameters) if parameters else None)


def gather(
    needs: AppNeeds,
    clients: Clients,
    *,
    bootstrap_required: int | None = None,
    bootstrap_parameter: str | None = None,
) -> AccountFacts:
    """Every fact the checks of ``needs`` read, each looked up once."""
    region = needs.region
    cluster_version: Looked[str] = None
    kubernetes = needs.kubernetes
    if needs.cluster is not None:
        cluster_version = _looked(partial(_cluster_version, clients, region, needs.cluster))
        kubernetes = cluster_version if isinstance(cluster_version, str) else None
    return AccountFacts(
        bootstrap_version=_bootstrap(clients, region, bootstrap_parameter)
        if needs.bootstrap and bootstrap_parameter
        else None,
        bootstrap_required=bootstrap_required,
        ec2_quotas={
            d.rule.code: _looked(partial(_quota, clients, region, "ec2", d.rule.code))
            for d in _quota_demands(needs.instances)
        },
        hyperpod_quotas=_hyperpod_quotas(needs, clients),
        offerings=_offerings(needs, clients),
        reservations=_reservations(needs, clients),
        addon_versions={
            name: _looked(partial(_addon_builds, clients, region, name, kubernetes))
            for name, _ in needs.addons
            if kubernetes is not None
        },
        secrets={
            s.secret: _looked(partial(_secret, clients, s.secret, s.region)) for s in needs.secrets
        },
        certificates={
            c.arn: _looked(partial(_certificate, clients, c.arn, c.region))
            for c in needs.certificates
        },
        hosted_zones={
            z.zone_id: _looked(partial(_hosted_zone, clients, z.zone_id, region))
            for z in needs.hosted_zones
        },
        models={
            m.uri: _looked(partial(_staged, clients(S3, m.region), m.bucket, m.prefix))
            for m in needs.models
        },
        roles={r.arn: _role(clients, r.arn, needs.account, region) for r in needs.roles},
        cluster_version=cluster_version,
    )


Q, S3 = "service-quotas", "s3"


def _bootstrap(clients: Clients, region: str, parameter: str) -> Looked[int]:
    found = _looked(lambda: clients("ssm", region).get_parameter(Name=parameter))
    if found is None or isinstance(found, Unavailable):
        return found
    return int(found["Parameter"]["Value"])


USAGE_WINDOW = timedelta(hours=1)
"""How far back a quota's usage is read (its most in that window)."""


def _quota(clients: Clients, region: str, service: str, code: str) -> Quota:
    """The quota, with what is in use of it now (its ``UsageMetric``, read from CloudWatch)."""
    quota = clients(Q, region).get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]
    metric = quota.get("UsageMetric")
    in_use: Any = None
    note = "the quota names no usage metric"
    if metric:
        in_use = _looked(partial(_usage, clients, region, metric))
        note = in_use.reason if isinstance(in_use, Unavailable) else ""
    return Quota(
        name=str(quota["QuotaName"]),
        value=float(quota["Value"]),
        code=code,
        in_use=in_use if isinstance(in_use, float) else None,
        in_use_note=note,
    )


def _usage(clients: Clients, region: str, metric: dict[str, Any]) -> float:
    """The most of a usage metric over :data:`USAGE_WINDOW` (0 when it recorded none)."""
    statistic = str(metric.get("MetricStatisticRecommendation") or "Maximum")
    end = datetime.now(UTC)
    answer = clients("cloudwatch", region).get_metric_statistics(
        Namespace=metric["MetricNamespace"],
        MetricName=metric["MetricName"],
        Dimensions=[{"Name": k, "Value": v} for k, v in metric.get("MetricDimensions", {}).items()],
        StartTime=end - USAGE_WINDOW,
        EndTime=end,
        Period=300,
        Statistics=[statistic],
    )
    return float(max((p[statistic] for p in answer.get("Datapoints", [])), default=0.0))


def _hyperpod_quotas(needs: AppNeeds, clients: Clients) -> dict[str, Looked[Quota]]:
    """Each created HyperPod group's type -> its SageMaker cluster quota (found by name)."""
    if not needs.hyperpod_groups:
        return {}

    def listed() -> dict[str, Quota]:
        client = clients(Q, needs.region)
        found: dict[str, Quota] = {}
        for page in client.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker"):
            for quota in page.get("Quotas", []):
                name = str(quota["QuotaName"])
                found[name] = Quota(name=name, value=float(quota["Value"]), code=quota["QuotaCode"])
        return found

    quotas = _looked(listed)
    return {
        g.instance_type: quotas
        if isinstance(quotas, Unavailable) or quotas is None
        else quotas.get(hyperpod_quota_name(g.instance_type))
        for g in needs.hyperpod_groups
    }


def _offerings(needs: AppNeeds, clients: Clients) -> dict[str, Looked[tuple[str, ...]]]:
    """Each instance type (EC2 name) -> the region's zones offering it."""
    names = sorted({t.node_name for need in needs.instances for t in need.types})
    if not names:
        return {}

    def listed() -> dict[str, tuple[str, ...]]:
        client = clients("ec2", needs.region)
        zones: dict[str, set[str]] = {name: set() for name in names}
        pages = client.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": names}],
        )
        for page in pages:
            for offering in page.get("InstanceTypeOfferings", []):
                zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        return {name: tuple(sorted(found)) for name, found in zones.items()}

    offered = _looked(listed)
    if isinstance(offered, Unavailable) or offered is None:
        return dict.fromkeys(names, offered)
    return dict(offered)


def _reservations(needs: AppNeeds, clients: Clients) -> Looked[tuple[Reservation, ...]]:
    """The region's capacity reservations and Capacity Blocks of the app's P types."""
    names = sorted(
        {n.preferred.node_name for n in needs.instances if family_letters(n.preferred) == P_FAMILY}
    )
    if not names:
        return ()

    def listed() -> tuple[Reservation, ...]:
        client = clients("ec2", needs.region)
        pages = client.get_paginator("describe_capacity_reservations").paginate(
            Filters=[{"Name": "instance-type", "Values": names}]
        )
        return tuple(
            Reservation(
                instance_type=r["InstanceType"],
                zone=r.get("AvailabilityZone", ""),
                state=r.get("State", ""),
                available=int(r.get("AvailableInstanceCount", 0)),
                total=int(r.get("TotalInstanceCount", 0)),
                kind=r.get("ReservationType", "default"),
            )
            for page in pages
            for r in page.get("CapacityReservations", [])
        )

    return _looked(listed)  # type: ignore[no-any-return]


def _addon_builds(
    clients: Clients, region: str, name: str, kubernetes: str | None
) -> tuple[str, ...]:
    client = clients("eks", region)
    builds: list[str] = []
    pages = client.get_paginator("describe_addon_versions").paginate(
        addonName=name, kubernetesVersion=kubernetes
    )
    for page in pages:
        for addon in page.get("addons", []):
            builds += [v["addonVersion"] for v in addon.get("addonVersions", [])]
    return tuple(builds)


def _cluster_version(clients: Clients, region: str, name: str) -> str:
    return str(clients("eks", region).describe_cluster(name=name)["cluster"]["version"])


def _secret(clients: Clients, secret: str, region: str) -> str:
    """The secret's ARN from its metadata (DescribeSecret: never the value)."""
    client = clients("secretsmanager", arn_region(secret, region))
    return str(client.describe_secret(SecretId=secret)["ARN"])


def _certificate(clients: Clients, arn: str, region: str) -> Certificate:
    client = clients("acm", arn_region(arn, region))
    found = client.describe_certificate(CertificateArn=arn)["Certificate"]
    return Certificate(
        status=str(found.get("Status", "")),
        not_after=found.get("NotAfter"),
        domain_name=str(found.get("DomainName", "")),
        alternative_names=tuple(found.get("SubjectAlternativeNames", [])),
    )


def _hosted_zone(clients: Clients, zone_id: str, region: str) -> str:
    client = clients("route53", region)
    return str(client.get_hosted_zone(Id=zone_id)["HostedZone"]["Name"])


def _staged(client: Any, bucket: str, prefix: str) -> tuple[StagedObject, ...]:
    """The objects directly under ``prefix`` (not in its sub-folders, e.g. adapters)."""
    found: list[StagedObject] = []
    pages = client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix, Delimiter="/"
    )
    for page in pages:
        found += [
            StagedObject(key=o["Key"][len(prefix) :], size=int(o["Size"]))
            for o in page.get("Contents", [])
        ]
    return tuple(found)


def _role(clients: Clients, arn: str, account: str | None, region: str) -> Looked[str]:
    """The role's ARN as IAM returns it; a role of another account cannot be read here."""
    parts = arn.split(":")
    if len(parts) < 6 or (account is not None and parts[4] != account):
        owner = parts[4] if len(parts) > 4 else "?"
        return Unavailable(reason=f"the role is in account {owner}, not {account}")
    name = parts[5].rsplit("/", 1)[-1]
    client = clients("iam", region)
    return _looked(lambda: str(client.get_role(RoleName=name)["Role"]["Arn"]))  # type: ignore[no-any-return]


def boto3_clients(*, endpoint_url: str | None = None, profile: str | None = None) -> Clients:
    """A client factory over one boto3 session, each client made once per service and region
    (``endpoint_url``: every service at one endpoint, e.g. a moto server in tests)."""
    import boto3  # type: ignore[import-untyped]

    session = boto3.Session(profile_name=profile)
    made: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in made:
            made[(service, region)] = session.client(
                service, region_name=region, endpoint_url=endpoint_url
            )
        return made[(service, region)]

    return client


def services_called() -> Iterable[str]:
    """The AWS services preflight reads (what its credentials need Describe/Get/List on)."""
    return ("ssm", Q, "cloudwatch", "ec2", "eks", "secretsmanager", "acm", "route53", S3, "iam")
