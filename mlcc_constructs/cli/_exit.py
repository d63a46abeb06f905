"""How the ``mlcc`` process ends: the console script and ``python -m mlcc_constructs.cli``
run the command, flush its output and leave without interpreter teardown (freeing every
module and object costs a pure command 10 to 25 ms, for nothing the command needs).

Only the process entry (:func:`run_process`) exits this way; ``cli.main`` returns its code to
the tests that call it in-process. Teardown is kept (a normal :func:`sys.exit`) whenever it
has work to do: an ``atexit`` hook (``logging``, a ``TemporaryDirectory`` finalizer, the jsii
kernel), a thread still running, a profiler or tracer (cProfile, coverage, pdb) waiting to
write its results, or an output stream that failed to flush for a reason other than a reader
that went away.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import NoReturn

GC_THRESHOLD = 100_000
"""The collector's generation-0 threshold for the ``mlcc`` process (the default is 700)."""


def run_process(main: Callable[[], int]) -> NoReturn:
    """Run ``main`` as the whole process: its exit code, its output flushed, no teardown.

    A ``SystemExit`` from argparse (a usage error: 2; ``--help``, ``--version``: 0) ends the
    same way; any other exception (a bug's traceback, Ctrl-C) takes the interpreter's own path.
    """
    # Start-up allocates ~30,000 long-lived containers (modules, classes, dataclass
    # machinery) and next to no cyclic garbage: at the default threshold (700) the collector
    # runs 25 to 60 times for nothing. A command working through many deployments still
    # collects, every GC_THRESHOLD allocations.
    gc.set_threshold(GC_THRESHOLD, 10, 10)
    try:
        code = main()
    except SystemExit as stop:
        code = exit_code(stop)
    exit_now(code)


def exit_code(stop: SystemExit) -> int:
    """The status :class:`SystemExit` asks for, as the interpreter reads it: ``None`` is 0, an
    int is itself, anything else is printed on stderr and is 1."""
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def exit_now(code: int) -> NoReturn:
    """Flush stdout and stderr and end the process with ``code``, skipping teardown when it has
    nothing to do. A reader that closed the pipe early (``mlcc render | head -1``) is no
    error: what it did not read is dropped, silently, and the code stands."""
    for stream in (sys.stdout, sys.stderr):
        if not _flushed(stream):
            sys.exit(code)  # teardown retries the flush and reports it (exit 120)
    if _teardown_has_work():
        sys.exit(code)
    os._exit(code)


def _flushed(stream: object) -> bool:
    """Flush ``stream``; ``False`` when it failed for a reason teardown should report."""
    flush = getattr(stream, "flush", None)
    if flush is None:
        return True
    try:
        flush()
    except BrokenPipeError:
        # the reader went away: nothing more can be written, and teardown must not try
        _to_devnull(stream)
    except (OSError, ValueError):  # a full disk, a closed stream: teardown reports it
        return False
    return True


def _to_devnull(stream: object) -> None:
    """Point the stream's descriptor at /dev/null, so that a later flush (teardown's) has
    somewhere to go (the recipe of the Python docs for SIGPIPE)."""
    fileno = getattr(stream, "fileno", None)
    if fileno is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _teardown_has_work() -> bool:
    """An ``atexit`` hook is registered, a second thread runs (teardown joins it), or a
    profiler, tracer or debugger watches (``python -m cProfile -o FILE -m mlcc_constructs.cli``
    writes FILE once the module returns; coverage and pdb are tracers)."""
    import atexit

    if atexit._ncallbacks() > 0 or sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1
