"""``.gitattributes`` marks the generated files: each of its patterns matches a tracked file (a
renamed or removed file leaves no stale line), and every file ``make regen`` writes, every
snapshot and every recorded engine fact is marked."""

from __future__ import annotations

import re
import subprocess

from tests._cdk_app import REPO

ATTRIBUTES = REPO / ".gitattributes"


def _patterns() -> list[str]:
    lines = ATTRIBUTES.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


def test_every_pattern_matches_a_tracked_file() -> None:
    lines = ATTRIBUTES.read_text(encoding="utf-8").splitlines()
    for line in lines:
        if line.strip() and not line.startswith("#"):
            assert line.split()[1:] == ["linguist-generated=true"], line
    for pattern in _patterns():
        assert _git("ls-files", "--", f":(glob){pattern}").strip(), f"{pattern} matches no file"


def _marked(paths: list[str]) -> dict[str, str]:
    out = _git("check-attr", "linguist-generated", "--", *paths)
    return dict(re.findall(r"^(.*): linguist-generated: (\S+)$", out, flags=re.M))


def test_the_generated_files_are_marked() -> None:
    generated = _git(
        "ls-files", "snapshots", "mlcc_constructs/data/engine_parsers", "tests/engine_parsers"
    ).split()
    regen = re.search(r"^regen:.*?(?=^\S)", (REPO / "Makefile").read_text(), flags=re.M | re.S)
    assert regen is not None
    written = re.findall(r"-o (\S+)|cold_start_plans\((PLAN_OUT)\)", regen.group(0))
    assert written == [("mlcc_constructs/data/grafana-dashboard.json", ""), ("", "PLAN_OUT")]
    files = [
        *generated,
        "mlcc_constructs/data/grafana-dashboard.json",
        "benchmarks/cold_start.json",
    ]
    assert len(generated) > 100
    assert {path for path, value in _marked(files).items() if value != "true"} == set()
    # and the hand-written files are not
    assert set(_marked(["README.md", "engines/vllm/manifest.json"]).values()) == {"unspecified"}
