"""Record the keys and types vLLM's model loaders take in ``--model-loader-extra-config``, as
package data (``mlcc_constructs/data/loader_config/vllm/<version>.json``; issue 39).

Run it from the folder a release's wheel was unzipped into (its ``*.py`` files only), e.g.::

    pip download --no-deps vllm==0.31.0 -d /tmp/wheels
    unzip -q /tmp/wheels/vllm-0.31.0-*.whl 'vllm/*.py' -d /tmp/src/vllm-0.31.0
    cd /tmp/src/vllm-0.31.0 && python3 <repo>/tools/loader_config_facts.py 0.31.0 \\
        vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl \\
        > <repo>/mlcc_constructs/data/loader_config/vllm/0.31.0.json

It reads the source without running it (``ast``): the load format -> loader class map
(``vllm/model_executor/model_loader/__init__.py`` ``_LOAD_FORMAT_TO_MODEL_LOADER``) and each
loader's ``__init__``, and writes per loader the keys it takes when the set is closed (an
``allowed_keys`` set, or the keys it pops before refusing the rest, or none when it refuses any
extra config) with each key's JSON type: from the ``isinstance`` checks of the value (and the
least value its comparisons allow), else from the annotation of the attribute it is stored in or
the type of its default (then marked unchecked by the loader), else none. A loader without a
closed key set is listed as ``unrecorded``. Standard library only; not part of the package.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

LOADERS = Path("vllm/model_executor/model_loader")
MAP_NAME = "_LOAD_FORMAT_TO_MODEL_LOADER"
TYPES = {"bool": "boolean", "int": "integer", "str": "string"}


def _load_formats(init: ast.Module) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Loader class -> its load formats, and loader class -> its module."""
    modules = {
        alias.asname or alias.name: node.module or ""
        for node in init.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    formats: dict[str, list[str]] = {}
    for node in init.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if not (isinstance(target, ast.Name) and target.id == MAP_NAME):
            continue
        assert isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict)
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            assert isinstance(key, ast.Constant) and isinstance(value, ast.Name)
            formats.setdefault(value.id, []).append(str(key.value))
    return formats, {name: modules[name] for name in formats}


def _key_of(node: ast.AST) -> tuple[str, ast.AST | None] | None:
    """``extra_config["k"]``, ``.get("k"[, default])`` or ``.pop("k"[, default])``: the key and
    the default."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value), None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "pop")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value, node.args[1] if len(node.args) > 1 else None
    return None


def _minimum(test: ast.AST, name: str, negated: bool = False) -> int | None:
    """The least value a check of ``name`` lets through: ``name <= 0`` refused (or
    ``name > 0`` required, under a ``not``) -> 1."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _minimum(test.operand, name, not negated)
    if isinstance(test, ast.BoolOp):
        found = [m for v in test.values if (m := _minimum(v, name, negated)) is not None]
        return found[0] if found else None
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant | ast.UnaryOp)
    ):
        bound = ast.literal_eval(test.comparators[0])
        if not isinstance(bound, int):
            return None
        op = test.ops[0]
        refusing = not negated  # a plain test in an `if ...: raise` refuses
        if refusing:
            return {ast.LtE: bound + 1, ast.Lt: bound}.get(type(op))
        return {ast.Gt: bound + 1, ast.GtE: bound}.get(type(op))
    return None


def _isinstance_types(function: ast.FunctionDef, name: str) -> set[str]:
    """The types ``isinstance(name, T)`` tests in ``function``."""
    found = set()
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == name
            and isinstance(node.args[1], ast.Name)
        ):
            found.add(node.args[1].id)
    return found


def _annotation_type(annotation: ast.AST | None) -> str | None:
    text = ast.unparse(annotation) if annotation is not None else ""
    types = {t.strip() for t in text.split("|")} - {"None"}
    return TYPES.get(types.pop()) if len(types) == 1 else None


def _key_fact(
    function: ast.FunctionDef, cls: ast.ClassDef, key: str, checks: dict[str, ast.AST]
) -> dict[str, Any]:
    """The type (and least value) of ``key`` (module doc)."""
    constants = {
        t.id: n.value.value
        for n in cls.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    for node in ast.walk(function):
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        found = _key_of(value) if value is not None else None
        if found is None or found[0] != key:
            continue
        assert isinstance(node, ast.Assign | ast.AnnAssign)
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        if isinstance(target, ast.Name):
            types = _isinstance_types(function, target.id)
            if "int" in types:
                fact: dict[str, Any] = {"type": "integer"}
                tests = [t for n, t in checks.items() if n == target.id]
                minimum = next(
                    (m for t in tests if (m := _minimum(t, target.id)) is not None), None
                )
                return fact | ({"minimum": minimum} if minimum is not None else {})
            if types & set(TYPES):
                return {"type": TYPES[sorted(types & set(TYPES))[0]]}
        annotated = _annotation_type(node.annotation) if isinstance(node, ast.AnnAssign) else None
        if annotated is not None:
            return {"type": annotated, "note": "annotated; the loader does not check its type"}
        default = found[1]
        if isinstance(default, ast.Attribute) and default.attr in constants:
            default = ast.Constant(constants[default.attr])
        if isinstance(default, ast.Constant) and type(default.value).__name__ in TYPES:
            kind = TYPES[type(default.value).__name__]
            return {"type": kind, "note": "its default's type; the loader does not check it"}
    return {"type": None, "note": "the loader does not check or declare its type"}


def _checks(function: ast.FunctionDef) -> dict[str, ast.AST]:
    """Name -> the test of each ``if ...: raise`` (or ``if ... and ...: raise``) that names it."""
    found: dict[str, ast.AST] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            for name in {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}:
                found.setdefault(name, node.test)
    return found


def _keys(function: ast.FunctionDef) -> list[str] | None:
    """The closed key set of a loader's ``__init__`` (module doc), or ``None``."""
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "allowed_keys"
            and isinstance(node.value, ast.Set)
        ):
            return sorted(ast.literal_eval(node.value))
    pops = [
        found[0]
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "pop"
        and (found := _key_of(node)) is not None
    ]
    raises_on_rest = any(
        isinstance(node, ast.If)
        and any(isinstance(s, ast.Raise) for s in node.body)
        and "extra_config" in ast.unparse(node.test)
        and not isinstance(node.test, ast.BoolOp | ast.Compare | ast.UnaryOp | ast.Call)
        for node in ast.walk(function)
    )
    if raises_on_rest:
        return sorted(set(pops))
    return None


def loader(cls: ast.ClassDef, module: str, formats: list[str]) -> dict[str, Any] | None:
    """One loader's record, or ``None`` when its key set is not closed."""
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    keys = _keys(init)
    if keys is None:
        return None
    checks = _checks(init)
    return {
        "module": module,
        "function": f"{cls.name}.__init__",
        "load_formats": sorted(formats),
        "keys": {key: _key_fact(init, cls, key, checks) for key in keys},
    }


def record(version: str, wheel: str) -> dict[str, Any]:
    """The facts file of the release unzipped in the working directory."""
    formats, modules = _load_formats(ast.parse((LOADERS / "__init__.py").read_text()))
    loaders: dict[str, Any] = {}
    unrecorded: dict[str, str] = {}
    for name in sorted(formats):
        path = Path(*modules[name].split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text())
        cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)
        found = loader(cls, modules[name], formats[name])
        if found is None:
            for load_format in formats[name]:
                unrecorded[load_format] = f"{name} ({modules[name]}): no closed key set in __init__"
        else:
            loaders[name] = found
    return {
        "engine": "vllm",
        "version": version,
        "flag": "--model-loader-extra-config",
        "load_format_flag": "--load-format",
        "default_load_format": "auto",
        "value": {
            "type": "object",
            "source": "vllm/config/load.py LoadConfig.model_loader_extra_config (dict | "
            "TensorizerConfig); vllm/engine/arg_utils.py union_dict_and_str passes a value that "
            "is not in braces on as a plain string, which LoadConfig refuses",
        },
        "read_from": {
            "wheel": f"PyPI vllm=={version} ({wheel})",
            "load_formats": f"vllm/model_executor/model_loader/__init__.py {MAP_NAME} (load "
            "format -> loader class)",
            "method": "tools/loader_config_facts.py: each loader's __init__ read with ast (its "
            "allowed_keys, or the keys it pops before refusing the rest; each value's isinstance "
            "checks and bounds, else its annotation or default)",
        },
        "loaders": loaders,
        "unrecorded": unrecorded,
    }


if __name__ == "__main__":
    json.dump(record(sys.argv[1], sys.argv[2]), sys.stdout, indent=2)
    sys.stdout.write("\n")
