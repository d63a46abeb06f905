"""``ModelBuckets``: every bucket versioned, SSE-S3, private, TLS-only, retained, logged."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import BUCKETS_STACK, template


def _buckets() -> dict[str, dict[str, Any]]:
    return {
        k: v
        for k, v in template(BUCKETS_STACK)["Resources"].items()
        if v["Type"] == "AWS::S3::Bucket"
    }


def test_every_bucket_is_hardened_and_retained() -> None:
    buckets = _buckets()
    assert len(buckets) == 6
    for logical_id, bucket in buckets.items():
        props = bucket["Properties"]
        assert bucket["DeletionPolicy"] == "Retain", logical_id
        assert bucket["UpdateReplacePolicy"] == "Retain", logical_id
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}, logical_id
        assert props["BucketEncryption"] == {
            "ServerSideEncryptionConfiguration": [
                {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
            ]
        }, logical_id
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, logical_id


def test_named_buckets_log_to_the_access_log_bucket() -> None:
    buckets = _buckets()
    (log_bucket,) = [k for k, v in buckets.items() if "BucketName" not in v["Properties"]]
    for logical_id, bucket in buckets.items():
        if logical_id == log_bucket:
            continue
        logging = bucket["Properties"]["LoggingConfiguration"]
        assert logging["DestinationBucketName"] == {"Ref": log_bucket}
        assert logging["LogFilePrefix"] == bucket["Properties"]["BucketName"] + "/"


def test_every_bucket_refuses_plain_http() -> None:
    resources = template(BUCKETS_STACK)["Resources"]
    policies = {
        v["Properties"]["Bucket"]["Ref"]: v["Properties"]["PolicyDocument"]["Statement"]
        for v in resources.values()
        if v["Type"] == "AWS::S3::BucketPolicy"
    }
    assert set(policies) == set(_buckets())
    for bucket, statements in policies.items():
        assert any(
            s["Effect"] == "Deny"
            and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            and s["Action"] == "s3:*"
            for s in statements
        ), bucket


def test_unknown_keys_and_bad_names_are_refused() -> None:
    from mlcc_constructs import ModelBucketsProps

    with pytest.raises(MlccError) as caught:
        ModelBucketsProps(names={"cor": "acme-models", "tls": "Acme_TLS", "core": "a..b"})
    assert [str(p) for p in caught.value.problems] == [
        "ModelBucketsProps:/names: unknown bucket key(s) cor (got ['cor']; allowed: adapters, "
        "artifacts, core, tls, training; fix: name only buckets of stacks/buckets.json)",
        "ModelBucketsProps:/names/tls: not an S3 bucket name (got 'Acme_TLS'; allowed: 3-63 "
        "lower-case letters, digits, '.' and '-', starting and ending with a letter or digit; "
        "fix: pass bucket_names(account=..., region=..., profile=...)[key] (from "
        "mlcc_constructs.core.platform.buckets import bucket_names))",
        "ModelBucketsProps:/names/core: not an S3 bucket name (got 'a..b'; allowed: 3-63 "
        "lower-case letters, digits, '.' and '-', starting and ending with a letter or digit; "
        "fix: pass bucket_names(account=..., region=..., profile=...)[key] (from "
        "mlcc_constructs.core.platform.buckets import bucket_names))",
    ]


def test_buckets_are_named_as_the_props_say() -> None:
    """The names are the props' (no profile, account or region is read): a team names its own,
    in a stack of any environment."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from mlcc_constructs import ModelBuckets, ModelBucketsProps

    app = cdk.App()
    stack = cdk.Stack(app, "Agnostic")
    buckets = ModelBuckets(
        stack, "B", props=ModelBucketsProps(names={"tls": "acme-tls", "core": "acme-models"})
    )
    assert list(buckets.buckets) == ["tls", "core"]
    template = Template.from_stack(stack).to_json()
    named = {
        key: value["Properties"].get("BucketName")
        for key, value in template["Resources"].items()
        if value["Type"] == "AWS::S3::Bucket"
    }
    assert sorted(v for v in named.values() if v) == ["acme-models", "acme-tls"]
    assert next(k for k, v in named.items() if v == "acme-tls").startswith("BTls")


def test_bucket_lookup_by_key() -> None:
    from tests._cdk_app import stack

    model_buckets = stack(BUCKETS_STACK).model_buckets
    assert list(model_buckets.buckets) == ["core", "artifacts", "training", "adapters", "tls"]
    with pytest.raises(MlccError, match="no bucket 'logs'"):
        model_buckets.bucket("logs")


def test_profiles_never_share_a_bucket_name() -> None:
    from mlcc_constructs.core.platform.buckets import bucket_names

    env = {"account": "123456789012", "region": "us-east-1"}
    names = {p: set(bucket_names(**env, profile=p).values()) for p in ("dev", "prod", "dev-2")}
    assert names["dev"].isdisjoint(names["prod"]) and names["dev"].isdisjoint(names["dev-2"])
    assert all("-dev-" in name for name in names["dev"])


def test_dev_and_prod_apps_synthesise_no_shared_bucket_name() -> None:
    from tests._cdk_app import build

    def named(profile: str) -> set[str]:
        assembly = build(profile=profile).synth()
        return {
            r["Properties"]["BucketName"]
            for s in assembly.stacks
            for r in s.template["Resources"].values()
            if r["Type"] == "AWS::S3::Bucket" and "BucketName" in r["Properties"]
        }

    dev, prod = named("dev"), named("prod")
    assert len(dev) == len(prod) == 5
    assert dev.isdisjoint(prod)


def test_a_pattern_without_every_placeholder_is_refused() -> None:
    from mlcc_constructs.core.platform.buckets import pattern_problems

    problems = pattern_problems(
        {
            "core": {"name": "mlcc-models-${account}-${region}"},
            "tls": {"name": "mlcc-tls-${profile}-${account}-${region}-${stage}"},
        },
        where="stacks/buckets.json",
    )
    assert [str(p) for p in problems] == [
        "stacks/buckets.json:/buckets/core/name: a bucket name must hold every placeholder, or "
        "two profiles (or accounts, regions) would share the bucket (got "
        "'mlcc-models-${account}-${region}'; allowed: a pattern with ${account}, ${region}, "
        "${profile}; fix: add ${profile} to the name)",
        "stacks/buckets.json:/buckets/tls/name: unknown placeholder ${stage} (got "
        "'mlcc-tls-${profile}-${account}-${region}-${stage}'; allowed: ${account}, ${region}, "
        "${profile})",
    ]


def test_the_shipped_descriptor_matches_its_schema() -> None:
    """The runtime reads stacks/buckets.json without jsonschema (start-up); this checks it."""
    from mlcc_constructs.core._resources import shipped_path
    from mlcc_constructs.core.support.documents import read_json, validate_document

    path = shipped_path("stacks/buckets.json")
    validate_document(read_json(path), shipped_path("stacks/buckets.schema.json"), where=str(path))
