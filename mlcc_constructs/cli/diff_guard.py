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
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.support.errors import fail

    if args.chain is not None:
        if args.before or args.after or args.expect:
            raise fail(
                "--chain checks a whole history: BEFORE, AFTER and --expect do not apply",
                where="--chain",
                fix="mlcc diff-guard --chain snapshots/<stack> --current "
                "cdk.out/<stack>.template.json",
            )
        return _run_chain(args)
    if not (args.before and args.after and args.expect):
        raise fail(
            "diff-guard needs BEFORE, AFTER and --expect, or --chain DIR",
            where="mlcc diff-guard",
            fix="mlcc diff-guard BEFORE.json AFTER.json --expect EXPECTED.json",
        )
    if args.current:
        raise fail("--current goes with --chain", where="--current")
    from mlcc_constructs.ops.diff_guard import load_inputs, offending_changes, template_diff

    before, after, expected = load_inputs(args.before, args.after, args.expect)
    diff = template_diff(before, after)
    if args.show_diff:
        print(diff.text, end="")
    offending = offending_changes(diff, expected)
    if offending:
        print(f"mlcc diff-guard: the change set differs from {args.expect}:", file=sys.stderr)
        for line in offending:
            print(line, file=sys.stderr)
        return 1
    changed = ", ".join(f"{c.type} {c.logical_id}" for c in diff.resources) or "nothing"
    print(f"ok: {len(diff.resources)} resource change(s) as declared in {args.expect}: {changed}")
    return 0


def _run_chain(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.stack_history import check_history

    failed = False
    for result in check_history(args.chain, args.current):
        if result.offending:
            failed = True
            print(f"{args.chain}: {result.label}: differs from its declaration:", file=sys.stderr)
            for line in result.offending:
                print(line, file=sys.stderr)
        else:
            print(f"{args.chain}: {result.label}: ok, {result.note}")
            for line in result.changes:
                print(f"  {line}")
    return 1 if failed else 0
