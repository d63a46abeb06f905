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
import io
import os
import sys
from collections.abc import Callable
from typing import NoReturn

STDOUT = "stdout"
"""The file name an error writing the standard output carries (``mlcc: error: stdout: ...``)."""
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
    _whole_stdout()
    try:
        code = main()
    except SystemExit as stop:
        code = exit_code(stop)
    exit_now(code)


def stdout_error_text(error: OSError) -> str:
    """The one line of a failed write to stdout."""
    return (
        f"{STDOUT}: {error.strerror or error} (the output is incomplete; fix: free space, or "
        "write with --out where the command has it)"
    )


class _WholeWrites(io.RawIOBase):
    """A file descriptor whose every write is whole or raises. The OS may write part of a
    buffer (a disk filling up, a file-size limit) and Python's buffered writer then drops the
    rest without a word; writing the remainder again surfaces the error (ENOSPC, EFBIG)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except BrokenPipeError:
            raise  # the reader went away: not an error of ours (cli.main)
        except OSError as error:  # named, so the one error line says what could not be written
            raise OSError(error.errno, error.strerror, STDOUT) from error
        return len(data)


def _whole_stdout() -> None:
    """stdout over :class:`_WholeWrites`, with its encoding and line buffering kept."""
    stdout = sys.stdout
    if not isinstance(stdout, io.TextIOWrapper):
        return  # replaced by a caller (a test's capture): not ours to rewire
    try:
        fd = stdout.fileno()
    except (OSError, ValueError):
        return
    stdout.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(fd)),
        encoding=stdout.encoding,
        errors=stdout.errors,
        line_buffering=stdout.line_buffering,
    )


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
    error: what it did not read is dropped, silently, and the code stands. Output that could
    not be written (a full disk, a file-size limit) is: one ``mlcc: error:`` line and exit 1,
    never a success with the output cut short."""
    failed = _flush_error(sys.stdout)
    if failed is not None:
        _to_devnull(sys.stdout)  # the rest of the output is lost: teardown must not retry it
        print(f"mlcc: error: {stdout_error_text(failed)}", file=sys.stderr)
        code = code or 1
    if _flush_error(sys.stderr) is not None:
        _to_devnull(sys.stderr)
        code = code or 1
    if _teardown_has_work():
        sys.exit(code)
    os._exit(code)


def _flush_error(stream: object) -> OSError | None:
    """Flush ``stream``; the error when it failed for a reason other than a reader that went
    away (that one points the stream at /dev/null: nothing more can be written there)."""
    flush = getattr(stream, "flush", None)
    if flush is None:
        return None
    try:
        flush()
    except BrokenPipeError:
        _to_devnull(stream)
    except OSError as error:
        return error
    except ValueError:  # a closed stream: nothing of it is ours to report
        return None
    return None


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
