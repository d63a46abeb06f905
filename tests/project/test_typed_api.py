"""The public API is statically typed from the package root: ``mypy --strict`` on a team's file
that imports ``from mlcc_constructs import ...`` sees the real classes, so a misspelt field and
a wrong type are errors before anything runs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mlcc_constructs

REPO = Path(__file__).resolve().parents[2]
ROOT_INIT = REPO / "mlcc_constructs" / "__init__.py"


def _type_checking_names() -> dict[str, str]:
    """Name -> module of every import in the root's ``if TYPE_CHECKING:`` block."""
    found: dict[str, str] = {}
    for node in ast.parse(ROOT_INIT.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names:
                    assert alias.asname == alias.name, "re-export as the same name"
                    found[alias.name] = statement.module
    return found


def test_the_typed_imports_are_exactly_the_lazy_names() -> None:
    assert _type_checking_names() == mlcc_constructs._LAZY


def _mypy(tmp_path: Path, source: str) -> list[str]:
    """``mypy --strict`` on ``source`` as a team's file; the error lines. The repository's
    cache (written by ``make lint``) spares re-reading aws-cdk-lib's stubs when present."""
    team = tmp_path / "team_app.py"
    team.write_text(source, encoding="utf-8")
    cache = REPO / ".mypy_cache"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(cache if cache.is_dir() else tmp_path / "cache"), str(team)],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    return [
        line.split(": error: ", 1)[1] for line in done.stdout.splitlines() if ": error: " in line
    ]


def test_mypy_sees_a_misspelt_field_and_a_wrong_type(tmp_path: Path) -> None:
    errors = _mypy(
        tmp_path,
        "from mlcc_constructs import ComputeSpec, DeploymentSpec, EngineSpec, ModelSpec\n"
        "from mlcc_constructs import RenderContext, prepare\n"
        "spec = DeploymentSpec(\n"
        "    engine=EngineSpec(name=1), modle='typo', model=ModelSpec(uri='org/name'),\n"
        "    compute=ComputeSpec(instance_type='g5.xlarge'),\n"
        ")\n"
        "prepared = prepare(spec, context=RenderContext(profile=7))\n"
        "replicas: str = prepared.spec.scaling.replicas\n",
    )
    assert errors == [
        'Unexpected keyword argument "modle" for "DeploymentSpec"; did you mean "model"?  '
        "[call-arg]",
        'Argument "name" to "EngineSpec" has incompatible type "int"; expected "str"  [arg-type]',
        'Argument "profile" to "RenderContext" has incompatible type "int"; expected "str | None"  '
        "[arg-type]",
        'Incompatible types in assignment (expression has type "int", variable has type "str")  '
        "[assignment]",
    ]


def test_a_correct_team_file_type_checks_strictly(tmp_path: Path) -> None:
    errors = _mypy(
        tmp_path,
        "import cdk8s\n"
        "from mlcc_constructs import (\n"
        "    ComputeSpec, DeploymentSpec, EngineDeployment, EngineDeploymentProps, EngineSpec,\n"
        "    ModelSpec, RenderContext, prepare,\n"
        ")\n"
        "spec = DeploymentSpec(\n"
        "    engine=EngineSpec(name='vllm'), model=ModelSpec(uri='org/name'),\n"
        "    compute=ComputeSpec(instance_type='g5.xlarge'), name='m',\n"
        ")\n"
        "app = cdk8s.App()\n"
        "chart = cdk8s.Chart(app, 'team')\n"
        "deployment = prepare(spec, context=RenderContext(profile='dev'))\n"
        "props = EngineDeploymentProps(deployment=deployment)\n"
        "served = EngineDeployment(chart, 'Model', props=props)\n"
        "name: str = served.name\n",
    )
    assert errors == []


def test_mypy_still_reports_the_first_release_keywords(tmp_path: Path) -> None:
    # The legacy-keyword check wraps each constructor at run time (core/support/migration.py);
    # type checkers still see the real signatures, so a first-release call is a type error.
    errors = _mypy(
        tmp_path,
        "import cdk8s\n"
        "from mlcc_constructs import CacheBackend, DeploymentSpec, EngineConfigMap, ServingChart\n"
        "spec = DeploymentSpec(\n"
        "    engine={'name': 'vllm'}, model={'uri': 'org/name'},  # type: ignore[arg-type]\n"
        "    compute={'instance_type': 'g5.xlarge'}, name='m',  # type: ignore[arg-type]\n"
        ")\n"
        "app = cdk8s.App()\n"
        "chart = cdk8s.Chart(app, 'team')\n"
        "EngineConfigMap(chart, 'Env', spec=spec)\n"
        "ServingChart(app, 'm', spec=spec)\n"
        "CacheBackend(chart, 'Cache', name='cache', spec=None)\n",
    )
    assert errors == [
        'Unexpected keyword argument "spec" for "EngineConfigMap"  [call-arg]',
        'Unexpected keyword argument "spec" for "ServingChart"  [call-arg]',
        'Unexpected keyword argument "name" for "CacheBackend"  [call-arg]',
        'Unexpected keyword argument "spec" for "CacheBackend"  [call-arg]',
    ]
