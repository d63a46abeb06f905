"""The "libraries vs ours" section of ``make bench``: each home-grown module of ``core/support``
against the well-kept libraries that do its job, end to end on the real paths and in process.

The rule: keep our module only where it is at least 1.5x faster end to end; an adopted library
must not slow the CLI's start-up either. An adopted library (the schema verdict: jsonschema-rs)
is re-checked against the others the same way, kept unless one is faster (1.0x). Per pair, on
the workloads where the module's work shows (``decisive``): ``mlcc render -f`` and the dist/
writer of 500 deployments for the schema checks and the YAML writer; ``mlcc env`` for the type
checks (every spec built is checked, and a spec costs microseconds, so the import is what
counts). The start-up guard: ``mlcc render`` of one deployment, ``mlcc validate`` of a plugin
folder and ``mlcc env``. Each ratio is the library's time over ours, the median of the pairs of
one round (all commands interleaved, twice ``--runs`` rounds). The decision reads CPU time (user
+ system: the work each process does, whatever else the shared machine runs meanwhile); the
wall-time ratio is printed beside it.

The candidates are pinned in ``benchmarks/candidates.txt`` and installed, when the
environment lacks them, into a scratch folder on the variant processes' ``PYTHONPATH`` (never
into the project's environment: they are not dependencies).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from benchmarks._measure import ENV, PYTHON, REPO, load_average, measure_processes
from benchmarks.specs import deployment_entries

VARIANTS = str(REPO / "benchmarks" / "_variants.py")
CANDIDATES = REPO / "benchmarks" / "candidates.txt"
TARGETS = ("eks", "hyperpod-eks")  # the Kubernetes strict schemas and the IEC rules, in turn
KEEP_AT = 1.5  # our own module against a library
KEEP_ADOPTED_AT = 1.0  # an adopted library against another one
SLOWER_START = 1.05  # a start-up ratio above this is a slower CLI (beyond the run-to-run noise)

# "schema_compile vs jsonschema-rs" is decided (2026-12-01: ours not 1.5x faster end to end,
# render 500 0.92-0.95, dist 500 0.88-0.91 library/ours): jsonschema-rs adopted, the figures at
# the top of core/support/schema_verdict.py; fastjsonschema is re-checked against it.
# pair -> (library variant, what `ours` runs, our module, decisive workloads, start-up workloads)
PAIRS: dict[str, tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = {
    "jsonschema-rs vs fastjsonschema": (
        "fastjsonschema", "jsonschema-rs", "core/support/schema_verdict.py",
        ("render 500", "dist 500"), ("render 1", "validate"),
    ),
    "yaml_emit vs CSafeDumper": (
        "CSafeDumper", "ours", "core/support/yaml_emit.py",
        ("render 500", "dist 500"), ("render 1", "render 100", "dist 100"),
    ),
    "typecheck vs typeguard": (
        "typeguard", "ours", "core/support/typecheck.py", ("env",), ("env", "render 500"),
    ),
    "typecheck vs beartype": (
        "beartype", "ours", "core/support/typecheck.py", ("env",), ("env", "render 500"),
    ),
}  # fmt: skip
MICRO = {"schema_verdict": "schema_ms_per_deployment", "yaml_emit": "yaml_ms_per_deployment",
         "typecheck": "typecheck_us_per_spec"}  # fmt: skip


def _candidates_env(work: Path) -> dict[str, str]:
    """The environment of every variant process: the pinned candidates importable."""
    modules = ("fastjsonschema", "beartype", "typeguard")
    if all(importlib.util.find_spec(name) for name in modules):
        return dict(ENV)
    site = work / "candidates"
    subprocess.run(
        [PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--target", str(site), "-r", str(CANDIDATES)],
        check=True, capture_output=True,
    )  # fmt: skip
    return {**ENV, "PYTHONPATH": str(site)}


def _workloads(work: Path) -> dict[str, list[str]]:
    """Each workload's command line after ``_variants.py VARIANT``."""
    plugin = work / "plugins" / "myengine"
    plugin.mkdir(parents=True)
    (plugin / "manifest.json").write_text(
        json.dumps(
            {"engine": "myengine", "env_var_prefix": "MYENG_", "entrypoint": "wrapper",
             "min_version": "1.0.0",
             "launch": {"command": ["myengine"], "model": "flag", "port": 9000,
                        "health_path": "/health"},
             "capability_map": {"model": {"suffix": "MODEL", "value_type": "valued"}}}
        )
    )  # fmt: skip
    workloads = {
        "env": ["mlcc", "env", "--engine", "vllm", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                "--instance-type", "ml.g5.12xlarge", "--lora"],
        "validate": ["mlcc", "validate", str(work / "plugins")],
    }  # fmt: skip
    for size in (1, 100, 500):
        listing = work / f"list-{size}.yaml"
        listing.write_text(yaml.safe_dump(deployment_entries(size, targets=TARGETS)))
        workloads[f"render {size}"] = ["mlcc", "render", "-f", str(listing), "--out", "OUT"]
    for size in (100, 500):
        workloads[f"dist {size}"] = ["dist", str(size), "OUT", ",".join(TARGETS)]
    return workloads


def _command(work: Path, variant: str, name: str, argv: list[str]) -> list[str]:
    out = work / "out" / f"{variant}-{name.replace(' ', '-')}"
    # each variant writes its own folder, replaced on every run (the same work each time)
    return ["sh", "-c", f'rm -rf "{out}" && exec "$@"', "sh", PYTHON, VARIANTS, variant,
            *[str(out) if arg == "OUT" else arg for arg in argv]]  # fmt: skip


def _same_output(work: Path, variant: str, name: str) -> bool:
    ours, theirs = (work / "out" / f"{v}-{name.replace(' ', '-')}" for v in ("ours", variant))
    files = sorted(p.name for p in ours.iterdir())
    same_names = files == sorted(p.name for p in theirs.iterdir())
    return same_names and all((ours / f).read_bytes() == (theirs / f).read_bytes() for f in files)


def _paired(library: list[float], ours: list[float]) -> float:
    """The median of the round-by-round ratios (a drift in the machine hits both alike)."""
    return round(statistics.median(a / b for a, b in zip(library, ours, strict=True)), 3)


def _micro(env: dict[str, str], variants: Sequence[str], runs: int) -> dict[str, dict[str, float]]:
    samples: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for _ in range(max(1, runs // 2)):
        for variant in variants:
            done = subprocess.run(
                [PYTHON, VARIANTS, variant, "micro"], cwd=REPO, env=env,
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            samples[variant].append(json.loads(done.stdout))
    return {
        v: {k: statistics.median(s[k] for s in found) for k in found[0]}
        for v, found in samples.items()
    }


def libraries_vs_ours(runs: int) -> dict[str, Any]:
    """Every pair's end-to-end ratios in one interleaved run, the micro figures beside them,
    and the decision the rule gives."""
    work = Path(tempfile.mkdtemp(prefix="mlcc-libs-"))
    env = _candidates_env(work)
    workloads = _workloads(work)
    wanted: dict[str, list[str]] = {"ours": []}  # variant -> its workloads
    for variant, _, _, decisive, start_up in PAIRS.values():
        for name in (*decisive, *start_up):
            for each in ("ours", variant):
                if name not in wanted.setdefault(each, []):
                    wanted[each].append(name)
    commands = {
        f"{variant}: {name}": _command(work, variant, name, workloads[name])
        for variant, names in wanted.items()
        for name in names
    }
    load = load_average()
    figures = measure_processes(commands, 2 * runs, env=env)
    written = [n for n in wanted["ours"] if not n.startswith(("env", "validate"))]
    same = {
        variant: all(_same_output(work, variant, n) for n in names if n in written)
        for variant, names in wanted.items()
    }
    micro = _micro(env, list(wanted), runs)
    shutil.rmtree(work, ignore_errors=True)
    pairs: dict[str, str] = {}
    kept: list[bool] = []
    for pair, (variant, incumbent, module, decisive, start_up) in PAIRS.items():
        pairs_of = {name: (figures[f"{variant}: {name}"], figures[f"ours: {name}"])
                    for name in wanted[variant]}  # fmt: skip
        ratio = {name: _paired(a.cpu, b.cpu) for name, (a, b) in pairs_of.items()}
        wall = {name: _paired(a.samples, b.samples) for name, (a, b) in pairs_of.items()}
        key = MICRO[module.rsplit("/", 1)[1].removesuffix(".py")]
        in_process = round(micro[variant][key] / micro["ours"][key], 2)
        keep_at = KEEP_AT if incumbent == "ours" else KEEP_ADOPTED_AT
        if min(ratio[n] for n in decisive) >= keep_at:
            decision = f"{incumbent}: >= {keep_at}x faster end to end"
        elif max(ratio[n] for n in start_up) > SLOWER_START:
            decision = f"{incumbent}: the library slows the CLI start-up"
        else:
            decision = "the library"
        kept.append(decision.startswith(incumbent))
        shown = ", ".join(f"{name} {ratio[name]} ({wall[name]})" for name in ratio)
        pairs[pair] = (f"{variant}/{incumbent} end to end, cpu (wall): {shown}; in process "
                       f"{in_process}; same bytes {same[variant]}; keep {decision}")  # fmt: skip
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        **pairs,
        "micro": {v: {k: round(x, 4) for k, x in m.items()} for v, m in micro.items()},
        "load_average": load,
        "target": f"ours kept only where >= {KEEP_AT}x faster end to end or a library slows "
        f"the CLI start-up, an adopted library unless another is faster ({KEEP_ADOPTED_AT}x) "
        "(each module's decision)",
        "met": all(kept) and all(same.values()),
    }
