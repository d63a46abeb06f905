"""The cluster side of the Inference Gateway: an app whose HyperPod deployment asks for
``endpoint.gateway`` turns the add-on's gateway on with the controller's role (IRSA for
``hyperpod-inference-system:inference-gateway-controller``, AWS's managed policy), created
before the add-on; its serving stack applies the InferenceGatewayConfig after the add-on; cdk-nag
stays clean. The reference app (no gateway) keeps the gateway off
(tests/core/platform/test_hyperpod.py)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from tests._cdk_app import OPERATOR_STACK, build, manifest_object, reference_entries
from tests._flat import flat_spec

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE"
GATEWAY = {"jwt": {"issuer": ISSUER, "jwks_uri": f"{ISSUER}/.well-known/jwks.json",
                   "audiences": ["llm-clients"]}}  # fmt: skip
SERVING = "mlcc-dev-serving-hyperpod-eks-inference-llama-vllm"


@cache
def _app() -> tuple[Any, dict[str, dict[str, Any]]]:
    deployments = reference_entries()
    (entry,) = [
        d for d in deployments if (d["name"], d.get("target")) == ("llama-vllm", "hyperpod-eks")
    ]
    entry["endpoint"] = {**entry.get("endpoint", {}), "gateway": GATEWAY}
    app = build(reference_deployments=deployments)
    assembly = app.synth()
    return app, {s.stack_name: s.template for s in assembly.stacks}


def _resources(stack: str, kind: str) -> dict[str, Any]:
    resources = _app()[1][stack]["Resources"]
    return {k: v for k, v in resources.items() if v["Type"] == kind}


def test_the_gateway_controller_role_is_pinned_to_its_service_account() -> None:
    roles = _resources(OPERATOR_STACK, "AWS::IAM::Role")
    (logical_id,) = [k for k in roles if k.startswith("InferenceOperatorGatewayControllerRole")]
    role = roles[logical_id]["Properties"]
    assert role["ManagedPolicyArns"] == [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"},
                           ":iam::aws:policy/AmazonSageMakerHyperPodInferenceGatewayAccess"]]}
    ]  # fmt: skip
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    text = json.dumps(_app()[1][OPERATOR_STACK])
    assert "system:serviceaccount:hyperpod-inference-system:inference-gateway-controller" in text


def test_the_addon_turns_the_gateway_on_after_its_role_exists() -> None:
    (addon,) = [
        v for v in _resources(OPERATOR_STACK, "AWS::EKS::Addon").values()
        if v["Properties"]["AddonName"] == ADDON_NAME
    ]  # fmt: skip
    configuration = addon["Properties"]["ConfigurationValues"]
    (role_id,) = [
        k for k in _resources(OPERATOR_STACK, "AWS::IAM::Role")
        if k.startswith("InferenceOperatorGatewayControllerRole")
    ]  # fmt: skip
    assert role_id in addon["DependsOn"]
    joined = json.dumps(configuration)
    assert '\\"inferenceGateway\\":{\\"enabled\\":true,\\"serviceAccount\\":{\\"roleArn\\":' in (
        joined
    )
    assert role_id in joined


def test_the_serving_stack_applies_the_gateway() -> None:
    manifests = _resources(SERVING, "Custom::AWSCDK-EKS-KubernetesResource")
    objects = [manifest_object(m) for m in manifests.values()]
    kinds = [o["kind"] for o in objects]
    assert "InferenceGatewayConfig" in kinds and "InferenceEndpointConfig" in kinds
    (gateway,) = [o for o in objects if o["kind"] == "InferenceGatewayConfig"]
    assert gateway["spec"]["auth"]["jwt"]["provider"]["issuer"] == ISSUER


def test_cdk_nag_stays_clean_with_the_gateway() -> None:
    from cdk_nag import AwsSolutionsChecks

    from mlcc_constructs.aws.nag import MlccChecks

    app = _app()[0]
    stack = app.node.find_child(OPERATOR_STACK)
    found = [
        f"{v.rule_name} at {r.construct_path}"
        for pack in (AwsSolutionsChecks(stack), MlccChecks(stack))
        for v in pack.validate_scope(stack).violations
        for r in v.violating_resources
    ]
    assert found == []


def _team_served_model(*, inference_gateway: bool) -> Any:
    """A team's stack: its own operator construct and a ServedModel of a gateway deployment."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks, aws_iam as iam, aws_s3 as s3

    from mlcc_constructs import RenderContext, prepare
    from mlcc_constructs.aws.inference_operator import (
        HyperPodInferenceOperator,
        HyperPodInferenceOperatorProps,
    )
    from mlcc_constructs.aws.served_model import ServedModel, ServedModelProps
    from mlcc_constructs.core.serving.spec.endpoint import Endpoint
    from mlcc_constructs.core.serving.spec.gateway import Gateway, JwtAuth

    env = cdk.Environment(account="123456789012", region="us-east-1")
    stack = cdk.Stack(cdk.App(), "Team", env=env)
    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        stack, "Kubectl", service_token="arn:aws:lambda:us-east-1:123456789012:function:kubectl"
    )
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name="team", kubectl_provider=provider
    )
    oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        stack,
        "Oidc",
        "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/A",
    )
    operator = HyperPodInferenceOperator(
        stack, "Operator",
        props=HyperPodInferenceOperatorProps(
            cluster=cluster, oidc_provider=oidc, role_name="SageMakerHyperPodInference-team",
            hyperpod_cluster_arn="arn:aws:sagemaker:us-east-1:123456789012:cluster/team",
            tls_bucket=s3.Bucket.from_bucket_name(stack, "Tls", "acme-tls"),
            eks_cluster_name="team", inference_gateway=inference_gateway,
        ),
    )  # fmt: skip
    gateway = Gateway(jwt=JwtAuth(issuer=ISSUER, jwks_uri=f"{ISSUER}/jwks", audiences=("a",)))
    deployment = prepare(
        flat_spec(
            engine="vllm", model="org/model", instance_type="ml.g5.12xlarge", name="m",
            target="hyperpod-eks", endpoint=Endpoint(gateway=gateway),
        ),
        context=RenderContext(account="123456789012", region="us-east-1", profile="dev"),
    )  # fmt: skip
    return ServedModel(
        stack, "Model",
        props=ServedModelProps(
            deployment=deployment, cluster=cluster, operator=operator, wait_for_ready=False
        ),
    )  # fmt: skip


def test_a_team_operator_without_the_gateway_is_refused_for_a_gateway_deployment() -> None:
    from mlcc_constructs.core.support.errors import MlccError

    try:
        _team_served_model(inference_gateway=False)
    except MlccError as error:
        assert [str(p) for p in error.problems] == [
            "Team/Model:/operator: the deployment asks for the Inference Gateway "
            "(endpoint.gateway), and the operator's add-on runs none (fix: build the operator "
            "with HyperPodInferenceOperatorProps(inference_gateway=True), or drop "
            "endpoint.gateway)"
        ]
    else:
        raise AssertionError("not refused")
    manifests = _team_served_model(inference_gateway=True).objects.manifests
    assert [m.startswith("InferenceGatewayConfig") for m in manifests] == [False, True]
