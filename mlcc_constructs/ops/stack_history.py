"""Check a stack's history (:mod:`mlcc_constructs.core.platform.stack_history`) with the CDK diff
engine.

Every step's diff from the step before it must be exactly its declaration, and the current
synth must equal the last committed template, or differ from it exactly as the pending step
declares. Each check reports ``cdk diff``-style lines for what is offending (none: ok).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlcc_constructs.core.platform.stack_history import (
    StackHistory,
    parse_history,
    pending_file_name,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail, raise_if_any
from mlcc_constructs.ops.diff_guard import (
    Template,
    TemplateDiff,
    load_expectation,
    load_template,
    offending_changes,
    template_diffs,
)


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """The outcome of one check.

    Fields:

    ``label``: what was compared, e.g. ``0002-s3csi-fix`` or ``current``.
    ``changes``: ``cdk diff`` headlines of the resource changes found.
    ``offending``: every change that differs from the declaration (empty: ok).
    ``note``: what the check concluded, for the report.
    """

    label: str
    changes: tuple[str, ...]
    offending: tuple[str, ...]
    note: str


def load_history(directory: Path | str) -> StackHistory:
    """The history in ``directory`` (a folder of the layout in core.stack_history)."""
    folder = Path(directory)
    if not folder.is_dir():
        raise fail(
            "history folder not found",
            where=str(folder),
            fix="pass a folder such as snapshots/eks-cluster",
        )
    names = [path.name for path in folder.iterdir() if path.is_file()]
    return parse_history(folder.name, names, where=str(folder))


def check_history(directory: Path | str, current: Template | None = None) -> list[StepResult]:
    """Check every step of the history in ``directory`` and, when given, the current synth."""
    folder = Path(directory)
    history = load_history(folder)
    problems: list[Problem] = []
    templates: dict[str, dict[str, Any]] = {}
    for step in history.committed:
        assert step.template is not None
        try:
            templates[step.name] = load_template(folder / step.template)
        except MlccError as error:
            problems.extend(error.problems)
    declarations = {}
    for step in history.steps:
        if step.declaration is not None:
            try:
                declarations[step.name] = load_expectation(folder / step.declaration)
            except MlccError as error:
                problems.extend(error.problems)
    current_template = None
    if current is not None:
        try:
            current_template = load_template(current)
        except MlccError as error:
            problems.extend(error.problems)
    raise_if_any(problems)

    # Every diff the check needs, in one run of the diff engine: each step against the one
    # before, then the current synth against the last step when it differs or is pending.
    committed = [templates[step.name] for step in history.committed]
    pairs = list(itertools.pairwise(committed))
    last = committed[-1]
    check_current = current_template is not None and (
        history.pending is not None or _canonical(current_template) != _canonical(last)
    )
    if check_current:
        assert current_template is not None
        pairs.append((last, current_template))
    diffs = template_diffs(pairs)
    results = [
        StepResult(
            label=step.name,
            changes=_headlines(diff),
            offending=tuple(offending_changes(diff, declarations[step.name])),
            note=f"{len(diff.resources)} resource change(s) as declared",
        )
        for step, diff in zip(history.committed[1:], diffs, strict=False)
    ]
    if current_template is not None:
        current_diff = diffs[-1] if check_current else None
        results.append(_current_result(history, current_diff, declarations))
    return results


def _current_result(
    history: StackHistory, diff: TemplateDiff | None, declarations: dict[str, Any]
) -> StepResult:
    """The current synth against the last committed step (``diff``: ``None`` when equal)."""
    pending = history.pending
    last_name = history.committed[-1].name
    if pending is not None:
        assert diff is not None
        return StepResult(
            label=f"current (pending {pending.name})",
            changes=_headlines(diff),
            offending=tuple(offending_changes(diff, declarations[pending.name])),
            note=f"{len(diff.resources)} resource change(s) from {last_name} as declared",
        )
    if diff is None:
        return StepResult(label="current", changes=(), offending=(), note=f"equals {last_name}")
    offending = offending_changes(diff, {}) or [
        "[~] template",
        "    ! differs outside what the diff engine reports (metadata, rules, parameters...)",
    ]
    offending.append(
        f"    ! the current synth differs from {last_name}: declare the change in a pending step "
        f"({pending_file_name(history, '<slug>')}) or commit the template as a new step"
    )
    return StepResult(
        label="current", changes=_headlines(diff), offending=tuple(offending), note=""
    )


def _canonical(template: dict[str, Any]) -> str:
    return json.dumps(template, sort_keys=True)


def _headlines(diff: Any) -> tuple[str, ...]:
    marks = {"added": "[+]", "removed": "[-]", "modified": "[~]"}
    return tuple(f"{marks[c.change]} {c.type} {c.logical_id}" for c in diff.resources)
