"""The README's cdk8s example runs as written and emits the same objects as ``mlcc render``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from _cdk_app import manifest_object

from mlcc_constructs.core.serving.render import render
from tests._flat import flat_spec

README = Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_cdk8s_example_runs_and_matches_the_core(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "ServingChartProps" in b]
    (tmp_path / "example.py").write_text(block)
    # PYTHONPATH: the example imports this checkout, whatever copy the venv has installed.
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONPATH": str(README.parent),
    }
    subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, check=True)
    documents = list(yaml.safe_load_all((tmp_path / "dist" / "llama.k8s.yaml").read_text()))
    spec = flat_spec(
        engine="vllm",
        model="meta-llama/Llama-3.1-8B-Instruct",
        instance_type="ml.g6e.xlarge",
        name="llama",
        config_delivery="args",
    )
    assert documents == list(render(spec).objects)
    team = list(yaml.safe_load_all((tmp_path / "dist" / "team.k8s.yaml").read_text()))
    assert team == documents


def test_the_cdk8s_plus_example_runs_and_scales_the_library_deployment(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "HorizontalPodAutoscaler" in b]
    (tmp_path / "example.py").write_text(block)
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONPATH": str(README.parent),
    }
    subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, check=True)
    documents = list(yaml.safe_load_all((tmp_path / "dist" / "team.k8s.yaml").read_text()))
    by_kind = {d["kind"]: d for d in documents}
    assert by_kind["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llama",
    }
    assert by_kind["NetworkPolicy"]["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "llama"}
    }
    assert "replicas" not in by_kind["Deployment"]["spec"]  # the HPA owns the count


def test_the_serving_cluster_example_synthesises(tmp_path: Path) -> None:
    (block,) = [b for b in _python_blocks() if "ServingClusterProps" in b]
    (tmp_path / "example.py").write_text(block)
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONPATH": str(README.parent),
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
    }
    subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env, check=True)
    template = json.loads((tmp_path / "cdk.out" / "AcmeServing.template.json").read_text())
    types = [r["Type"] for r in template["Resources"].values()]
    assert types.count("AWS::EC2::VPC") == 1  # the team's VPC, not a second one
    manifests = [
        manifest_object(r)
        for r in template["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
    ]
    assert [m["kind"] for m in manifests if m["metadata"].get("namespace") == "team-a"][-5:] == [
        "Deployment",
        "Service",
        "Ingress",
        "Role",  # the readiness waiter's, after the objects
        "RoleBinding",
    ]
