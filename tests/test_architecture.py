"""Layering rules: a pure core, no engine-name branches, lazy package import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from mlcc_constructs.core.manifests import builtin_engines

PACKAGE = Path(__file__).resolve().parent.parent / "mlcc_constructs"
JSII_MODULES = ("jsii", "aws_cdk", "cdk8s", "cdk8s_plus_28", "constructs", "cdk_nag")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys; {statement}; print(__import__('json').dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [m for m in json.loads(out.stdout) if m.split(".")[0] in JSII_MODULES]


def _core_modules() -> list[tuple[Path, str]]:
    """Every ``.py`` file under core/, sub-packages included, with its module name."""
    found = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append((path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)))
    return found


def test_importing_the_core_loads_no_jsii_module() -> None:
    modules = [name for _, name in _core_modules()]
    assert "mlcc_constructs.core.cache.admission" in modules  # sub-packages are covered
    assert _loaded_after("import " + ", ".join(modules)) == []


def test_the_package_and_the_cli_load_no_jsii_module() -> None:
    assert (
        _loaded_after(
            "import mlcc_constructs, mlcc_constructs.cli; mlcc_constructs.cli.build_parser()"
        )
        == []
    )


def test_core_imports_nothing_outside_the_core() -> None:
    offenders = []
    for path, module in _core_modules():
        package = module if path.stem == "__init__" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level:
                # A relative import: resolve it against the module's package.
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                names = [f"{base}.{node.module}" if node.module else base]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                inside_core = name.startswith("mlcc_constructs.core")
                if top in JSII_MODULES or (top == "mlcc_constructs" and not inside_core):
                    offenders.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert offenders == []


def test_the_resolver_never_names_an_engine() -> None:
    source = (PACKAGE / "core" / "resolve.py").read_text()
    names = {m.engine for m in builtin_engines()} | {"trtllm", "llama", "djl", "SGLang"}
    found = sorted(n for n in names if n.lower() in source.lower())
    assert found == []
    prefixes = sorted(m.env_var_prefix for m in builtin_engines() if m.env_var_prefix in source)
    assert prefixes == []


def test_the_wrapper_is_stdlib_only() -> None:
    tree = ast.parse((PACKAGE / "core" / "wrapper.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    third_party = {
        m
        for m in imported
        if m.split(".")[0] not in sys.stdlib_module_names
        and m not in ("__future__", "mlcc_constructs.core._resources")
    }
    assert third_party == set()


def test_the_cli_command_table_matches_what_each_module_registers() -> None:
    import argparse
    import importlib

    from mlcc_constructs import cli

    registered: dict[str, str] = {}
    for module in cli.COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        importlib.import_module(f"mlcc_constructs.commands.{module}").register(subparsers)
        registered.update(dict.fromkeys(subparsers.choices, module))
    assert registered == cli.COMMAND_OWNERS


def test_every_public_name_resolves() -> None:
    import mlcc_constructs

    for name in mlcc_constructs.__all__:
        assert getattr(mlcc_constructs, name).__name__ == name
