"""``mlcc preflight`` end to end against moto's server: an app whose pull through cache secret,
staged model and API key secret are missing fails once, naming each with its fix; the same app
with everything in place passes."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest

from mlcc_constructs.cli import main

REGION = "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "team-models"
MODEL = f"s3://{BUCKET}/org/qwen/"
WEIGHTS = 4096
CONTEXT: dict[str, Any] = {
    "profile": "dev",
    "account": ACCOUNT,
    "region": REGION,
    "availability_zones": ["us-east-1a", "us-east-1b"],
    "admin_role_arns": [],
    "ecr_pull_through_secrets": {"docker-hub": "ecr-pullthroughcache/docker-hub"},
    "reference_deployments": [
        {
            "name": "qwen",
            "target": "eks",
            "namespace": "inference",
            "engine": {"name": "vllm"},
            "model": {"uri": MODEL, "bytes": WEIGHTS},
            "compute": {"instance_type": "ml.g6.xlarge"},
            "endpoint": {"api_key_secret": "mlcc/api-key"},
        }
    ],
}


@pytest.fixture
def app(moto_s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An app folder (cdk.json, a synthesised cdk.out manifest) as the working directory, and
    the emptied moto server."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    urllib.request.urlopen(urllib.request.Request(f"{moto_s3}/moto-api/reset", method="POST"))
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "true", "context": CONTEXT}))
    (tmp_path / "cdk.out").mkdir()
    manifest = {
        "version": "48.0.0",
        "artifacts": {
            "mlcc-dev-buckets": {
                "type": "aws:cloudformation:stack",
                "properties": {
                    "requiresBootstrapStackVersion": 6,
                    "bootstrapStackVersionSsmParameter": "/cdk-bootstrap/hnb659fds/version",
                },
            }
        },
    }
    (tmp_path / "cdk.out" / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.chdir(tmp_path)
    return moto_s3


def _run(
    endpoint: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    code = main(["preflight", "--endpoint-url", endpoint, "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _by_subject(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {f["subject"]: f for f in report["findings"]}


def test_missing_secrets_and_an_unstaged_model_fail_in_one_run(
    app: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _client(app, "ssm").put_parameter(
        Name="/cdk-bootstrap/hnb659fds/version", Value="30", Type="String"
    )
    code, report = _run(app, capsys)
    assert code == 1
    assert (report["command"], report["ok"]) == ("preflight", False)
    found = _by_subject(report)
    cache = found["ecr-pullthroughcache/docker-hub (ecr_pull_through_secrets docker-hub)"]
    assert (cache["status"], cache["found"]) == ("blocker", "no such secret")
    assert cache["fix"].startswith(
        "aws secretsmanager create-secret --name ecr-pullthroughcache/docker-hub --region "
        "us-east-1 --secret-string file://docker-hub.json"
    )
    key = found["mlcc/api-key (endpoint.api_key_secret)"]
    assert (key["status"], key["where"]) == ("blocker", "cdk.json:/context/reference_deployments/0")
    assert key["fix"] == (
        "aws secretsmanager create-secret --name mlcc/api-key --region us-east-1 "
        '--secret-string "$(openssl rand -hex 32)" (the key clients send)'
    )
    model = found[MODEL]
    assert (model["status"], model["found"]) == ("blocker", f"bucket {BUCKET} does not exist")
    assert model["fix"] == f"stage the model: aws s3 sync <local model folder> {MODEL}"
    assert report["summary"]["blocker"] == 3
    assert found[f"/cdk-bootstrap/hnb659fds/version in aws://{ACCOUNT}/{REGION}"]["status"] == "ok"


def test_everything_in_place_passes(app: str, capsys: pytest.CaptureFixture[str]) -> None:
    _client(app, "ssm").put_parameter(
        Name="/cdk-bootstrap/hnb659fds/version", Value="30", Type="String"
    )
    secrets = _client(app, "secretsmanager")
    secrets.create_secret(Name="ecr-pullthroughcache/docker-hub", SecretString="{}")
    secrets.create_secret(Name="mlcc/api-key", SecretString="k")
    s3 = _client(app, "s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="org/qwen/config.json", Body=b"{}")
    s3.put_object(Bucket=BUCKET, Key="org/qwen/model.safetensors", Body=b"w" * WEIGHTS)
    code, report = _run(app, capsys)
    assert (code, report["ok"], report["summary"]["blocker"]) == (0, True, 0)
    statuses = {f["check"]: f["status"] for f in report["findings"] if f["status"] == "ok"}
    assert {"secret", "model", "cdk-bootstrap", "instance-offering"} <= set(statuses)
    # moto models no EC2 quotas and no EKS add-on builds: reported as not checked, never as ok
    unchecked = {f["check"] for f in report["findings"] if f["status"] == "could-not-check"}
    assert unchecked == {"ec2-quota", "addon-build"}
    # --strict: a check that could not run fails too
    code, _ = _run(app, capsys, "--strict")
    assert code == 1


def test_table_report_and_spec_mode(
    app: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps(CONTEXT["reference_deployments"][0]))
    code = main(["preflight", "-f", str(spec), "--endpoint-url", app, "--region", REGION])
    text = capsys.readouterr().out
    assert code == 1
    lines = text.splitlines()
    assert "BLOCKER         secret: mlcc/api-key (endpoint.api_key_secret)" in lines
    assert f"BLOCKER         model: {MODEL}" in lines
    # spec mode checks no app-level needs: the pull through cache secret, the bootstrap
    assert "ecr-pullthroughcache" not in text and "cdk-bootstrap" not in text
    assert lines[-1].startswith("preflight: 2 blockers, ")


def test_a_bad_context_pair_is_a_clear_error(app: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "-c", "region"]) == 1
    assert capsys.readouterr().err.strip() == (
        "mlcc: error: -c: -c takes KEY=VALUE (got 'region'; fix: e.g. -c region=us-west-2, as "
        "cdk deploy takes it)"
    )


def _client(endpoint: str, service: str) -> Any:
    return boto3.client(service, region_name=REGION, endpoint_url=endpoint)


def test_spec_mode_reads_the_named_clusters_version(
    app: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        json.dumps({**CONTEXT["reference_deployments"][0], "model": {"uri": "Qwen/Qwen3-8B"}})
    )
    _client(app, "eks").create_cluster(
        name="team",
        version="1.34",
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1", "subnet-2"]},
    )
    base = ["-f", str(spec), "--region", REGION]
    code, report = _run(app, capsys, *base, "--cluster", "team")
    found = {f["check"]: f for f in report["findings"]}
    assert (found["eks-cluster"]["status"], found["eks-cluster"]["found"]) == (
        "ok",
        "Kubernetes 1.34",
    )
    # moto models no DescribeAddonVersions: each pinned build could not be checked, for 1.34
    assert found["addon-build"]["status"] == "could-not-check"
    assert found["addon-build"]["subject"].endswith("on Kubernetes 1.34")
    code, report = _run(app, capsys, *base, "--cluster", "nope")
    missing = {f["check"]: f for f in report["findings"]}["eks-cluster"]
    assert (code, missing["status"], missing["fix"]) == (
        1,
        "blocker",
        "check --cluster and --region (aws eks list-clusters --region us-east-1)",
    )


def test_make_deploy_runs_preflight_before_any_stack() -> None:
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndeploy: synth\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[0] for line in recipe] == ["$(BIN)/mlcc", "$(CDK)"]
    assert recipe[0].split()[1] == "preflight" and recipe[1].split()[1:3] == ["deploy", "--all"]
