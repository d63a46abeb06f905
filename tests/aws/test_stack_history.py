"""Stack histories (``snapshots/<stack>/NNNN-<slug>.*.json``): the layout rules, every step's
diff against its declaration with the real CDK diff engine, and the current synth against the
last step (or a pending step). The S3 CSI step of eks-cluster stays exactly two resources."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.cli import main
from mlcc_constructs.core.platform.stack_history import parse_history
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.stack_history import StepResult, check_history
from tests._cdk_app import EKS_HISTORY, REPO, synthesised

SNAPSHOTS = REPO / "snapshots"
EKS_STACK = "mlcc-dev-eks-cluster"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None
    or not (REPO / "node_modules" / "@aws-cdk" / "cloudformation-diff").is_dir(),
    reason="needs node and `npm ci` (@aws-cdk/cloudformation-diff)",
)


def _history_folders() -> dict[str, Path]:
    """Stack name (dev profile, cdk.json context) -> its history folder."""
    return {
        f"mlcc-dev-{path.name}": path
        for path in sorted(SNAPSHOTS.iterdir())
        if path.is_dir() and any(p.name.startswith("0001-") for p in path.iterdir())
    }


def test_every_stack_of_the_app_has_a_history() -> None:
    stacks = set(synthesised()[1])
    assert stacks <= set(_history_folders()), sorted(stacks - set(_history_folders()))
    assert set(_history_folders()) <= stacks, "a history folder names no stack of the app"


@cache
def _checked(stack_name: str) -> tuple[StepResult, ...]:
    """Every step of a stack's history and its current synth, checked once per session (one
    diff-engine run; the eks-cluster history serves two tests)."""
    current = json.loads(synthesised()[1][stack_name])
    return tuple(check_history(_history_folders()[stack_name], current))


@needs_node
@pytest.mark.parametrize("stack_name", sorted(_history_folders()))
def test_every_step_and_the_current_synth_are_as_declared(stack_name: str) -> None:
    results = _checked(stack_name)
    assert [(r.label, list(r.offending)) for r in results if r.offending] == []


@needs_node
def test_the_s3csi_step_is_exactly_two_modified_resources() -> None:
    assert _history_folders()[EKS_STACK] == EKS_HISTORY
    results = {r.label: r for r in _checked(EKS_STACK)}
    assert results["0002-s3csi-fix"].changes == (
        "[~] AWS::EKS::Addon S3CsiDriverAddon",
        "[~] AWS::IAM::Policy S3CsiRoleDefaultPolicyE2B11437",
    )
    declared = json.loads((EKS_HISTORY / "0002-s3csi-fix.expected-diff.json").read_text())
    assert declared["resources"] == {
        "S3CsiDriverAddon": {
            "type": "AWS::EKS::Addon",
            "change": "modified",
            "properties": ["ServiceAccountRoleArn"],
        },
        "S3CsiRoleDefaultPolicyE2B11437": {
            "type": "AWS::IAM::Policy",
            "change": "modified",
            "properties": ["PolicyDocument"],
        },
    }


def _chain(tmp_path: Path, steps: dict[str, Any]) -> Path:
    folder = tmp_path / "demo"
    folder.mkdir()
    for name, document in steps.items():
        (folder / name).write_text(json.dumps(document), encoding="utf-8")
    return folder


QUEUE = {"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"DelaySeconds": 1}}}}
QUEUE_2 = {"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"DelaySeconds": 2}}}}
MODIFY_Q = {
    "resources": {
        "Q": {"type": "AWS::SQS::Queue", "change": "modified", "properties": ["DelaySeconds"]}
    }
}


@needs_node
def test_a_pending_step_declares_the_current_change(tmp_path: Path) -> None:
    folder = _chain(
        tmp_path, {"0001-base.template.json": QUEUE, "0002-slower.expected-diff.json": MODIFY_Q}
    )
    (result,) = check_history(folder, QUEUE_2)
    assert result.label == "current (pending 0002-slower)"
    assert result.changes == ("[~] AWS::SQS::Queue Q",)
    assert result.offending == ()
    # The same pending step no longer matches once nothing changes.
    (result,) = check_history(folder, QUEUE)
    assert result.offending == (
        "[ ] AWS::SQS::Queue Q",
        "    ! declared as modified but the diff does not change it",
    )


@needs_node
def test_an_undeclared_current_change_names_the_pending_step_to_add(tmp_path: Path) -> None:
    folder = _chain(tmp_path, {"0001-base.template.json": QUEUE})
    (result,) = check_history(folder, QUEUE_2)
    assert result.offending == (
        "[~] AWS::SQS::Queue Q",
        " └─ [~] DelaySeconds",
        "    ! not declared in the expectation",
        "    ! the current synth differs from 0001-base: declare the change in a pending step "
        "(0002-<slug>.expected-diff.json) or commit the template as a new step",
    )


@needs_node
def test_cli_checks_a_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _chain(
        tmp_path,
        {
            "0001-base.template.json": QUEUE,
            "0002-slower.template.json": QUEUE_2,
            "0002-slower.expected-diff.json": MODIFY_Q,
        },
    )
    current = tmp_path / "current.json"
    current.write_text(json.dumps(QUEUE_2), encoding="utf-8")
    assert main(["diff-guard", "--chain", str(folder), "--current", str(current)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{folder}: 0002-slower: ok, 1 resource change(s) as declared",
        "  [~] AWS::SQS::Queue Q",
        f"{folder}: current: ok, equals 0002-slower",
    ]
    current.write_text(json.dumps(QUEUE), encoding="utf-8")
    assert main(["diff-guard", "--chain", str(folder), "--current", str(current)]) == 1
    assert f"{folder}: current: differs from its declaration:" in capsys.readouterr().err


BAD_LAYOUTS = [
    (
        ["0001-base.template.json", "notes.txt"],
        [
            "h/notes.txt: not a history file (allowed: NNNN-<slug>.template.json or "
            "NNNN-<slug>.expected-diff.json (slug: a-z, 0-9, '-', '.'); fix: rename it, or move "
            "it out of the history folder)"
        ],
    ),
    (
        ["0001-base.template.json", "0003-next.template.json", "0003-next.expected-diff.json"],
        [
            "h: step 0003-next is out of sequence (got 3; allowed: 2; fix: number the steps "
            "0001, 0002, ... without gaps)"
        ],
    ),
    (
        ["0001-base.template.json", "0002-next.template.json"],
        [
            "h/0002-next.template.json: step 0002-next declares no expected diff (fix: add "
            "h/0002-next.expected-diff.json (what changes from the step before, as "
            "`mlcc diff-guard --expect` reads it))"
        ],
    ),
    (
        [
            "0001-base.template.json",
            "0002-a.expected-diff.json",
            "0003-b.template.json",
            "0003-b.expected-diff.json",
        ],
        [
            "h/0002-a.expected-diff.json: step 0002-a is pending (no template) but is not the "
            "last step (fix: commit its template as h/0002-a.template.json)"
        ],
    ),
    (
        [
            "0001-base.template.json",
            "0001-base.expected-diff.json",
            "0002-x.template.json",
            "0002-y.expected-diff.json",
        ],
        [
            "h/0002-y.expected-diff.json: step 0002 has two names (got 'y'; allowed: x; fix: give "
            "both files of one step the same slug)",
            "h/0001-base.expected-diff.json: the first step is the baseline: there is nothing "
            "before it to diff (fix: remove the declaration, or commit the template it diffs "
            "from as 0001)",
            "h/0002-x.template.json: step 0002-x declares no expected diff (fix: add "
            "h/0002-x.expected-diff.json (what changes from the step before, as "
            "`mlcc diff-guard --expect` reads it))",
        ],
    ),
    ([], ["h: no history steps (fix: commit the stack's template as h/0001-<slug>.template.json)"]),
]


@pytest.mark.parametrize(("files", "messages"), BAD_LAYOUTS)
def test_bad_layout_is_a_clear_error(files: list[str], messages: list[str]) -> None:
    with pytest.raises(MlccError) as caught:
        parse_history("h", files, where="h")
    assert [str(p) for p in caught.value.problems] == messages


def test_layout_steps() -> None:
    history = parse_history(
        "h",
        [
            "0002-b.expected-diff.json",
            "0001-a.template.json",
            "0003-k8s-1.35.expected-diff.json",
            "0002-b.template.json",
        ],
        where="h",
    )
    assert [(s.name, s.template, s.declaration) for s in history.steps] == [
        ("0001-a", "0001-a.template.json", None),
        ("0002-b", "0002-b.template.json", "0002-b.expected-diff.json"),
        ("0003-k8s-1.35", None, "0003-k8s-1.35.expected-diff.json"),
    ]
    assert history.pending is not None and history.pending.name == "0003-k8s-1.35"
    assert history.last_template == "0002-b.template.json"


def test_cli_refuses_mixed_forms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff-guard", "--chain", str(tmp_path), "--expect", "x.json"]) == 2  # usage
    assert capsys.readouterr().err == (
        "mlcc: error: --chain: --chain checks a whole history: BEFORE, AFTER and --expect do "
        "not apply (fix: mlcc diff-guard --chain snapshots/<stack> --current "
        "cdk.out/<stack>.template.json)\n"
    )
    assert main(["diff-guard", "a.json"]) == 2
    assert capsys.readouterr().err == (
        "mlcc: error: diff-guard: diff-guard needs BEFORE, AFTER and --expect, or --chain "
        "DIR (fix: mlcc diff-guard BEFORE.json AFTER.json --expect EXPECTED.json)\n"
    )
