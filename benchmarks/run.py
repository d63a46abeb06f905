"""``make bench``: synth cost against the jsii floor, core throughput, the scale curve, CLI
start-up and the test suite's wall time. Prints one table and writes ``benchmarks/results.json``.

Every figure is the median of ``--runs`` (default 5) measurements after one warm-up, with min
and max, and every ratio compares figures measured side by side in this one run (these
machines are noisy, so absolute seconds from different runs are not comparable). Nothing
here asserts a time: the targets are reported as met or missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PYTHON = sys.executable
WORKERS = str(REPO / "benchmarks" / "_workers.py")
PAGE = os.sysconf("SC_PAGE_SIZE")
# Measured as installed code runs: with .pyc files (the warm-up run writes them into the
# git-ignored __pycache__ folders), so PYTHONDONTWRITEBYTECODE from `make` is dropped here.
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
}
# `mlcc` as users run it: the console script pip installs next to the interpreter.
MLCC_SCRIPT = Path(PYTHON).parent / "mlcc"


@dataclass
class Figure:
    """Median, min and max of the samples of one measurement."""

    name: str
    unit: str
    samples: list[float]
    peak_mib: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "unit": self.unit,
            "median": round(self.median, 4),
            "min": round(min(self.samples), 4),
            "max": round(max(self.samples), 4),
            "runs": len(self.samples),
        }
        if self.peak_mib:
            result["peak_mib_median"] = round(statistics.median(self.peak_mib), 1)
        return result


# -- measuring processes -----------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(c) for c in handle.read().split()]
    except OSError:
        pass
    return found


def _tree_rss(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/statm") as handle:
                total += int(handle.read().split()[1]) * PAGE
        except OSError:
            continue
        stack += _children(current)
    return total


def run_process(command: Sequence[str], *, check: bool = True) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of the whole process tree.

    The main thread only waits, so the wall time is exact; a sampler thread sums the resident
    memory of the tree (Python and the jsii node child) every 5 ms.
    """
    peak = 0
    done = threading.Event()

    def sample(pid: int) -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(pid))
            done.wait(0.005)

    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL)
    sampler = threading.Thread(target=sample, args=(process.pid,), daemon=True)
    sampler.start()
    process.wait()
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    if check and process.returncode != 0:
        raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(command)}")
    return elapsed, peak / 2**20


def measure_processes(
    commands: dict[str, Sequence[str]], runs: int, unit: str = "s"
) -> dict[str, Figure]:
    """Interleave the commands (A B A B ...) so drift on the machine hits them alike."""
    figures = {name: Figure(name, unit, []) for name in commands}
    for command in commands.values():  # warm-up: disk cache, .pyc files
        run_process(command)
    for _ in range(runs):
        for name, command in commands.items():
            elapsed, peak = run_process(command)
            figures[name].samples.append(elapsed)
            figures[name].peak_mib.append(peak)
    return figures


def measure_call(name: str, call: Callable[[], object], runs: int) -> Figure:
    call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return Figure(name, "s", samples)


# -- the five benchmarks -----------------------------------------------------------------


def synth_vs_floor(runs: int) -> dict[str, Any]:
    """The reference app against the empty apps, with CDK's defaults; and again with CDK's
    built-in CloudFormation validation plugin off on both sides (``cdk synth --no-validation``,
    ``CDK_VALIDATION=false``), whose WebAssembly engine dominates both processes."""
    off = ["env", "CDK_VALIDATION=false"]
    figures = measure_processes(
        {
            "empty CDK + cdk8s app (floor)": [PYTHON, WORKERS, "floor"],
            "reference app (every stack + charts)": [PYTHON, WORKERS, "reference_app"],
            "floor, CDK validation off": [*off, PYTHON, WORKERS, "floor"],
            "reference app, CDK validation off": [*off, PYTHON, WORKERS, "reference_app"],
        },
        runs,
    )
    floor, app, floor_off, app_off = figures.values()
    ratio = app.median / floor.median
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "ratio": round(ratio, 3),
        "ratio_cdk_validation_off": round(app_off.median / floor_off.median, 3),
        "target": "<= 1.3",
        "met": ratio <= 1.3,
    }


def core_throughput(runs: int, count: int) -> dict[str, Any]:
    from benchmarks.specs import deployment_specs
    from mlcc_constructs.core.context import RenderContext
    from mlcc_constructs.core.render import render

    context = RenderContext(account="123456789012", region="us-east-1", profile="dev")
    specs = deployment_specs(count, cache=True)

    def render_all(batch: Sequence[Any], validate: bool) -> None:
        for spec in batch:
            render(spec, context=context, validate=validate)

    plain = measure_call("render, no validation", lambda: render_all(specs, False), runs)
    ten = specs[:10]
    ten_plain = measure_call("10 deployments, no validation", lambda: render_all(ten, False), runs)
    ten_valid = measure_call("10 deployments, validated", lambda: render_all(ten, True), runs)
    sample = specs[:200]
    valid = measure_call("render, validated (200 specs)", lambda: render_all(sample, True), runs)
    per_second = count / plain.median
    validated_per_second = len(sample) / valid.median
    extra = ten_valid.median - ten_plain.median
    return {
        "figures": {f.name: f.summary() for f in (plain, valid, ten_plain, ten_valid)},
        "specs": count,
        "specs_per_second": round(per_second),
        "specs_per_second_validated": round(validated_per_second),
        "validation_extra_for_10_s": round(extra, 4),
        "target": ">= 5000 specs/s without validation; validation adds <= 0.5 s for 10",
        "met": per_second >= 5000 and extra <= 0.5,
    }


def scale_curve(runs: int, sizes: Sequence[int]) -> dict[str, Any]:
    """ServingCharts of 1..N deployments, and beside them the jsii floor of the same construct
    tree (empty ApiObjects), so the marginal cost can be split into jsii's and ours."""
    commands: dict[str, Sequence[str]] = {}
    for size in sizes:
        commands[f"{size} deployments"] = [PYTHON, WORKERS, "scale", str(size)]
        commands[f"{size} empty trees (jsii floor)"] = [PYTHON, WORKERS, "scale_floor", str(size)]
    figures = measure_processes(commands, runs)

    def marginal(suffix: str) -> tuple[float, float]:
        points = [
            (
                size,
                figures[f"{size} {suffix}"].median,
                statistics.median(figures[f"{size} {suffix}"].peak_mib),
            )
            for size in sizes
        ]
        seconds = _slope([(n, s) for n, s, _ in points])
        memory = _slope([(n, m) for n, _, m in points])
        return seconds * 1000, memory

    per_ms, per_mib = marginal("deployments")
    floor_ms, floor_mib = marginal("empty trees (jsii floor)")
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "marginal_ms_per_deployment": round(per_ms, 3),
        "marginal_mib_per_deployment": round(per_mib, 4),
        "jsii_floor_marginal_ms": round(floor_ms, 3),
        "jsii_floor_marginal_mib": round(floor_mib, 4),
        "target": "linear; <= 5 ms and <= 0.5 MiB per deployment",
        "met": per_ms <= 5 and per_mib <= 0.5,
    }


def _slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope: the marginal cost per deployment."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    numerator = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return numerator / sum((x - mean_x) ** 2 for x, _ in points)


def cli_startup(runs: int) -> dict[str, Any]:
    mlcc = [str(MLCC_SCRIPT)] if MLCC_SCRIPT.exists() else [PYTHON, "-m", "mlcc_constructs.cli"]
    options = ["--engine", "sglang", "--model", "s3://b/m/", "--instance-type", "ml.g5.12xlarge"]
    options += ["--lora", "--engine-version", "0.5.3"]
    figures = measure_processes(
        {
            "python -c pass (floor)": [PYTHON, "-c", "pass"],
            "mlcc env": [*mlcc, "env", *options],
            "mlcc argv": [*mlcc, "argv", *options],
        },
        runs,
    )
    floor, env, argv = figures.values()
    ratios = {"env": env.median / floor.median, "argv": argv.median / floor.median}
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "ratio_env": round(ratios["env"], 2),
        "ratio_argv": round(ratios["argv"], 2),
        "target": "<= 3x the interpreter floor",
        "met": max(ratios.values()) <= 3,
    }


def test_suite(runs: int) -> dict[str, Any]:
    """``make test`` (lint, then pytest). Work in progress in a shared tree can fail a run (a
    lint error stops it in milliseconds): failed runs are counted and retried, not timed."""
    command = ["make", "--no-print-directory", "test"]
    figure = Figure("make test", "s", [])
    failed, warmed = 0, False
    for _ in range(1 + 2 * runs):  # the first successful run warms up
        if len(figure.samples) == runs:
            break
        start = time.perf_counter()
        code = subprocess.run(
            command, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ).returncode
        elapsed = time.perf_counter() - start
        if code != 0:
            failed += 1
        elif warmed:
            figure.samples.append(elapsed)
        warmed = warmed or code == 0
    if not figure.samples:
        raise SystemExit("`make test` failed on every run: fix the suite first")
    return {
        "figures": {"make test": figure.summary()},
        "failed_runs": failed,
        "target": "< 180 s",
        "met": figure.median < 180,
    }


# -- report ------------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    rows = [("benchmark", "measurement", "median", "min", "max", "peak MiB")]
    verdicts: dict[int, str] = {}  # row index -> the verdict line printed after it
    for section, result in results["benchmarks"].items():
        for name, figure in result["figures"].items():
            peak = figure.get("peak_mib_median")
            rows.append(
                (
                    section,
                    name,
                    f"{figure['median']:.3f} {figure['unit']}",
                    f"{figure['min']:.3f}",
                    f"{figure['max']:.3f}",
                    "" if peak is None else f"{peak:.0f}",
                )
            )
        verdict = "met" if result["met"] else "MISSED"
        headline = {k: v for k, v in result.items() if k not in ("figures", "target", "met")}
        summary = ", ".join(f"{k}={v}" for k, v in headline.items())
        verdicts[len(rows) - 1] = f"  => {summary}\n     target {result['target']}: {verdict}"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = zip(row, widths, strict=True)
        lines.append("  ".join(cell.ljust(width) for cell, width in cells).rstrip())
        if index in verdicts:
            lines.append(verdicts[index])
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="measured runs per figure (>= 5)")
    parser.add_argument("--specs", type=int, default=2000, help="specs for core throughput")
    parser.add_argument("--sizes", default="1,10,100,500", help="scale curve sizes")
    parser.add_argument("--skip-suite", action="store_true", help="do not time `make test`")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results.json"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    benchmarks: dict[str, Any] = {}
    steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("cli start-up", lambda: cli_startup(args.runs)),
        ("core throughput", lambda: core_throughput(args.runs, args.specs)),
        ("synth vs floor", lambda: synth_vs_floor(args.runs)),
        ("scale curve", lambda: scale_curve(args.runs, sizes)),
    ]
    if not args.skip_suite:
        steps.append(("test suite", lambda: test_suite(args.runs)))
    for name, step in steps:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        benchmarks[name] = step()
    results = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "runs": args.runs,
        "benchmarks": benchmarks,
    }
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    print(f"\nwrote {os.path.relpath(args.out, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
