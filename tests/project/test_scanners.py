"""checkov over what we render: its NetworkPolicy check (CKV2_K8S_6, "Minimize the admission of
pods which lack an associated NetworkPolicy") passes on every rendered Deployment, the reference
deployments of dist/ and an engine x model source x LoRA x delivery matrix on eks, and fails on
a Deployment whose NetworkPolicy is left out (the check is not vacuous).

checkov runs from its own venv (``.venv-scan``, ``requirements-scan.lock``), which ``make test``
installs; it is never imported here, only run, offline (``--skip-download``, no platform
mapping).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.support.yaml_output import to_yaml
from tests._flat import flat_spec
from tests.conftest import LLAMA_CPP_TEST_IMAGE, REPO

CHECKOV = REPO / ".venv-scan" / "bin" / "checkov"
NETWORK_POLICY_CHECK = "CKV2_K8S_6"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
SOURCES = (
    "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/",
    "meta-llama/Llama-3.1-8B-Instruct",
)


def _checkov(folder: Path) -> dict[str, list[str]]:
    """checkov's verdict of CKV2_K8S_6 on the Kubernetes files of ``folder``: the workloads
    (``<namespace>/<name>``) that passed and that failed. checkov judges a Deployment's pod
    template as a Pod named ``Pod.<namespace>.<deployment name>.<its labels>``."""
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV} is missing: run `make test` (it installs requirements-scan.lock)")
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"}
    result = subprocess.run(
        [
            str(CHECKOV),
            "--directory",
            str(folder),
            "--framework",
            "kubernetes",
            "--check",
            NETWORK_POLICY_CHECK,
            "--skip-download",
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    # checkov exits 1 when a check fails; anything else but 0/1 is a broken run.
    assert result.returncode in (0, 1), result.stderr[-2000:]
    report = json.loads(result.stdout)
    results = report["results"]
    judged = [
        c["resource"] for key in ("passed_checks", "failed_checks") for c in results.get(key, [])
    ]
    assert all(resource.startswith("Pod.") for resource in judged), judged
    return {
        outcome: sorted(
            "/".join(check["resource"].split(".")[1:3]) for check in results[f"{outcome}_checks"]
        )
        for outcome in ("passed", "failed")
    }


def _deployments(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(
        f"{o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in objects
        if o["kind"] == "Deployment"
    )


def _matrix() -> dict[str, list[dict[str, Any]]]:
    """Every eks cell that renders: engine x model source x LoRA x config delivery."""
    cells: dict[str, list[dict[str, Any]]] = {}
    engines = sorted(m.engine for m in builtin_engines())
    for engine, source, lora, delivery in itertools.product(
        engines, SOURCES, (False, True), ("env", "args")
    ):
        name = f"{engine}-{int(lora)}-{delivery}-{'s3' if source.startswith('s3') else 'hf'}"
        values: dict[str, Any] = {
            "engine": {"name": engine, "config_delivery": delivery},
            "model": {"uri": source},
            "compute": {"instance_type": "ml.g5.12xlarge"},
            "name": name,
            "namespace": "inference",
            "target": "eks",
            "lora": {"enabled": lora},
        }
        if engine == "llama-cpp":
            values["image"] = LLAMA_CPP_TEST_IMAGE
        try:
            cells[name] = list(render(flat_spec(**values), context=CONTEXT).objects)
        except MlccError:
            continue  # a refused cell renders nothing to scan
    return cells


def _write(folder: Path, files: dict[str, list[dict[str, Any]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, objects in files.items():
        (folder / f"{name}.k8s.yaml").write_text(to_yaml(objects), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def matrix() -> dict[str, list[dict[str, Any]]]:
    return _matrix()


def test_every_reference_deployment_has_its_network_policy(tmp_path: Path) -> None:
    from app import write_reference_manifests
    from tests._cdk_app import synthesised

    files = write_reference_manifests(synthesised()[0], outdir=str(tmp_path))
    objects = [d for f in files for d in yaml.safe_load_all(Path(f).read_text()) if d]
    deployments = _deployments(objects)
    assert deployments  # dist/ holds the eks reference deployments
    assert _checkov(tmp_path) == {"passed": deployments, "failed": []}


def test_every_rendered_deployment_of_the_matrix_passes(
    matrix: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    deployments = _deployments([o for objects in matrix.values() for o in objects])
    assert len(deployments) == len(matrix) >= 2 * len(builtin_engines())  # not vacuous
    assert _checkov(_write(tmp_path, matrix)) == {"passed": deployments, "failed": []}


def test_a_deployment_without_its_network_policy_fails(
    matrix: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    first, *rest = sorted(matrix)
    stripped = [o for o in matrix[first] if o["kind"] != "NetworkPolicy"]
    assert len(stripped) == len(matrix[first]) - 1
    files = {first: stripped, **{name: matrix[name] for name in rest[:1]}}
    verdict = _checkov(_write(tmp_path, files))
    assert verdict == {"passed": _deployments(matrix[rest[0]]), "failed": _deployments(stripped)}
