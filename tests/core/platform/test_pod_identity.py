"""ServedModel's pod identity: a deployment that syncs Secrets Manager values gets an IAM role
trusted by EKS Pod Identity, allowed to read exactly those secrets, and the
AWS::EKS::PodIdentityAssociation of its ServiceAccount, applied before its objects; cdk-nag
clean (``-??????`` is no ``*`` for AwsSolutions-IAM5); no role without such a value."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import serving_on
from tests._flat import flat_spec
from tests.aws.test_cdk_nag import _findings

ACCOUNT = "123456789012"
REGION = "us-east-1"
HF_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:team/hf-token-AbCdEf"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def _stack() -> Any:
    import aws_cdk as cdk

    app = cdk.App()
    return cdk.Stack(app, "Team", env=cdk.Environment(account=ACCOUNT, region=REGION))


def _cluster(stack: Any) -> Any:
    from aws_cdk import aws_eks_v2 as eks, aws_iam as iam

    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        stack,
        "Kubectl",
        service_token=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:team-kubectl",
        role=iam.Role.from_role_arn(stack, "KubectlRole", f"arn:aws:iam::{ACCOUNT}:role/kubectl"),
    )
    return eks.Cluster.from_cluster_attributes(
        stack, "TeamCluster", cluster_name="team", kubectl_provider=provider
    )


def _prepared(*, secrets: bool) -> Any:
    from mlcc_constructs import RenderContext, prepare
    from mlcc_constructs.core.serving.spec.endpoint import SecretsManagerSecret

    return prepare(
        flat_spec(
            engine="vllm",
            model="org/model",
            instance_type="ml.g5.2xlarge",
            name="llama",
            namespace="team-a",
            **(
                {
                    "api_key_secret": "llama-api-key",  # by name: ...:secret:llama-api-key-??????
                    "secret_env": {"HF_TOKEN": SecretsManagerSecret(secret=HF_ARN)},  # by ARN
                }
                if secrets
                else {}
            ),
        ),
        context=RenderContext(account=ACCOUNT, region=REGION),
    )


@cache
def _served() -> tuple[Any, Any, dict[str, Any]]:
    """(stack, ServedModel, template) of a deployment with two Secrets Manager values."""
    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    model = ServedModel(
        stack,
        "Llama",
        props=ServedModelProps(
            deployment=_prepared(secrets=True),
            cluster=serving_on(_cluster(stack)),
            wait_for_ready=False,
        ),
    )
    app = stack.node.root
    return stack, model, app.synth().get_stack_by_name("Team").template


def _resources(tmpl: dict[str, Any], resource_type: str) -> dict[str, Any]:
    return {k: v for k, v in tmpl["Resources"].items() if v["Type"] == resource_type}


def test_the_role_is_assumed_by_the_deployments_pods_only() -> None:
    _, _, tmpl = _served()
    (role,) = _resources(tmpl, "AWS::IAM::Role").values()
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            # Only this cluster's, namespace's and ServiceAccount's pods (the session tags).
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-name": "team",
                    "aws:RequestTag/kubernetes-namespace": "team-a",
                    "aws:RequestTag/kubernetes-service-account": "llama",
                }
            },
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
        }
    ]
    assert "ManagedPolicyArns" not in role["Properties"]


def test_the_role_reads_exactly_the_deployments_secrets() -> None:
    _, _, tmpl = _served()
    (policy,) = _resources(tmpl, "AWS::IAM::Policy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Sid"] == "ReadSyncedSecrets"
    assert statement["Action"] == ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"]
    by_name = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                f":secretsmanager:{REGION}:{ACCOUNT}:secret:llama-api-key-??????",
            ],
        ]
    }
    assert sorted(statement["Resource"], key=str) == sorted([HF_ARN, by_name], key=str)


def test_the_association_binds_the_deployments_service_account_before_its_objects() -> None:
    _, model, tmpl = _served()
    (association_id,) = _resources(tmpl, "AWS::EKS::PodIdentityAssociation")
    properties = tmpl["Resources"][association_id]["Properties"]
    (role_id,) = _resources(tmpl, "AWS::IAM::Role")
    assert properties == {
        "ClusterName": "team",
        "Namespace": "team-a",
        "ServiceAccount": "llama",  # the ServiceAccount the pods run as
        "RoleArn": {"Fn::GetAtt": [role_id, "Arn"]},
    }
    service_accounts = [
        k for k in model.objects.manifests if k.startswith("ServiceAccountTeamALlama")
    ]
    assert service_accounts  # the deployment's ServiceAccount is named so
    for logical_id in model.objects.manifests:
        assert association_id in tmpl["Resources"][logical_id]["DependsOn"]


def test_cdk_nag_finds_nothing_and_nothing_is_acknowledged() -> None:
    # '-??????' is no '*' wildcard for AwsSolutions-IAM5; the policy has no '*' at all.
    stack, model, tmpl = _served()
    assert _findings(stack) == []
    (policy,) = _resources(tmpl, "AWS::IAM::Policy").values()
    assert "*" not in str(policy["Properties"]["PolicyDocument"])
    assert "AwsSolutions" not in str(model.secrets_role.node.metadata)


def test_no_secrets_manager_value_no_role() -> None:
    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    model = ServedModel(
        stack,
        "Llama",
        props=ServedModelProps(
            deployment=_prepared(secrets=False),
            cluster=serving_on(_cluster(stack)),
            wait_for_ready=False,
        ),
    )
    tmpl = stack.node.root.synth().get_stack_by_name("Team").template
    assert model.secrets_role is None and model.pod_identity is None
    assert not _resources(tmpl, "AWS::IAM::Role")
    assert not _resources(tmpl, "AWS::EKS::PodIdentityAssociation")
    with pytest.raises(MlccError) as caught:
        model.grant_secrets_key(None)
    assert [str(p) for p in caught.value.problems] == [
        "Team/Llama: the deployment reads no Secrets Manager value: its pods have no role to "
        "grant to (fix: give the deployment endpoint.api_key_secret or an engine.secret_env entry "
        "from Secrets "
        "Manager, or grant nothing)"
    ]


def test_a_customer_managed_key_is_granted_decrypt() -> None:
    from aws_cdk import aws_kms as kms

    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    model = ServedModel(
        stack,
        "Llama",
        props=ServedModelProps(
            deployment=_prepared(secrets=True),
            cluster=serving_on(_cluster(stack)),
            wait_for_ready=False,
        ),
    )
    key = kms.Key.from_key_arn(
        stack, "Key", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/0123abcd-0123-4567-89ab-0123456789ab"
    )
    model.grant_secrets_key(key)
    tmpl = stack.node.root.synth().get_stack_by_name("Team").template
    (policy,) = _resources(tmpl, "AWS::IAM::Policy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert [s["Action"] for s in statements] == [
        ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"],
        "kms:Decrypt",
    ]
    assert statements[1]["Resource"] == key.key_arn
