"""How ``make bench`` measures: whole processes as users run them, their wall time and the peak
resident memory of their process tree, interleaved (A B A B ...) when compared."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
WORKERS = str(REPO / "benchmarks" / "_workers.py")
PAGE = os.sysconf("SC_PAGE_SIZE")
# Measured as installed code runs: with .pyc files (the warm-up run writes them into the
# git-ignored __pycache__ folders), so a PYTHONDONTWRITEBYTECODE from the environment is dropped.
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
    cpu: list[float] = field(default_factory=list)  # user + system seconds, beside the wall

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
        if self.cpu:
            result["cpu_median"] = round(statistics.median(self.cpu), 4)
        return result


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


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


class Run(NamedTuple):
    """One finished process: wall seconds, peak resident MiB of its tree, CPU seconds."""

    wall: float
    peak_mib: float
    cpu: float


def run_process(
    command: Sequence[str], *, check: bool = True, env: Mapping[str, str] | None = None
) -> Run:
    """Wall seconds, peak resident memory (MiB) of the whole process tree and its CPU seconds.

    The main thread only waits, so the wall time is exact; a sampler thread sums the resident
    memory of the tree (Python and the jsii node child) every 5 ms. The CPU time (user and
    system, the kernel's accounting of the process and what it waited for) is the work done,
    whatever else the machine runs meanwhile.
    """
    peak = 0
    done = threading.Event()

    def sample(pid: int) -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(pid))
            done.wait(0.005)

    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=REPO, env=dict(ENV if env is None else env),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    sampler = threading.Thread(target=sample, args=(process.pid,), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    sampler.join()
    if check and process.returncode != 0:
        raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(command)}")
    return Run(elapsed, peak / 2**20, usage.ru_utime + usage.ru_stime)


def measure_processes(
    commands: Mapping[str, Sequence[str]],
    runs: int,
    unit: str = "s",
    *,
    env: Mapping[str, str] | None = None,
) -> dict[str, Figure]:
    """Interleave the commands (A B A B ...) so drift on the machine hits them alike; sample
    ``i`` of every figure comes from round ``i``."""
    figures = {name: Figure(name, unit, []) for name in commands}
    for command in commands.values():  # warm-up: disk cache, .pyc files
        run_process(command, env=env)
    for _ in range(runs):
        for name, command in commands.items():
            run = run_process(command, env=env)
            figures[name].samples.append(run.wall)
            figures[name].peak_mib.append(run.peak_mib)
            figures[name].cpu.append(run.cpu)
    return figures


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope: the marginal cost per deployment."""
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    numerator = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return numerator / sum((x - mean_x) ** 2 for x, _ in points)
