"""AdapterInferenceComponents: one SageMaker inference component per adapter version."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.adapters import s3_layout as L
from mlcc_constructs.core.platform.buckets import bucket_names
from mlcc_constructs.core.support.errors import MlccError

CORE = bucket_names(account="123456789012", region="us-east-1", profile="dev")["core"]
HOME = L.canonical_adapter_home(
    CORE, L.base_model("meta-llama/Llama-3.1-8B-Instruct"), "acme", "bot"
)
BOT = L.adapter_version(HOME, "v0123456789ab").uri
LEGAL = L.adapter_version(
    L.canonical_adapter_home(
        CORE, L.base_model("meta-llama/Llama-3.1-8B-Instruct"), "acme", "legal"
    ),
    "vfedcba987654",
).uri
# what SageMaker reads: each version's packed archive, beside its folder
BOT_ARCHIVE = f"{BOT.rstrip('/')}.tar.gz"
LEGAL_ARCHIVE = f"{LEGAL.rstrip('/')}.tar.gz"


@pytest.fixture(scope="module")
def synth() -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam, aws_sagemaker as sagemaker
    from aws_cdk.assertions import Template

    from mlcc_constructs import AdapterInferenceComponents, AdapterInferenceComponentsProps

    app = cdk.App()
    stack = cdk.Stack(
        app, "Realtime", env=cdk.Environment(account="123456789012", region="us-east-1")
    )
    base = sagemaker.CfnInferenceComponent(
        stack,
        "Base",
        endpoint_name="llama-endpoint",
        inference_component_name="llama-base",
        specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
            model_name="llama-model",
        ),
    )
    components = AdapterInferenceComponents(
        stack,
        "Adapters",
        props=AdapterInferenceComponentsProps(
            endpoint_name="llama-endpoint",
            base_component=base,
            adapters={"legal": LEGAL, "bot": BOT},
        ),
    )
    role = iam.Role(
        stack, "ExecutionRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com")
    )
    components.grant_read(role)
    by_name = AdapterInferenceComponents(
        stack,
        "ByName",
        props=AdapterInferenceComponentsProps(
            endpoint_name="other", base_component="other-base", adapters={"bot": BOT}
        ),
    )
    return {
        "template": Template.from_stack(stack).to_json(),
        "components": components,
        "by_name": by_name,
        "stack": stack,
        "Template": Template,
    }


def _components(template: dict[str, Any]) -> dict[str, Any]:
    return {
        logical: resource
        for logical, resource in template["Resources"].items()
        if resource["Type"] == "AWS::SageMaker::InferenceComponent"
    }


def test_one_component_per_adapter_naming_the_base(synth: dict[str, Any]) -> None:
    components = _components(synth["template"])
    adapters = {k: v for k, v in components.items() if k != "Base"}
    assert len(adapters) == 3
    bot = components[synth["stack"].get_logical_id(synth["components"].components["bot"])]
    assert bot["Properties"] == {
        "EndpointName": "llama-endpoint",
        "InferenceComponentName": "llama-base-bot",
        "Specification": {
            "BaseInferenceComponentName": "llama-base",
            "Container": {"ArtifactUrl": BOT_ARCHIVE},
        },
    }
    assert bot["DependsOn"] == ["Base"]
    urls = sorted(
        c["Properties"]["Specification"]["Container"]["ArtifactUrl"] for c in adapters.values()
    )
    assert urls == sorted([BOT_ARCHIVE, BOT_ARCHIVE, LEGAL_ARCHIVE])
    by_name = components[synth["stack"].get_logical_id(synth["by_name"].components["bot"])]
    assert by_name["Properties"]["Specification"]["BaseInferenceComponentName"] == "other-base"
    assert by_name["Properties"]["InferenceComponentName"] == "other-base-bot"
    assert "DependsOn" not in by_name


def test_construct_ids_are_the_lora_names(synth: dict[str, Any]) -> None:
    assert sorted(synth["components"].components) == ["bot", "legal"]
    assert synth["components"].components["bot"].node.path == "Realtime/Adapters/bot"


def test_grant_reads_exactly_the_packed_archives(synth: dict[str, Any]) -> None:
    policies = [
        r for r in synth["template"]["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
    ]
    assert len(policies) == 1
    statements = policies[0]["Properties"]["PolicyDocument"]["Statement"]
    bot_key, legal_key = L.parse_s3_uri(BOT_ARCHIVE).key, L.parse_s3_uri(LEGAL_ARCHIVE).key

    def arn(rest: str) -> dict[str, Any]:
        return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":s3:::{rest}"]]}

    assert statements == [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": [arn(f"{CORE}/{bot_key}"), arn(f"{CORE}/{legal_key}")],
        },
    ]


def test_template_snapshot(synth: dict[str, Any], json_snapshot) -> None:
    assert synth["template"] == json_snapshot


@pytest.mark.parametrize(
    ("adapters", "kwargs", "message"),
    [
        (
            {"bot": HOME.uri},
            {},
            "AdapterInferenceComponentsProps:/adapters/bot: not a canonical adapter version "
            f"(got {HOME.uri!r}; allowed: s3://<core>/models/<org>/<base>/<adapters>/<project>/"
            "<name>/v<hash12>/; fix: promote the adapter (mlcc adapter promote) and use its "
            "version URI)",
        ),
        (
            {"bot": "s3://raw-bucket/tune/out/"},
            {},
            "AdapterInferenceComponentsProps:/adapters/bot: not a canonical adapter version",
        ),
        (
            {"my_bot": BOT},
            {},
            "AdapterInferenceComponentsProps:/adapters/my_bot: the inference component name "
            "would be invalid (got 'base-my_bot'; allowed: letters, digits and '-', at most 63 "
            "characters; fix: rename the adapter or pass a shorter name_prefix)",
        ),
    ],
)
def test_bad_props(adapters: dict[str, str], kwargs: dict[str, Any], message: str) -> None:
    import aws_cdk as cdk

    from mlcc_constructs.aws.inference_components import (
        AdapterInferenceComponents,
        AdapterInferenceComponentsProps,
    )

    stack = cdk.Stack(cdk.App(), "Bad")
    with pytest.raises(MlccError) as error:
        AdapterInferenceComponents(
            stack,
            "Adapters",
            props=AdapterInferenceComponentsProps(
                endpoint_name="e", base_component="base", adapters=adapters, **kwargs
            ),
        )
    assert str(error.value).startswith(message)


def test_props_are_frozen() -> None:
    from dataclasses import FrozenInstanceError

    from mlcc_constructs.aws.inference_components import AdapterInferenceComponentsProps

    props = AdapterInferenceComponentsProps(
        endpoint_name="e", base_component="b", adapters={"a": BOT}
    )
    with pytest.raises(FrozenInstanceError):
        props.endpoint_name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        props.adapters["b"] = BOT  # type: ignore[index]
