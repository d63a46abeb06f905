"""A 3-stage fleet (2 accounts, 2 regions, 2 waves) for the fleet tests and the docs."""

from __future__ import annotations

from typing import Any

PIPELINE_ACCOUNT = "111111111111"
PROD_ACCOUNT = "222222222222"
CONNECTION = (
    f"arn:aws:codeconnections:us-east-1:{PIPELINE_ACCOUNT}:connection/"
    "00000000-0000-0000-0000-000000000000"
)
DEPLOYMENT: dict[str, Any] = {
    "name": "qwen3-8b",
    "target": "eks",
    "engine": {"name": "vllm"},
    "model": {"bytes": 16381470720},
    "compute": {"instance_type": "ml.g6.xlarge"},
    "namespace": "inference",
}


def pin(**changes: Any) -> Any:
    """The fleet's model version (``changes``: fields of another version)."""
    from mlcc_constructs.core.platform.fleet_pin import ModelPin

    fields: dict[str, Any] = {
        "project": "chat",
        "name": "qwen3-8b-sft",
        "home": f"s3://mlcc-models-dev-{PIPELINE_ACCOUNT}-us-east-1/models/mlcc-chat/qwen3-8b-sft/",
        "content_hash": "a" * 64,
        "engine_image": "public.ecr.aws/example/vllm:v0.33.0@sha256:" + "b" * 64,
        "engine_version": "0.33.0",
    }
    return ModelPin(**(fields | changes))


def stages() -> tuple[Any, ...]:
    from mlcc_constructs.core.platform.fleet import CheckNetwork, FleetStage

    network = CheckNetwork(
        vpc_id="vpc-0123456789abcdef0",
        subnet_ids=("subnet-0123456789abcdef0", "subnet-0123456789abcdef1"),
        availability_zones=("us-east-1a", "us-east-1b"),
    )

    def stage(name: str, wave: str, account: str, region: str, profile: str) -> FleetStage:
        return FleetStage(
            name=name,
            wave=wave,
            account=account,
            region=region,
            profile=profile,
            availability_zones=(f"{region}a", f"{region}b"),
            check_role_arn=f"arn:aws:iam::{account}:role/mlcc-fleet-check",
            check_network=network,
        )

    return (
        stage("dev", "test", PIPELINE_ACCOUNT, "us-east-1", "dev"),
        stage("prod-use1", "prod", PROD_ACCOUNT, "us-east-1", "prod"),
        stage("prod-euw1", "prod", PROD_ACCOUNT, "eu-west-1", "prod"),
    )


def build_fleet(app: Any, **changes: Any) -> Any:
    """The fleet's pipeline stack on ``app``, its ``ServingFleet`` ``Fleet``
    (``changes``: other ``ServingFleetProps`` values)."""
    import aws_cdk as cdk
    from aws_cdk import pipelines

    from mlcc_constructs.aws.serving_fleet import ServingFleet, ServingFleetProps

    stack = cdk.Stack(
        app,
        "mlcc-fleet-pipeline",
        env=cdk.Environment(account=PIPELINE_ACCOUNT, region="us-east-1"),
    )
    props: dict[str, Any] = {
        "source": pipelines.CodePipelineSource.connection(
            "example/serving", "main", connection_arn=CONNECTION
        ),
        "stages": stages(),
        "waves": ("test", "prod"),
        "approval_waves": ("prod",),
        "deployments": (DEPLOYMENT,),
        "models": {"qwen3-8b": pin()},
    }
    return ServingFleet(stack, "Fleet", props=ServingFleetProps(**(props | changes)))
