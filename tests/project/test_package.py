"""The package as a team installs it. ``python -m build`` makes an sdist and a wheel (the wheel
built from the sdist, so the sdist is complete) that ``twine check --strict`` passes, with the
metadata PyPI shows (version, license, classifiers, extras, ``py.typed``). The wheel, installed
by pip into a fresh venv that holds nothing but its declared dependencies (their installed files
linked from this environment: nothing is downloaded and nothing undeclared is importable),
synthesises a team's CDK app, a ServedModel on an imported cluster, from a folder outside the
checkout."""

from __future__ import annotations

import email
import json
import os
import re
import subprocess
import sys
import zipfile
from email.message import Message
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import mlcc_constructs
from tests._cdk_app import REPO
from tests.conftest import BuiltWheel

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def test_twine_check_passes_on_the_sdist_and_the_wheel(built_wheel: BuiltWheel) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict",
         str(built_wheel.sdist), str(built_wheel.wheel)],
        capture_output=True, text=True, check=False, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_version_is_written_once(built_wheel: BuiltWheel) -> None:
    """pyproject.toml reads the version from the package (``dynamic``); the files, the wheel's
    metadata, ``mlcc --version`` and the CHANGELOG's newest release agree."""
    version = mlcc_constructs.__version__
    assert version == "0.2.0"
    assert built_wheel.wheel.name == f"mlcc_constructs-{version}-py3-none-any.whl"
    assert built_wheel.sdist.name == f"mlcc_constructs-{version}.tar.gz"
    assert _metadata(built_wheel.wheel)["Version"] == version
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert not re.search(r"^version\s*=", pyproject, flags=re.M)
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## (\d+\.\d+\.\d+)\b", changelog, flags=re.M)
    assert releases[0] == version


def test_the_metadata_is_complete(built_wheel: BuiltWheel) -> None:
    meta = _metadata(built_wheel.wheel)
    assert meta["Name"] == "mlcc-constructs"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE"
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Author-email"] and meta["Maintainer-email"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert "aws-cdk" in meta["Keywords"].split(",")
    classifiers = meta.get_all("Classifier") or []
    assert {
        "Typing :: Typed",
        "Framework :: AWS CDK :: 2",
        "Programming Language :: Python :: 3.11",
    } <= set(classifiers)
    assert sorted(meta.get_all("Provides-Extra") or []) == ["dev", "stream-test"]
    requires = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    heavy = {"torch", "runai-model-streamer"}
    # torch and the streamer are the stream-test extra only: not installed by the library or dev.
    for requirement in requires:
        if canonicalize_name(requirement.name) in heavy:
            assert requirement.marker is not None
            assert requirement.marker.evaluate({"extra": "stream-test"})
            assert not requirement.marker.evaluate({"extra": "dev"})
            assert not requirement.marker.evaluate({"extra": ""})
    with zipfile.ZipFile(built_wheel.wheel) as archive:
        names = set(archive.namelist())
    assert "mlcc_constructs/py.typed" in names
    assert f"mlcc_constructs-{meta['Version']}.dist-info/licenses/LICENSE" in names
    assert "mlcc_constructs/examples/plugins/toyserve/manifest.json" in names


def test_the_locks_keep_torch_out_of_the_default_install() -> None:
    lock = (REPO / "requirements.lock").read_text(encoding="utf-8")
    stream = (REPO / "requirements-stream-test.lock").read_text(encoding="utf-8")
    pinned = {canonicalize_name(line.split("==")[0]) for line in lock.splitlines() if "==" in line}
    extra = {canonicalize_name(line.split("==")[0]) for line in stream.splitlines() if "==" in line}
    assert {"torch", "runai-model-streamer", "runai-model-streamer-s3"} <= extra
    assert not pinned & extra
    assert {"build", "twine"} <= pinned  # this test module's tools


# -- the wheel in a fresh venv -------------------------------------------------------------------


def _closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions ``requirements`` need (markers and extras followed), each
    checked against the version range that asks for it."""
    found: dict[tuple[str, frozenset[str]], metadata.Distribution] = {}
    todo = [(Requirement(r), frozenset[str]()) for r in requirements]
    while todo:
        requirement, extras = todo.pop()
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": e}) for e in (extras or {""})
        ):
            continue
        try:
            installed = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{requirement}: declared, and not installed by requirements.lock")
        assert requirement.specifier.contains(installed.version, prereleases=True), (
            f"{requirement}: requirements.lock installs {installed.version}"
        )
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in found:
            continue
        found[key] = installed
        todo += [(Requirement(r), frozenset(requirement.extras)) for r in installed.requires or []]
    unique = {canonicalize_name(d.metadata["Name"]): d for d in found.values()}
    return [unique[name] for name in sorted(unique)]


def _link(distribution: metadata.Distribution, site: Path) -> int:
    """Symlink ``distribution``'s installed files (its RECORD) into ``site``; how many."""
    count = 0
    for file in distribution.files or []:
        if file.parts[0] == ".." or "__pycache__" in file.parts:
            continue  # scripts in bin/, and bytecode the venv's interpreter writes itself
        source = Path(str(distribution.locate_file(file)))
        target = site / file
        if target.exists() or not source.exists():
            continue  # a namespace package's shared __init__, or a file RECORD lists but lacks
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
        count += 1
    return count


TEAM_APP = '''\
"""A team's stack: a ServedModel on its existing EKS cluster (imported), nothing else."""
import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks, aws_iam as iam

from mlcc_constructs import (
    DeploymentSpec, RenderContext, ServedModel, ServedModelProps, ServingCluster, prepare,
)

ACCOUNT, REGION = "123456789012", "us-east-1"
CIDRS = {"internal": ["10.9.1.0/24", "10.9.2.0/24"]}

app = cdk.App()
stack = cdk.Stack(app, "TeamServing", env=cdk.Environment(account=ACCOUNT, region=REGION))
kubectl = eks.KubectlProvider.from_kubectl_provider_attributes(
    stack, "Kubectl",
    service_token=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:team-kubectl",
    role=iam.Role.from_role_arn(stack, "KubectlRole", f"arn:aws:iam::{ACCOUNT}:role/kubectl"),
)
vpc = ec2.Vpc.from_vpc_attributes(
    stack, "Vpc", vpc_id="vpc-0123456789abcdef0", availability_zones=["us-east-1a", "us-east-1b"],
    private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
)
cluster = eks.Cluster.from_cluster_attributes(
    stack, "Cluster", cluster_name="team", kubectl_provider=kubectl, vpc=vpc,
    cluster_security_group_id="sg-0123456789abcdef0",
    cluster_endpoint="https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    cluster_certificate_authority_data="LS0tLS1CRUdJTi==",
)
serving = ServingCluster.from_cluster_attributes(
    stack, "Serving", cluster=cluster, load_balancer_cidrs=CIDRS,
    oidc_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        stack, "Oidc", f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.example.com/id/TEAM"
    ),
)
deployment = prepare(
    DeploymentSpec(  # sections as plain dicts: read as a spec file's are
        engine={"name": "vllm"}, model={"uri": "meta-llama/Llama-3.1-8B-Instruct"},
        compute={"instance_type": "ml.g5.2xlarge"}, name="llama", namespace="team-a",
    ),
    context=RenderContext(account=ACCOUNT, region=REGION, load_balancer_cidrs=CIDRS),
)
ServedModel(stack, "Llama", props=ServedModelProps(deployment=deployment, cluster=serving))
template = app.synth().get_stack_by_name("TeamServing").template
print(json.dumps({"module": mlcc_constructs.__file__, "template": template}))
'''


def test_the_wheel_installs_with_its_dependencies_and_synthesises_a_team_app(
    built_wheel: BuiltWheel, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    declared = _metadata(built_wheel.wheel).get_all("Requires-Dist") or []
    closure = _closure(declared)
    names = {canonicalize_name(d.metadata["Name"]) for d in closure}
    assert {"aws-cdk-lib", "cdk8s", "jsii", "pyyaml"} <= names
    assert not names & {"pytest", "moto", "torch", "mypy"}  # no test tool is a dependency
    assert sum(_link(d, site) for d in closure) > 1000
    # pip resolves the wheel's dependencies with no index and no configuration: each one must
    # already be there (the linked closure), or the install fails.
    env = {
        "PATH": os.environ["PATH"],
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
         "--no-cache-dir", str(built_wheel.wheel)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Successfully installed mlcc-constructs-0.2.0" in done.stdout
    version = subprocess.run(
        [str(venv / "bin" / "mlcc"), "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout == f"mlcc {mlcc_constructs.__version__}\n"
    # The team's folder: outside the checkout, no PYTHONPATH, the venv's own interpreter.
    team = tmp_path / "team"
    team.mkdir()
    (team / "app.py").write_text(
        "import json\nimport mlcc_constructs\n" + TEAM_APP, encoding="utf-8"
    )
    done = subprocess.run(
        [str(python), "app.py"],
        cwd=team,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
            "CDK_OUTDIR": str(team / "cdk.out"),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["module"] == str(site / "mlcc_constructs" / "__init__.py")
    resources = out["template"]["Resources"]
    types = sorted({r["Type"] for r in resources.values()})
    assert MANIFEST in types
    manifests = [
        json.loads(r["Properties"]["Manifest"])
        for r in resources.values()
        if r["Type"] == MANIFEST and isinstance(r["Properties"]["Manifest"], str)
    ]
    kinds = {(o["kind"], o["metadata"]["name"]) for m in manifests for o in m}
    assert {("Deployment", "llama"), ("Service", "llama"), ("NetworkPolicy", "llama")} <= kinds
