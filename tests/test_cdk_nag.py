"""cdk-nag (AwsSolutions pack, v3 API) on every stack of the app and on a team-composed
stack: every finding is fixed or acknowledged in code with a reason."""

from __future__ import annotations

from typing import Any

from _cdk_app import synthesised, team


def _findings(scope: Any) -> list[str]:
    from cdk_nag import AwsSolutionsChecks

    report = AwsSolutionsChecks(scope).validate_scope(scope)
    return sorted(
        f"{violation.rule_name} at {resource.construct_path}"
        for violation in report.violations
        for resource in violation.violating_resources
    )


def test_app_stacks_have_no_unacknowledged_findings() -> None:
    import aws_cdk as cdk

    app = synthesised()[0]
    stacks = {child.node.id for child in app.node.children if isinstance(child, cdk.Stack)}
    assert stacks == {
        "mlcc-dev-buckets",
        "mlcc-dev-eks-cluster",
        "mlcc-dev-serving",
        "mlcc-dev-serving-eks-inference-llama-vllm",
        "mlcc-dev-serving-eks-inference-mistral-vllm-args",
        "mlcc-dev-serving-hyperpod-eks-inference-llama-sglang",
        "mlcc-dev-serving-hyperpod-eks-inference-llama-vllm",
    }
    assert _findings(app) == []


def test_team_stack_with_bucket_objects_is_clean() -> None:
    stack, _ = team()
    assert _findings(stack) == []
