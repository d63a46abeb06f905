"""``make bench``'s peer section: rendering N deployments against ``helm template`` of a chart
holding the same objects (:mod:`benchmarks.helm_peer`), at N = 1, 10, 100, 500.

Four renders of the same N deployments, each proven to give helm's objects before anything is
timed (:func:`~benchmarks.helm_peer.check_same_objects`), then measured as processes,
interleaved (A B C D A B C D ...), wall and CPU time:

- ``helm template`` of the chart, with N names in ``values.yaml``;
- ``mlcc render -f LIST --out`` (the CLI, as users run it);
- ``make synth``'s ``dist/`` writer alone (``_workers.py dist``);
- the library call (``_workers.py library``): one ``Renderer`` rendering the N deployments in
  one process and writing their files. Besides its process time, the worker reports the call's
  own CPU time (the renderer made, the list loaded, rendered and written), and a run that keeps
  the renderer reports its later calls: what a persistent process pays per list.

Reported: each render's time over helm's at every N; the kept renderer's call (in process, CPU)
over helm's process (CPU), whose target is <= 1/3 at N >= 100; and the marginal cost per
deployment (the least-squares slope of CPU time over N) of the CLI, the dist/ writer and the
library against helm's, whose target for the CLI is <= 0.25x.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._measure import (
    MLCC_SCRIPT,
    PYTHON,
    WORKERS,
    load_average,
    measure_processes,
    run_process,
    slope,
)

HELM, CLI, DIST, LIBRARY = "helm template", "mlcc render", "make synth dist/", "library call"
KEPT = 4
"""Calls of the kept-renderer run: the first (cold) and three timed ones."""
TOOLS = (CLI, DIST, LIBRARY)


def _fresh(folder: Path, command: Sequence[str]) -> list[str]:
    """``command`` after removing ``folder``, so every run does the same work."""
    return ["sh", "-c", f'rm -rf "{folder}" && exec "$@"', "sh", *command]


def _library_reports(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def peer(runs: int, sizes: Sequence[int]) -> dict[str, Any]:
    """The section (module doc)."""
    import yaml

    from benchmarks import helm_peer
    from benchmarks.specs import NAMESPACE, deployment_entries
    from mlcc_constructs.core.serving.prepare.container import hashed_config
    from mlcc_constructs.core.serving.renderer import Renderer
    from mlcc_constructs.core.serving.spec.context import RenderContext
    from mlcc_constructs.core.serving.spec.files import spec_from_mapping

    work = Path(tempfile.mkdtemp(prefix="mlcc-peer-"))
    helm = helm_peer.extract_helm(work)
    (template,) = deployment_entries(1, name=helm_peer.PLACEHOLDER)
    template["name"] = helm_peer.PLACEHOLDER
    loaded = spec_from_mapping(template, where="bench")
    rendered = Renderer().render(loaded.spec, context=RenderContext(profile="dev"))
    objects = rendered.objects
    assert all(o["metadata"].get("namespace", NAMESPACE) == NAMESPACE for o in objects)
    # The pods' config hash covers the served model name (the deployment's): helm hashes it too.
    container = rendered.prepared.container
    hashed = hashed_config(
        rendered.prepared.resolution, mounted=container.wrapper_files is not None
    )
    helm_peer.write_chart(work / "chart", objects, helm_peer.PLACEHOLDER, hashed)
    commands: dict[str, Sequence[str]] = {}
    outputs: dict[tuple[str, int], Path] = {}
    for size in sizes:
        entries = deployment_entries(size)
        (work / f"list-{size}.yaml").write_text(yaml.safe_dump(entries))
        helm_peer.write_values(work / f"values-{size}.yaml", [e["name"] for e in entries])
        out = {tool: work / f"{tool.split()[-1].strip('/')}-{size}" for tool in (HELM, *TOOLS)}
        outputs.update({(tool, size): folder for tool, folder in out.items()})
        values = work / f"values-{size}.yaml"
        commands[f"{HELM}, {size}"] = _fresh(
            out[HELM], helm_peer.helm_command(helm, work / "chart", values, out[HELM])
        )
        commands[f"{CLI}, {size}"] = [
            str(MLCC_SCRIPT), "render", "-f", str(work / f"list-{size}.yaml"),
            "--out", str(out[CLI]),
        ]  # fmt: skip
        commands[f"{DIST}, {size}"] = _fresh(
            out[DIST], [PYTHON, WORKERS, "dist", str(size), str(out[DIST])]
        )
        report = work / f"library-{size}.jsonl"
        commands[f"{LIBRARY}, {size}"] = _fresh(
            out[LIBRARY], [PYTHON, WORKERS, "library", str(size), str(out[LIBRARY]), str(report)]
        )
    for size in sizes:  # prove the objects are the same before timing anything
        for tool in (HELM, *TOOLS):
            run_process(commands[f"{tool}, {size}"])
        for tool in TOOLS:
            helm_peer.check_same_objects(outputs[(HELM, size)], outputs[(tool, size)])
    for size in sizes:  # only the timed runs' reports (warm-up included: measure_processes')
        (work / f"library-{size}.jsonl").unlink()
    load = load_average()
    figures = measure_processes(commands, runs)
    load_after = load_average()
    calls = {size: _library_reports(work / f"library-{size}.jsonl") for size in sizes}
    # The persistent process: a renderer kept across calls, each later call timed in process.
    for size in sizes:
        report = work / f"kept-{size}.jsonl"
        run_process(
            [PYTHON, WORKERS, "library", str(size), str(work / "kept"), str(report), str(KEPT)]
        )
        calls[size] += _library_reports(report)
    shutil.rmtree(work, ignore_errors=True)

    def cpu(name: str) -> float:
        return statistics.median(figures[name].cpu)

    ratios = {
        f"{tool}, {size}": round(
            figures[f"{tool}, {size}"].median / figures[f"{HELM}, {size}"].median, 3
        )
        for tool in TOOLS
        for size in sizes
    }
    cpu_ratios = {
        f"{tool}, {size}": round(cpu(f"{tool}, {size}") / cpu(f"{HELM}, {size}"), 3)
        for tool in TOOLS
        for size in sizes
    }
    call = {size: statistics.median(r["first_s"] for r in calls[size]) for size in sizes}
    kept = {size: statistics.median(s for r in calls[size] for s in r["later_s"]) for size in sizes}
    # The library call in process (CPU) against helm's whole process (CPU, its threads summed,
    # and wall): the kept renderer's call is what a persistent process pays per list; the
    # first call also makes the renderer and fills every cache.
    call_ratio = {str(size): round(kept[size] / cpu(f"{HELM}, {size}"), 3) for size in sizes}
    call_ratio_wall = {
        str(size): round(kept[size] / figures[f"{HELM}, {size}"].median, 3) for size in sizes
    }
    first_ratio = {str(size): round(call[size] / cpu(f"{HELM}, {size}"), 3) for size in sizes}
    marginal_ms = {
        tool: round(slope([(n, cpu(f"{tool}, {n}")) for n in sizes]) * 1000, 3)
        for tool in (HELM, *TOOLS)
    }
    marginal_ms["library call, kept renderer, in process"] = round(
        slope(list(kept.items())) * 1000, 3
    )
    marginal_ratio = {
        tool: round(ms / marginal_ms[HELM], 3) for tool, ms in marginal_ms.items() if tool != HELM
    }
    big = [size for size in sizes if size >= 100]
    call_met = all(call_ratio[str(size)] <= 1 / 3 for size in big)
    marginal_met = marginal_ratio[CLI] <= 0.25
    return {
        "figures": {f.name: f.summary() for f in figures.values()},
        "ratio_to_helm": ratios,
        "cpu_ratio_to_helm": cpu_ratios,
        "library_call_s": {str(size): round(kept[size], 4) for size in sizes},
        "library_first_call_s": {str(size): round(call[size], 4) for size in sizes},
        "library_call_to_helm_cpu": call_ratio,
        "library_call_to_helm_wall": call_ratio_wall,
        "library_first_call_to_helm_cpu": first_ratio,
        "marginal_ms_per_deployment_cpu": marginal_ms,
        "marginal_to_helm": marginal_ratio,
        "load_average": load,
        "load_average_after": load_after,
        "target": "library call (in process, CPU) <= 1/3 of helm template at N >= 100, and the "
        "CLI's marginal cost per deployment <= 0.25x helm's (CPU slope over N); objects "
        "proven equal to helm's first",
        "met": call_met and marginal_met,
        "met_library_call": call_met,
        "met_cli_marginal": marginal_met,
    }
