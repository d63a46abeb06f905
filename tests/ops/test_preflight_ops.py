"""``mlcc preflight``'s shell: the facts it reads from AWS. Against moto's server where moto
models the API (SSM, Secrets Manager, ACM, Route 53, S3, IAM, EC2 offerings); against
botocore's Stubber, which checks each response against botocore's own service model, where it
does not (Service Quotas for EC2 and SageMaker, EKS DescribeAddonVersions, EC2
DescribeCapacityReservations). No code path reads a secret's value."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from botocore.stub import ANY, Stubber  # type: ignore[import-untyped]

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.preflight.facts import Quota, Reservation, StagedObject, Unavailable
from mlcc_constructs.core.preflight.needs import (
    AppNeeds,
    CertificateNeed,
    HostedZoneNeed,
    HyperPodGroupNeed,
    InstanceNeed,
    ModelNeed,
    RoleNeed,
    SecretNeed,
)
from mlcc_constructs.ops.preflight import Clients, boto3_clients, gather, required_bootstrap

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
PACKAGE = Path(__file__).resolve().parents[2] / "mlcc_constructs"


@pytest.fixture
def moto(moto_s3: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The session's moto server, emptied, with test credentials."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    urllib.request.urlopen(urllib.request.Request(f"{moto_s3}/moto-api/reset", method="POST"))
    yield moto_s3


def _client(endpoint: str, service: str) -> Any:
    return boto3.client(service, region_name=REGION, endpoint_url=endpoint)


def test_facts_from_moto_present_and_missing(moto: str) -> None:
    _client(moto, "ssm").put_parameter(
        Name="/cdk-bootstrap/hnb659fds/version", Value="30", Type="String"
    )
    secrets = _client(moto, "secretsmanager")
    secrets.create_secret(Name="mlcc/api-key", SecretString="not read by preflight")
    acm = _client(moto, "acm")
    arn = acm.request_certificate(
        DomainName="example.com", SubjectAlternativeNames=["*.example.com"]
    )["CertificateArn"]
    zone = _client(moto, "route53").create_hosted_zone(Name="example.com", CallerReference="r")
    zone_id = zone["HostedZone"]["Id"].split("/")[-1]
    s3 = _client(moto, "s3")
    s3.create_bucket(Bucket="models")
    for key, body in (("config.json", b"{}"), ("model.safetensors", b"x" * 1000)):
        s3.put_object(Bucket="models", Key=f"org/name/{key}", Body=body)
    s3.put_object(Bucket="models", Key="org/name/.mlcc-adapters/a/adapter.safetensors", Body=b"y")
    iam = _client(moto, "iam")
    iam.create_role(RoleName="admin", AssumeRolePolicyDocument="{}")

    def model(uri: str, bucket: str) -> ModelNeed:
        prefix = uri.split("/", 3)[3]
        return ModelNeed(
            uri=uri, bucket=bucket, prefix=prefix, model_bytes=None, region=REGION, where="w"
        )

    needs = AppNeeds(
        region=REGION,
        account=ACCOUNT,
        zones=("us-east-1a", "us-east-1b"),
        instances=(InstanceNeed(types=(lookup("ml.g5.xlarge"),), peak_nodes=2, where="w"),),
        secrets=tuple(
            SecretNeed(secret=name, purpose="endpoint.api_key_secret", region=REGION, where="w")
            for name in ("mlcc/api-key", "mlcc/missing")
        ),
        certificates=(
            CertificateNeed(arn=arn, hostname="llm.example.com", region=REGION, where="w"),
            CertificateNeed(arn=arn[:-4] + "0000", hostname=None, region=REGION, where="w"),
        ),
        hosted_zones=(
            HostedZoneNeed(zone_id=zone_id, hostname="llm.example.com", where="w"),
            HostedZoneNeed(zone_id="Z0000000000000000000", hostname="x.example.com", where="w"),
        ),
        models=(
            model("s3://models/org/name/", "models"),
            model("s3://models/org/other/", "models"),
            model("s3://no-bucket/org/name/", "no-bucket"),
        ),
        roles=(
            RoleNeed(arn=f"arn:aws:iam::{ACCOUNT}:role/admin", where="w"),
            RoleNeed(arn=f"arn:aws:iam::{ACCOUNT}:role/path/missing", where="w"),
            RoleNeed(arn="arn:aws:iam::210987654321:role/other", where="w"),
        ),
        bootstrap=True,
    )
    calls: list[str] = []
    facts = gather(
        needs,
        _recording(moto, calls),
        bootstrap_required=21,
        bootstrap_parameter="/cdk-bootstrap/hnb659fds/version",
    )
    # read-only calls only, and every one of them made
    assert sorted(set(calls)) == [
        "DescribeCertificate",
        "DescribeInstanceTypeOfferings",
        "DescribeSecret",
        "GetHostedZone",
        "GetParameter",
        "GetRole",
        "GetServiceQuota",
        "ListObjectsV2",
    ]
    assert facts.bootstrap_version == 30
    assert facts.secrets["mlcc/api-key"].startswith(  # type: ignore[union-attr]
        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:mlcc/api-key-"
    )
    assert facts.secrets["mlcc/missing"] is None
    certificate = facts.certificates[arn]
    assert certificate is not None and not isinstance(certificate, Unavailable)
    assert (certificate.domain_name, "*.example.com" in certificate.alternative_names) == (
        "example.com",
        True,
    )
    assert facts.certificates[arn[:-4] + "0000"] is None
    assert facts.hosted_zones == {zone_id: "example.com.", "Z0000000000000000000": None}
    assert facts.models["s3://models/org/name/"] == (  # the adapters' folder is not listed
        StagedObject(key="config.json", size=2),
        StagedObject(key="model.safetensors", size=1000),
    )
    assert facts.models["s3://models/org/other/"] == ()
    assert facts.models["s3://no-bucket/org/name/"] is None
    assert facts.roles[f"arn:aws:iam::{ACCOUNT}:role/admin"] == (
        f"arn:aws:iam::{ACCOUNT}:role/admin"
    )
    assert facts.roles[f"arn:aws:iam::{ACCOUNT}:role/path/missing"] is None
    assert facts.roles["arn:aws:iam::210987654321:role/other"] == Unavailable(
        reason=f"the role is in account 210987654321, not {ACCOUNT}"
    )
    offered = facts.offerings["g5.xlarge"]
    assert isinstance(offered, tuple) and offered and all(z.startswith(REGION) for z in offered)
    # moto models no EC2 quotas: could not be read, never a pass
    assert facts.ec2_quotas["L-DB2E81BA"] is None


def _recording(endpoint: str, calls: list[str]) -> Clients:
    """Clients at ``endpoint`` whose every operation's name is appended to ``calls``."""
    session = boto3.Session()

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    session.events.register("before-call", record)
    made: dict[tuple[str, str], Any] = {}

    def clients(service: str, region: str) -> Any:
        key = (service, region)
        if key not in made:
            made[key] = session.client(service, region_name=region, endpoint_url=endpoint)
        return made[key]

    return clients


def test_the_default_client_factory_makes_one_client_per_service_and_region(moto: str) -> None:
    clients = boto3_clients(endpoint_url=moto)
    assert clients("s3", REGION) is clients("s3", REGION)
    assert clients("s3", "eu-west-1") is not clients("s3", REGION)
    assert clients("s3", REGION).meta.endpoint_url == moto


def test_no_code_path_reads_a_secret_value(moto: str) -> None:
    """A botocore hook fails on any GetSecretValue while preflight gathers every fact."""
    secrets = _client(moto, "secretsmanager")
    secrets.create_secret(Name="mlcc/hf-token", SecretString="hf_secret")
    called: list[str] = []
    session = boto3.Session()

    def refuse(**kwargs: Any) -> None:
        called.append(str(kwargs.get("event_name")))
        raise AssertionError("preflight read a secret's value")

    session.events.register("before-call.secrets-manager.GetSecretValue", refuse)
    session.events.register("before-call.secrets-manager.BatchGetSecretValue", refuse)
    made: dict[str, Any] = {}

    def clients(service: str, region: str) -> Any:
        return made.setdefault(
            service, session.client(service, region_name=region, endpoint_url=moto)
        )

    needs = AppNeeds(
        region=REGION,
        account=ACCOUNT,
        secrets=(SecretNeed(secret="mlcc/hf-token", purpose="p", region=REGION, where="w"),),
    )
    facts = gather(needs, clients)
    assert isinstance(facts.secrets["mlcc/hf-token"], str)
    assert called == []
    # the hook does fire on a value read (so the test above could fail)
    with pytest.raises(AssertionError, match="read a secret's value"):
        clients("secretsmanager", REGION).get_secret_value(SecretId="mlcc/hf-token")
    # and no preflight module names the value-reading calls
    sources = [
        *(PACKAGE / "core" / "preflight").glob("*.py"),
        PACKAGE / "ops" / "preflight.py",
        PACKAGE / "cli" / "preflight.py",
    ]
    pattern = re.compile(r"get_secret_value|GetSecretValue|batch_get_secret_value")
    assert [p.name for p in sources if p.is_file() and pattern.search(p.read_text())] == []


# -- what moto does not model: botocore's Stubber (responses checked against the model) -------


class _Stubbed:
    """Stubbed clients by service, made from real botocore clients."""

    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.stubbers: dict[str, Stubber] = {}

    def stub(self, service: str) -> Stubber:
        client = boto3.client(
            service,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self.clients[service] = client
        self.stubbers[service] = Stubber(client)
        return self.stubbers[service]

    def __call__(self, service: str, region: str) -> Any:
        return self.clients[service]

    def activate(self) -> None:
        for stubber in self.stubbers.values():
            stubber.activate()

    def done(self) -> None:
        for stubber in self.stubbers.values():
            stubber.assert_no_pending_responses()


def _quota(code: str, name: str, value: float, service: str = "ec2") -> dict[str, Any]:
    return {
        "Quota": {
            "ServiceCode": service,
            "QuotaCode": code,
            "QuotaName": name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
    }


def test_quotas_addon_builds_and_capacity_through_the_stubbed_apis() -> None:
    stubbed = _Stubbed()
    quotas = stubbed.stub("service-quotas")
    usage = {
        "MetricNamespace": "AWS/Usage",
        "MetricName": "ResourceCount",
        "MetricDimensions": {
            "Class": "G/OnDemand",
            "Resource": "vCPU",
            "Service": "EC2",
            "Type": "Resource",
        },
        "MetricStatisticRecommendation": "Maximum",
    }
    g_quota = _quota("L-DB2E81BA", "Running On-Demand G and VT instances", 8.0)
    quotas.add_response(
        "get_service_quota",
        {"Quota": {**g_quota["Quota"], "UsageMetric": usage}},
        {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"},
    )
    cloudwatch = stubbed.stub("cloudwatch")
    cloudwatch.add_response(
        "get_metric_statistics",
        {
            "Label": "ResourceCount",
            "Datapoints": [{"Maximum": 4.0, "Unit": "None"}, {"Maximum": 6.0, "Unit": "None"}],
        },
        {
            "Namespace": "AWS/Usage",
            "MetricName": "ResourceCount",
            "Dimensions": [
                {"Name": "Class", "Value": "G/OnDemand"},
                {"Name": "Resource", "Value": "vCPU"},
                {"Name": "Service", "Value": "EC2"},
                {"Name": "Type", "Value": "Resource"},
            ],
            "StartTime": ANY,
            "EndTime": ANY,
            "Period": 300,
            "Statistics": ["Maximum"],
        },
    )
    quotas.add_client_error(
        "get_service_quota",
        service_error_code="AccessDeniedException",
        service_message="not allowed",
        expected_params={"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    quotas.add_response(
        "list_service_quotas",
        {
            "Quotas": [
                _quota("L-1", "ml.g5.12xlarge for cluster usage", 4.0, "sagemaker")["Quota"],
                _quota("L-2", "ml.p5.48xlarge for training job usage", 2.0, "sagemaker")["Quota"],
            ]
        },
        {"ServiceCode": "sagemaker"},
    )
    ec2 = stubbed.stub("ec2")
    ec2.add_response(
        "describe_instance_type_offerings",
        {
            "InstanceTypeOfferings": [
                {"InstanceType": "g5.xlarge", "LocationType": "availability-zone", "Location": z}
                for z in ("us-east-1a", "us-east-1b")
            ]
        },
        {
            "LocationType": "availability-zone",
            "Filters": [{"Name": "instance-type", "Values": ["g5.xlarge", "p5.48xlarge"]}],
        },
    )
    ec2.add_response(
        "describe_capacity_reservations",
        {
            "CapacityReservations": [
                {
                    "CapacityReservationId": "cr-0123456789abcdef0",
                    "InstanceType": "p5.48xlarge",
                    "AvailabilityZone": "us-east-1a",
                    "State": "active",
                    "AvailableInstanceCount": 1,
                    "TotalInstanceCount": 2,
                    "ReservationType": "capacity-block",
                }
            ]
        },
        {"Filters": [{"Name": "instance-type", "Values": ["p5.48xlarge"]}]},
    )
    eks = stubbed.stub("eks")
    eks.add_response(
        "describe_addon_versions",
        {
            "addons": [
                {
                    "addonName": "aws-mountpoint-s3-csi-driver",
                    "addonVersions": [
                        {"addonVersion": "v2.8.0-eksbuild.1"},
                        {"addonVersion": "v2.7.0-eksbuild.1"},
                    ],
                }
            ]
        },
        {"addonName": "aws-mountpoint-s3-csi-driver", "kubernetesVersion": "1.35"},
    )
    eks.add_client_error(
        "describe_addon_versions",
        service_error_code="AccessDeniedException",
        expected_params={
            "addonName": "aws-secrets-store-csi-driver-provider",
            "kubernetesVersion": "1.35",
        },
    )
    stubbed.activate()
    needs = AppNeeds(
        region=REGION,
        account=ACCOUNT,
        instances=(
            InstanceNeed(types=(lookup("ml.g5.xlarge"),), peak_nodes=2, where="a"),
            InstanceNeed(types=(lookup("ml.p5.48xlarge"),), peak_nodes=2, where="b"),
        ),
        hyperpod_groups=(
            HyperPodGroupNeed(instance_type="ml.g5.12xlarge", count=2, where="c"),
            HyperPodGroupNeed(instance_type="ml.p5.48xlarge", count=1, where="c"),
        ),
        hyperpod=True,
        kubernetes="1.35",
        addons=(
            ("aws-mountpoint-s3-csi-driver", "v2.7.0-eksbuild.1"),
            ("aws-secrets-store-csi-driver-provider", "v3.1.3-eksbuild.1"),
        ),
    )
    clients: Clients = stubbed
    facts = gather(needs, clients)
    stubbed.done()
    assert facts.ec2_quotas["L-DB2E81BA"] == Quota(
        name="Running On-Demand G and VT instances", value=8.0, code="L-DB2E81BA", in_use=6.0
    )
    denied = facts.ec2_quotas["L-417A185B"]
    assert isinstance(denied, Unavailable) and denied.reason.startswith("AccessDeniedException")
    assert facts.hyperpod_quotas == {
        "ml.g5.12xlarge": Quota(name="ml.g5.12xlarge for cluster usage", value=4.0, code="L-1"),
        "ml.p5.48xlarge": None,  # only a training quota of that type
    }
    assert facts.offerings == {"g5.xlarge": ("us-east-1a", "us-east-1b"), "p5.48xlarge": ()}
    assert facts.reservations == (
        Reservation(
            instance_type="p5.48xlarge",
            zone="us-east-1a",
            state="active",
            available=1,
            total=2,
            kind="capacity-block",
        ),
    )
    assert facts.addon_versions["aws-mountpoint-s3-csi-driver"] == (
        "v2.8.0-eksbuild.1",
        "v2.7.0-eksbuild.1",
    )
    assert isinstance(facts.addon_versions["aws-secrets-store-csi-driver-provider"], Unavailable)


def test_required_bootstrap_version_from_cdk_out(tmp_path: Path) -> None:
    assert required_bootstrap(tmp_path) == (None, None)
    manifest = {
        "version": "48.0.0",
        "artifacts": {
            "a": {
                "type": "aws:cloudformation:stack",
                "properties": {
                    "requiresBootstrapStackVersion": 6,
                    "bootstrapStackVersionSsmParameter": "/cdk-bootstrap/hnb659fds/version",
                },
            },
            "b": {
                "type": "aws:cloudformation:stack",
                "properties": {"requiresBootstrapStackVersion": 21},
            },
            "tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}},
        },
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert required_bootstrap(tmp_path) == (21, "/cdk-bootstrap/hnb659fds/version")
