"""``mlcc diff-guard``: refuse an undeclared change set.

Two forms:

* ``mlcc diff-guard BEFORE AFTER --expect EXPECTED.json``: exit 0 when the CDK diff of the two
  templates is exactly the declared one;
* ``mlcc diff-guard --chain snapshots/<stack> [--current TEMPLATE]``: check a whole stack
  history (every step's diff equals its declaration; the current synth equals the last step or
  differs exactly as the pending step declares).

Exit 1 and print every offending change in ``cdk diff`` style otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mlcc_constructs.cli._parser import UsageError, add_format_option, emit
from mlcc_constructs.core.support.errors import Problem


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff-guard",
        help="check that CloudFormation templates differ exactly as declared",
        description="Diff BEFORE -> AFTER with the CDK diff engine (@aws-cdk/cloudformation-diff) "
        "and compare the change set with EXPECTED.json; or check a stack history folder "
        "(--chain) step by step, and the current synth against its last step.",
    )
    parser.add_argument("before", metavar="BEFORE", nargs="?", help="template as deployed (JSON)")
    parser.add_argument("after", metavar="AFTER", nargs="?", help="template to deploy (JSON)")
    parser.add_argument("--expect", metavar="EXPECTED.json", help="the declared resource changes")
    parser.add_argument(
        "--chain",
        metavar="DIR",
        help="a stack history folder (snapshots/<stack>: NNNN-<slug>.template.json and "
        "NNNN-<slug>.expected-diff.json files)",
    )
    parser.add_argument(
        "--current",
        metavar="TEMPLATE",
        help="with --chain: the template `cdk synth` writes now "
        "(cdk.out/mlcc-<profile>-<stack>.template.json)",
    )
    parser.add_argument(
        "--show-diff", action="store_true", help="also print the full `cdk diff` text"
    )
    add_format_option(parser, default="table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.chain is not None:
        if args.before or args.after or args.expect:
            raise UsageError(
                Problem(
                    message="--chain checks a whole history: BEFORE, AFTER and --expect do not "
                    "apply",
                    where="--chain",
                    fix="mlcc diff-guard --chain snapshots/<stack> --current "
                    "cdk.out/<stack>.template.json",
                )
            )
        return _run_chain(args)
    if not (args.before and args.after and args.expect):
        raise UsageError(
            Problem(
                message="diff-guard needs BEFORE, AFTER and --expect, or --chain DIR",
                where="diff-guard",
                fix="mlcc diff-guard BEFORE.json AFTER.json --expect EXPECTED.json",
            )
        )
    if args.current:
        raise UsageError(Problem(message="--current goes with --chain", where="--current"))
    from mlcc_constructs.ops.diff_guard import load_inputs, offending_changes, template_diff

    before, after, expected = load_inputs(args.before, args.after, args.expect)
    diff = template_diff(before, after)
    offending = offending_changes(diff, expected)
    if offending:
        print(f"mlcc: error: the change set differs from {args.expect}:", file=sys.stderr)
        for line in offending:
            print(line, file=sys.stderr)
    changed = ", ".join(f"{c.type} {c.logical_id}" for c in diff.resources) or "nothing"
    declared = f"{len(diff.resources)} resource change(s) as declared in {args.expect}"
    text = "" if offending else f"ok: {declared}: {changed}\n"
    document: dict[str, Any] = {
        "expect": args.expect,
        "changes": [
            {"logical_id": c.logical_id, "type": c.type, "change": c.change, "impact": c.impact}
            for c in diff.resources
        ],
        "offending": list(offending),
    }
    if args.show_diff:
        document["diff"] = diff.text
        text = diff.text + text
    emit(args, document, ok=not offending, table=lambda: text)
    return 1 if offending else 0


def _run_chain(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.stack_history import check_history

    steps = []
    text = []
    for result in check_history(args.chain, args.current):
        if result.offending:
            print(
                f"mlcc: error: {args.chain}: {result.label}: differs from its declaration:",
                file=sys.stderr,
            )
            for line in result.offending:
                print(line, file=sys.stderr)
        else:
            text.append(f"{args.chain}: {result.label}: ok, {result.note}\n")
            text += [f"  {line}\n" for line in result.changes]
        steps.append(
            {
                "label": result.label,
                "ok": not result.offending,
                "note": result.note,
                "changes": list(result.changes),
                "offending": list(result.offending),
            }
        )
    failed = any(not step["ok"] for step in steps)
    emit(args, {"chain": args.chain, "steps": steps}, ok=not failed, table=lambda: "".join(text))
    return 1 if failed else 0
