"""Layering rules: a pure core, no engine-name branches, lazy package import."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlcc_constructs.core.engines.manifests import builtin_engines

PACKAGE = Path(__file__).resolve().parents[2] / "mlcc_constructs"
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


def _code_strings_and_names(tree: ast.AST) -> list[str]:
    """Every identifier and every string constant that is not a docstring: what code can
    branch on (comments and docstrings may name engines as examples)."""
    docstrings = {  # module, class, function and attribute docstrings: bare string statements
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                found.append(node.value)
        elif isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
    return found


def test_no_core_code_names_an_engine() -> None:
    """Engines differ in data (their manifests), never in code: no identifier or string in
    the core names a built-in engine or its env prefix."""
    names = {m.engine for m in builtin_engines()} | {"trtllm", "llama", "djl", "sglang"}
    prefixes = {m.env_var_prefix for m in builtin_engines()}
    offenders = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        found = _code_strings_and_names(ast.parse(path.read_text()))
        if path.name == "wrapper.py":
            # Its bytes ship inside every rendered object (pinned by the snapshots); its one
            # message example names an engine, so only its identifiers are checked here.
            found = [t for t in found if t.isidentifier()]
        for text in found:
            lowered = text.lower()
            hits = [n for n in names if n in lowered] + [p for p in prefixes if p in text]
            if hits:
                offenders.append(f"{path.relative_to(PACKAGE)}: {text[:60]!r} names {hits}")
    assert offenders == []


# I/O the core must not do (it runs in `mlcc render`, in the charts and in the CDK synth):
# network, archives and temp files, subprocesses, AWS clients, the login name.
CORE_FORBIDDEN = (
    "urllib",
    "http",
    "socket",
    "tarfile",
    "tempfile",
    "subprocess",
    "boto3",
    "botocore",
    "getpass",
)
# What the I/O layer must not reach up or sideways into: jsii and the layers above it.
OPS_FORBIDDEN = (
    *JSII_MODULES,
    "mlcc_constructs.k8s",
    "mlcc_constructs.commands",
    "mlcc_constructs.cli",
)


def _imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports (relative imports resolved; ``from m import n`` counts
    both ``m`` and ``m.n``, since ``n`` may be a submodule)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = (
                ".".join([*base, *([node.module] if node.module else [])])
                if node.level
                else node.module or ""
            )
            names += [module, *(f"{module}.{alias.name}" for alias in node.names)]
    return names


def _offenders(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(folder.rglob("*.py"))
        for name in _imported_modules(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


def test_the_core_does_no_io() -> None:
    assert _offenders(PACKAGE / "core", CORE_FORBIDDEN) == []


def test_ops_imports_nothing_above_it() -> None:
    assert (PACKAGE / "ops" / "__init__.py").is_file()
    assert _offenders(PACKAGE / "ops", OPS_FORBIDDEN) == []


def test_the_import_checks_see_what_they_forbid() -> None:
    # ops does the I/O the core may not: the same walker must find it there
    found = {
        line.split(": ")[1].split(".")[0] for line in _offenders(PACKAGE / "ops", CORE_FORBIDDEN)
    }
    assert {"urllib", "tarfile", "tempfile", "subprocess", "getpass"} <= found


def test_importing_ops_loads_no_jsii_module() -> None:
    statement = "import " + ", ".join(
        f"mlcc_constructs.ops.{p.stem}"
        for p in sorted((PACKAGE / "ops").glob("*.py"))
        if p.stem != "__init__"
    )
    assert _loaded_after(statement) == []


def test_the_resolver_never_names_an_engine_even_in_prose() -> None:
    source = (PACKAGE / "core" / "serving" / "resolve" / "tiers.py").read_text()
    names = {m.engine for m in builtin_engines()} | {"trtllm", "llama", "djl", "SGLang"}
    found = sorted(n for n in names if n.lower() in source.lower())
    assert found == []
    prefixes = sorted(m.env_var_prefix for m in builtin_engines() if m.env_var_prefix in source)
    assert prefixes == []


def test_no_code_compares_target_names() -> None:
    """Targets are data: code asks a target's manifest, never compares its name."""
    pattern = re.compile(
        r"""target\w*\s*[!=]=\s*["']|["'](eks|hyperpod-eks|realtime-inference)["']\s*[!=]="""
    )
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


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
        importlib.import_module(f"mlcc_constructs.cli.{module}").register(subparsers)
        registered.update(dict.fromkeys(subparsers.choices, module))
    assert registered == cli.COMMAND_OWNERS


def test_every_public_name_resolves() -> None:
    import mlcc_constructs

    for name in mlcc_constructs.__all__:
        assert getattr(mlcc_constructs, name).__name__ == name


# Each layer may import the package layers listed (nothing lower imports anything higher;
# the cdk8s and CDK layers do not import each other).
LAYERS = {
    "core": {"core"},
    "k8s": {"core", "k8s"},
    "aws": {"core", "aws"},
    "ops": {"core", "ops"},
    "cli": {"core", "k8s", "aws", "ops", "cli"},
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for name in _imported_modules(path)
        if name.startswith("mlcc_constructs.")
        and name.split(".")[1] in LAYERS
        and name.split(".")[1] not in LAYERS[layer]
    ]
    assert offenders == []


def test_the_package_holds_only_the_layers() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    }
    assert modules == {"__init__", *LAYERS}


# -- the package's structure: domains, circles, sizes, kinds ------------------------------

# The core's domains, lowest first: a module may import its own domain and those before it.
# The root keeps the container-side wrapper and its resource locator (their bytes and module
# path ship inside every rendered pod), below every domain.
CORE_DOMAINS = (
    "support",
    "engines",
    "platform",
    "cache",
    "adapters",
    "serving",
    "rollout",
    "preflight",
)
MAX_MODULE_LINES = 500


def _domain(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in CORE_DOMAINS else "support"  # the root


def test_core_is_folders_of_domains() -> None:
    folders = {p.name for p in (PACKAGE / "core").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(CORE_DOMAINS)
    loose = {p.name for p in (PACKAGE / "core").glob("*.py")}
    assert loose == {"__init__.py", "_resources.py", "wrapper.py"}
    for domain in CORE_DOMAINS:  # each says what it holds
        assert ast.get_docstring(ast.parse((PACKAGE / "core" / domain / "__init__.py").read_text()))


def test_each_core_domain_imports_only_the_domains_below_it() -> None:
    offenders = []
    for path, module in _core_modules():
        mine = CORE_DOMAINS.index(_domain(module))
        for name in _imported_modules(path):
            below = CORE_DOMAINS.index(_domain(name)) <= mine
            if name.startswith("mlcc_constructs.core.") and not below:
                offenders.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert offenders == []


def _package_modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere (top level, in functions, under
    TYPE_CHECKING): a circle is a circle whichever import closes it."""
    modules = _package_modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = set()
        for name in _imported_modules(path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                targets.add(name)
        graph[module] = targets
    return graph


def test_no_import_circle_anywhere_in_the_package() -> None:
    graph = _import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for child in sorted(graph[node]):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert circles == []


def test_the_circle_check_sees_a_circle() -> None:
    graph = _import_graph()
    assert (
        "mlcc_constructs.core.serving.prepare.facts"
        in graph["mlcc_constructs.core.serving.kinds.deployment"]
    )


def test_no_module_over_500_lines() -> None:
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


KINDS_PACKAGE = PACKAGE / "core" / "serving" / "kinds"
# The CacheBackend's own package parses CacheBackend documents (a multi-document file may hold
# other kinds, which its loader skips): it owns that one kind's input, as the registry's
# modules own their objects.
KIND_OWNERS = (KINDS_PACKAGE, PACKAGE / "core" / "cache")


def _kind_branches(path: Path, kind_names: set[str]) -> list[str]:
    """Comparisons of an object's kind with a kind name (``obj["kind"] == "Deployment"``,
    ``kind != IEC_KIND``, ``"InferenceEndpointConfig" in target.kinds``)."""

    def names_kind(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in kind_names
        if isinstance(node, ast.Name | ast.Attribute):
            text = node.id if isinstance(node, ast.Name) else node.attr
            return text.isupper() and text.endswith("KIND")  # a constant naming a kind
        return False

    def is_kind_field(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value == "kind"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr == "get" and any(
                isinstance(a, ast.Constant) and a.value == "kind" for a in node.args
            )
        if isinstance(node, ast.Attribute):
            return node.attr in ("kind", "kinds")
        return isinstance(node, ast.Name) and node.id in ("kind", "kinds")

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_kind_field(s) for s in sides) and any(names_kind(s) for s in sides):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_kind_branch_outside_the_registry() -> None:
    from mlcc_constructs.core.serving.kinds.registry import kinds

    names = {k.kind for k in kinds()}
    offenders = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path.is_relative_to(owner) for owner in KIND_OWNERS)
        for hit in _kind_branches(path, names)
    ]
    assert offenders == []


def test_the_kind_branch_check_sees_a_branch(tmp_path: Path) -> None:
    sample = PACKAGE / "_probe_kind_branch.py"
    try:
        sample.write_text(
            "def f(obj, target):\n"
            "    a = obj['kind'] == 'Deployment'\n"
            "    b = obj.get('kind') != IEC_KIND\n"
            "    c = 'InferenceEndpointConfig' in target.kinds\n"
        )
        assert len(_kind_branches(sample, {"Deployment", "InferenceEndpointConfig"})) == 3
    finally:
        sample.unlink()


TESTS = PACKAGE.parent / "tests"


def _test_folders() -> set[str]:
    """Where a test module may live: a folder per package folder (``core/<domain>``, ``aws``,
    ``k8s``, ``ops``, ``cli``) and ``project`` for checks of the repository as a whole."""
    layers = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} - {"core"}
    domains = {
        f"core/{p.name}" for p in (PACKAGE / "core").iterdir() if (p / "__init__.py").is_file()
    }
    return layers | domains | {"project"}


def test_every_test_module_sits_in_the_folder_of_its_package() -> None:
    allowed = _test_folders()
    misplaced = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("test_*.py"))
        if path.parent.relative_to(TESTS).as_posix() not in allowed
    ]
    assert misplaced == []
    # Every folder is a package: the modules import as tests.<folder>.<module>, so two folders
    # may hold modules of one name and a test imports another's helpers by one path.
    folders = {p.parent for p in TESTS.rglob("test_*.py")} | {TESTS}
    assert [str(f) for f in sorted(folders) if not (f / "__init__.py").is_file()] == []
    parents = {p for f in folders for p in f.parents if TESTS in p.parents}
    assert [str(f) for f in sorted(parents) if not (f / "__init__.py").is_file()] == []


def test_the_test_folders_follow_the_package() -> None:
    allowed = _test_folders()
    assert {"core/serving", "core/engines", "aws", "cli", "project"} <= allowed
    # A folder that no longer exists in the package is no place for a test.
    assert "core/prepare" not in allowed and "tests" not in allowed
