"""The exact two-resource diff (seed lora-delivery §5) with the real CDK diff engine, and the
reusable guard (`mlcc diff-guard`)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.cli import main
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.diff_guard import (
    TemplateDiff,
    diff_guard,
    load_expectation,
    node_error_line,
    offending_changes,
    template_diff,
    template_diffs,
)
from tests._cdk_app import AFTER_FIX, BEFORE_FIX, EXPECTED_DIFF, REPO

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None
    or not (REPO / "node_modules" / "@aws-cdk" / "cloudformation-diff").is_dir(),
    reason="needs node and `npm ci` (@aws-cdk/cloudformation-diff)",
)


def _fixed() -> dict[str, Any]:
    """The committed template of the S3 CSI fix step (the stack evolves; this step does not)."""
    return json.loads(AFTER_FIX.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def fix_diff() -> TemplateDiff:
    return template_diff(BEFORE_FIX, AFTER_FIX)


def test_several_pairs_in_one_run_are_each_pairs_own_diff(fix_diff: TemplateDiff) -> None:
    """A stack history is diffed in one node process: each answer is still its pair's own."""
    forward, same, backward = template_diffs(
        [(BEFORE_FIX, AFTER_FIX), (AFTER_FIX, AFTER_FIX), (AFTER_FIX, BEFORE_FIX)]
    )
    assert forward == fix_diff
    assert (same.resources, same.sections) == ((), ())
    assert [c.logical_id for c in backward.resources] == [c.logical_id for c in fix_diff.resources]
    assert backward != forward
    assert template_diffs([]) == []


def test_exactly_two_resources_modified(fix_diff: TemplateDiff) -> None:
    summary = [
        (c.change, c.type, c.logical_id, dict(c.properties), c.other, c.replaces)
        for c in fix_diff.resources
    ]
    assert summary == [
        (
            "modified",
            "AWS::EKS::Addon",
            "S3CsiDriverAddon",
            {"ServiceAccountRoleArn": "WILL_UPDATE"},
            (),
            False,
        ),
        (
            "modified",
            "AWS::IAM::Policy",
            "S3CsiRoleDefaultPolicyE2B11437",
            {"PolicyDocument": "WILL_UPDATE"},
            (),
            False,
        ),
    ]
    assert fix_diff.sections == ()


def test_cdk_diff_text_shows_the_two_resources(fix_diff: TemplateDiff) -> None:
    marked = [line for line in fix_diff.text.splitlines() if line.startswith("[")]
    assert marked == [
        "[~] AWS::IAM::Policy S3CsiRoleDefaultPolicyE2B11437",
        "[~] AWS::EKS::Addon S3CsiDriverAddon",
    ]


def test_guard_accepts_the_declared_fix() -> None:
    assert diff_guard(BEFORE_FIX, _fixed(), EXPECTED_DIFF) == []


def _after(**edits: Any) -> dict[str, Any]:
    after = copy.deepcopy(_fixed())
    resources = after["Resources"]
    if "addon_version" in edits:
        resources["S3CsiDriverAddon"]["Properties"]["AddonVersion"] = edits["addon_version"]
    if "traffic_type" in edits:
        flow_log = next(k for k, v in resources.items() if v["Type"] == "AWS::EC2::FlowLog")
        resources[flow_log]["Properties"]["TrafficType"] = edits["traffic_type"]
    if edits.get("add_queue"):
        resources["Extra"] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    return after


def test_guard_reports_an_add_on_version_bump() -> None:
    lines = diff_guard(BEFORE_FIX, _after(addon_version="v2.0.0-eksbuild.1"), EXPECTED_DIFF)
    assert lines == [
        "[~] AWS::EKS::Addon S3CsiDriverAddon",
        " ├─ [~] AddonVersion",
        " └─ [~] ServiceAccountRoleArn",
        "    ! undeclared property change(s): AddonVersion",
    ]


def test_guard_reports_a_replacement_and_an_addition() -> None:
    lines = diff_guard(BEFORE_FIX, _after(traffic_type="REJECT", add_queue=True), EXPECTED_DIFF)
    assert lines == [
        "[+] AWS::SQS::Queue Extra",
        "    ! not declared in the expectation",
        "[~] AWS::EC2::FlowLog VpcFlowLog8FF33A73",
        " └─ [~] TrafficType (requires replacement)",
        "    ! not declared in the expectation",
        "    ! would be replaced",
    ]


def test_guard_reports_a_declared_change_that_did_not_happen() -> None:
    lines = diff_guard(BEFORE_FIX, BEFORE_FIX, EXPECTED_DIFF)
    assert lines == [
        "[ ] AWS::EKS::Addon S3CsiDriverAddon",
        "    ! declared as modified but the diff does not change it",
        "[ ] AWS::IAM::Policy S3CsiRoleDefaultPolicyE2B11437",
        "    ! declared as modified but the diff does not change it",
    ]


def test_guard_reports_changes_outside_resources() -> None:
    after = copy.deepcopy(_fixed())
    after["Outputs"] = {"ClusterName": {"Value": "x"}}
    expected = load_expectation(EXPECTED_DIFF)
    assert offending_changes(template_diff(BEFORE_FIX, after), expected) == [
        "[+] outputs ClusterName",
        '    ! not declared (declare it as "sections": {"outputs": {"ClusterName": "added"}})',
    ]


def test_declared_sections_and_dependency_changes_pass(tmp_path: Path) -> None:
    after = copy.deepcopy(_fixed())
    after["Conditions"] = {"IsAws": {"Fn::Equals": [{"Ref": "AWS::Partition"}, "aws"]}}
    after["Resources"]["S3CsiDriverAddon"]["DependsOn"] = ["OidcProviderA3C7D7F2"]
    declared = json.loads(EXPECTED_DIFF.read_text(encoding="utf-8"))
    declared["resources"]["S3CsiDriverAddon"]["other"] = ["DependsOn"]
    declared["sections"] = {"conditions": {"IsAws": "added"}}
    path = tmp_path / "declared.json"
    path.write_text(json.dumps(declared), encoding="utf-8")
    assert diff_guard(BEFORE_FIX, after, path) == []
    # Declared but absent: both are reported.
    assert diff_guard(BEFORE_FIX, _fixed(), path) == [
        "[~] AWS::EKS::Addon S3CsiDriverAddon",
        " └─ [~] ServiceAccountRoleArn",
        "    ! declared change(s) not in the diff: DependsOn",
        "[ ] conditions IsAws",
        "    ! declared as added but the diff does not change it",
    ]


BAD_EXPECTATIONS = [
    (
        "[]",
        [
            'x.json:/resources: missing object \'resources\' (fix: {"resources": {"LogicalId": '
            '{"type": ..., "change": ..., "properties": [...]}}})'
        ],
    ),
    (
        '{"resources": {"A": {"type": "Queue", "change": "changed", "properties": "X", "why": 1}}}',
        [
            "x.json:/resources/A: unknown key(s) why (allowed: type, change, properties, "
            "replacement, other)",
            "x.json:/resources/A/type: 'type' must be a CloudFormation type (got 'Queue'; "
            "allowed: e.g. AWS::IAM::Policy)",
            "x.json:/resources/A/change: bad 'change' (got 'changed'; allowed: added, removed, "
            "modified)",
            "x.json:/resources/A/properties: 'properties' must be a list of property names "
            "(got 'X')",
        ],
    ),
    (
        "{",
        [
            "x.json: not valid JSON: Expecting property name enclosed in double quotes at line 1 "
            "column 2"
        ],
    ),
]


@pytest.mark.parametrize(("text", "messages"), BAD_EXPECTATIONS)
def test_bad_expectation_file(
    text: str, messages: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("x.json").write_text(text, encoding="utf-8")
    with pytest.raises(MlccError) as caught:
        load_expectation("x.json")
    assert [str(p) for p in caught.value.problems] == messages


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    after = tmp_path / "after.json"
    after.write_text(json.dumps(_fixed()), encoding="utf-8")
    args = ["diff-guard", str(BEFORE_FIX), str(after), "--expect", str(EXPECTED_DIFF)]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("ok: 2 resource change(s) as declared")
    bumped = tmp_path / "bumped.json"
    bumped.write_text(json.dumps(_after(addon_version="v2.0.0-eksbuild.1")), encoding="utf-8")
    assert main(["diff-guard", str(BEFORE_FIX), str(bumped), "--expect", str(EXPECTED_DIFF)]) == 1
    err = capsys.readouterr().err
    assert "[~] AWS::EKS::Addon S3CsiDriverAddon" in err
    assert "! undeclared property change(s): AddonVersion" in err


TEMPLATE_FIX = "fix: pass the template `cdk synth` writes to cdk.out/*.template.json"
BAD_TEMPLATES = [
    (
        "key: [1\n",
        "before.yaml: not a JSON CloudFormation template: Expecting value at line 1 column 1 "
        f"({TEMPLATE_FIX})",
    ),
    (
        '{"Resources": {}\n  "Outputs": {}}',
        "before.yaml: not a JSON CloudFormation template: Expecting ',' delimiter at line 2 "
        f"column 3 ({TEMPLATE_FIX})",
    ),
    (
        "[]",
        "before.yaml: not a JSON CloudFormation template: the top level must be an object "
        f"(got 'list'; {TEMPLATE_FIX})",
    ),
    (
        b"\xff\xfe{}".decode("latin-1"),
        f"before.yaml: not a JSON CloudFormation template: not UTF-8 text ({TEMPLATE_FIX})",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_TEMPLATES)
def test_cli_reports_a_bad_template_before_running_node(
    text: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("before.yaml").write_bytes(text.encode("latin-1"))
    monkeypatch.setattr("mlcc_constructs.ops.diff_guard.SCRIPT", tmp_path / "never-run.js")
    argv = ["diff-guard", "before.yaml", str(BEFORE_FIX), "--expect", str(EXPECTED_DIFF)]
    assert main(argv) == 1
    assert capsys.readouterr().err == f"mlcc: error: {message}\n"


def test_cli_reports_every_bad_input_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.json").write_text("not json", encoding="utf-8")
    Path("e.json").write_text("{'resources': {}}", encoding="utf-8")
    assert main(["diff-guard", "a.json", "missing.json", "--expect", "e.json"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "mlcc: error: a.json: not a JSON CloudFormation template: Expecting value at line 1 "
        f"column 1 ({TEMPLATE_FIX})",
        "mlcc: error: missing.json: template file not found (fix: synthesise it first)",
        "mlcc: error: e.json: not valid JSON: Expecting property name enclosed in double quotes "
        "at line 1 column 2",
    ]


NPM_FIX = (
    "fix: install the CDK diff engine where node finds it: in a clone, `npm ci` (package.json "
    "pins @aws-cdk/cloudformation-diff); with the installed package, `npm install "
    "@aws-cdk/cloudformation-diff` in the working directory, or set NODE_PATH to a node_modules "
    "that has it"
)
BUG_FIX = "fix: this is a bug in the diff guard; report it with node's full stderr"
NODE_FAILURES = [
    # node's own JSON.parse message varies by version: only its start is checked
    ('JSON.parse("{");', "exit 1", "SyntaxError: ", BUG_FIX),
    (
        'require("mlcc-no-such-module");',
        "exit 1",
        "Error: Cannot find module 'mlcc-no-such-module'",
        NPM_FIX,
    ),
    ('throw new TypeError("bad change set");', "exit 1", "TypeError: bad change set", BUG_FIX),
    ('process.stderr.write("\\nboom\\n");process.exit(3);', "exit 3", "boom", BUG_FIX),
    ("process.exit(4);", "exit 4", "no error output", BUG_FIX),
]


@pytest.mark.parametrize(("script", "code", "line", "fix"), NODE_FAILURES)
def test_node_failure_names_the_error_line(
    script: str, code: str, line: str, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.js"
    broken.write_text(script, encoding="utf-8")
    monkeypatch.setattr("mlcc_constructs.ops.diff_guard.SCRIPT", broken)
    with pytest.raises(MlccError) as caught:
        template_diff({"Resources": {}}, {"Resources": {}})
    (problem,) = caught.value.problems
    head = f"{broken}: the CDK diff engine failed ({code}): {line}"
    assert str(problem).startswith(head)
    assert str(problem).endswith(f" ({fix})")
    assert "Node.js v" not in str(problem)  # not node's version banner (the last line)


NODE_STDERR = [
    (
        "/x/_cfn_diff.js:30\n  return JSON.parse(s);\n              ^\n\n"
        "SyntaxError: Unexpected token 'k', \"key: [1\" is not valid JSON\n"
        "    at JSON.parse (<anonymous>)\n\nNode.js v20.20.2\n",
        "SyntaxError: Unexpected token 'k', \"key: [1\" is not valid JSON",
    ),
    (
        "node:internal/x:1\n  throw err;\n\nError: Cannot find module 'y'\n",
        "Error: Cannot find module 'y'",
    ),
    ("\n\nNode.js v20.20.2\n", "no error output"),
    ("killed\nNode.js v20.20.2\n", "killed"),
]


@pytest.mark.parametrize(("stderr", "line"), NODE_STDERR)
def test_node_error_line(stderr: str, line: str) -> None:
    assert node_error_line(stderr) == line
