"""The app's stacks: ``mlcc-dev-eks-cluster`` (S3 CSI role and add-on, R5) and
``mlcc-dev-buckets``, as ``app.build_app`` composes them from cdk.json context."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.buckets import bucket_names
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import (
    AFTER_FIX,
    BEFORE_FIX,
    BUCKETS_STACK,
    EKS_STACK,
    REPO,
    assertions_template,
    build,
    mask_asset_hashes,
    synthesised,
    template,
)

ENV = {"account": "123456789012", "region": "us-east-1", "profile": "dev"}
NAMES = bucket_names(**ENV)
VERSIONS = json.loads(data_path("versions.json").read_text(encoding="utf-8"))
ADDON = "S3CsiDriverAddon"
POLICY = "S3CsiRoleDefaultPolicyE2B11437"
ROLE = "S3CsiRoleF57B01D9"


def _arn(resolved: Any) -> str:
    """A resolved S3 ARN as text, with the partition shown as ``aws``."""
    if isinstance(resolved, str):
        return resolved
    parts = resolved["Fn::Join"][1]
    return "".join("aws" if part == {"Ref": "AWS::Partition"} else part for part in parts)


def _resources(resource_type: str) -> dict[str, Any]:
    return {
        logical_id: resource
        for logical_id, resource in template(EKS_STACK)["Resources"].items()
        if resource["Type"] == resource_type
    }


def _statements() -> dict[str, dict[str, Any]]:
    document = template(EKS_STACK)["Resources"][POLICY]["Properties"]["PolicyDocument"]
    statements = {}
    for statement in document["Statement"]:
        actions = statement["Action"]
        resources = statement["Resource"]
        resources = resources if isinstance(resources, list) else [resources]
        statements[statement["Sid"]] = {
            "actions": sorted([actions] if isinstance(actions, str) else actions),
            "resources": [
                _arn(r) for r in (resources if isinstance(resources, list) else [resources])
            ],
            "effect": statement["Effect"],
        }
    return statements


def test_contract_logical_ids_and_types() -> None:
    resources = template(EKS_STACK)["Resources"]
    assert resources[ADDON]["Type"] == "AWS::EKS::Addon"
    assert resources[POLICY]["Type"] == "AWS::IAM::Policy"
    assert resources[ROLE]["Type"] == "AWS::IAM::Role"
    fixed = json.loads(AFTER_FIX.read_text(encoding="utf-8"))["Resources"]
    # Every resource of the deployed (S3 CSI fix) stack keeps its logical id and type: the
    # stack grows (kubectl provider, access entries, GPU NodePool) but nothing is replaced.
    # Which properties change is declared step by step in snapshots/eks-cluster/.
    kept = {k: v["Type"] for k, v in resources.items() if k in fixed}
    assert kept == {k: v["Type"] for k, v in fixed.items()}


def test_addon_attaches_the_role_with_the_pinned_version() -> None:
    from aws_cdk.assertions import Match

    assertions_template(EKS_STACK).has_resource_properties(
        "AWS::EKS::Addon",
        {
            "AddonName": "aws-mountpoint-s3-csi-driver",
            "AddonVersion": VERSIONS["eks_addons"]["aws-mountpoint-s3-csi-driver"],
            "ClusterName": {"Ref": Match.string_like_regexp("^Cluster")},
            "ServiceAccountRoleArn": {"Fn::GetAtt": [ROLE, "Arn"]},
            "ResolveConflicts": "OVERWRITE",
        },
    )
    assertions_template(EKS_STACK).resource_properties_count_is(
        "AWS::EKS::Addon", {"AddonName": "aws-mountpoint-s3-csi-driver"}, 1
    )
    # Beside it only the Secrets Store CSI add-on (tests/core/platform/test_cluster_endpoint.py).
    assertions_template(EKS_STACK).resource_count_is("AWS::EKS::Addon", 2)


def test_addon_version_unchanged_by_the_s3csi_fix_and_pinned_now() -> None:
    before = json.loads(BEFORE_FIX.read_text(encoding="utf-8"))["Resources"][ADDON]
    fixed = json.loads(AFTER_FIX.read_text(encoding="utf-8"))["Resources"][ADDON]
    assert fixed["Properties"]["AddonVersion"] == before["Properties"]["AddonVersion"]
    assert before["Properties"]["AddonVersion"] == "v1.15.0-eksbuild.1"
    # The v1 -> v2 bump came later, with Kubernetes 1.35 (its own history step).
    current = template(EKS_STACK)["Resources"][ADDON]["Properties"]
    assert current["AddonVersion"] == VERSIONS["eks_addons"]["aws-mountpoint-s3-csi-driver"]


def test_irsa_trust_is_exactly_the_csi_service_account() -> None:
    resources = template(EKS_STACK)["Resources"]
    trust = resources[ROLE]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert len(trust) == 1
    (statement,) = trust
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Effect"] == "Allow"
    (provider,) = _resources("AWS::IAM::OIDCProvider")
    assert statement["Principal"] == {"Federated": {"Ref": provider}}
    condition_ref = statement["Condition"]["StringEquals"]["Fn::GetAtt"]
    assert condition_ref[1] == "Value"
    value = resources[condition_ref[0]]["Properties"]["Value"]["Fn::Join"]
    issuer = {"Fn::Select": [1, {"Fn::Split": [":oidc-provider/", {"Ref": provider}]}]}
    rendered = "".join("ISSUER" if part == issuer else part for part in value[1])
    assert json.loads(rendered) == {
        "ISSUER:sub": "system:serviceaccount:kube-system:s3-csi-driver-sa",
        "ISSUER:aud": "sts.amazonaws.com",
    }


def test_grants_per_bucket() -> None:
    read = [NAMES["core"], NAMES["training"], NAMES["adapters"]]
    assert _statements() == {
        "ReadModelBuckets": {
            "actions": ["s3:GetBucketLocation", "s3:ListBucket"],
            "resources": [f"arn:aws:s3:::{name}" for name in read],
            "effect": "Allow",
        },
        "ReadModelObjects": {
            "actions": ["s3:GetObject"],
            "resources": [f"arn:aws:s3:::{name}/*" for name in read],
            "effect": "Allow",
        },
        "TlsBucket": {
            "actions": ["s3:GetBucketLocation", "s3:GetObject", "s3:ListBucket"],
            "resources": [f"arn:aws:s3:::{NAMES['tls']}", f"arn:aws:s3:::{NAMES['tls']}/*"],
            "effect": "Allow",
        },
    }


def test_tls_statement_names_the_descriptor_tls_bucket() -> None:
    tls = _statements()["TlsBucket"]["resources"]
    assert tls[0] == "arn:aws:s3:::mlcc-tls-dev-123456789012-us-east-1"
    assert not any("hyperpod-tls" in resource for resource in tls)


def test_no_wildcard_action_or_bucket() -> None:
    for sid, statement in _statements().items():
        assert not any("*" in action for action in statement["actions"]), sid
        for resource in statement["resources"]:
            bucket = resource.removeprefix("arn:aws:s3:::").removesuffix("/*")
            assert re.fullmatch(r"[a-z0-9.-]+", bucket), (sid, resource)


def test_role_attached_to_exactly_one_policy() -> None:
    policies = _resources("AWS::IAM::Policy")
    attached = [k for k, v in policies.items() if {"Ref": ROLE} in v["Properties"]["Roles"]]
    assert attached == [POLICY]
    assert "ManagedPolicyArns" not in template(EKS_STACK)["Resources"][ROLE]["Properties"]


def test_cluster_version_name_oidc_and_network() -> None:
    t = assertions_template(EKS_STACK)
    t.has_resource_properties(
        "AWS::EKS::Cluster", {"Name": "mlcc-dev-eks", "Version": VERSIONS["kubernetes"]}
    )
    t.resource_count_is("AWS::IAM::OIDCProvider", 1)
    t.resource_count_is("AWS::EC2::FlowLog", 1)
    t.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway"})
    subnets = _resources("AWS::EC2::Subnet").values()
    zones = sorted({s["Properties"]["AvailabilityZone"] for s in subnets})
    assert zones == ["us-east-1a", "us-east-1b"]
    cluster = next(iter(_resources("AWS::EKS::Cluster").values()))
    private = {k for k in _resources("AWS::EC2::Subnet") if k.startswith("VpcPrivate")}
    assert {s["Ref"] for s in cluster["Properties"]["ResourcesVpcConfig"]["SubnetIds"]} == private
    # Offline synth: no Lambda but the CfnJson helper of the IRSA condition, the cluster's
    # kubectl provider (its handler and the custom-resource framework), which runs in the
    # private subnets, the log retention handler (the control-plane log group's retention) and
    # the deploy waiter (MlccReadiness: its two handlers and the framework's three).
    functions = _resources("AWS::Lambda::Function")
    assert len([k for k in functions if not k.startswith("MlccReadiness")]) == 4
    assert len([k for k in functions if k.startswith("MlccReadiness")]) == 5
    handler = next(v for k, v in functions.items() if k.startswith("ClusterKubectlProviderHandler"))
    assert {s["Ref"] for s in handler["Properties"]["VpcConfig"]["SubnetIds"]} == private


def test_buckets_stack_names_every_descriptor_bucket() -> None:
    buckets = [
        r["Properties"]
        for r in template(BUCKETS_STACK)["Resources"].values()
        if r["Type"] == "AWS::S3::Bucket"
    ]
    named = sorted(b["BucketName"] for b in buckets if "BucketName" in b)
    assert named == sorted(NAMES.values())
    assert len(buckets) == len(NAMES) + 1  # plus the access-log bucket


@pytest.mark.parametrize("stack_name", [EKS_STACK, BUCKETS_STACK])
def test_template_snapshot(stack_name: str, json_snapshot: Any) -> None:
    text = mask_asset_hashes(synthesised()[1][stack_name])
    assert json.loads(text) == json_snapshot


def test_synthesis_is_byte_identical_across_runs() -> None:
    first = synthesised()[1]
    assembly = build().synth()
    second = {s.stack_name: json.dumps(s.template, indent=1) for s in assembly.stacks}
    assert second == first


def test_cli_synth_output_matches_in_process(tmp_path: Any) -> None:
    """cdk.json disables path/asset metadata: `cdk synth` writes the in-process template."""
    text = synthesised()[1][EKS_STACK]
    assert '"aws:cdk:path"' not in text and '"aws:asset:path"' not in text
    settings = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))
    assert settings["pathMetadata"] is False and settings["assetMetadata"] is False


BAD_CONTEXT = [
    (
        {"profile": "Prod"},
        "CDK context (cdk.json or -c):/profile: invalid profile (got 'Prod'; allowed: lower-case "
        "letters, digits and '-', 1-20, e.g. dev; fix: pass -c profile=VALUE or edit cdk.json)",
    ),
    (
        {"account": "1234"},
        "CDK context (cdk.json or -c):/account: invalid account (got '1234'; allowed: 12 digits, "
        "e.g. 123456789012; fix: pass -c account=VALUE or edit cdk.json)",
    ),
    (
        {"availability_zones": "us-east-1a"},
        "CDK context (cdk.json or -c):/availability_zones: availability_zones must name at least "
        "2 distinct zones of region us-east-1 (got 'us-east-1a'; allowed: us-east-1a, "
        "us-east-1b, ... (the zones your account has in us-east-1); fix: pass "
        "-c availability_zones=us-east-1a,us-east-1b or edit cdk.json)",
    ),
    (
        {"region": "eu-west-1"},
        "CDK context (cdk.json or -c):/availability_zones: availability_zones must name at least "
        "2 distinct zones of region eu-west-1 (got 'us-east-1a,us-east-1b'; allowed: eu-west-1a, "
        "eu-west-1b, ... (the zones your account has in eu-west-1); fix: pass "
        "-c availability_zones=eu-west-1a,eu-west-1b or edit cdk.json)",
    ),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_CONTEXT)
def test_bad_context_value_is_a_clear_error(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(MlccError) as caught:
        build(**overrides)
    assert [str(p) for p in caught.value.problems] == [message]


def test_all_bad_context_values_reported_at_once() -> None:
    with pytest.raises(MlccError) as caught:
        build(profile="X", account="1", region="mars")
    pointers = [p.pointer for p in caught.value.problems]
    assert pointers == ["/account", "/region", "/profile", "/availability_zones"]


def test_context_overrides_rename_stacks_and_cluster() -> None:
    app = build(profile="prod", region="eu-west-1", availability_zones="eu-west-1a,eu-west-1c")
    names = sorted(child.node.id for child in app.node.children)
    assert names == [
        "mlcc-prod-buckets",
        "mlcc-prod-eks-cluster",
        "mlcc-prod-hyperpod-cluster",
        "mlcc-prod-inference-operator",
        "mlcc-prod-serving",
        "mlcc-prod-serving-eks-inference-llama-405b-vllm",
        "mlcc-prod-serving-eks-inference-llama-vllm",
        "mlcc-prod-serving-eks-inference-mistral-vllm-args",
        "mlcc-prod-serving-hyperpod-eks-inference-llama-sglang",
        "mlcc-prod-serving-hyperpod-eks-inference-llama-vllm",
    ]
