"""``mlcc diff-guard BEFORE AFTER --expect EXPECTED.json``: refuse an undeclared change set.

Exit 0 when the CDK diff of the two templates is exactly the declared one; exit 1 and print
every offending change in ``cdk diff`` style otherwise.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff-guard",
        help="check that two CloudFormation templates differ exactly as declared",
        description="Diff BEFORE -> AFTER with the CDK diff engine (@aws-cdk/cloudformation-diff) "
        "and compare the change set with EXPECTED.json.",
    )
    parser.add_argument("before", metavar="BEFORE", help="template as deployed (JSON)")
    parser.add_argument("after", metavar="AFTER", help="template to deploy (JSON)")
    parser.add_argument(
        "--expect", required=True, metavar="EXPECTED.json", help="the declared resource changes"
    )
    parser.add_argument(
        "--show-diff", action="store_true", help="also print the full `cdk diff` text"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
