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
library by an app.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

_FACTORY = "__create_fn__"
"""The name ``dataclasses._create_fn`` (Python 3.11, 3.12) gives the function its text
defines."""


def install() -> None:
    """Let ``dataclasses`` use the precompiled methods for the rest of the process."""
    if getattr(dataclasses, "exec", None) is not None:
        return  # installed already (or someone else's: leave it)
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
