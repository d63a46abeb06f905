"""First use: cdk.json opts out of CLI telemetry, rendered/ is ignored, ServingChart refuses a
CDK scope."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import cdk8s
import constructs
import pytest

from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.k8s.serving_chart import ServingChart

REPO = Path(__file__).resolve().parents[1]


def test_cdk_json_turns_cli_telemetry_off() -> None:
    # https://docs.aws.amazon.com/cdk/v2/guide/cli-telemetry.html: context "cli-telemetry": false
    settings = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))
    assert settings["context"]["cli-telemetry"] is False


@pytest.mark.parametrize("line", ["rendered/", "cdk.out/", "dist/"])
def test_generated_folders_are_git_ignored(line: str) -> None:
    assert line in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()


def _cdk_stack() -> constructs.Construct:
    return cdk.Stack(cdk.App(), "S")


def _under_a_stack() -> constructs.Construct:
    return constructs.Construct(_cdk_stack(), "Group")


@pytest.mark.parametrize("scope", [_cdk_stack, cdk.App, _under_a_stack])
def test_serving_chart_outside_a_cdk8s_app_is_refused(scope: object) -> None:
    with pytest.raises(MlccError) as caught:
        ServingChart(scope(), "Chart", props=None)  # type: ignore[operator, arg-type]
    assert "must be in a cdk8s App" in str(caught.value)
    assert caught.value.problems[0].fix.startswith("create it in cdk8s.App()")


def test_serving_chart_in_a_cdk8s_app_gets_past_the_scope_check() -> None:
    with pytest.raises(Exception) as caught:
        ServingChart(cdk8s.App(), "Chart", props=None)  # type: ignore[arg-type]
    assert "must be in a cdk8s App" not in str(caught.value)
