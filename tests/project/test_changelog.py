"""CHANGELOG.md says true things about paths: every module path its table says is gone no longer
imports, every path it gives instead imports, every other ``mlcc_constructs.`` name it cites
resolves, and the repository files it names exist (or, left of an arrow, no longer do). The
first release's and the pre-restructure modules that are gone are all in the table."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

import mlcc_constructs
from mlcc_constructs.core.support.migration import (
    CHANGELOG,
    CHANGELOG_SECTION,
    LegacyKeywordError,
    PropsMigration,
)

REPO = Path(__file__).resolve().parents[2]
TEXT = (REPO / CHANGELOG).read_text(encoding="utf-8")
PROSE = re.sub(r"^```.*?^```$", "", TEXT, flags=re.S | re.M)  # without the fenced blocks
FIRST_RELEASE = "6f6d00e"  # the state before the props refactor
BEFORE_RESTRUCTURE = "1f33c13"  # main before `core` was split by domain (2647506)
DOTTED = re.compile(r"^mlcc_constructs(\.[A-Za-z_][A-Za-z0-9_]*)+$")
GROUPS = (
    "Python API and constructs",
    "Module paths",
    "Behaviour of rendered objects",
    "The `mlcc` command",
    "Data and manifests",
    "CDK stacks and templates",
)
REPO_PATH = re.compile(r"^(mlcc_constructs|snapshots|stacks|engines|targets|examples)/[^<>*\s]*$")


def _code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _table(heading: str) -> list[tuple[list[str], list[str]]]:
    """The (first column's, second column's) code spans of each row of the first table under
    the markdown heading ``heading``."""
    lines = TEXT.splitlines()
    start = lines.index(heading)
    start = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip("|").split(" | ")
        rows.append((_code_spans(cells[0]), _code_spans(cells[1])))
    assert rows, f"no table under {heading!r}"
    return rows


MODULES = _table("### Module paths")
NAMES = _table("#### Removed and moved names")
CONSTRUCTS = _table(f"#### {CHANGELOG_SECTION}")


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError:
        return False
    return True


def _exists(module: str) -> bool:
    """``module`` can be imported (found without running it: ``cli.__main__`` would run mlcc)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _resolves(dotted: str) -> bool:
    """``dotted`` is a module, or an attribute chain of the longest module prefix that imports."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        if not _imports(".".join(parts[:cut])):
            continue
        value: object = importlib.import_module(".".join(parts[:cut]))
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


def test_the_changelog_has_the_sections_errors_point_to() -> None:
    assert f"## {mlcc_constructs.__version__} (this version)" in TEXT
    assert "ServingCluster" in TEXT and "ServedModel" in TEXT  # their author adds entries
    assert f"#### {CHANGELOG_SECTION}\n" in TEXT
    for group in GROUPS:
        assert f"### {group}\n" in TEXT


def test_the_example_error_is_the_one_raised() -> None:
    migration = PropsMigration(
        construct="EngineConfigMap", props="EngineConfigMapProps", prepared=True
    )
    raised = str(LegacyKeywordError(migration, ["context", "spec"]))
    assert f"```text\n{raised}\n```" in TEXT


def test_every_construct_has_its_migrated_call() -> None:
    shown = {old[0].split("(")[0]: new[0] for old, new in CONSTRUCTS}
    assert sorted(shown) == [
        "CacheBackend",
        "EngineConfigMap",
        "EngineDeployment",
        "InferenceEndpointConfig",
        "ServingChart",
    ]
    for construct, call in shown.items():
        assert call.startswith(f"{construct}(scope, id, props={construct}Props(")


@pytest.mark.parametrize(("old", "new"), MODULES, ids=[row[0][0] for row in MODULES])
def test_a_moved_module_is_gone_and_its_new_home_imports(old: list[str], new: list[str]) -> None:
    (old_path,) = old
    assert DOTTED.match(old_path) and new
    assert not _exists(old_path), f"{old_path} still imports"
    for path in new:
        assert DOTTED.match(path) and _imports(path), f"{path} does not import"


@pytest.mark.parametrize(("old", "new"), NAMES, ids=[row[0][0] for row in NAMES])
def test_a_removed_name_is_gone_and_its_replacement_resolves(
    old: list[str], new: list[str]
) -> None:
    (old_name,) = old
    assert not _resolves(old_name), f"{old_name} still resolves"
    for name in new:
        if DOTTED.match(name):
            assert _resolves(name), f"{name} does not resolve"


def test_every_other_name_it_cites_resolves() -> None:
    removed = {span for row in MODULES + NAMES for span in row[0]}
    cited = {span for span in _code_spans(PROSE) if DOTTED.match(span)} - removed
    assert len(cited) > 50
    assert sorted(name for name in cited if not _resolves(name)) == []


def test_every_repository_file_it_names_exists_or_is_marked_gone() -> None:
    found = []
    for match in re.finditer(r"`([^`]+)`(\s*→)?", PROSE):
        path, gone = match.group(1), bool(match.group(2))
        if REPO_PATH.match(path):
            exists = (
                any(REPO.glob(path + "*")) if "." not in Path(path).name else (REPO / path).exists()
            )
            found.append((path, exists != gone))
    assert len(found) > 5
    assert [path for path, ok in found if not ok] == []


def _gone_modules(commit: str) -> set[str]:
    done = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", commit, "mlcc_constructs"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"git history without {commit} (a shallow clone or a wheel)")
    modules = {
        path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for path in done.stdout.split()
        if path.endswith(".py")
    }
    return {module for module in modules if not _exists(module)}


@pytest.mark.parametrize("commit", [FIRST_RELEASE, BEFORE_RESTRUCTURE])
def test_every_module_that_is_gone_is_in_the_table(commit: str) -> None:
    listed = {row[0][0] for row in MODULES}
    assert sorted(_gone_modules(commit) - listed) == []
