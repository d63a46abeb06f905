"""Storage lifecycle (issue 22 item 7): the buckets' lifecycle rules from stacks/buckets.json
(core/platform/buckets.py) and the retention of the cluster's log groups
(core/platform/log_retention.py, aws/cluster_logs.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.platform.buckets import (
    DEFAULT_NONCURRENT_DAYS,
    access_log_lifecycle,
    bucket_lifecycles,
)
from mlcc_constructs.core.platform.log_retention import (
    CONTROL_PLANE_LOG_DAYS,
    FLOW_LOG_DAYS,
    control_plane_log_group,
    retention_problems,
)
from tests._cdk_app import BUCKETS_STACK, EKS_STACK, template


def _buckets() -> dict[str, Any]:
    return {
        k: v["Properties"]
        for k, v in template(BUCKETS_STACK)["Resources"].items()
        if v["Type"] == "AWS::S3::Bucket"
    }


def test_descriptor_days_per_bucket() -> None:
    days = {key: lifecycle.noncurrent_days for key, lifecycle in bucket_lifecycles().items()}
    assert days == {"core": 30, "artifacts": 7, "training": 30, "adapters": 7, "tls": 30}
    assert DEFAULT_NONCURRENT_DAYS == 30
    logs = access_log_lifecycle()
    assert (logs.expiration_days, logs.noncurrent_days) == (90, 1)


@pytest.mark.parametrize(
    ("prefix", "noncurrent", "expiration"),
    [
        ("ModelBucketsCore", 30, None),
        ("ModelBucketsArtifacts", 7, None),
        ("ModelBucketsTraining", 30, None),
        ("ModelBucketsAdapters", 7, None),
        ("ModelBucketsTls", 30, None),
        ("ModelBucketsAccessLogs", 1, 90),
    ],
)
def test_every_versioned_bucket_expires_previous_versions(
    prefix: str, noncurrent: int, expiration: int | None
) -> None:
    (props,) = [p for k, p in _buckets().items() if k.startswith(prefix)]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    expected = {
        "Id": "mlcc-lifecycle",
        "Status": "Enabled",
        "NoncurrentVersionExpiration": {"NoncurrentDays": noncurrent},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
    }
    if expiration is not None:
        expected["ExpirationInDays"] = expiration
    assert rule == expected


def test_control_plane_and_flow_log_groups_expire() -> None:
    resources = template(EKS_STACK)["Resources"]
    (retention,) = [v for v in resources.values() if v["Type"] == "Custom::LogRetention"]
    assert retention["Properties"]["LogGroupName"] == control_plane_log_group("mlcc-dev-eks")
    assert retention["Properties"]["RetentionInDays"] == CONTROL_PLANE_LOG_DAYS == 90
    (flow,) = [
        v
        for k, v in resources.items()
        if v["Type"] == "AWS::Logs::LogGroup" and not k.startswith("MlccReadiness")
    ]
    assert flow["Properties"]["RetentionInDays"] == FLOW_LOG_DAYS == 30
    # The deploy waiter's handlers log to their own group, kept three months.
    assert resources["MlccReadinessLogs60F5107D"]["Properties"]["RetentionInDays"] == 90


def test_a_retention_cloudwatch_refuses_is_named() -> None:
    assert retention_problems(90, where="T", pointer="/flow_log_days") == []
    (problem,) = retention_problems(45, where="T", pointer="/flow_log_days")
    assert str(problem).startswith(
        "T:/flow_log_days: not a CloudWatch Logs retention (got 45; allowed: 1, 3, 5, 7, 14, 30, "
    )
