"""cfn-lint over every template the app synthesises: no error, no warning.

Two warnings are configured off because CDK itself causes them, not our code:
* W3005 (obsolete DependsOn): CDK adds DependsOn beside a Ref/GetAtt to the same resource
  (VPC subnets of the cluster, Lambda roles of its providers);
* W3010 (hard-coded availability zones): the app declares its zones in context
  (``availability_zones``) so that ``cdk synth`` needs no AWS lookup; CDK's VPC writes them.
"""

from __future__ import annotations

import pytest

from tests._cdk_app import synthesised

IGNORED = ["W3005", "W3010"]


@pytest.mark.parametrize("stack_name", sorted(synthesised()[1]))
def test_template_is_clean(stack_name: str) -> None:
    from cfnlint.api import ManualArgs, lint

    text = synthesised()[1][stack_name]
    matches = lint(text, config=ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED))
    assert [str(m) for m in matches] == []


def test_cfn_lint_finds_what_it_should() -> None:
    """The configuration still reports errors (a wrong property type)."""
    from cfnlint.api import ManualArgs, lint

    bad = '{"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"DelaySeconds": "x"}}}}'
    matches = lint(bad, config=ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED))
    assert [m.rule.id for m in matches] == ["E3012"]


@pytest.mark.parametrize("which", ["default", "https-endpoint"])
def test_the_first_deploys_templates_are_clean(which: str) -> None:
    """The default app (cdk.json alone) and its HTTPS variant (examples/https-endpoint.yaml:
    the Route 53 alias record, the API key's outputs), every stack."""
    import json

    import aws_cdk as cdk
    from cfnlint.api import ManualArgs, lint

    from app import build_app
    from tests._cdk_app import default_context

    context = default_context()
    if which == "https-endpoint":
        context["deployments_file"] = "examples/https-endpoint.yaml"
    app = build_app(cdk.App(context=context))
    for stack in app.synth().stacks:
        text = json.dumps(stack.template, indent=1)
        matches = lint(text, config=ManualArgs(regions=["us-east-1"], ignore_checks=IGNORED))
        assert (stack.stack_name, [str(m) for m in matches]) == (stack.stack_name, [])
