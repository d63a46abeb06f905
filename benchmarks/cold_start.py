"""The cold start of the reference deployments (``examples/reference.yaml``) as ``mlcc
plan`` estimates it, for ``make bench`` (``--only cold``): estimates, not a timing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from benchmarks._measure import ENV, MLCC_SCRIPT, REPO

PLAN_OUT = REPO / "benchmarks" / "cold_start.json"
# The autoscaled reference entry's scaler needs a Prometheus workspace URL to render; the plan
# does not depend on it, so a well-formed stand-in is given (the app gives the cluster's).
PLAN_PROMETHEUS = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-bench"


def cold_start_plans(out: Path) -> dict[str, Any]:
    """``mlcc plan`` of every reference deployment (as ``make synth`` prepares them), its JSON
    written to ``out``; returns one summary row per deployment."""
    spec = "examples/reference.yaml"
    argv = [str(MLCC_SCRIPT), "plan", "-f", spec, "--prometheus-url", PLAN_PROMETHEUS]
    done = subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench: mlcc plan failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    report["command"] = f"mlcc plan -f {spec}"
    out.write_text(json.dumps(report, indent=2) + "\n")
    return {
        f"{p['name']} ({p['target']})": {
            "expected_seconds": p["expected_seconds"],
            "physical_limit_seconds": p["physical_limit"]["seconds"],
            "startup_probe_seconds": p["budget"]["startup_probe_seconds"],
            "ready_timeout_seconds": p["budget"]["ready_timeout_seconds"],
        }
        for p in report["plans"]
    }


def plan_lines(rows: dict[str, Any]) -> str:
    """The summary of :func:`cold_start_plans` as text."""
    lines = ["cold start (mlcc plan estimates, not measurements):"]
    for name, row in rows.items():
        lines.append(
            f"  {name}: expected {row['expected_seconds']} s, physical limit "
            f"{row['physical_limit_seconds']} s, startup probe {row['startup_probe_seconds']} s, "
            f"ready timeout {row['ready_timeout_seconds']} s"
        )
    return "\n".join(lines)
