"""Where the test suite spends CPU, measured so that a loaded machine does not distort it.

Wall time on a shared 2-core machine scales with the load average; CPU time does not. Two tools:

* a pytest plugin: each test's CPU time, counting the test process and every process under it
  (the jsii node kernel, ``mlcc``/checkov/mypy subprocesses), plus each worker's whole session
  (start-up and collection included). Written per worker to ``$SUITE_PROFILE_OUT.<worker>.json``::

      PYTHONPATH=. SUITE_PROFILE_OUT=/tmp/prof .venv/bin/pytest -n 2 -p benchmarks.suite_profile

* a command runner that makes itself the child subreaper, so orphaned descendants are reaped by
  it and counted: ``python benchmarks/suite_profile.py run make test`` prints wall, user, sys
  and the load average before and after; ``python benchmarks/suite_profile.py summary /tmp/prof``
  sums the plugin's files by module.

Each reading of /proc costs about 2.5 ms of CPU, counted in the test it brackets (about 14 s
per 2,700 tests): compare runs that both had the plugin on. A process still running when a
test ends is counted up to that moment; CPU of a grandchild that outlives its parent and is
not reaped by this tree is lost (the runner catches those).
"""

from __future__ import annotations

import collections
import ctypes
import glob
import json
import os
import resource
import sys
import time
from typing import Any

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PR_SET_CHILD_SUBREAPER = 36


def _stat(pid: str) -> tuple[int, int] | None:
    """(parent pid, CPU ticks of the process and its reaped children) from /proc, or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), sum(int(value) for value in fields[11:15])


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds of ``root`` (this process by default) and every live descendant, each with
    the children it has reaped."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    ticks: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (found := _stat(name)) is not None:
            children[found[0]].append(int(name))
            ticks[int(name)] = found[1]
    total, pending = 0, [os.getpid() if root is None else root]
    while pending:
        pid = pending.pop()
        total += ticks.get(pid, 0)
        pending.extend(children.get(pid, []))
    return total / _CLOCK_TICKS


_rows: list[tuple[str, float, float]] = []
_started: dict[str, tuple[float, float]] = {}
_active = True


def pytest_configure(config: Any) -> None:
    """Off in the xdist controller: it sees the workers' reports, not their CPU, and each
    reading of /proc costs about 2.5 ms."""
    global _active
    controller = getattr(config.option, "numprocesses", None) and (
        "PYTEST_XDIST_WORKER" not in os.environ
    )
    _active = not controller


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _active:
        _started[nodeid] = (tree_cpu(), time.perf_counter())


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _active:
        cpu, wall = _started.pop(nodeid)
        _rows.append((nodeid, tree_cpu() - cpu, time.perf_counter() - wall))


def pytest_sessionfinish(session: Any) -> None:
    if not _active:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = os.environ.get("SUITE_PROFILE_OUT", "suite-profile")
    with open(f"{out}.{worker}.json", "w", encoding="utf-8") as handle:
        json.dump({"rows": _rows, "session_cpu": tree_cpu()}, handle)


def summary(prefix: str, top: int = 40) -> str:
    """The plugin's worker files summed: per module and the ``top`` tests, by CPU."""
    rows: list[tuple[str, float, float]] = []
    session = 0.0
    paths = sorted(glob.glob(f"{prefix}.*.json"))
    workers = [path for path in paths if not path.endswith(".main.json")]
    # Under xdist the controller sees the workers' reports, not their CPU: keep the workers'.
    for path in workers or paths:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        rows += [(row[0], row[1], row[2]) for row in data["rows"]]
        session += data["session_cpu"]
    cpu: dict[str, float] = collections.defaultdict(float)
    wall: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()
    for nodeid, seconds, elapsed in rows:
        module = nodeid.split("::")[0]
        cpu[module] += seconds
        wall[module] += elapsed
        count[module] += 1
    total = sum(cpu.values())
    lines = [f"tests {len(rows)}: {total:.1f} s CPU; worker sessions {session:.1f} s CPU"]
    lines += [
        f"{s:7.1f} s {100 * s / total:5.1f}%  wall {wall[m]:7.1f} s  n={count[m]:4d}  {m}"
        for m, s in sorted(cpu.items(), key=lambda item: -item[1])[:top]
    ]
    lines.append("")
    lines += [
        f"{s:7.2f} s  wall {w:6.2f} s  {n}" for n, s, w in sorted(rows, key=lambda r: -r[1])[:top]
    ]
    return "\n".join(lines)


def run(argv: list[str]) -> int:
    """Run ``argv`` as the child subreaper; print its tree's CPU and the load average."""
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    start, load = time.perf_counter(), os.getloadavg()[0]
    child = os.fork()
    if child == 0:
        os.execvp(argv[0], argv)
    code = 1
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stderr.write(
        f"wall {time.perf_counter() - start:.1f} s, user {usage.ru_utime:.1f} s, "
        f"sys {usage.ru_stime:.1f} s, cpu {usage.ru_utime + usage.ru_stime:.1f} s, "
        f"load {load:.1f} -> {os.getloadavg()[0]:.1f}, exit {code}\n"
    )
    return code


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        raise SystemExit(run(sys.argv[2:]))
    if sys.argv[1:2] == ["summary"]:
        print(summary(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 40))
        raise SystemExit(0)
    raise SystemExit("usage: suite_profile.py run CMD... | summary PREFIX [TOP]")
