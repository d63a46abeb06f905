"""A team's own app (tests/_team_app.py) composes ServingCluster and ServedModel with its own
VPC, bucket and roles: synthesised (the key resources), cdk-nag and cfn-lint clean, and, built
from the wheel, type-checked with ``mypy --strict`` (a misspelt prop is exactly the errors
expected) and synthesised to the same template."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests._cdk_app import REPO, manifest_object
from tests.aws.test_cdk_nag import _findings
from tests.aws.test_cfn_lint import IGNORED
from tests.conftest import BuiltWheel

TEAM_APP = Path(__file__).resolve().parents[1] / "_team_app.py"
STACK = "AcmeServing"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


@cache
def _team() -> tuple[Any, dict[str, Any]]:
    """(the team's stack, its template), synthesised once per session."""
    from tests._team_app import build

    app, stack = build()
    return stack, app.synth().get_stack_by_name(STACK).template


def _resources(resource_type: str) -> dict[str, Any]:
    return {k: v for k, v in _team()[1]["Resources"].items() if v["Type"] == resource_type}


def _applied() -> list[tuple[str, dict[str, Any]]]:
    """(logical id, object) of every manifest resource, dependencies first."""
    manifests = _resources(MANIFEST)
    order: list[str] = []
    while len(order) < len(manifests):
        order += sorted(
            k
            for k, r in manifests.items()
            if k not in order and set(r.get("DependsOn", [])) & set(manifests) <= set(order)
        )
    return [(k, manifest_object(manifests[k])) for k in order]


def test_the_cluster_runs_in_the_teams_vpc() -> None:
    (vpc,) = _resources("AWS::EC2::VPC")
    assert vpc.startswith("TeamVpc")  # no VPC of the library's
    (cluster,) = _resources("AWS::EKS::Cluster").values()
    private = {k for k in _resources("AWS::EC2::Subnet") if k.startswith("TeamVpcPrivate")}
    assert len(private) == 2
    config = cluster["Properties"]["ResourcesVpcConfig"]
    assert {s["Ref"] for s in config["SubnetIds"]} == private
    assert config["EndpointPublicAccess"] is True
    assert config["PublicAccessCidrs"] == ["203.0.113.0/24"]
    assert cluster["Properties"]["Name"] == "acme-serving"
    assert cluster["Properties"]["ComputeConfig"]["Enabled"] is True  # Auto Mode


def test_the_s3_csi_driver_reads_the_teams_buckets() -> None:
    policy = _team()[1]["Resources"]["ServingS3CsiRoleDefaultPolicyC02124D8"]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert set(statements) == {"ReadModelBuckets", "ReadModelObjects"}  # no TLS bucket
    created, imported = statements["ReadModelBuckets"]["Resource"]
    assert created == {"Fn::GetAtt": ["TeamModels9B2D05C3", "Arn"]}
    assert imported["Fn::Join"][1][-1] == ":s3:::acme-shared-weights"
    addon = _team()[1]["Resources"]["ServingS3CsiDriverAddonB7BCE7BE"]["Properties"]
    assert addon["ServiceAccountRoleArn"] == {"Fn::GetAtt": ["ServingS3CsiRole9CE4FC03", "Arn"]}


def test_admin_roles_get_access_entries() -> None:
    entries = {
        k: v["Properties"]["PrincipalArn"]
        for k, v in _resources("AWS::EKS::AccessEntry").items()
        if k.startswith("ServingClusterAdminAccess")
    }
    assert sorted(entries.values(), key=str) == sorted(
        ["arn:aws:iam::123456789012:role/acme-platform-admin", {"Fn::GetAtt": [_on_call(), "Arn"]}],
        key=str,
    )


def _on_call() -> str:
    (role,) = [k for k in _resources("AWS::IAM::Role") if k.startswith("OnCall")]
    return role


def test_the_gpu_pool_and_the_model_are_applied_in_order() -> None:
    applied = _applied()
    pool = next(obj for _, obj in applied if obj["kind"] == "NodePool")
    families = pool["spec"]["template"]["spec"]["requirements"][0]["values"]
    assert families == ["g5"]
    served = _team()[0].model
    mine = set(served.objects.manifests) | set(served.namespace.manifests)
    mine |= set(served.readiness.access.manifests)  # the waiter's Role and RoleBinding
    model = [(k, obj) for k, obj in applied if k in mine]
    cluster_side = [obj for k, obj in applied if k not in mine]
    assert sorted(f"{o['kind']} {o['metadata']['name']}" for o in cluster_side) == [
        "ClusterTriggerAuthentication mlcc-aws",  # KEDA's AWS identity for the ScaledObjects
        "ConfigMap amazon-vpc-cni",  # network policy enforcement, in kube-system
        "IngressClass mlcc-internal",
        "IngressClassParams mlcc-internal",
        "NodeClass mlcc-gpu",
        "NodePool mlcc-gpu",
    ]
    assert [obj["kind"] for _, obj in model] == [
        "Namespace",
        "ServiceAccount",
        "NetworkPolicy",
        "ConfigMap",
        "ConfigMap",
        "Deployment",  # the engine streams the s3:// model (model_load's default): no volume
        "Service",
        "Ingress",
        "Role",  # the readiness waiter's access, after the objects
        "RoleBinding",
    ]
    namespace_id = model[0][0]
    resource = _team()[1]["Resources"][namespace_id]
    assert resource["DeletionPolicy"] == "Retain"
    for logical_id, _ in model[1:]:
        assert namespace_id in _team()[1]["Resources"][logical_id]["DependsOn"]


def test_the_team_stack_is_cdk_nag_clean() -> None:
    assert _findings(_team()[0]) == []


def test_the_team_template_is_cfn_lint_clean() -> None:
    from cfnlint.api import ManualArgs, lint

    matches = lint(
        json.dumps(_team()[1]), config=ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED)
    )
    assert [str(m) for m in matches] == []


# -- built from the wheel ------------------------------------------------------------------


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's mypy cache (written by ``make lint``: aws-cdk-lib's types
    already analysed, about 40 s cold), so the wheel's modules never overwrite its entries."""
    folder = tmp_path_factory.mktemp("mypy") / "cache"
    cache_dir = REPO / ".mypy_cache"
    if cache_dir.is_dir():
        # Not SQLite's -wal/-shm files: another worker's mypy (test_typed_api reads the
        # repository's cache) creates and removes them while this copies; the .db is whole.
        shutil.copytree(cache_dir, folder, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
    return folder


def _mypy_on_wheel(built_wheel: BuiltWheel, cache_dir: Path, source: str, tmp: Path) -> list[str]:
    """``mypy --strict`` on ``source`` as the team's file, the package read from the wheel's
    files (``MYPYPATH``: before the checkout's editable install); the error lines."""
    (tmp / "team_app.py").write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(cache_dir), "-v", "team_app.py"],
        capture_output=True, text=True, cwd=tmp, check=False,
        env={**os.environ, "MYPYPATH": str(built_wheel.site)},
    )  # fmt: skip
    # The package mypy read is the wheel's, not the checkout's (-v logs every module's file).
    assert str(built_wheel.site / "mlcc_constructs" / "__init__.py") in done.stderr
    assert str(REPO / "mlcc_constructs" / "__init__.py") not in done.stderr
    return [
        line.split(": error: ", 1)[1] for line in done.stdout.splitlines() if ": error: " in line
    ]


def test_the_team_app_type_checks_strictly_against_the_wheel(
    built_wheel: BuiltWheel, mypy_cache: Path, tmp_path: Path
) -> None:
    source = TEAM_APP.read_text(encoding="utf-8")
    assert _mypy_on_wheel(built_wheel, mypy_cache, source, tmp_path) == []


def test_a_misspelt_prop_and_an_arn_for_a_role_are_type_errors(
    built_wheel: BuiltWheel, mypy_cache: Path, tmp_path: Path
) -> None:
    source = TEAM_APP.read_text(encoding="utf-8")
    for old, new in (
        ("gpu_instance_types=", "gpu_instance_type="),
        ("admin_roles=[iam.Role.from_role_arn(self, \"PlatformAdmin\", ADMIN), on_call]",
         "admin_roles=[ADMIN]"),
        ("deployment=deployment, cluster", "deployment=deployment.spec, cluster"),
    ):  # fmt: skip
        assert old in source
        source = source.replace(old, new)
    assert _mypy_on_wheel(built_wheel, mypy_cache, source, tmp_path) == [
        'Unexpected keyword argument "gpu_instance_type" for "ServingClusterProps"; did you '
        'mean "gpu_instance_types"?  [call-arg]',
        'List item 0 has incompatible type "str"; expected "IRole"  [list-item]',
        'Argument "deployment" to "ServedModelProps" has incompatible type "DeploymentSpec"; '
        'expected "PreparedDeployment"  [arg-type]',
    ]


def test_the_team_app_synthesises_from_the_wheel(built_wheel: BuiltWheel, tmp_path: Path) -> None:
    shutil.copy(TEAM_APP, tmp_path / "team_app.py")
    code = (
        "import json, mlcc_constructs, team_app; "
        "app, stack = team_app.build(); "
        "template = app.synth().get_stack_by_name(stack.stack_name).template; "
        "print(json.dumps([mlcc_constructs.__file__, template]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={
            "PYTHONPATH": os.pathsep.join([str(built_wheel.site), str(tmp_path)]),
            "PATH": os.environ["PATH"],
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
            "CDK_OUTDIR": str(tmp_path / "cdk.out"),
        },
        capture_output=True,
        text=True,
        check=True,
    )
    module, template = json.loads(done.stdout)
    assert module == str(built_wheel.site / "mlcc_constructs" / "__init__.py")
    assert template == _team()[1]
