"""``S3CsiDriver`` composed by a team: buckets as objects, default child ids, errors."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import team


def _role_policy(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (item,) = [
        (k, v)
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::IAM::Policy" and k.startswith("TeamCsiRole")
    ]
    return item


def test_default_ids_are_children_of_the_construct() -> None:
    team_template = team()[1]
    resources = team_template["Resources"]
    addons = [k for k, v in resources.items() if v["Type"] == "AWS::EKS::Addon"]
    assert len(addons) == 1 and addons[0].startswith("TeamCsiAddon")
    roles = [k for k, v in resources.items() if v["Type"] == "AWS::IAM::Role"]
    assert any(k.startswith("TeamCsiRole") for k in roles)
    addon = resources[addons[0]]["Properties"]
    role = next(k for k in roles if k.startswith("TeamCsiRole"))
    assert addon["ServiceAccountRoleArn"] == {"Fn::GetAtt": [role, "Arn"]}
    assert addon["ResolveConflicts"] == "PRESERVE"
    assert addon["AddonVersion"] == pinned().addon("aws-mountpoint-s3-csi-driver")
    assert "ConfigurationValues" not in addon  # the add-on's defaults unless configured


def test_bucket_objects_are_granted_by_reference() -> None:
    team_template = team()[1]
    _, policy = _role_policy(team_template)
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert set(statements) == {"ReadModelBuckets", "ReadModelObjects", "TlsBucket"}
    (core_arn,) = (
        statements["ReadModelBuckets"]["Resource"]
        if isinstance(statements["ReadModelBuckets"]["Resource"], list)
        else [statements["ReadModelBuckets"]["Resource"]]
    )
    assert core_arn["Fn::GetAtt"][1] == "Arn"
    assert core_arn["Fn::GetAtt"][0].startswith("BucketsCore")
    tls = statements["TlsBucket"]["Resource"]
    assert tls[0]["Fn::GetAtt"][0].startswith("BucketsTls")
    assert tls[1]["Fn::Join"][1][1] == "/*"


def test_bucket_text_is_refused_with_the_object_to_pass() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs import S3CsiDriver, S3CsiDriverProps

    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="123456789012", region="us-east-1"))
    cluster = eks.Cluster.from_cluster_attributes(stack, "C", cluster_name="c")
    provider = eks.OidcProviderNative(stack, "P", url="https://oidc.example.com/id/X")
    with pytest.raises(MlccError) as caught:
        S3CsiDriverProps(
            cluster=cluster,
            oidc_provider=provider,
            read_buckets=["core"],  # type: ignore[list-item]
            tls_bucket="acme-tls",  # type: ignore[arg-type]
        )
    assert [str(p) for p in caught.value.problems] == [
        "S3CsiDriverProps:/read_buckets/0: a key of stacks/buckets.json is not a bucket (its "
        "name needs the app's profile) (got 'core'; allowed: s3.IBucket (from aws_cdk import "
        "aws_s3 as s3); fix: pass the bucket object: ModelBuckets.bucket(key) of the buckets "
        "the app creates, or s3.Bucket.from_bucket_name(scope, id, bucket_names(account=..., "
        "region=..., profile=...)[key]) (from mlcc_constructs.core.platform.buckets import "
        "bucket_names))",
        "S3CsiDriverProps:/tls_bucket: a bucket name is not a bucket (got 'acme-tls'; allowed: "
        "s3.IBucket (from aws_cdk import aws_s3 as s3); fix: pass the bucket object "
        "(s3.Bucket.from_bucket_name(scope, id, name) for a bucket the app does not create))",
    ]
    # Defaults: no bucket at all (the app passes its descriptor's buckets as objects).
    csi = S3CsiDriver(stack, "Csi", props=S3CsiDriverProps(cluster=cluster, oidc_provider=provider))
    assert csi.read_buckets == () and csi.tls_bucket is None
    with pytest.raises(MlccError) as caught:
        csi.grant_read("acme-models")  # type: ignore[arg-type]
    assert [p.where for p in caught.value.problems] == ["S3CsiDriver.grant_read"]
