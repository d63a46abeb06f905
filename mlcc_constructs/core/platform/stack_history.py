"""A stack's history: an ordered chain of committed templates, each step with its declared diff.

Layout (one folder per stack, named by the stack name without ``mlcc-<profile>-``)::

    snapshots/eks-cluster/0001-before-s3csi-fix.template.json
    snapshots/eks-cluster/0002-s3csi-fix.template.json
    snapshots/eks-cluster/0002-s3csi-fix.expected-diff.json
    snapshots/eks-cluster/0003-<slug>.expected-diff.json      (pending: no template yet)

Step ``0001`` is the baseline (nothing before it, so no declaration). Every later step
declares the resource changes from the step before it (the ``mlcc diff-guard`` expectation
format). A step with a declaration and no template is *pending*: it declares how the current
synth differs from the last committed template, and only the last step may be pending. This
module only reads the layout; :mod:`mlcc_constructs.ops.stack_history` runs the diffs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mlcc_constructs.core.support.errors import Problem, raise_if_any

TEMPLATE = "template"
DECLARATION = "expected-diff"
_FILE = re.compile(
    r"^(?P<number>[0-9]{4})-(?P<slug>[a-z0-9]+(?:[.-][a-z0-9]+)*)"
    rf"\.(?P<kind>{TEMPLATE}|{DECLARATION})\.json$"
)
_PATTERN = "NNNN-<slug>.template.json or NNNN-<slug>.expected-diff.json (slug: a-z, 0-9, '-', '.')"


@dataclass(frozen=True, kw_only=True)
class HistoryStep:
    """One step of a stack's history.

    Fields:

    ``number``: 1, 2, ... (``0001`` in the file name).
    ``slug``: what the step is, e.g. ``s3csi-fix``.
    ``template``: the committed template's file name, or ``None`` for a pending step.
    ``declaration``: the expected-diff file name, or ``None`` for the baseline step.
    """

    number: int
    slug: str
    template: str | None
    declaration: str | None

    @property
    def name(self) -> str:
        """``0002-s3csi-fix``."""
        return f"{self.number:04d}-{self.slug}"

    @property
    def pending(self) -> bool:
        """Declared but not committed: the current synth is its template."""
        return self.template is None


@dataclass(frozen=True, kw_only=True)
class StackHistory:
    """The steps of one stack, in order.

    Fields:

    ``stack``: the folder name (``eks-cluster``).
    ``steps``: every step, ``0001`` first.
    """

    stack: str
    steps: tuple[HistoryStep, ...]

    @property
    def committed(self) -> tuple[HistoryStep, ...]:
        """The steps that have a template."""
        return tuple(step for step in self.steps if not step.pending)

    @property
    def pending(self) -> HistoryStep | None:
        """The pending (last) step, if there is one."""
        return self.steps[-1] if self.steps and self.steps[-1].pending else None

    @property
    def last_template(self) -> str:
        """The newest committed template's file name."""
        return self.committed[-1].template or ""


def pending_file_name(history: StackHistory, slug: str) -> str:
    """The file name a new pending step would take: ``NNNN-<slug>.expected-diff.json``."""
    return f"{len(history.steps) + 1:04d}-{slug}.{DECLARATION}.json"


def parse_history(stack: str, file_names: Iterable[str], *, where: str) -> StackHistory:
    """The steps of ``stack`` from the file names of its folder (``where`` names the folder);
    every layout problem is raised at once."""
    problems: list[Problem] = []
    found: dict[int, dict[str, str]] = {}
    slugs: dict[int, str] = {}
    for file_name in sorted(file_names):
        match = _FILE.match(file_name)
        if match is None:
            problems.append(
                Problem(
                    message="not a history file",
                    where=f"{where}/{file_name}",
                    allowed=_PATTERN,
                    fix="rename it, or move it out of the history folder",
                )
            )
            continue
        number = int(match["number"])
        if number in slugs and slugs[number] != match["slug"]:
            problems.append(
                Problem(
                    message=f"step {number:04d} has two names",
                    where=f"{where}/{file_name}",
                    value=match["slug"],
                    allowed=slugs[number],
                    fix="give both files of one step the same slug",
                )
            )
            continue
        slugs[number] = match["slug"]
        found.setdefault(number, {})[match["kind"]] = file_name
    steps = tuple(
        HistoryStep(
            number=number,
            slug=slugs[number],
            template=found[number].get(TEMPLATE),
            declaration=found[number].get(DECLARATION),
        )
        for number in sorted(found)
    )
    if not steps and not problems:
        problems.append(
            Problem(
                message="no history steps",
                where=where,
                fix=f"commit the stack's template as {where}/0001-<slug>.template.json",
            )
        )
    for index, step in enumerate(steps):
        problems += _step_problems(step, index, len(steps), where)
    raise_if_any(problems)
    return StackHistory(stack=stack, steps=steps)


def _step_problems(step: HistoryStep, index: int, count: int, where: str) -> list[Problem]:
    problems: list[Problem] = []
    if step.number != index + 1:
        problems.append(
            Problem(
                message=f"step {step.name} is out of sequence",
                where=where,
                value=step.number,
                allowed=str(index + 1),
                fix="number the steps 0001, 0002, ... without gaps",
            )
        )
    if index == 0 and step.declaration is not None:
        problems.append(
            Problem(
                message="the first step is the baseline: there is nothing before it to diff",
                where=f"{where}/{step.declaration}",
                fix="remove the declaration, or commit the template it diffs from as 0001",
            )
        )
    if index == 0 and step.pending:
        problems.append(
            Problem(
                message="the first step needs a template",
                where=where,
                fix=f"commit the stack's template as {where}/{step.name}.{TEMPLATE}.json",
            )
        )
    if index > 0 and step.declaration is None:
        problems.append(
            Problem(
                message=f"step {step.name} declares no expected diff",
                where=f"{where}/{step.template}",
                fix=f"add {where}/{step.name}.{DECLARATION}.json (what changes from the step "
                "before, as `mlcc diff-guard --expect` reads it)",
            )
        )
    if step.pending and index > 0 and index != count - 1:
        problems.append(
            Problem(
                message=f"step {step.name} is pending (no template) but is not the last step",
                where=f"{where}/{step.declaration}",
                fix=f"commit its template as {where}/{step.name}.{TEMPLATE}.json",
            )
        )
    return problems
