"""Diff guard: compare a template change set with a declared one, using the real CDK diff.

The change set between two CloudFormation templates is computed by
``@aws-cdk/cloudformation-diff`` (the engine behind ``cdk diff``) through the small Node
script ``_cfn_diff.js``; this module only compares its result with an expectation file::

    {
      "description": "why these changes",
      "resources": {
        "S3CsiDriverAddon": {"type": "AWS::EKS::Addon", "change": "modified",
                             "properties": ["ServiceAccountRoleArn"]}
      }
    }

Every resource change must be declared (type, ``added|removed|modified``, the exact set of
changed properties); a declared change that does not happen, a change of anything other than
properties (``DependsOn``, ``Metadata``, policies), a replacement (unless ``"replacement":
true``) and any change outside ``Resources`` are offending. Stdlib only: no jsii.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlcc_constructs.core.errors import MlccError, Problem, fail, json_pointer

SCRIPT = Path(__file__).resolve().parent / "_cfn_diff.js"
_CHANGES = ("added", "removed", "modified")
_REPLACING = ("WILL_REPLACE", "MAY_REPLACE")
_MARK = {"added": "[+]", "removed": "[-]", "modified": "[~]"}

Template = Path | str | Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ResourceChange:
    """One changed resource as the CDK diff engine reports it."""

    logical_id: str
    type: str
    change: str  # added | removed | modified
    impact: str  # WILL_UPDATE, WILL_REPLACE, MAY_REPLACE, WILL_CREATE, WILL_DESTROY, ...
    properties: Mapping[str, str]  # changed property -> its impact
    other: tuple[str, ...]  # changed non-property keys (DependsOn, Metadata, ...)

    @property
    def replaces(self) -> bool:
        return self.impact in _REPLACING or any(
            impact in _REPLACING for impact in self.properties.values()
        )


@dataclass(frozen=True, kw_only=True)
class TemplateDiff:
    """The change set between two templates, plus the engine's ``cdk diff`` text."""

    resources: tuple[ResourceChange, ...]
    sections: tuple[tuple[str, str, str], ...]  # (section, id, change) outside Resources
    text: str


@dataclass(frozen=True, kw_only=True)
class ExpectedChange:
    """One declared resource change."""

    type: str
    change: str
    properties: frozenset[str]
    replacement: bool = False


def template_diff(before: Template, after: Template) -> TemplateDiff:
    """Diff ``before`` → ``after`` (paths or template dicts) with the CDK diff engine."""
    node = shutil.which("node")
    if node is None:
        raise fail(
            "node is not on PATH",
            where="diff guard",
            fix="install Node.js >= 20 and run `npm ci` (package.json pins the diff engine)",
        )
    with tempfile.TemporaryDirectory(prefix="mlcc-diff-") as tmp:
        paths = [
            _template_path(t, Path(tmp) / f"{n}.json") for n, t in (("a", before), ("b", after))
        ]
        result = subprocess.run(
            [node, str(SCRIPT), *map(str, paths)],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        raise fail(
            f"the CDK diff engine failed: {result.stderr.strip().splitlines()[-1:]}",
            where=str(SCRIPT),
            fix="run `npm ci` in the repository (needs @aws-cdk/cloudformation-diff) "
            "or set NODE_PATH to a node_modules that has it",
        )
    raw = json.loads(result.stdout)
    return TemplateDiff(
        resources=tuple(
            ResourceChange(
                logical_id=r["logicalId"],
                type=r["type"],
                change=r["change"],
                impact=r["impact"],
                properties={name: p["impact"] for name, p in sorted(r["properties"].items())},
                other=tuple(r["other"]),
            )
            for r in raw["resources"]
        ),
        sections=tuple((s["section"], s["id"], s["change"]) for s in raw["sections"]),
        text=raw["text"],
    )


def _template_path(template: Template, scratch: Path) -> Path:
    if isinstance(template, Mapping):
        scratch.write_text(json.dumps(template), encoding="utf-8")
        return scratch
    path = Path(template)
    if not path.is_file():
        raise fail("template file not found", where=str(path), fix="synthesise it first")
    return path


def load_expectation(path: Path | str) -> dict[str, ExpectedChange]:
    """Read and check an expectation file; every problem is reported at once."""
    where = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise fail("expectation file not found", where=where) from None
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON: {error.msg} at line {error.lineno}", where=where) from None
    problems: list[Problem] = []
    resources = document.get("resources") if isinstance(document, dict) else None
    if not isinstance(resources, dict):
        raise fail(
            "missing object 'resources'",
            where=where,
            pointer="/resources",
            fix='{"resources": {"LogicalId": {"type": ..., "change": ..., "properties": [...]}}}',
        )
    expected: dict[str, ExpectedChange] = {}
    for logical_id, entry in resources.items():
        pointer = json_pointer("resources", logical_id)
        if not isinstance(entry, dict):
            problems.append(Problem(message="must be an object", where=where, pointer=pointer))
            continue
        unknown = sorted(set(entry) - {"type", "change", "properties", "replacement"})
        if unknown:
            problems.append(
                Problem(
                    message=f"unknown key(s) {', '.join(unknown)}",
                    where=where,
                    pointer=pointer,
                    allowed="type, change, properties, replacement",
                )
            )
        if not isinstance(entry.get("type"), str) or "::" not in entry.get("type", ""):
            problems.append(
                Problem(
                    message="'type' must be a CloudFormation type",
                    where=where,
                    pointer=pointer + "/type",
                    value=entry.get("type"),
                    allowed="e.g. AWS::IAM::Policy",
                )
            )
        if entry.get("change") not in _CHANGES:
            problems.append(
                Problem(
                    message="bad 'change'",
                    where=where,
                    pointer=pointer + "/change",
                    value=entry.get("change"),
                    allowed=", ".join(_CHANGES),
                )
            )
        properties = entry.get("properties", [])
        if not (isinstance(properties, list) and all(isinstance(p, str) for p in properties)):
            problems.append(
                Problem(
                    message="'properties' must be a list of property names",
                    where=where,
                    pointer=pointer + "/properties",
                    value=properties,
                )
            )
            properties = []
        if not isinstance(entry.get("replacement", False), bool):
            problems.append(
                Problem(
                    message="'replacement' must be true or false",
                    where=where,
                    pointer=pointer + "/replacement",
                    value=entry.get("replacement"),
                )
            )
        expected[logical_id] = ExpectedChange(
            type=str(entry.get("type")),
            change=str(entry.get("change")),
            properties=frozenset(properties),
            replacement=entry.get("replacement") is True,
        )
    if problems:
        raise MlccError(problems)
    return expected


def offending_changes(diff: TemplateDiff, expected: Mapping[str, ExpectedChange]) -> list[str]:
    """``cdk diff``-style lines for every change that differs from ``expected`` (empty: ok)."""
    lines: list[str] = []
    seen = set()
    for change in diff.resources:
        seen.add(change.logical_id)
        reasons = _reasons(change, expected.get(change.logical_id))
        if reasons:
            lines.append(f"{_MARK[change.change]} {change.type} {change.logical_id}")
            lines.extend(_property_lines(change))
            lines.extend(f"    ! {reason}" for reason in reasons)
    for logical_id, want in expected.items():
        if logical_id not in seen:
            lines.append(f"[ ] {want.type} {logical_id}")
            lines.append(f"    ! declared as {want.change} but the diff does not change it")
    for section, entry_id, section_change in diff.sections:
        lines.append(f"{_MARK.get(section_change, '[~]')} {section} {entry_id}")
        lines.append("    ! only Resources changes can be declared")
    return lines


def _reasons(change: ResourceChange, want: ExpectedChange | None) -> list[str]:
    if want is None:
        reasons = ["not declared in the expectation"]
        if change.replaces:
            reasons.append("would be replaced")
        return reasons
    reasons = []
    if change.type != want.type:
        reasons.append(f"declared type {want.type}")
    if change.change != want.change:
        reasons.append(f"declared as {want.change}, is {change.change}")
    if change.change == "modified":
        changed = set(change.properties)
        if extra := sorted(changed - want.properties):
            reasons.append(f"undeclared property change(s): {', '.join(extra)}")
        if missing := sorted(want.properties - changed):
            reasons.append(f"declared property change(s) not in the diff: {', '.join(missing)}")
        if change.other:
            reasons.append(f"changes outside Properties: {', '.join(change.other)}")
    if change.replaces and not want.replacement:
        reasons.append('would be replaced (declare "replacement": true if intended)')
    return reasons


def _property_lines(change: ResourceChange) -> list[str]:
    names = [*change.properties, *change.other]
    lines = []
    for index, name in enumerate(names):
        branch = "└─" if index == len(names) - 1 else "├─"
        impact = change.properties.get(name, "")
        note = " (requires replacement)" if impact in _REPLACING else ""
        lines.append(f" {branch} [~] {name}{note}")
    return lines


def diff_guard(before: Template, after: Template, expected: Path | str) -> list[str]:
    """Offending changes of ``before`` → ``after`` against the expectation file (empty: ok)."""
    return offending_changes(template_diff(before, after), load_expectation(expected))
