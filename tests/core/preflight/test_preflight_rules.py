"""``mlcc preflight``'s pure core: the needs of an app, the quota arithmetic, and every check's
passing and failing rows over plain facts (no AWS)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mlcc_constructs.core.platform.app_settings import AppEnvironment
from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.platform.hyperpod import hyperpod_settings
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.preflight.checks import (
    addon_findings,
    all_findings,
    bootstrap_findings,
    certificate_findings,
    covers,
    hosted_zone_findings,
    hyperpod_version_findings,
    model_findings,
    role_findings,
    secret_findings,
)
from mlcc_constructs.core.preflight.facts import (
    AccountFacts,
    Certificate,
    Quota,
    Reservation,
    StagedObject,
    Unavailable,
)
from mlcc_constructs.core.preflight.findings import (
    CHECKS,
    Finding,
    exit_code,
    report_document,
    report_table,
    summary,
)
from mlcc_constructs.core.preflight.needs import (
    API_KEY_PURPOSE,
    AppNeeds,
    CertificateNeed,
    HostedZoneNeed,
    HyperPodGroupNeed,
    InstanceNeed,
    ModelNeed,
    RoleNeed,
    SecretNeed,
    app_needs,
    peak_nodes,
)
from mlcc_constructs.core.preflight.quotas import (
    capacity_findings,
    ec2_quota_findings,
    hyperpod_quota_findings,
    offering_findings,
    quota_demands,
    quota_rules,
)
from mlcc_constructs.core.serving.spec.app_deployments import prepare_labelled
from tests._flat import sectioned_doc

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b")
NOW = datetime(2026, 12, 6, tzinfo=UTC)
G, P = "L-DB2E81BA", "L-417A185B"
DEFAULTS = {"account": "123456789012", "region": REGION, "profile": "dev"}
QUERY_URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123456789abcdef"


def _prepared(*entries: dict[str, Any]) -> list[tuple[str, Any]]:
    """Deployments from short flat tables (moved into their sections: tests/_flat.py)."""
    base = {"engine": "vllm", "model": "Qwen/Qwen3-8B", "namespace": "inference"}
    done = prepare_labelled(
        [(f"spec#{i}", sectioned_doc({**base, **e})) for i, e in enumerate(entries)],
        defaults=DEFAULTS,
        prometheus_query_url=QUERY_URL,
    )
    return [(d.where, d.prepared) for d in done]


def _need(*types: str, peak: int = 1, where: str = "spec#0") -> InstanceNeed:
    return InstanceNeed(types=tuple(lookup(t) for t in types), peak_nodes=peak, where=where)


def _statuses(findings: list[Finding]) -> list[str]:
    return [f.status for f in findings]


# -- needs: peak nodes per deployment ---------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "peak"),
    [
        ({"name": "a", "instance_type": "ml.g5.xlarge"}, 2),  # 1 replica + a surge pod
        (
            {
                "name": "a",
                "instance_type": "ml.g5.xlarge",
                "rollout": "replace",
                "accept_downtime": True,
            },
            1,
        ),
        ({"name": "a", "instance_type": "ml.g5.xlarge", "replicas": 3}, 4),
        (
            {
                "name": "a",
                "instance_type": "ml.g5.xlarge",
                "autoscaling": {"min_replicas": 1, "max_replicas": 5},
            },
            6,
        ),
        (  # one copy over 2 nodes, and a surge copy of 2 more
            {
                "name": "a",
                "instance_type": "ml.p5.48xlarge",
                "nodes": 2,
                "tensor_parallel_degree": 8,
                "pipeline_parallel_degree": 2,
            },
            4,
        ),
    ],
)
def test_peak_nodes_count_max_replicas_nodes_and_the_surge_copy(
    entry: dict[str, Any], peak: int
) -> None:
    ((_, prepared),) = _prepared(entry)
    assert peak_nodes(prepared) == peak


# -- quota arithmetic -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("needs", "expected"),
    [
        ([_need("ml.g5.xlarge", peak=2)], {G: 8}),  # 4 vCPUs x 2 nodes
        ([_need("ml.g6e.48xlarge", peak=1)], {G: 192}),
        ([_need("ml.p5.48xlarge", peak=4)], {P: 768}),  # 2-node copy + surge copy
        # a fallback with more vCPUs is the worst case of its quota
        ([_need("ml.g6.xlarge", "ml.g5.2xlarge", peak=2)], {G: 16}),
        # two deployments add up on one quota; another family has its own
        (
            [_need("ml.g5.xlarge", peak=2), _need("ml.g5.12xlarge", peak=1, where="spec#1")],
            {G: 8 + 48},
        ),
        ([_need("ml.g5.xlarge", peak=2), _need("ml.p4d.24xlarge", peak=1)], {G: 8, P: 96}),
        ([], {}),
    ],
)
def test_quota_demand_is_peak_nodes_times_vcpus_per_quota(
    needs: list[InstanceNeed], expected: dict[str, int]
) -> None:
    assert {d.rule.code: d.vcpus for d in quota_demands(needs)} == expected


def test_every_catalog_family_counts_against_a_quota() -> None:
    from mlcc_constructs.core.platform.catalog import instance_names
    from mlcc_constructs.core.preflight.quotas import rule_of

    assert [n for n in instance_names() if n.startswith("ml.") and rule_of(lookup(n)) is None] == []
    assert {r.code for r in quota_rules()} >= {G, P}


def _needs(**fields: Any) -> AppNeeds:
    return AppNeeds(region=REGION, account="123456789012", zones=ZONES, **fields)


G_NAME = "Running On-Demand G and VT instances"


def _increase(value: int) -> str:
    return (
        "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code "
        f"L-DB2E81BA --desired-value {value} --region us-east-1"
    )


@pytest.mark.parametrize(
    ("quota", "status", "found", "fix"),
    [
        (
            Quota(name=G_NAME, value=8.0),
            "ok",
            "8 vCPUs; what running instances use of it was not read",
            "",
        ),
        (Quota(name=G_NAME, value=16.0, in_use=4.0), "ok", "16 vCPUs, 4 in use", ""),
        (
            Quota(name=G_NAME, value=16.0, in_use=12.0),
            "warning",
            "16 vCPUs, 12 in use by running instances: 4 free",
            _increase(20) + ", or stop instances",
        ),
        (Quota(name=G_NAME, value=4.0), "blocker", "4 vCPUs", _increase(8)),
        (Quota(name=G_NAME, value=4.0, in_use=4.0), "blocker", "4 vCPUs, 4 in use", _increase(12)),
        (
            Unavailable(reason="AccessDeniedException: no"),
            "could-not-check",
            "the quota could not be read: AccessDeniedException: no",
            "allow servicequotas:GetServiceQuota, or check by hand: aws service-quotas "
            "get-service-quota --service-code ec2 --quota-code L-DB2E81BA --region us-east-1",
        ),
        (
            Quota(name="Running On-Demand P instances", value=100.0),
            "could-not-check",
            "quota L-DB2E81BA is 'Running On-Demand P instances', not 'Running On-Demand G and "
            "VT instances'",
            "correct L-DB2E81BA in mlcc_constructs/data/preflight_quotas.json",
        ),
    ],
)
def test_ec2_quota_finding(quota: Any, status: str, found: str, fix: str) -> None:
    needs = _needs(instances=(_need("ml.g5.xlarge", peak=2),))
    (finding,) = ec2_quota_findings(needs, AccountFacts(ec2_quotas={G: quota}))
    assert (finding.status, finding.found, finding.fix) == (status, found, fix)
    assert finding.needed == "8 vCPUs at peak (max replicas x nodes, plus a surge copy)"


@pytest.mark.parametrize(
    ("offered", "statuses"),
    [
        ({"g5.xlarge": ("us-east-1a", "us-east-1f"), "g6.xlarge": ZONES}, ["ok", "ok"]),
        ({"g5.xlarge": ("us-east-1f",), "g6.xlarge": ZONES}, ["blocker", "ok"]),
        ({"g5.xlarge": ZONES, "g6.xlarge": ()}, ["ok", "warning"]),  # only a fallback
        ({"g5.xlarge": Unavailable(reason="UnauthorizedOperation")}, ["could-not-check"]),
    ],
)
def test_instance_offering_in_the_apps_zones(offered: dict[str, Any], statuses: list[str]) -> None:
    needs = _needs(instances=(_need("ml.g5.xlarge", "ml.g6.xlarge", peak=2),))
    findings = offering_findings(needs, AccountFacts(offerings=offered))
    assert _statuses(findings)[: len(statuses)] == statuses


def test_offering_blocker_names_where_it_is_offered_and_the_fix() -> None:
    needs = _needs(instances=(_need("ml.p5.48xlarge", peak=1),))
    (finding,) = offering_findings(needs, AccountFacts(offerings={"p5.48xlarge": ("us-east-1f",)}))
    assert finding.found == "offered in us-east-1f"
    assert finding.fix == (
        "pick zones that offer p5.48xlarge (-c availability_zones=...), another region, or "
        "another instance type"
    )


def _reservation(total: int, *, zone: str = "us-east-1a", state: str = "active") -> Reservation:
    return Reservation(
        instance_type="p5.48xlarge", zone=zone, state=state, available=total, total=total
    )


@pytest.mark.parametrize(
    ("reservations", "status"),
    [
        ((_reservation(4),), "ok"),
        ((_reservation(2), _reservation(2, zone="us-east-1b")), "ok"),
        ((_reservation(2),), "warning"),  # fewer than the peak
        ((_reservation(4, zone="us-east-1f"),), "warning"),  # outside the app's zones
        ((_reservation(4, state="expired"),), "warning"),
        ((), "warning"),
        (Unavailable(reason="UnauthorizedOperation"), "could-not-check"),
    ],
)
def test_p_family_capacity(reservations: Any, status: str) -> None:
    needs = _needs(instances=(_need("ml.p5.48xlarge", peak=4),))
    (finding,) = capacity_findings(needs, AccountFacts(reservations=reservations))
    assert finding.status == status


def test_capacity_is_not_checked_for_g_instances() -> None:
    needs = _needs(instances=(_need("ml.g5.xlarge", peak=2),))
    assert capacity_findings(needs, AccountFacts(reservations=())) == []


@pytest.mark.parametrize(
    ("quota", "status"),
    [
        (Quota(name="ml.g5.12xlarge for cluster usage", value=2.0, code="L-ABC"), "ok"),
        (Quota(name="ml.g5.12xlarge for cluster usage", value=0.0, code="L-ABC"), "blocker"),
        (None, "could-not-check"),
        (Unavailable(reason="AccessDenied"), "could-not-check"),
    ],
)
def test_hyperpod_cluster_quota(quota: Any, status: str) -> None:
    group = HyperPodGroupNeed(instance_type="ml.g5.12xlarge", count=2, where="cdk.json")
    needs = _needs(hyperpod_groups=(group,), hyperpod=True)
    (finding,) = hyperpod_quota_findings(
        needs, AccountFacts(hyperpod_quotas={"ml.g5.12xlarge": quota})
    )
    assert finding.status == status
    if status == "blocker":
        assert "--service-code sagemaker --quota-code L-ABC --desired-value 2" in finding.fix


# -- versions, add-ons, bootstrap -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kubernetes", "hyperpod", "statuses"),
    [("1.34", True, ["ok"]), ("1.35", True, ["warning"]), ("1.35", False, [])],
)
def test_hyperpod_kubernetes_version(kubernetes: str, hyperpod: bool, statuses: list[str]) -> None:
    needs = _needs(
        hyperpod=hyperpod,
        kubernetes=kubernetes,
        hyperpod_documented=pinned().hyperpod_kubernetes_documented,
    )
    assert _statuses(hyperpod_version_findings(needs, AccountFacts())) == statuses


@pytest.mark.parametrize(
    ("available", "status"),
    [
        (("v2.8.0-eksbuild.1", "v2.7.0-eksbuild.1"), "ok"),
        (("v2.8.0-eksbuild.1",), "blocker"),
        ((), "blocker"),
        (Unavailable(reason="AccessDeniedException"), "could-not-check"),
    ],
)
def test_addon_build_exists_for_the_kubernetes_version(available: Any, status: str) -> None:
    addon = ("aws-mountpoint-s3-csi-driver", "v2.7.0-eksbuild.1")
    needs = _needs(kubernetes="1.35", addons=(addon,))
    (finding,) = addon_findings(
        needs, AccountFacts(addon_versions={"aws-mountpoint-s3-csi-driver": available})
    )
    assert finding.status == status
    if status == "blocker" and available:
        assert finding.found == "available for Kubernetes 1.35: v2.8.0-eksbuild.1"


@pytest.mark.parametrize(
    ("version", "required", "status"),
    [
        (30, 21, "ok"),
        (20, 21, "blocker"),
        (None, 21, "blocker"),
        (30, None, "could-not-check"),
        (Unavailable(reason="AccessDeniedException"), 21, "could-not-check"),
    ],
)
def test_cdk_bootstrap_version(version: Any, required: int | None, status: str) -> None:
    facts = AccountFacts(bootstrap_version=version, bootstrap_required=required)
    (finding,) = bootstrap_findings(_needs(bootstrap=True), facts, qualifier="hnb659fds")
    assert finding.status == status
    assert finding.subject == "/cdk-bootstrap/hnb659fds/version in aws://123456789012/us-east-1"
    if status == "blocker":
        assert finding.fix == "npx cdk bootstrap aws://123456789012/us-east-1"


# -- secrets, certificates, zones, models, roles ----------------------------------------------


@pytest.mark.parametrize(
    ("purpose", "looked", "status", "fix"),
    [
        (API_KEY_PURPOSE, "arn:aws:secretsmanager:us-east-1:123456789012:secret:k-AbC", "ok", ""),
        (
            API_KEY_PURPOSE,
            None,
            "blocker",
            "aws secretsmanager create-secret --name team/key --region us-east-1 "
            '--secret-string "$(openssl rand -hex 32)" (the key clients send)',
        ),
        (
            "ecr_pull_through_secrets docker-hub",
            None,
            "blocker",
            "aws secretsmanager create-secret --name team/key --region us-east-1 --secret-string "
            "file://docker-hub.json (keys username and accessToken; ECR takes only names "
            "beginning with ecr-pullthroughcache/)",
        ),
        (
            "engine.secret_env HF_TOKEN",
            Unavailable(reason="AccessDeniedException"),
            "could-not-check",
            "allow secretsmanager:DescribeSecret on the secret",
        ),
    ],
)
def test_secret_exists(purpose: str, looked: Any, status: str, fix: str) -> None:
    need = SecretNeed(secret="team/key", purpose=purpose, region=REGION, where="spec#0")
    (finding,) = secret_findings(
        _needs(secrets=(need,)), AccountFacts(secrets={"team/key": looked})
    )
    assert (finding.status, finding.fix) == (status, fix)


@pytest.mark.parametrize(
    ("name", "host", "covered"),
    [
        ("llm.example.com", "llm.example.com", True),
        ("LLM.example.com", "llm.example.com.", True),
        ("*.example.com", "llm.example.com", True),
        ("*.example.com", "a.llm.example.com", False),  # a wildcard is one label
        ("*.example.com", "example.com", False),
        ("example.com", "llm.example.com", False),
    ],
)
def test_certificate_names_cover_a_host(name: str, host: str, covered: bool) -> None:
    assert covers(name, host) is covered


ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


def _certificate(**fields: Any) -> Certificate:
    values: dict[str, Any] = {
        "status": "ISSUED",
        "not_after": NOW + timedelta(days=300),
        "domain_name": "example.com",
        "alternative_names": ("example.com", "*.example.com"),
    }
    return Certificate(**{**values, **fields})


@pytest.mark.parametrize(
    ("arn", "certificate", "status", "found"),
    [
        (ARN, _certificate(), "ok", "ISSUED, until 2027-10-02, covers example.com, example.com, "),
        (ARN, _certificate(status="PENDING_VALIDATION"), "blocker", "status PENDING_VALIDATION"),
        (ARN, _certificate(not_after=NOW - timedelta(days=1)), "blocker", "expired 2026-12-05"),
        (ARN, _certificate(not_after=NOW + timedelta(days=10)), "warning", "ISSUED, expires 2026"),
        (ARN, _certificate(alternative_names=()), "blocker", "covers example.com"),
        (ARN.replace("us-east-1", "eu-west-1"), _certificate(), "blocker", "a certificate of eu-"),
        (ARN, None, "blocker", "no such certificate"),
        (ARN, Unavailable(reason="AccessDeniedException"), "could-not-check", "the certificate"),
    ],
)
def test_certificate(arn: str, certificate: Any, status: str, found: str) -> None:
    need = CertificateNeed(arn=arn, hostname="llm.example.com", region=REGION, where="spec#0")
    facts = AccountFacts(certificates={arn: certificate})
    (finding,) = certificate_findings(_needs(certificates=(need,)), facts, now=NOW)
    assert finding.status == status
    assert finding.found.startswith(found)
    assert finding.needed == "ISSUED, in us-east-1, unexpired, covering llm.example.com"


@pytest.mark.parametrize(
    ("zone", "status"),
    [("example.com.", "ok"), ("other.org.", "blocker"), (None, "blocker")],
)
def test_hosted_zone_holds_the_host(zone: str | None, status: str) -> None:
    need = HostedZoneNeed(zone_id="Z0123", hostname="llm.example.com", where="spec#0")
    facts = AccountFacts(hosted_zones={"Z0123": zone})
    (finding,) = hosted_zone_findings(_needs(hosted_zones=(need,)), facts)
    assert finding.status == status


URI = "s3://models/org/name/"
STAGED = (
    StagedObject(key="config.json", size=700),
    StagedObject(key="model.safetensors.index.json", size=24000),
    StagedObject(key="model-00001-of-00002.safetensors", size=8_000_000_000),
    StagedObject(key="model-00002-of-00002.safetensors", size=8_060_522_496),
)


@pytest.mark.parametrize(
    ("objects", "model_bytes", "status", "found"),
    [
        (STAGED, 16_060_522_496, "ok", "staged: 16060522496 bytes of weights"),
        (STAGED, None, "ok", "staged: 16060522496 bytes of weights"),
        (STAGED, 8_000_000_000, "blocker", "16060522496 bytes of .safetensors files"),
        (STAGED[1:], None, "blocker", "3 objects, no config.json"),
        (STAGED[:1], None, "blocker", "1 objects, no model.safetensors.index.json"),
        ((), None, "blocker", "nothing staged"),
        (None, None, "blocker", "bucket models does not exist"),
        (Unavailable(reason="AccessDenied"), None, "could-not-check", "the prefix could not"),
    ],
)
def test_model_is_staged(objects: Any, model_bytes: int | None, status: str, found: str) -> None:
    need = ModelNeed(
        uri=URI,
        bucket="models",
        prefix="org/name/",
        model_bytes=model_bytes,
        region=REGION,
        where="spec#0",
    )
    (finding,) = model_findings(_needs(models=(need,)), AccountFacts(models={URI: objects}))
    assert (finding.status, finding.found[: len(found)]) == (status, found)
    if status == "blocker":
        assert f"aws s3 sync <local model folder> {URI}" in finding.fix


@pytest.mark.parametrize(("looked", "status"), [("arn:aws:iam::1:role/a", "ok"), (None, "blocker")])
def test_admin_role_exists(looked: str | None, status: str) -> None:
    need = RoleNeed(arn="arn:aws:iam::123456789012:role/admin", where="cdk.json")
    facts = AccountFacts(roles={need.arn: looked})
    assert _statuses(role_findings(_needs(roles=(need,)), facts)) == [status]


# -- the app's needs, and the report ----------------------------------------------------------

HTTPS = {
    "name": "qwen",
    "instance_type": "ml.g6.xlarge",
    "model": "s3://models-bucket/org/qwen/",
    "model_bytes": 16381470720,
    "api_key_secret": "mlcc/api-key",
    "secret_env": {"HF_TOKEN": {"secrets_manager": "mlcc/hf-token"}},
    "endpoint": {
        "scheme": "internet-facing",
        "certificate_arn": ARN,
        "hostname": "llm.example.com",
        "hosted_zone_id": "Z0123456789ABCDEFGHIJ",
    },
}


def test_app_needs_name_everything_the_app_refers_to() -> None:
    environment = AppEnvironment(
        profile="dev",
        account="123456789012",
        region=REGION,
        availability_zones=ZONES,
        admin_role_arns=("arn:aws:iam::123456789012:role/admin",),
    )
    groups = [{"name": "inference", "instance_type": "ml.g5.12xlarge", "count": 2}]
    needs = app_needs(
        _prepared(HTTPS),
        environment=environment,
        pull_through_secrets={"docker-hub": "ecr-pullthroughcache/docker-hub"},
        hyperpod=hyperpod_settings(groups, None, profile="dev"),
        pinned=pinned(),
    )
    assert [(s.secret, s.purpose) for s in needs.secrets] == [
        ("ecr-pullthroughcache/docker-hub", "ecr_pull_through_secrets docker-hub"),
        ("mlcc/hf-token", "engine.secret_env HF_TOKEN"),
        ("mlcc/api-key", "endpoint.api_key_secret"),
    ]
    assert [(c.arn, c.hostname) for c in needs.certificates] == [(ARN, "llm.example.com")]
    assert [(z.zone_id, z.hostname) for z in needs.hosted_zones] == [
        ("Z0123456789ABCDEFGHIJ", "llm.example.com")
    ]
    assert [(m.bucket, m.prefix, m.model_bytes) for m in needs.models] == [
        ("models-bucket", "org/qwen/", 16381470720)
    ]
    assert [(i.preferred.node_name, i.peak_nodes) for i in needs.instances] == [("g6.xlarge", 2)]
    assert [(g.instance_type, g.count) for g in needs.hyperpod_groups] == [("ml.g5.12xlarge", 2)]
    assert [r.arn for r in needs.roles] == ["arn:aws:iam::123456789012:role/admin"]
    assert dict(needs.addons) == dict(pinned().eks_addons)
    assert (needs.kubernetes, needs.bootstrap, needs.hyperpod) == (pinned().kubernetes, True, True)


def test_an_app_without_hyperpod_needs_no_inference_operator_build() -> None:
    environment = AppEnvironment(
        profile="dev", account="123456789012", region=REGION, availability_zones=ZONES
    )
    needs = app_needs(
        _prepared({"name": "q", "instance_type": "ml.g6.xlarge"}),
        environment=environment,
        pull_through_secrets=None,
        hyperpod=None,
        pinned=pinned(),
    )
    assert "amazon-sagemaker-hyperpod-inference" not in dict(needs.addons)
    assert (needs.secrets, needs.hyperpod_groups, needs.hyperpod) == ((), (), False)


def test_every_check_runs_and_a_blocker_fails_the_exit_code() -> None:
    need = SecretNeed(secret="k", purpose=API_KEY_PURPOSE, region=REGION, where="spec#0")
    needs = _needs(secrets=(need,), instances=(_need("ml.g5.xlarge", peak=2),))
    findings = all_findings(needs, AccountFacts(secrets={"k": None}), now=NOW, qualifier="q")
    assert {f.check for f in findings} <= set(CHECKS)
    assert exit_code(findings) == 1
    assert exit_code([f for f in findings if f.status != "blocker"]) == 0
    assert exit_code([f for f in findings if f.status != "blocker"], strict=True) == 1
    assert summary(findings) == "preflight: 1 blocker, 2 could not be checked, 0 warnings, 0 ok"
    document = report_document(findings)
    assert document["findings"][0]["status"] == "blocker"
    assert report_table(findings).splitlines()[-1] == summary(findings)


def test_deployments_sharing_a_model_or_secret_are_checked_once() -> None:
    environment = AppEnvironment(
        profile="dev", account="123456789012", region=REGION, availability_zones=ZONES
    )
    shared = {"model": "s3://models-bucket/org/m/", "api_key_secret": "mlcc/api-key"}
    needs = app_needs(
        _prepared(
            {"name": "a", "instance_type": "ml.g6.xlarge", **shared},
            {"name": "b", "instance_type": "ml.g6.xlarge", **shared},
        ),
        environment=environment,
        pull_through_secrets=None,
        hyperpod=None,
        pinned=pinned(),
    )
    assert [(m.uri, m.where) for m in needs.models] == [
        ("s3://models-bucket/org/m/", "spec#0, spec#1")
    ]
    assert [(s.secret, s.where) for s in needs.secrets] == [("mlcc/api-key", "spec#0, spec#1")]
    assert len(needs.instances) == 2  # each deployment's nodes count


@pytest.mark.parametrize(
    ("version", "cluster", "addon"),
    [
        ("1.34", ["ok"], ["ok"]),  # the add-on checked for the version read
        (None, ["blocker"], []),
        (Unavailable(reason="AccessDeniedException"), ["could-not-check"], []),
    ],
)
def test_a_named_cluster_gives_the_version_the_add_ons_are_checked_for(
    version: Any, cluster: list[str], addon: list[str]
) -> None:
    needs = _needs(
        cluster="team-cluster",
        hyperpod=True,
        hyperpod_documented=pinned().hyperpod_kubernetes_documented,
        addons=(("aws-mountpoint-s3-csi-driver", "v2.7.0-eksbuild.1"),),
    )
    facts = AccountFacts(
        cluster_version=version,
        addon_versions={"aws-mountpoint-s3-csi-driver": ("v2.7.0-eksbuild.1",)},
    )
    from mlcc_constructs.core.preflight.checks import cluster_findings

    assert _statuses(cluster_findings(needs, facts)) == cluster
    found = addon_findings(needs, facts)
    assert _statuses(found) == addon
    assert [f.subject for f in found] == [
        "aws-mountpoint-s3-csi-driver v2.7.0-eksbuild.1 on Kubernetes 1.34"
    ][: len(addon)]
    assert _statuses(hyperpod_version_findings(needs, facts)) == addon  # 1.34 is documented
