"""``make bench``'s runner: results written section by section, a partial run keeping the
sections it did not measure, ``--quick`` leaving the long sections to the full run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run


def _section(value: float) -> dict[str, Any]:
    return {"figures": {}, "target": "t", "met": True, "value": value}


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    called: list[str] = []

    def fake(name: str, value: float) -> Any:
        def step(*_: Any, **__: Any) -> dict[str, Any]:
            called.append(name)
            if value < 0:
                raise RuntimeError(f"{name} broke")
            return _section(value)

        return step

    monkeypatch.setattr(run, "cli_startup", fake("cli", 1.0))
    monkeypatch.setattr(run, "peer", fake("peer", 2.0))
    monkeypatch.setattr(run, "synth_vs_floor", fake("synth", -1.0))
    monkeypatch.setattr(run, "scale_curve", fake("scale", 4.0))
    monkeypatch.setattr(run, "test_suite", fake("test suite", 5.0))
    monkeypatch.setattr(run, "libraries_vs_ours", fake("libraries", 6.0))
    return called


@pytest.mark.parametrize(
    ("argv", "fleet", "loop"),
    [
        (["--quick"], [1, 20], 20),
        ([], [1, 100, 1000], 1000),
        (["--fleet-sizes", "1,300"], [1, 300], 300),
    ],
)
def test_the_fleet_sections_get_their_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], fleet: list[int], loop: int
) -> None:
    seen: dict[str, Any] = {}

    def record(name: str) -> Any:
        def step(runs: int, sizes: Any) -> dict[str, Any]:
            seen[name] = sizes
            return _section(1.0)

        return step

    for name in ("fleet_synth", "reviewers_loop", "cdk_validation"):
        monkeypatch.setattr(run, name, record(name))
    out = tmp_path / "results.json"
    assert run.main([*argv, "--only", "fleet,reviewer,cdk", "--out", str(out)]) == 0
    measured = {"fleet_synth": fleet, "reviewers_loop": loop}
    if "--quick" not in argv:  # CDK's validation restates the synth: left to the full run
        measured["cdk_validation"] = [1, min(100, loop)]
    assert seen == measured
    sections = json.loads(out.read_text())["benchmarks"]
    assert sorted(sections) == sorted(
        {"fleet_synth": "fleet synth (plain CDK)", "reviewers_loop": "reviewer's loop",
         "cdk_validation": "cdk validation"}[name]
        for name in measured
    )  # fmt: skip


def test_a_partial_run_keeps_the_sections_it_did_not_measure(
    tmp_path: Path, steps: list[str]
) -> None:
    out = tmp_path / "results.json"
    out.write_text(json.dumps({"benchmarks": {"peer (helm template)": _section(9.0)}}))
    assert run.main(["--only", "cli", "--out", str(out)]) == 0
    sections = json.loads(out.read_text())["benchmarks"]
    assert steps == ["cli"]
    assert sections["peer (helm template)"]["value"] == 9.0  # the earlier run's, untouched
    assert sections["cli start-up"]["value"] == 1.0
    assert sections["cli start-up"]["runs"] == 5
    assert "measured_at" in sections["cli start-up"]


def test_a_run_that_breaks_leaves_what_it_measured(tmp_path: Path, steps: list[str]) -> None:
    out = tmp_path / "results.json"
    with pytest.raises(RuntimeError, match="synth broke"):
        run.main(["--only", "cli,peer,synth", "--out", str(out)])
    assert set(json.loads(out.read_text())["benchmarks"]) == {
        "cli start-up",
        "peer (helm template)",
    }
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("corrupt", ["", "{", "[]", '{"benchmarks": 3}'])
def test_an_unreadable_earlier_file_is_started_afresh(
    tmp_path: Path, steps: list[str], corrupt: str
) -> None:
    out = tmp_path / "results.json"
    out.write_text(corrupt)
    assert run.main(["--only", "cli", "--out", str(out)]) == 0
    assert list(json.loads(out.read_text())["benchmarks"]) == ["cli start-up"]


def test_quick_leaves_the_long_sections_to_the_full_run(tmp_path: Path, steps: list[str]) -> None:
    out = tmp_path / "results.json"
    assert run.main(["--quick", "--only", "cli,serving,test,libraries", "--out", str(out)]) == 0
    assert steps == ["cli", "scale"]
    results = json.loads(out.read_text())
    assert results["command"] == "make bench QUICK=1"
    assert results["benchmarks"]["serving scale curve"]["runs"] == run.QUICK["runs"]


@pytest.mark.parametrize(("argv", "empty_cache"), [(["--quick"], False), ([], True)])
def test_quick_measures_the_warm_synth_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], empty_cache: bool
) -> None:
    seen: list[tuple[int, bool]] = []

    def synth(runs: int, *, empty_cache_too: bool = True) -> dict[str, Any]:
        seen.append((runs, empty_cache_too))
        return _section(1.0)

    monkeypatch.setattr(run, "synth_vs_floor", synth)
    out = tmp_path / "results.json"
    assert run.main([*argv, "--only", "synth", "--out", str(out)]) == 0
    assert seen == [(run.QUICK["runs"] if argv else 5, empty_cache)]
