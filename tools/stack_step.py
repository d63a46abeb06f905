"""Maintain stack histories (``snapshots/<stack>/``) from the current ``cdk.out/``.

    python tools/stack_step.py declare SLUG "WHY" STACK...   # write/refresh the pending step
    python tools/stack_step.py commit STACK...               # commit the pending step's template

``declare`` writes ``NNNN-<slug>.expected-diff.json`` from the real CDK diff of the last
committed template against ``cdk.out/mlcc-dev-<stack>.template.json`` (run ``make synth``
first). Read the written declaration before committing it: it is what reviewers check.
``commit`` copies the current template as the pending step's template (at the start of the
next change to that stack). STACK is the history folder name, e.g. ``eks-cluster``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from mlcc_constructs.ops.diff_guard import template_diff
from mlcc_constructs.ops.stack_history import load_history

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = REPO / "snapshots"


def _current(stack: str) -> Path:
    path = REPO / "cdk.out" / f"mlcc-dev-{stack}.template.json"
    if not path.is_file():
        sys.exit(f"{path}: not found (run `make synth` first)")
    return path


def declare(slug: str, description: str, stack: str) -> Path:
    folder = SNAPSHOTS / stack
    history = load_history(folder)
    last = history.committed[-1]
    assert last.template is not None
    diff = template_diff(folder / last.template, _current(stack))
    resources: dict[str, Any] = {}
    for change in diff.resources:
        entry: dict[str, Any] = {"type": change.type, "change": change.change}
        if change.change == "modified":
            entry["properties"] = sorted(change.properties)
            if change.other:
                entry["other"] = sorted(change.other)
        if change.replaces:
            entry["replacement"] = True
        resources[change.logical_id] = entry
    document: dict[str, Any] = {"description": description, "resources": resources}
    sections: dict[str, dict[str, str]] = {}
    for section, entry_id, kind in diff.sections:
        sections.setdefault(section, {})[entry_id] = kind
    if sections:
        document["sections"] = sections
    number = history.pending.number if history.pending else last.number + 1
    if history.pending is not None and history.pending.name != f"{number:04d}-{slug}":
        (folder / f"{history.pending.name}.expected-diff.json").unlink()
    path = folder / f"{number:04d}-{slug}.expected-diff.json"
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def commit(stack: str) -> Path:
    folder = SNAPSHOTS / stack
    pending = load_history(folder).pending
    if pending is None:
        sys.exit(f"{folder}: no pending step to commit")
    path = folder / f"{pending.name}.template.json"
    shutil.copyfile(_current(stack), path)
    return path


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[0] == "declare":
        for stack in argv[3:]:
            print(declare(argv[1], argv[2], stack))
    elif len(argv) >= 2 and argv[0] == "commit":
        for stack in argv[1:]:
            print(commit(stack))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
