"""The wheel ships the engines, targets, bucket descriptor and data files, and the package
finds them inside itself when installed (never relative to the working directory)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import BuiltWheel


def test_installed_wheel_renders_from_its_own_files(
    tmp_path: Path, built_wheel: BuiltWheel
) -> None:
    names = set(zipfile.ZipFile(built_wheel.wheel).namelist())
    for shipped in (
        "mlcc_constructs/engines/vllm/manifest.json",
        "mlcc_constructs/engines/manifest.schema.json",
        "mlcc_constructs/targets/hyperpod-eks/manifest.json",
        "mlcc_constructs/stacks/buckets.json",
        "mlcc_constructs/data/versions.json",
        "mlcc_constructs/data/grafana-dashboard.json",
        "mlcc_constructs/data/prices.json",
        "mlcc_constructs/ops/_cfn_diff.js",
        "mlcc_constructs/py.typed",
        "mlcc_constructs/examples/deployment.yaml",
        "mlcc_constructs/examples/cachebackend.yaml",
    ):
        assert shipped in names, shipped
    site = built_wheel.site
    code = (
        "import json, mlcc_constructs.core._resources as r; "
        "from mlcc_constructs import render, RenderContext; "
        "from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec; "
        "spec = DeploymentSpec(engine={'name': 'sglang'}, model={'uri': 'org/name'}, "
        "compute={'instance_type': 'g5.12xlarge'}, name='x', target='hyperpod-eks', "
        "lora={'enabled': True}); "
        "ctx = RenderContext(account='123456789012', region='us-east-1', profile='dev'); "
        "iec = render(spec, context=ctx).objects[0]; "
        "print(json.dumps([str(r.shipped_path('engines')), iec['spec']['tlsConfig']]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,  # neither the checkout nor its data folders are reachable from here
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    engines, tls = json.loads(out.stdout)
    assert engines == str(site / "mlcc_constructs" / "engines")
    assert tls == {
        "tlsCertificateOutputS3Uri": "s3://mlcc-tls-dev-123456789012-us-east-1/default/x"
    }
