"""``make bench`` sections at fleet size: the CDK app with N generated deployments against the
plain-CDK peer (``benchmarks/plain_cdk_peer.py``), and the reviewer's loop (synth and ``mlcc
diff-guard`` of a change to one deployment, with and without the ``deployments`` selection).

Both run whole processes (``benchmarks/_workers.py``) as ``cdk synth`` runs ``python app.py``,
interleaved, and report wall time, CPU time (user + system of the process tree: the work done,
whatever else the machine runs) and the peak resident memory of the tree (Python and node).
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks._measure import (
    MLCC_SCRIPT,
    PYTHON,
    WORKERS,
    Figure,
    load_average,
    measure_processes,
    run_process,
)

RSS_LIMIT_MIB = 2048
MARGINAL_LIMIT = 1.5  # issue 39, against the peer doing the same work
LOOP_LIMIT = 2.0
CHANGED = "bench-0"
"""The deployment the reviewer's loop changes (its ``env``), and selects."""


def _slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope: the marginal cost per deployment."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    numerator = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return numerator / sum((x - mean_x) ** 2 for x, _ in points)


def _stack(index: int = 0) -> str:
    """The serving stack of generated deployment ``index`` (benchmarks/specs.py)."""
    return f"mlcc-dev-serving-eks-bench-bench-{index}"


def _marginals(figures: Mapping[str, Figure], label: str, sizes: Sequence[int]) -> dict[str, float]:
    """Per extra deployment: wall ms, CPU ms and MiB (slopes over ``sizes``)."""
    picked = list(zip(sizes, (figures[f"{label}, {size}"] for size in sizes), strict=True))
    return {
        "wall_ms": round(_slope([(n, f.median) for n, f in picked]) * 1000, 2),
        "cpu_ms": round(_slope([(n, statistics.median(f.cpu)) for n, f in picked]) * 1000, 2),
        "mib": round(_slope([(n, statistics.median(f.peak_mib)) for n, f in picked]), 3),
    }


def fleet_synth(runs: int, sizes: Sequence[int]) -> dict[str, Any]:
    """The app with N generated deployments (every stack, the gates, dist/) against the
    plain-CDK peer applying the same objects, one stack each; the objects proven equal first."""
    from benchmarks.plain_cdk_peer import check_same_work

    work = Path(tempfile.mkdtemp(prefix="mlcc-fleet-"))
    commands: dict[str, Sequence[str]] = {}
    for size in sizes:
        objects = work / f"objects-{size}.json"
        run_process([PYTHON, WORKERS, "peer-objects", str(size), str(objects)])
        commands[f"the app, {size}"] = [PYTHON, WORKERS, "fleet", str(size), str(work / "app")]
        commands[f"plain CDK peer, {size}"] = [
            PYTHON, WORKERS, "peer", str(objects), str(work / "peer"),
        ]  # fmt: skip
    # prove the work equal (the smallest and the largest size) before timing anything
    work_per_deployment: dict[str, int] = {}
    for size in (min(sizes), max(sizes)):
        run_process(commands[f"the app, {size}"])
        run_process(commands[f"plain CDK peer, {size}"])
        stacks = [_stack(index) for index in range(size)]
        work_per_deployment = check_same_work(work / "app" / "cdk.out", work / "peer", stacks)
    load = load_average()
    figures = measure_processes(commands, runs)
    load_after = load_average()
    shutil.rmtree(work, ignore_errors=True)
    ours = _marginals(figures, "the app", sizes)
    peer = _marginals(figures, "plain CDK peer", sizes)
    ratio_cpu = ours["cpu_ms"] / peer["cpu_ms"]
    ratio_wall = ours["wall_ms"] / peer["wall_ms"]
    peak = statistics.median(figures[f"the app, {max(sizes)}"].peak_mib)
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "marginal_per_deployment": {"the app": ours, "plain CDK peer": peer},
        "marginal_ratio_cpu": round(ratio_cpu, 2),
        "marginal_ratio_wall": round(ratio_wall, 2),
        f"peak_mib_at_{max(sizes)}": round(peak, 1),
        "resources_per_deployment_both": work_per_deployment,
        "load_average": load,
        "load_average_after": load_after,
        "target": f"marginal CPU per deployment <= {MARGINAL_LIMIT}x the peer's; peak RSS at "
        f"1,000 deployments <= {RSS_LIMIT_MIB} MiB (sizes {','.join(map(str, sizes))})",
        "met": ratio_cpu <= MARGINAL_LIMIT and max(sizes) >= 1000 and peak <= RSS_LIMIT_MIB,
    }


def _expectation(before: Path, after: Path, out: Path) -> None:
    """The declared change set of ``before`` -> ``after`` (diff-guard's ``--expect`` file):
    each resource that differs, modified in the properties that differ."""
    old = json.loads(before.read_text())["Resources"]
    new = json.loads(after.read_text())["Resources"]
    resources: dict[str, Any] = {}
    for logical_id in sorted(set(old) | set(new)):
        if logical_id not in new or logical_id not in old:
            raise SystemExit(f"bench: the loop's change adds or removes {logical_id}")
        if old[logical_id] == new[logical_id]:
            continue
        a, b = old[logical_id].get("Properties", {}), new[logical_id].get("Properties", {})
        entry: dict[str, Any] = {
            "type": new[logical_id]["Type"],
            "change": "modified",
            "properties": sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)),
        }
        resources[logical_id] = entry
    if not resources:
        raise SystemExit("bench: the loop's change changes no resource")
    out.write_text(
        json.dumps({"description": "bench: one deployment's env", "resources": resources})
    )


def reviewers_loop(runs: int, size: int) -> dict[str, Any]:
    """Synth and ``mlcc diff-guard`` of a change to one deployment (its env) in a ``size``
    deployment app, whole and with ``-c deployments=<it>``, against the one-deployment app."""
    work = Path(tempfile.mkdtemp(prefix="mlcc-loop-"))
    stack = f"{_stack()}.template.json"
    variants = {"the one-deployment app": (1, None), f"{size} deployments": (size, None),
                f"{size} deployments, -c deployments={CHANGED}": (size, CHANGED)}  # fmt: skip
    commands: dict[str, Sequence[str]] = {}
    for label, (count, selection) in variants.items():
        before, after = work / f"before-{count}", work / f"after-{label}"
        if not before.is_dir():  # the app as deployed: every stack, before the change
            run_process([PYTHON, WORKERS, "fleet", str(count), str(before)])
        synth = [PYTHON, WORKERS, "fleet", str(count), str(after), selection or "", CHANGED]
        run_process(synth)
        _expectation(before / "cdk.out" / stack, after / "cdk.out" / stack, work / "expect.json")
        guard = [str(MLCC_SCRIPT), "diff-guard", str(before / "cdk.out" / stack),
                 str(after / "cdk.out" / stack), "--expect", str(work / "expect.json")]  # fmt: skip
        run_process(guard)  # the declared change passes before anything is timed
        commands[label] = ["sh", "-c", '"$@" && exec ' + " ".join(f"'{a}'" for a in guard),
                           "sh", *synth]  # fmt: skip
    load = load_average()
    figures = measure_processes(commands, runs)
    load_after = load_average()
    shutil.rmtree(work, ignore_errors=True)
    base = figures["the one-deployment app"]
    ratios = {
        label: {
            "wall": round(f.median / base.median, 2),
            "cpu": round(statistics.median(f.cpu) / statistics.median(base.cpu), 2),
        }
        for label, f in figures.items()
        if f is not base
    }
    selected = ratios[f"{size} deployments, -c deployments={CHANGED}"]
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "ratio_to_one_deployment_app": ratios,
        "load_average": load,
        "load_average_after": load_after,
        "target": f"synth + diff-guard of one changed deployment at {size} deployments with the "
        f"selection <= {LOOP_LIMIT}x the one-deployment app (CPU)",
        "met": selected["cpu"] <= LOOP_LIMIT and size >= 1000,
    }


def cdk_validation(runs: int, sizes: Sequence[int]) -> dict[str, Any]:
    """What CDK's built-in CloudFormation template validation costs the app (aws-cdk-lib's
    ``CloudFormationValidatePlugin``, on unless ``CDK_VALIDATION=false``, which ``cdk synth
    --no-validation`` and ``make synth FAST=1`` set): the app with it and without it."""
    work = Path(tempfile.mkdtemp(prefix="mlcc-validation-"))
    commands: dict[str, Sequence[str]] = {}
    for size in sizes:
        app = [PYTHON, WORKERS, "fleet", str(size), str(work / "app")]
        commands[f"validation on, {size}"] = app
        commands[f"CDK_VALIDATION=false, {size}"] = ["env", "CDK_VALIDATION=false", *app]
    load = load_average()
    figures = measure_processes(commands, runs)
    load_after = load_average()
    shutil.rmtree(work, ignore_errors=True)
    shares = {}
    for size in sizes:
        on, off = figures[f"validation on, {size}"], figures[f"CDK_VALIDATION=false, {size}"]
        cpu_on, cpu_off = statistics.median(on.cpu), statistics.median(off.cpu)
        shares[str(size)] = {
            "cpu_share": round(1 - cpu_off / cpu_on, 3),
            "cpu_seconds": round(cpu_on - cpu_off, 2),
            "peak_mib": round(statistics.median(on.peak_mib) - statistics.median(off.peak_mib)),
        }
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "validation_cost": shares,
        "load_average": load,
        "load_average_after": load_after,
        "target": "reported (make synth FAST=1 skips it for the edit loop)",
        "met": True,
    }
