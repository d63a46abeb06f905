"""The ``mlcc`` process's precompiled dataclass methods (``mlcc_constructs/cli/_precompiled.py``):
the generated module is current, each of its methods is the very code ``dataclasses`` would
compile, the command's classes take them, and a class whose text is not there is made as
``dataclasses`` makes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import CodeType

import pytest

from mlcc_constructs.cli import _dataclass_code

REPO = Path(__file__).resolve().parents[2]


def test_the_generated_module_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "dataclass_code.py"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _same_code(a: CodeType, b: CodeType) -> bool:
    """Equal but for where the code was written (file name, line numbers)."""
    fields = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_name")
    counts = ("co_argcount", "co_kwonlyargcount", "co_posonlyargcount", "co_flags")
    if any(getattr(a, f) != getattr(b, f) for f in (*fields, *counts)):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    return all(
        _same_code(x, y) if isinstance(x, CodeType) and isinstance(y, CodeType) else x == y
        for x, y in zip(a.co_consts, b.co_consts, strict=True)
    )


def test_each_method_is_the_code_dataclasses_compiles() -> None:
    assert len(_dataclass_code.TEXTS) == len(_dataclass_code.CODE) > 300
    for text, code in zip(_dataclass_code.TEXTS, _dataclass_code.CODE, strict=True):
        (compiled,) = [
            c
            for c in compile(text, "<string>", "exec", dont_inherit=True).co_consts
            if c is not None
        ]
        assert isinstance(compiled, CodeType)
        assert _same_code(code, compiled), text


def test_the_comparison_sees_another_method() -> None:
    first, second = _dataclass_code.CODE[:2]
    assert not _same_code(first, second)


_PROCESS = """
import dataclasses, sys
import mlcc_constructs.cli
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import Problem

print(DeploymentSpec.__init__.__code__.co_filename.rsplit("/", 1)[-1])
print(DeploymentSpec.__init__.__qualname__, DeploymentSpec.__init__.__module__)

@dataclasses.dataclass(frozen=True)
class NotGenerated:
    size: int = 1

print(NotGenerated.__init__.__code__.co_filename)
one, other = Problem(message="m", value=2), Problem(message="m", value=2)
print(repr(one), one == other, hash(one) == hash(other), repr(NotGenerated(3)))
try:
    one.message = "x"
except dataclasses.FrozenInstanceError as error:
    print(type(error).__name__, error)
"""


@pytest.mark.parametrize("precompiled", [True, False], ids=["mlcc", "plain"])
def test_the_commands_classes_take_them_and_behave_alike(precompiled: bool) -> None:
    script = _PROCESS if precompiled else _PROCESS.replace("import mlcc_constructs.cli\n", "")
    # Bytecode may be written (make unexports PYTHONDONTWRITEBYTECODE; a shell may set it, and
    # with no current .pyc the hook stays off: test_it_is_used_only_with_a_current_bytecode_cache)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == ("_dataclass_code.py" if precompiled else "<string>")
    assert lines[1:] == [
        "DeploymentSpec.__init__ mlcc_constructs.core.serving.spec.deployment",
        "<string>",  # a class the module does not hold: compiled as dataclasses does
        "Problem(message='m', where='', pointer='', value=2, allowed='', fix='') True True "
        "NotGenerated(size=3)",
        "FrozenInstanceError cannot assign to field 'message'",
    ]


def test_it_is_used_only_with_a_current_bytecode_cache(tmp_path: Path) -> None:
    import os
    import py_compile

    from mlcc_constructs.cli._precompiled import bytecode_current

    source = tmp_path / "module.py"
    source.write_text("X = 1\n")
    assert not bytecode_current(str(source))  # never compiled
    py_compile.compile(str(source))
    assert bytecode_current(str(source))
    os.utime(source, (1, 1))  # the source changed since
    assert not bytecode_current(str(source))
    py_compile.compile(str(source), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert bytecode_current(str(source))  # the interpreter checks a hash-based one itself
