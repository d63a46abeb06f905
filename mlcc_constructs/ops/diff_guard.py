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
changed properties, and ``"other": ["DependsOn", ...]`` for changes outside ``Properties``);
a declared change that does not happen, an undeclared change outside properties
(``DependsOn``, ``Metadata``, policies), a replacement (unless ``"replacement": true``) and
any change outside ``Resources`` that is not declared under ``"sections"``
(``{"conditions": {"Id": "added"}}``) are offending. So is an update that CloudFormation
performs in place but the Kubernetes API server rejects (the rules of
:mod:`mlcc_constructs.core.platform.replacement_rules`: an InferenceEndpointConfig gaining,
changing or dropping ``intelligentRoutingSpec``), unless it is declared ``"replacement": true``
(docs/guides/cache.md, *Routing and KV cache on HyperPod*: how to replace the endpoint).
Stdlib only: no jsii.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlcc_constructs.core.platform.replacement_rules import forced_replacements
from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer, raise_if_any

SCRIPT = Path(__file__).resolve().parent / "_cfn_diff.js"
_CHANGES = ("added", "removed", "modified")
_REPLACING = ("WILL_REPLACE", "MAY_REPLACE")
_MARK = {"added": "[+]", "removed": "[-]", "modified": "[~]"}
# The line of node's stderr that says what went wrong ("SyntaxError: ...", "Error: Cannot
# find module ..."); the lines around it are the source excerpt, stack and node's version.
_NODE_ERROR = re.compile(r"^\s*(?:\w+)?(?:Error|Exception)\b")
_NPM_FIX = (
    "install the CDK diff engine where node finds it: in a clone, `npm ci` (package.json pins "
    "@aws-cdk/cloudformation-diff); with the installed package, `npm install "
    "@aws-cdk/cloudformation-diff` in the working directory, or set NODE_PATH to a "
    "node_modules that has it"
)

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
    forced: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Logical id → why its in-place update would be rejected (the replacement rules)."""


@dataclass(frozen=True, kw_only=True)
class ExpectedChange:
    """One declared resource change."""

    type: str
    change: str
    properties: frozenset[str]
    replacement: bool = False
    other: frozenset[str] = frozenset()


class Expectation(dict[str, ExpectedChange]):
    """Declared resource changes by logical id, plus ``sections``: the declared changes
    outside ``Resources`` as ``(section, id, change)``."""

    sections: frozenset[tuple[str, str, str]] = frozenset()


def template_diff(before: Template, after: Template) -> TemplateDiff:
    """Diff ``before`` → ``after`` (paths or template dicts) with the CDK diff engine."""
    return template_diffs([(before, after)])[0]


def template_diffs(pairs: Sequence[tuple[Template, Template]]) -> list[TemplateDiff]:
    """Diff each ``(before, after)`` pair with the CDK diff engine, all in one node process
    (the engine takes about 0.4 s to load): a stack history is checked in one call."""
    if not pairs:
        return []
    node = shutil.which("node")
    if node is None:
        raise fail(
            "node is not on PATH",
            where="diff guard",
            fix="install Node.js >= 20 and run `npm ci` (package.json pins the diff engine)",
        )
    problems: list[Problem] = []
    documents: list[dict[str, Any]] = []
    for before, after in pairs:
        try:
            documents.extend(_load_templates(before, after))
        except MlccError as error:
            problems.extend(error.problems)
    raise_if_any(problems)
    with tempfile.TemporaryDirectory(prefix="mlcc-diff-") as tmp:
        paths = []
        for index, document in enumerate(documents):
            path = Path(tmp) / f"{index}.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            paths.append(path)
        result = subprocess.run(
            [node, str(SCRIPT), *map(str, paths)],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        line = node_error_line(result.stderr)
        raise fail(
            f"the CDK diff engine failed (exit {result.returncode}): {line}",
            where=str(SCRIPT),
            fix=_NPM_FIX
            if "Cannot find module" in line
            else "this is a bug in the diff guard; report it with node's full stderr",
        )
    return [
        _change_set(raw, forced_replacements(documents[2 * index], documents[2 * index + 1]))
        for index, raw in enumerate(json.loads(result.stdout))
    ]


def _change_set(raw: Mapping[str, Any], forced: Mapping[str, tuple[str, ...]]) -> TemplateDiff:
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
        forced=forced,
    )


def node_error_line(stderr: str) -> str:
    """The line of node's ``stderr`` that names the error (else its first non-empty line)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = next((line for line in lines if _NODE_ERROR.match(line)), None)
    if named is not None:
        return named
    rest = [line for line in lines if not line.startswith("Node.js v")]
    return rest[0] if rest else "no error output"


def load_template(template: Template) -> dict[str, Any]:
    """A template as a dict: a path is read and must hold a JSON object."""
    if isinstance(template, Mapping):
        return dict(template)
    path = Path(template)
    if not path.is_file():
        raise fail("template file not found", where=str(path), fix="synthesise it first")
    fix = "pass the template `cdk synth` writes to cdk.out/*.template.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise fail(
            "not a JSON CloudFormation template: not UTF-8 text", where=str(path), fix=fix
        ) from None
    except json.JSONDecodeError as error:
        raise fail(
            f"not a JSON CloudFormation template: {error.msg} at line {error.lineno} "
            f"column {error.colno}",
            where=str(path),
            fix=fix,
        ) from None
    if not isinstance(document, dict):
        raise fail(
            "not a JSON CloudFormation template: the top level must be an object",
            where=str(path),
            value=type(document).__name__,
            fix=fix,
        )
    return document


def _load_templates(before: Template, after: Template) -> list[dict[str, Any]]:
    problems: list[Problem] = []
    documents: list[dict[str, Any]] = []
    for template in (before, after):
        try:
            documents.append(load_template(template))
        except MlccError as error:
            problems.extend(error.problems)
    raise_if_any(problems)
    return documents


def load_inputs(
    before: Template, after: Template, expected: Path | str
) -> tuple[dict[str, Any], dict[str, Any], Expectation]:
    """Both templates and the expectation, checked; every problem of all three at once."""
    problems: list[Problem] = []
    try:
        documents = _load_templates(before, after)
    except MlccError as error:
        problems.extend(error.problems)
        documents = []
    try:
        expectation = load_expectation(expected)
    except MlccError as error:
        problems.extend(error.problems)
    raise_if_any(problems)
    return documents[0], documents[1], expectation


def _names(
    entry: Mapping[str, Any], key: str, what: str, where: str, pointer: str
) -> tuple[list[str], list[Problem]]:
    """``entry[key]`` (default ``[]``) when it is a list of strings, else ``[]`` and why."""
    value = entry.get(key, [])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value, []
    problem = Problem(
        message=f"'{key}' must be a list of {what}",
        where=where,
        pointer=f"{pointer}/{key}",
        value=value,
    )
    return [], [problem]


def load_expectation(path: Path | str) -> Expectation:
    """Read and check an expectation file; every problem is reported at once."""
    where = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, IsADirectoryError):
        raise fail("expectation file not found", where=where) from None
    except UnicodeDecodeError:
        raise fail("not valid JSON: not UTF-8 text", where=where) from None
    except json.JSONDecodeError as error:
        raise fail(
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            where=where,
        ) from None
    problems: list[Problem] = []
    resources = document.get("resources") if isinstance(document, dict) else None
    if not isinstance(resources, dict):
        raise fail(
            "missing object 'resources'",
            where=where,
            pointer="/resources",
            fix='{"resources": {"LogicalId": {"type": ..., "change": ..., "properties": [...]}}}',
        )
    expected = Expectation()
    expected.sections = frozenset(_sections(document.get("sections", {}), where, problems))
    for logical_id, entry in resources.items():
        pointer = json_pointer("resources", logical_id)
        if not isinstance(entry, dict):
            problems.append(Problem(message="must be an object", where=where, pointer=pointer))
            continue
        unknown = sorted(set(entry) - {"type", "change", "properties", "replacement", "other"})
        if unknown:
            problems.append(
                Problem(
                    message=f"unknown key(s) {', '.join(unknown)}",
                    where=where,
                    pointer=pointer,
                    allowed="type, change, properties, replacement, other",
                )
            )
        other, found = _names(
            entry, "other", "template keys (DependsOn, Metadata...)", where, pointer
        )
        problems += found
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
        properties, found = _names(entry, "properties", "property names", where, pointer)
        problems += found
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
            other=frozenset(other),
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
        reasons = _reasons(
            change, expected.get(change.logical_id), diff.forced.get(change.logical_id, ())
        )
        if reasons:
            lines.append(f"{_MARK[change.change]} {change.type} {change.logical_id}")
            lines.extend(_property_lines(change))
            lines.extend(f"    ! {reason}" for reason in reasons)
    for logical_id, want in expected.items():
        if logical_id not in seen:
            lines.append(f"[ ] {want.type} {logical_id}")
            lines.append(f"    ! declared as {want.change} but the diff does not change it")
    declared_sections: frozenset[tuple[str, str, str]] = getattr(expected, "sections", frozenset())
    for section, entry_id, section_change in diff.sections:
        if (section, entry_id, section_change) in declared_sections:
            continue
        lines.append(f"{_MARK.get(section_change, '[~]')} {section} {entry_id}")
        lines.append(
            f'    ! not declared (declare it as "sections": {{"{section}": '
            f'{{"{entry_id}": "{section_change}"}}}})'
        )
    seen_sections = set(diff.sections)
    for section, entry_id, section_change in sorted(declared_sections - seen_sections):
        lines.append(f"[ ] {section} {entry_id}")
        lines.append(f"    ! declared as {section_change} but the diff does not change it")
    return lines


_SECTIONS = ("conditions", "mappings", "metadata", "outputs", "parameters", "unknown")


def _sections(value: Any, where: str, problems: list[Problem]) -> list[tuple[str, str, str]]:
    """``{"conditions": {"Id": "added"}}`` as ``(section, id, change)`` triples."""
    found: list[tuple[str, str, str]] = []
    if not isinstance(value, dict):
        problems.append(
            Problem(
                message="'sections' must map a template section to {id: change}",
                where=where,
                pointer="/sections",
                value=value,
            )
        )
        return found
    for section, entries in value.items():
        pointer = json_pointer("sections", section)
        if section not in _SECTIONS or not isinstance(entries, dict):
            problems.append(
                Problem(
                    message="unknown section, or not an object of {id: change}",
                    where=where,
                    pointer=pointer,
                    value=section,
                    allowed=", ".join(_SECTIONS),
                )
            )
            continue
        for entry_id, change in entries.items():
            if change not in _CHANGES:
                problems.append(
                    Problem(
                        message="bad change",
                        where=where,
                        pointer=json_pointer("sections", section, entry_id),
                        value=change,
                        allowed=", ".join(_CHANGES),
                    )
                )
                continue
            found.append((section, str(entry_id), str(change)))
    return found


_FORCED_FIX = (
    "replace the object instead: deploy once without it, or give it a new name "
    "(docs/guides/cache.md, Routing and KV cache on HyperPod); "
    'declare "replacement": true only if it is deleted before this deploy'
)


def _reasons(
    change: ResourceChange, want: ExpectedChange | None, forced: Sequence[str] = ()
) -> list[str]:
    if want is None:
        reasons = ["not declared in the expectation"]
        if change.replaces:
            reasons.append("would be replaced")
        reasons += [f"{reason}; {_FORCED_FIX}" for reason in forced]
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
        if undeclared := sorted(set(change.other) - want.other):
            reasons.append(f"changes outside Properties: {', '.join(undeclared)}")
        if unseen := sorted(want.other - set(change.other)):
            reasons.append(f"declared change(s) not in the diff: {', '.join(unseen)}")
    if change.replaces and not want.replacement:
        reasons.append('would be replaced (declare "replacement": true if intended)')
    if not want.replacement:
        reasons += [f"{reason}; {_FORCED_FIX}" for reason in forced]
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
    before_doc, after_doc, expectation = load_inputs(before, after, expected)
    return offending_changes(template_diff(before_doc, after_doc), expectation)
