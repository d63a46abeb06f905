"""The shell commands of a fleet pipeline's steps, as plain strings (the pipeline construct
puts them in CodeBuild projects; a test runs them).

* synth: ``cdk synth``, then the diff guard over every stage's stack templates against the
  stage's committed stack history (``mlcc diff-guard --chain``): a template that differs
  from its history in a way no step declares fails the synth step, so a pull request shows
  each stage's reviewed diff before any stage deploys;
* a stage's pre step: promote the pinned model into the stage's bucket (its content hash
  checked), then ``mlcc preflight`` for that environment;
* a stage's post step: ``mlcc endpoint check`` against each deployment's ``EndpointUrl``
  output, its API key read from the stage's secret into an environment variable (never
  echoed: the check reads it with ``--api-key-env``).

The pre and post steps act in the stage's account through its check role: an AWS CLI
profile with ``role_arn`` and ``credential_source = EcsContainer`` (the CodeBuild
container's credentials assume it; AWS CLI user guide, "Use an IAM role in the AWS CLI").
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.platform.fleet import FleetStage
from mlcc_constructs.core.platform.fleet_pin import ModelPin

STAGE_CONTEXT_ENV = "MLCC_STAGE_CONTEXT"
"""The pre step's environment variable holding the stage's ``cdk.json`` (its context)."""
STAGE_CONTEXT_FILE = "mlcc-stage.cdk.json"
API_KEY_ENV = "MLCC_API_KEY"
"""Where the post step puts a deployment's API key for ``mlcc endpoint check``."""
PROFILE = "mlcc-stage"
"""The AWS CLI profile the pre and post steps use: the stage's check role."""


@dataclass(frozen=True, kw_only=True)
class HistoryCheck:
    """One stack of one stage the synth step guards: its template in the cloud assembly and
    its history folder in the repository."""

    template: str
    """The template's path under ``cdk.out`` (``assembly-<stage>/<artifact>.template.json``)."""
    history: str
    """Its history folder (``<history_root>/<stage>/<stack without mlcc-<profile>->``)."""


@dataclass(frozen=True, kw_only=True)
class EndpointCheck:
    """One deployment a post step calls."""

    url_env: str
    """The environment variable holding its ``EndpointUrl`` output."""
    served_model_name: str
    """The name ``/v1/models`` lists."""
    api_key_secret: str | None
    """Its API key's Secrets Manager secret (name or ARN), or ``None`` (no key)."""


def synth_commands(checks: Sequence[HistoryCheck], *, synth: Sequence[str]) -> list[str]:
    """``synth`` (the team's commands ending in ``cdk synth``), then one ``mlcc diff-guard
    --chain`` per stack of every stage: any undeclared change fails the step."""
    guards = [
        f"mlcc diff-guard --chain {shlex.quote(c.history)} --current "
        f"{shlex.quote('cdk.out/' + c.template)}"
        for c in checks
    ]
    return [*synth, *guards]


def role_commands(stage: FleetStage) -> list[str]:
    """Make the stage's check role the AWS CLI profile the step's commands use."""
    config = (
        f"[profile {PROFILE}]\\nrole_arn = {stage.check_role_arn}\\n"
        f"role_session_name = mlcc-{stage.name}\\ncredential_source = EcsContainer\\n"
        f"region = {stage.region}\\n"
    )
    return [
        f"printf {shlex.quote(config)} > mlcc-aws-config",
        "export AWS_CONFIG_FILE=$PWD/mlcc-aws-config",
        f"export AWS_PROFILE={PROFILE}",
        f"export AWS_REGION={stage.region}",
    ]


def stage_cdk_json(context: Mapping[str, Any]) -> str:
    """The stage's ``cdk.json`` text (its context), what preflight reads."""
    return json.dumps({"context": context}, sort_keys=True, separators=(",", ":"))


def pre_commands(stage: FleetStage, models: Mapping[str, ModelPin], *, assembly: str) -> list[str]:
    """Promote each pinned model into the stage's models bucket (``unchanged`` when it is
    there; the recorded content hash must be the pin's), then ``mlcc preflight`` for the
    stage (``assembly``: the stage's cloud assembly folder, for its bootstrap version)."""
    commands = role_commands(stage)
    commands.append(f"printenv {STAGE_CONTEXT_ENV} > {STAGE_CONTEXT_FILE}")
    for pin in _distinct(models):
        report = f"promoted-{pin.project}-{pin.name}.json"
        commands.append(
            f"mlcc model promote {shlex.quote(pin.name)} --project {shlex.quote(pin.project)} "
            f"--from {shlex.quote(pin.home)} --account {stage.account} --region {stage.region} "
            f"--profile {stage.profile} --format json > {report}"
        )
        commands.append(
            "python3 -c "
            + shlex.quote(
                'import json,sys; r=json.load(open(sys.argv[1]))["record"]; '
                'sys.exit(0 if r["content_hash"]==sys.argv[2] else '
                '"content hash "+r["content_hash"]+" is not the pinned "+sys.argv[2])'
            )
            + f" {report} {pin.content_hash}"
        )
    commands.append(
        f"mlcc preflight --cdk-json {STAGE_CONTEXT_FILE} --cdk-out {shlex.quote(assembly)} --strict"
    )
    return commands


def post_commands(stage: FleetStage, checks: Sequence[EndpointCheck]) -> list[str]:
    """``mlcc endpoint check`` per deployment, against its ``EndpointUrl`` output; the key
    comes from its secret into :data:`API_KEY_ENV` and is never printed."""
    commands = role_commands(stage)
    for check in checks:
        if check.api_key_secret is not None:
            commands.append(
                f'export {API_KEY_ENV}="$(aws secretsmanager get-secret-value --secret-id '
                f'{shlex.quote(check.api_key_secret)} --query SecretString --output text)"'
            )
        key = f" --api-key-env {API_KEY_ENV}" if check.api_key_secret is not None else ""
        commands.append(
            f'mlcc endpoint check --url "${check.url_env}" '
            f"--model {shlex.quote(check.served_model_name)}{key}"
        )
        if check.api_key_secret is not None:
            commands.append(f"unset {API_KEY_ENV}")
    return commands


def _distinct(models: Mapping[str, ModelPin]) -> list[ModelPin]:
    seen: list[ModelPin] = []
    for name in sorted(models):
        if models[name] not in seen:
            seen.append(models[name])
    return seen
