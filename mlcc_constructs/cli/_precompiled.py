"""The ``mlcc`` process's dataclass methods, compiled ahead of time.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` (and a
frozen class's ``__setattr__``, ``__delattr__``) as source text and compiles it when the class
is created: about 90 us a method, 300 to 460 methods on the ``env`` and ``render`` paths, a
third of their start-up. :mod:`mlcc_constructs.cli._dataclass_code` holds the very same texts
as Python source (``tools/dataclass_code.py`` writes it; ``make regen``), so the interpreter
caches their bytecode like any module's; :func:`install` lets ``dataclasses`` take a method's
code from there when its text is one of those, and compile it as usual otherwise (a changed
class, a plugin's, another library's). The methods are the same: the same bytecode, run with
the class module's globals; only their code's file name and line numbers are the generated
module's instead of ``<string>``.

Only the ``mlcc`` command installs it (:mod:`mlcc_constructs.cli`), never an import of the
library by an app; and only where the module's bytecode is cached or may be (compiling its
source each time would cost three times what it saves: ``PYTHONDONTWRITEBYTECODE`` with no
current ``.pyc``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types
from importlib.util import MAGIC_NUMBER, cache_from_source
from typing import Any

_SOURCE = os.path.join(os.path.dirname(__file__), "_dataclass_code.py")

_FACTORY = "__create_fn__"
"""The name ``dataclasses._create_fn`` (Python 3.11, 3.12) gives the function its text
defines."""


def install() -> None:
    """Let ``dataclasses`` use the precompiled methods for the rest of the process."""
    if getattr(dataclasses, "exec", None) is not None:
        return  # installed already (or someone else's: leave it)
    if sys.dont_write_bytecode and not bytecode_current(_SOURCE):
        return
    from mlcc_constructs.cli._dataclass_code import CODE, TEXTS

    by_text = dict(zip(TEXTS, CODE, strict=True))

    def precompiled_exec(
        source: Any, globals: dict[str, Any] | None = None, locals: Any = None
    ) -> None:
        code = by_text.get(source) if isinstance(source, str) else None
        if code is None or globals is None or not isinstance(locals, dict):
            exec(source, globals, locals)  # what dataclasses does without this
            return
        locals[_FACTORY] = types.FunctionType(code, globals)

    # dataclasses calls the builtin `exec` by its global name: a module attribute shadows it
    dataclasses.exec = precompiled_exec  # type: ignore[attr-defined]


def bytecode_current(source: str) -> bool:
    """Whether the interpreter holds a current ``.pyc`` of ``source`` (the checks its import
    makes of a timestamp-based one; a hash-based one it checks itself)."""
    try:
        with open(cache_from_source(source), "rb") as cached:
            header = cached.read(16)
        stat = os.stat(source)
    except (OSError, NotImplementedError):
        return False
    if len(header) < 16 or header[:4] != MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") & 1:  # hash-based
        return True
    mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (8, 12))
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF
