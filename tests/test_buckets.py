"""``ModelBuckets``: every bucket versioned, SSE-S3, private, TLS-only, retained, logged."""

from __future__ import annotations

from typing import Any

import pytest
from _cdk_app import BUCKETS_STACK, template

from mlcc_constructs.core.errors import MlccError


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


def test_unknown_key_and_agnostic_stack_are_refused() -> None:
    import aws_cdk as cdk

    from mlcc_constructs import ModelBuckets, ModelBucketsProps

    app = cdk.App()
    env = cdk.Environment(account="123456789012", region="us-east-1")
    with pytest.raises(MlccError) as caught:
        ModelBuckets(
            cdk.Stack(app, "A", env=env), "B", props=ModelBucketsProps(profile="dev", keys=["cor"])
        )
    assert [str(p) for p in caught.value.problems] == [
        "ModelBucketsProps.keys: unknown bucket key(s) cor (got ['cor']; allowed: adapters, "
        "artifacts, core, tls, training)"
    ]
    with pytest.raises(MlccError) as caught:
        ModelBuckets(cdk.Stack(app, "Agnostic"), "B", props=ModelBucketsProps(profile="dev"))
    assert [str(p) for p in caught.value.problems] == [
        "Agnostic: bucket names need a concrete account and region (fix: create the stack "
        "with env=cdk.Environment(account=..., region=...))"
    ]


def test_bucket_lookup_by_key() -> None:
    from _cdk_app import stack

    model_buckets = stack(BUCKETS_STACK).model_buckets
    assert list(model_buckets.buckets) == ["core", "artifacts", "training", "adapters", "tls"]
    with pytest.raises(MlccError, match="no bucket 'logs'"):
        model_buckets.bucket("logs")
