"""``make bench``: every performance target of the project, each as a ratio to a floor or a
peer measured side by side in this one run. Prints one table and writes
``benchmarks/results.json``.

- CLI start-up of every command on every path (HF id and ``s3://``, with and without
  ``--plugin-dir``), as installed editable and from the wheel, against ``python -c pass``;
- the peer (``benchmarks/peer.py``): ``mlcc render`` of a spec list, ``make synth``'s ``dist/``
  and the library call (one ``Renderer``, many deployments in one process) against ``helm
  template`` of a chart holding the same objects, at N = 1, 10, 100, 500, with the marginal
  cost per deployment of each;
- synth: the CDK app (every stack, the gates, dist/) against an app with one empty Stack, warm
  and with an empty jsii package cache;
- the serving-side scale curve of the CDK app at 1, 10, 100, 200 deployments;
- fleet synth: the app with 1, 100, 1,000 generated deployments against a plain-CDK peer
  applying the same objects (``benchmarks/fleet.py``), the reviewer's loop (synth and ``mlcc
  diff-guard`` of one changed deployment, with and without ``-c deployments=``) and what CDK's
  built-in template validation costs;
- a serving fleet's synth (``benchmarks/serving_fleet.py``): per-stage time and memory of a
  ``ServingFleet`` at 1 and 30 stages;
- ``make test`` cold (a fresh clone: no .venv, no mypy cache, as CI) and warm, and the install;
- libraries vs ours: each home-grown module of ``core/support`` against the well-kept libraries
  that do its job, end to end (``benchmarks/libraries.py``);
- the cold start of the reference deployments (``examples/reference.yaml``) as ``mlcc
  plan`` estimates it, written to ``benchmarks/cold_start.json`` (estimates, not a timing: no
  target, nothing measured; ``--only cold`` runs it alone).

Every figure is the median of ``--runs`` measurements after a warm-up (the cold ones excepted),
with min and max; commands compared with each other are interleaved (A B A B ...), so drift on
the machine hits them alike, and each section records the machine's load average. Nothing here
asserts a time: targets are reported as met or missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._measure import (  # noqa: E402 (the repository first on the path)
    ENV,
    MLCC_SCRIPT,
    PYTHON,
    WORKERS,
    Figure,
    load_average as _load,
    measure_processes,
    slope as _slope,
)
from benchmarks.cold_start import PLAN_OUT, cold_start_plans, plan_lines  # noqa: E402
from benchmarks.fleet import cdk_validation, fleet_synth, reviewers_loop  # noqa: E402
from benchmarks.libraries import libraries_vs_ours  # noqa: E402
from benchmarks.peer import peer  # noqa: E402
from benchmarks.serving_fleet import serving_fleet_stages  # noqa: E402

# -- sections -----------------------------------------------------------------------------

MODEL_S3 = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
MODEL_HF = "meta-llama/Llama-3.1-8B-Instruct"


def _wheel_site(work: Path) -> Path:
    """The package as a wheel installs it (built and unpacked into ``work``)."""
    import zipfile

    subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
         str(work / "wheel"), str(REPO)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (work / "wheel").glob("mlcc_constructs-*.whl")
    site = work / "site"
    zipfile.ZipFile(wheel).extractall(site)
    return site


def cli_startup(runs: int) -> dict[str, Any]:
    """Every pure command on every path, editable (the console script) and from the wheel."""
    work = Path(tempfile.mkdtemp(prefix="mlcc-bench-"))
    plugins = work / "plugins" / "myengine"
    plugins.mkdir(parents=True)
    (plugins / "manifest.json").write_text(
        json.dumps(
            {"engine": "myengine", "env_var_prefix": "MYENG_", "entrypoint": "wrapper",
             "min_version": "1.0.0",
             "launch": {"command": ["myengine"], "model": "flag", "port": 9000,
                        "health_path": "/health"},
             "capability_map": {"model": {"suffix": "MODEL", "value_type": "valued"}}}
        )
    )  # fmt: skip
    site = _wheel_site(work)
    deployment = ["--instance-type", "ml.g5.12xlarge", "--lora"]
    paths: dict[str, tuple[str, list[str]]] = {
        "env s3": ("env", ["env", "--engine", "sglang", "--model", MODEL_S3, *deployment]),
        "env hf": ("env", ["env", "--engine", "vllm", "--model", MODEL_HF, *deployment]),
        "env plugin": (
            "env",
            [
                "env",
                "--plugin-dir",
                str(work / "plugins"),
                "--engine",
                "myengine",
                "--model",
                MODEL_HF,
                "--instance-type",
                "ml.g5.12xlarge",
            ],
        ),
        "argv s3": ("argv", ["argv", "--engine", "vllm", "--model", MODEL_S3, *deployment]),
        "argv hf": ("argv", ["argv", "--engine", "sglang", "--model", MODEL_HF, *deployment]),
        "validate": ("validate", ["validate", str(work / "plugins")]),
        "render s3": (
            "render",
            ["render", "--engine", "vllm", "--model", MODEL_S3, "--name", "x", *deployment],
        ),
        "render hf": (
            "render",
            ["render", "--engine", "vllm", "--model", MODEL_HF, "--name", "x", *deployment],
        ),
        "cache check": (
            "cache check",
            ["cache", "check", str(REPO / "examples" / "cachebackend.yaml")],
        ),
    }
    forms = {
        "editable": [str(MLCC_SCRIPT)],
        "wheel": ["env", f"PYTHONPATH={site}", PYTHON, "-m", "mlcc_constructs.cli"],
    }
    commands: dict[str, Sequence[str]] = {"python -c pass (floor)": [PYTHON, "-c", "pass"]}
    for form, prefix in forms.items():
        for path, (_, argv) in paths.items():
            commands[f"{path} ({form})"] = [*prefix, *argv]
    load = _load()
    figures = measure_processes(commands, runs)
    instructions = instruction_counts(
        {name: commands[name] for name in ("python -c pass (floor)", *INSTRUCTION_PATHS)}
    )
    shutil.rmtree(work, ignore_errors=True)
    floor = figures.pop("python -c pass (floor)")
    limits = {"env": 4, "argv": 4, "validate": 4, "render": 8, "cache check": 8}  # issue 26

    def limit(name: str) -> int:
        return limits[paths[name.rsplit(" (", 1)[0]][0]]

    floor_cpu = statistics.median(floor.cpu)
    ratios_cpu = {
        name: round(statistics.median(f.cpu) / floor_cpu, 2) for name, f in figures.items()
    }
    ratios_wall = {name: round(f.median / floor.median, 2) for name, f in figures.items()}
    floor_ir = instructions.pop("python -c pass (floor)", None)
    ratios_ir = {
        name: round(count / floor_ir, 2) for name, count in instructions.items() if floor_ir
    }
    missed = {
        f"{name}, {measure}": ratio
        for measure, ratios in (("cpu", ratios_cpu), ("instructions", ratios_ir))
        for name, ratio in ratios.items()
        if ratio > limit(name)
    }
    return {
        "figures": {f.name: f.summary() for f in (floor, *figures.values())},
        "ratios": ratios_cpu,
        "ratios_cpu": ratios_cpu,
        "ratios_instructions": ratios_ir or "not measured (no valgrind)",
        "ratios_wall": ratios_wall,
        "instructions": {"python -c pass (floor)": floor_ir, **instructions},
        "missed": missed,
        "load_average": load,
        "target": "env, argv, validate <= 4x and render, cache check <= 8x the floor, every "
        "path, in CPU time and in instructions (callgrind)",
        "met": not missed and bool(ratios_ir),
    }


INSTRUCTION_PATHS = ("env hf (editable)", "render hf (editable)", "env s3 (editable)",
                     "render s3 (editable)", "cache check (editable)")  # fmt: skip
"""The paths counted in instructions too (valgrind runs each about 50 times slower)."""


def instruction_counts(commands: dict[str, Sequence[str]]) -> dict[str, int]:
    """Instructions each command executes (``valgrind --tool=callgrind``: the same count
    whatever else the machine runs, unlike CPU time); empty without valgrind."""
    if shutil.which("valgrind") is None:
        print("bench: no valgrind: instruction counts left out", file=sys.stderr)
        return {}
    counts = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, command in commands.items():
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out",
                 *command],
                cwd=REPO, env=ENV, capture_output=True, text=True, check=False,
            )  # fmt: skip
            found = re.search(r"Collected : (\d+)", done.stderr)
            if done.returncode != 0 or found is None:
                raise SystemExit(f"bench: callgrind of {name} failed: {done.stderr[-500:]}")
            counts[name] = int(found.group(1))
    return counts


def synth_vs_floor(runs: int, *, empty_cache_too: bool = True) -> dict[str, Any]:
    """The app (every stack, the gates, dist/) against an app with one empty Stack, in the same
    process model; warm, and (``empty_cache_too``) with an empty jsii package cache (a first
    run)."""
    cold_root = Path(tempfile.mkdtemp(prefix="mlcc-jsii-"))
    cold = ["env", f"JSII_RUNTIME_PACKAGE_CACHE_ROOT={cold_root}"]

    def empty_cache(command: list[str]) -> list[str]:
        # a fresh cache folder per run: every run unpacks every jsii package again
        return ["sh", "-c", f'rm -rf "{cold_root}"/* && exec "$@"', "sh", *cold, *command]

    load = _load()
    commands: dict[str, Sequence[str]] = {
        "one empty Stack (floor)": [PYTHON, WORKERS, "floor"],
        "the app (every stack)": [PYTHON, WORKERS, "app"],
    }
    if empty_cache_too:
        commands["one empty Stack, empty jsii cache"] = empty_cache([PYTHON, WORKERS, "floor"])
        commands["the app, empty jsii cache"] = empty_cache([PYTHON, WORKERS, "app"])
    figures = measure_processes(commands, runs)
    shutil.rmtree(cold_root, ignore_errors=True)
    floor, app = figures["one empty Stack (floor)"], figures["the app (every stack)"]
    ratio = app.median / floor.median
    cold_ratio = (
        round(
            figures["the app, empty jsii cache"].median
            / figures["one empty Stack, empty jsii cache"].median,
            3,
        )
        if empty_cache_too
        else None
    )
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "ratio": round(ratio, 3),
        "ratio_empty_jsii_cache": cold_ratio,
        "load_average": load,
        "target": "<= 1.3",
        "met": ratio <= 1.3,
    }


def scale_curve(runs: int, sizes: Sequence[int]) -> dict[str, Any]:
    """The CDK app with 1..N deployments (one serving stack each): time, peak RSS of Python
    and node, and the marginal cost per deployment."""
    commands: dict[str, Sequence[str]] = {
        f"{size} deployments": [PYTHON, WORKERS, "app", str(size)] for size in sizes
    }
    load = _load()
    figures = measure_processes(commands, runs)
    points = [
        (size, figures[f"{size} deployments"].median,
         statistics.median(figures[f"{size} deployments"].peak_mib))
        for size in sizes
    ]  # fmt: skip
    per_ms = _slope([(n, s) for n, s, _ in points]) * 1000
    per_mib = _slope([(n, m) for n, _, m in points])
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "marginal_ms_per_deployment": round(per_ms, 1),
        "marginal_mib_per_deployment": round(per_mib, 3),
        "load_average": load,
        "target": "linear (reported)",
        "met": True,
    }


def _size_mib(folder: Path) -> float:
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return round(total / 2**20, 1)


def test_suite(runs: int) -> dict[str, Any]:
    """A fresh clone as CI gets it: the install (``make bootstrap``), then ``make test`` cold
    (no .venv before, no mypy cache), then warm."""
    clone = Path(tempfile.mkdtemp(prefix="mlcc-clone-")) / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    shared = REPO.parent / "shared"
    if shared.is_dir() and not (clone.parent / "shared").exists():
        (clone.parent / "shared").symlink_to(shared)
    env = {k: v for k, v in ENV.items() if k != "VIRTUAL_ENV"}

    def timed(target: str) -> tuple[float, int]:
        start = time.perf_counter()
        code = subprocess.run(
            ["make", "--no-print-directory", target], cwd=clone, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ).returncode  # fmt: skip
        return time.perf_counter() - start, code

    load = _load()
    install, code = timed("bootstrap")
    if code != 0:
        raise SystemExit("bench: make bootstrap failed in a fresh clone")
    cold, code = timed("test")
    if code != 0:
        raise SystemExit("bench: make test failed in a fresh clone: fix the suite first")
    warm = Figure("make test, warm", "s", [])
    for _ in range(runs):
        elapsed, code = timed("test")
        if code == 0:
            warm.samples.append(elapsed)
    sizes = {
        "venv_mib": _size_mib(clone / ".venv"),
        "node_modules_mib": _size_mib(clone / "node_modules"),
    }
    shutil.rmtree(clone.parent, ignore_errors=True)
    figures = [
        Figure("make bootstrap (install)", "s", [install]),
        Figure("make test, cold", "s", [cold]),
        warm,
    ]
    return {
        "figures": {f.name: f.summary() for f in figures},
        "install_size": sizes,
        "load_average": load,
        "target": "cold <= 240 s after the install; warm <= 90 s",
        "met": cold <= 240 and bool(warm.samples) and warm.median <= 90,
    }


# -- report ------------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    rows = [("benchmark", "measurement", "median", "min", "max", "cpu median", "peak MiB")]
    verdicts: dict[int, str] = {}  # row index -> the verdict line printed after it
    for section, result in results["benchmarks"].items():
        for name, figure in result["figures"].items():
            peak, cpu = figure.get("peak_mib_median"), figure.get("cpu_median")
            rows.append(
                (
                    section,
                    name,
                    f"{figure['median']:.3f} {figure['unit']}",
                    f"{figure['min']:.3f}",
                    f"{figure['max']:.3f}",
                    "" if cpu is None else f"{cpu:.3f} s",
                    "" if peak is None else f"{peak:.0f}",
                )
            )
        verdict = "met" if result["met"] else "MISSED"
        # in results.json only: the per-run details and the repeats of a ratio
        hidden = ("figures", "target", "met", "ratios", "micro", "ratios_wall", "instructions")
        headline = {k: v for k, v in result.items() if k not in hidden}
        own_line = [k for k, v in headline.items() if isinstance(v, str) and len(v) > 60]
        summary = "".join(f"{k}:\n       {headline.pop(k)}\n     " for k in own_line)
        summary += ", ".join(f"{k}={v}" for k, v in headline.items())
        verdicts[len(rows) - 1] = f"  => {summary}\n     target {result['target']}: {verdict}"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = zip(row, widths, strict=True)
        lines.append("  ".join(cell.ljust(width) for cell, width in cells).rstrip())
        if index in verdicts:
            lines.append(verdicts[index])
    return "\n".join(lines)


QUICK = {"runs": 1, "peer_sizes": "1,100", "scale_sizes": "1,10,20", "fleet_sizes": "1,20"}
"""``--quick`` (``make bench QUICK=1``, the edit loop's check, under 5 minutes): one measured
run per figure after the warm-up, smaller sizes; the sections that need a fresh clone or many
minutes (the test suite, libraries vs ours) and the whole-app variants that only restate a
figure (CDK's template validation, the empty jsii cache) are left to the full run, whose five
runs are the figures to quote."""
QUICK_SKIPS = ("test suite", "libraries vs ours", "cdk validation")
# A 30-stage fleet takes minutes to synthesise (benchmarks/serving_fleet.py): full run only.
QUICK_SKIPS += ("pipeline stages (ServingFleet)",)


def _previous(out: Path) -> dict[str, Any]:
    """The sections of an earlier run still in ``out`` (a partial run updates only its own)."""
    try:
        earlier = json.loads(out.read_text())
    except (OSError, ValueError):
        return {}
    sections = earlier.get("benchmarks") if isinstance(earlier, dict) else None
    return sections if isinstance(sections, dict) else {}


def _write(out: Path, results: dict[str, Any]) -> None:
    """Write ``results`` whole (a temporary file renamed), so a reader never sees half a file."""
    partial = out.with_suffix(".json.partial")
    partial.write_text(json.dumps(results, indent=2) + "\n")
    partial.replace(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=None, help="measured runs per figure (5)")
    parser.add_argument("--peer-sizes", default=None, help="deployments, peer (1,10,100,500)")
    parser.add_argument(
        "--scale-sizes", default=None, help="deployments, scale curve (1,10,100,200)"
    )
    parser.add_argument(
        "--fleet-sizes",
        default=None,
        help="deployments, fleet synth vs plain CDK (1,100,1000); the largest is the "
        "reviewer's loop's app",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK['runs']} run, peer sizes {QUICK['peer_sizes']}, scale sizes "
        f"{QUICK['scale_sizes']}, without {', '.join(QUICK_SKIPS)} and the empty jsii cache "
        "(make bench QUICK=1)",
    )
    parser.add_argument(
        "--only", default=None, help="comma-separated sections (default: all), e.g. peer,cli"
    )
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results.json"))
    parser.add_argument("--plan-out", default=str(PLAN_OUT), help="the cold-start plans' file")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else {"runs": 5, "peer_sizes": "1,10,100,500",
                                         "scale_sizes": "1,10,100,200",
                                         "fleet_sizes": "1,100,1000"}  # fmt: skip
    runs = args.runs or int(defaults["runs"])
    peer_sizes = [int(s) for s in (args.peer_sizes or str(defaults["peer_sizes"])).split(",")]
    scale_sizes = [int(s) for s in (args.scale_sizes or str(defaults["scale_sizes"])).split(",")]
    fleet_sizes = [int(s) for s in (args.fleet_sizes or str(defaults["fleet_sizes"])).split(",")]
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "cli start-up": lambda: cli_startup(runs),
        "peer (helm template)": lambda: peer(runs, peer_sizes),
        "synth vs floor": lambda: synth_vs_floor(runs, empty_cache_too=not args.quick),
        "serving scale curve": lambda: scale_curve(runs, scale_sizes),
        "fleet synth (plain CDK)": lambda: fleet_synth(runs, fleet_sizes),
        "reviewer's loop": lambda: reviewers_loop(runs, max(fleet_sizes)),
        "cdk validation": lambda: cdk_validation(runs, [1, min(100, max(fleet_sizes))]),
        "pipeline stages (ServingFleet)": lambda: serving_fleet_stages(runs, (1, 30)),
        "test suite": lambda: test_suite(runs),
        "libraries vs ours": lambda: libraries_vs_ours(runs),
    }
    wanted = set(args.only.split(",")) if args.only else None
    plans: dict[str, Any] | None = None
    if wanted is None or "cold" in wanted:
        print("bench: cold start plan ...", file=sys.stderr, flush=True)
        plans = cold_start_plans(Path(args.plan_out))
        if wanted == {"cold"}:
            print(plan_lines(plans))
            print(f"\nwrote {os.path.relpath(args.plan_out, REPO)}")
            return 0
    out = Path(args.out)
    benchmarks = _previous(out)
    results: dict[str, Any] = {
        "command": "make bench" + (" QUICK=1" if args.quick else ""),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "runs": runs,
        "benchmarks": benchmarks,
    }
    if plans is not None:
        results["cold_start_plan"] = {"file": os.path.relpath(args.plan_out, REPO), **plans}
    for name, step in steps.items():
        if wanted is not None and not any(name.startswith(w) for w in wanted):
            continue
        if args.quick and name in QUICK_SKIPS:
            print(f"bench: {name}: left to the full run (--quick)", file=sys.stderr)
            continue
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        section = step()
        section["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        section["runs"] = runs
        section["section_seconds"] = round(time.perf_counter() - started, 1)
        benchmarks[name] = section
        _write(out, results)  # section by section: a long run leaves what it measured
        print(f"bench: {name}: done in {section['section_seconds']} s", file=sys.stderr)
    _write(out, results)
    print(table(results))
    if plans is not None:
        print("\n" + plan_lines(plans))
    print(f"\nwrote {os.path.relpath(args.out, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
