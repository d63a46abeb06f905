"""A serving fleet's rules in the core (no jsii): its stages and waves, what a stage may set,
the model pin, the stage's context, the step commands. Bad input: the exact error text."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

import pytest

from mlcc_constructs.core.platform.fleet import CheckNetwork, FleetShape, shape_problems
from mlcc_constructs.core.platform.fleet_pin import pin_problems
from mlcc_constructs.core.platform.fleet_steps import (
    EndpointCheck,
    HistoryCheck,
    post_commands,
    pre_commands,
    synth_commands,
)
from mlcc_constructs.core.rollout.fleet_model import fleet_problems, stage_context
from tests._fleet import PIPELINE_ACCOUNT, PROD_ACCOUNT, pin, stages


def _shape(*stage_list: Any, waves: tuple[str, ...] = ("test", "prod"), **extra: Any) -> Any:
    return FleetShape(
        stages=stage_list,
        waves=waves,
        pipeline_account=PIPELINE_ACCOUNT,
        pipeline_region="us-east-1",
        **extra,
    )


def test_the_test_fleet_has_no_problem() -> None:
    assert shape_problems(_shape(*stages())) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda s: (s[0], s[1], dataclasses.replace(s[2], region="us-east-1")),
            "fleet:/stages/prod-euw1/profile: stage 'prod-euw1' deploys to the environment of "
            "stage 'prod-use1' (account 222222222222, region us-east-1, profile prod): their "
            "stacks and buckets would be one (fix: give one of them another profile, account "
            "or region)",
        ),
        (
            lambda s: (s[0], s[1], dataclasses.replace(s[2], wave="later")),
            "fleet:/stages/prod-euw1/wave: stage 'prod-euw1' is in a wave the fleet does not "
            "have (got 'later'; allowed: test, prod)",
        ),
        (
            lambda s: (s[0], dataclasses.replace(s[1], name="Prod-euw1"), s[2]),
            "fleet:/stages/prod-euw1/name: stage name 'prod-euw1' is taken (names are compared "
            "without case: CloudFormation and CodePipeline names)",
        ),
        (
            lambda s: (dataclasses.replace(s[0], name="1dev"), s[1], s[2]),
            "fleet:/stages/1dev/name: not a stage or wave name (got '1dev'; allowed: a letter, "
            "then letters, digits and '-'; at most 40 characters)",
        ),
        (
            lambda s: (
                dataclasses.replace(
                    s[0], check_role_arn=f"arn:aws:iam::{PROD_ACCOUNT}:role/mlcc-fleet-check"
                ),
                s[1],
                s[2],
            ),
            "fleet:/stages/dev/check_role_arn: stage 'dev': the check role is not a role of the "
            f"stage's account {PIPELINE_ACCOUNT} (got 'arn:aws:iam::{PROD_ACCOUNT}:role/"
            f"mlcc-fleet-check'; allowed: arn:aws:iam::{PIPELINE_ACCOUNT}:role/<name>)",
        ),
        (
            lambda s: (
                dataclasses.replace(
                    s[0],
                    check_network=CheckNetwork(
                        vpc_id="vpc-0123456789abcdef0",
                        subnet_ids=("subnet-0123456789abcdef0",),
                        availability_zones=(),
                    ),
                ),
                s[1],
                s[2],
            ),
            "fleet:/stages/dev/check_network/subnet_ids: the check network needs one or more "
            "subnet ids, each with its zone (got ['subnet-0123456789abcdef0']; allowed: "
            "subnet-<8 to 17 hex digits>, as many as availability_zones)",
        ),
    ],
)
def test_a_bad_stage_is_refused(change: Any, expected: str) -> None:
    assert [str(p) for p in shape_problems(_shape(*change(stages())))] == [expected]


def test_waves_without_stages_and_unknown_approvals_are_refused() -> None:
    dev = stages()[0]
    problems = shape_problems(_shape(dev, waves=("test", "prod"), approval_waves=("staging",)))
    assert [str(p) for p in problems] == [
        "fleet:/waves/1: wave 'prod' holds no stage (fix: give it a stage or drop it)",
        "fleet:/approval_waves: a manual approval guards a wave the fleet does not have (got "
        "'staging'; allowed: test, prod)",
    ]


def test_a_pin_needs_a_digest_and_a_full_content_hash() -> None:
    bad = pin(engine_image="vllm/vllm-openai:latest", content_hash="abc", home="s3://b/p")
    assert [str(p) for p in pin_problems(bad, pointer="/models/m")] == [
        "fleet:/models/m/engine_image: the engine image is pinned by tag and digest (got "
        "'vllm/vllm-openai:latest'; allowed: <repository>:<tag>@sha256:<64 hex digits>)",
        "fleet:/models/m/content_hash: not a content hash (got 'abc'; allowed: 64 lowercase "
        "hex digits (mlcc model promote's record))",
        "fleet:/models/m/home: the model's home is an S3 prefix (got 's3://b/p'; allowed: "
        "s3://bucket/prefix/)",
    ]


def test_the_pin_is_the_one_place_a_version_is_written() -> None:
    deployment = {"name": "m", "engine": {"name": "vllm", "image": "x:1"}}
    problems = fleet_problems({"region": "us-east-1"}, [deployment], {"m": pin(), "n": pin()})
    assert [str(p) for p in problems] == [
        "fleet:/context/region: the fleet's context sets 'region', which each stage sets (fix: "
        "set it on each stage (FleetStage))",
        "fleet:/deployments/0/engine/image: deployment 'm' sets /engine/image, which the "
        "fleet's model pin sets in every stage (fix: drop it; pin the version in models['m'])",
        "fleet:/models/n: a model is pinned for 'n', which is no deployment of the fleet "
        "(allowed: m)",
    ]


def test_each_stage_serves_the_pinned_weights_from_its_own_bucket() -> None:
    deployment = {"name": "m", "engine": {"name": "vllm"}, "compute": {"instance_type": "a"}}
    for stage in stages():
        context = stage_context({"gpu_limit": 4}, [deployment], {"m": pin()}, stage)
        (entry,) = context["reference_deployments"]
        assert entry["model"]["uri"] == (
            f"s3://mlcc-models-{stage.profile}-{stage.account}-{stage.region}/models/"
            "mlcc-chat/qwen3-8b-sft/"
        )
        assert entry["engine"] == {
            "name": "vllm",
            "image": pin().engine_image,
            "version": "0.33.0",
        }
        assert (context["account"], context["region"], context["gpu_limit"]) == (
            stage.account,
            stage.region,
            4,
        )
    assert deployment == {
        "name": "m",
        "engine": {"name": "vllm"},
        "compute": {"instance_type": "a"},
    }


def test_the_steps_commands() -> None:
    dev = stages()[0]
    assert synth_commands(
        [
            HistoryCheck(
                template="assembly-x/t.template.json", history="snapshots/fleet/dev/buckets"
            )
        ],
        synth=("npx cdk synth",),
    ) == [
        "npx cdk synth",
        "mlcc diff-guard --chain snapshots/fleet/dev/buckets --current "
        "cdk.out/assembly-x/t.template.json",
    ]
    pre = pre_commands(dev, {"m": pin()}, assembly="assembly-x")
    assert pre[:4] == [
        "printf '[profile mlcc-stage]\\nrole_arn = arn:aws:iam::111111111111:role/"
        "mlcc-fleet-check\\nrole_session_name = mlcc-dev\\ncredential_source = EcsContainer"
        "\\nregion = us-east-1\\n' > mlcc-aws-config",
        "export AWS_CONFIG_FILE=$PWD/mlcc-aws-config",
        "export AWS_PROFILE=mlcc-stage",
        "export AWS_REGION=us-east-1",
    ]
    assert shlex.split(pre[5])[:3] == ["mlcc", "model", "promote"]
    assert pre[-1] == "mlcc preflight --cdk-json mlcc-stage.cdk.json --cdk-out assembly-x --strict"
    post = post_commands(
        dev, [EndpointCheck(url_env="U0", served_model_name="m", api_key_secret="mlcc/key")]
    )
    assert post[4:] == [
        'export MLCC_API_KEY="$(aws secretsmanager get-secret-value --secret-id mlcc/key '
        '--query SecretString --output text)"',
        'mlcc endpoint check --url "$U0" --model m --api-key-env MLCC_API_KEY',
        "unset MLCC_API_KEY",
    ]
