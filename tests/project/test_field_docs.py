"""One docstring per field: every public dataclass of ``mlcc_constructs/aws`` and
``mlcc_constructs/k8s``, and every dataclass the package root exports outside
``core/serving/spec``, documents each field with its own attribute docstring (a string right
after the field: what it is and its default), which IDEs show on hover and the API reference
renders field by field, not as a prose paragraph of the class docstring."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from functools import cache
from pathlib import Path

import pytest

import mlcc_constructs
from mlcc_constructs import aws, k8s

SPEC_PACKAGE = "mlcc_constructs.core.serving.spec"


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for package in (aws, k8s):
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            if info.name.rsplit(".", 1)[1].startswith("_"):
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (
                    not name.startswith("_")
                    and isinstance(value, type)
                    and dataclasses.is_dataclass(value)
                    and value.__module__ == module.__name__
                ):
                    found[f"{value.__module__}.{name}"] = value
    for name in mlcc_constructs.__all__:
        value = getattr(mlcc_constructs, name)
        if dataclasses.is_dataclass(value) and not value.__module__.startswith(SPEC_PACKAGE):
            assert isinstance(value, type)
            found[f"{value.__module__}.{name}"] = value
    return found


CLASSES = _classes()


@cache
def _documented(path: Path, class_name: str) -> frozenset[str]:
    """The fields of ``class_name`` in ``path`` followed by a string literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (node,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    names = set()
    for statement, after in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
            and after.value.value.strip()
        ):
            names.add(statement.target.id)
    return frozenset(names)


def test_the_classes_walked() -> None:
    names = {key.rsplit(".", 1)[1] for key in CLASSES}
    assert {"ServingClusterProps", "ServedModelProps", "ServingChartProps", "AdapterRank"} <= names
    assert "DeploymentSpec" not in names  # core/serving/spec: declared in its own sections


@pytest.mark.parametrize("key", sorted(CLASSES))
def test_every_field_has_its_own_docstring(key: str) -> None:
    cls = CLASSES[key]
    missing = []
    for field in dataclasses.fields(cls):
        owner = next(c for c in cls.__mro__ if field.name in inspect.get_annotations(c))
        if field.name not in _documented(Path(inspect.getfile(owner)), owner.__name__):
            missing.append(f"{owner.__name__}.{field.name}")
    assert missing == []
    assert "Fields:" not in (cls.__doc__ or "")  # the per-field docstrings replace the paragraph
