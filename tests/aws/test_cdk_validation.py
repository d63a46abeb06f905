"""CDK's built-in CloudFormation validation, run once over the app as ``cdk synth`` builds it:
it passes (no violation, only the acknowledged ones) and changes no template. The reference app
(the reference set with HyperPod: every kind of resource the app makes). Every other
synth in the suite skips it (tests/conftest.py sets ``CDK_VALIDATION=false``), as ``make synth
FAST=1`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests._cdk_app import REPO, cdk_context, synthesised

SYNTH = """
import json, sys
import aws_cdk as cdk
from app import build_app
context = json.loads(sys.argv[2])
build_app(cdk.App(context=context, outdir=sys.argv[1])).synth()
"""


def test_the_app_passes_cdk_validation_and_it_changes_no_template(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CDK_VALIDATION"}  # validation on
    out = tmp_path / "cdk.out"
    done = subprocess.run(
        [sys.executable, "-c", SYNTH, str(out), json.dumps(cdk_context())],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    assert plugin["pluginName"] == "CloudFormation Validate"
    assert (plugin["conclusion"], plugin["violations"]) == ("success", [])
    acknowledged = {v["acknowledgedId"] for v in plugin.get("suppressedViolations", [])}
    assert acknowledged <= {"CloudFormation-Validate::W3010"}  # literal AZs, on purpose
    unvalidated = synthesised()[1]
    validated = {
        path.name.removesuffix(".template.json"): json.loads(path.read_text())
        for path in sorted(out.glob("*.template.json"))
    }
    assert validated == {name: json.loads(text) for name, text in unvalidated.items()}
