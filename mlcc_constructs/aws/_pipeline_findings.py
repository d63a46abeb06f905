"""The cdk-nag findings of what CDK Pipelines itself creates, acknowledged with reasons.

``pipelines.CodePipeline`` makes its roles' policies (artifact bucket access, the CodeBuild
projects' logs and report groups, the self-mutation's bootstrap roles, a VPC step's network
interfaces) and its artifact buckets. Each wildcard of those policies is acknowledged with the
reason of its service (:data:`_REASONS`); a wildcard of a service not listed stays a finding,
so a grant the fleet adds by mistake still fails cdk-nag (unless it names the very wildcard
of an acknowledged statement of the same policy: cdk-nag acknowledges by finding id). The
fleet's own statements (the steps' ``sts:AssumeRole``) name exact role ARNs. Only the
pipeline's constructs are walked: the stages' stacks acknowledge their own findings.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam, aws_s3 as s3
from constructs import Construct

from mlcc_constructs.aws._iam import nag_text

_REASONS = {
    "s3": "CDK Pipelines grants its actions and steps the objects of the pipeline's own "
    "artifact buckets (KMS-encrypted; object keys are made per execution)",
    "kms": "the pipeline's artifact key, used through S3 only",
    "logs": "CodeBuild writes its own project's log streams, named per build",
    "codebuild": "CodeBuild report groups and builds of the pipeline's own projects, named per "
    "build",
    "ec2": "a step in a VPC creates, describes and deletes its network interfaces; EC2 "
    "Describe* has no resource-level permissions",
    "sts": "the self-mutation step assumes the CDK bootstrap roles, limited by the "
    "aws-cdk:bootstrap-role tag condition",
    "cloudformation": "the self-mutation step reads the stacks it deploys",
    "codepipeline": "the pipeline's own actions",
}

_BUCKET_REASON = (
    "a CDK Pipelines artifact bucket: transient build artifacts, encrypted with the "
    "pipeline's KMS key, reached only by the pipeline's roles; CloudTrail records its access"
)


def acknowledge_pipeline_findings(scope: Construct) -> None:
    """Acknowledge the findings of the CDK Pipelines resources under ``scope`` (module doc)
    and of the cross-region support stacks' replication buckets."""
    for node in scope.node.find_all():
        if isinstance(node, iam.Policy):
            _acknowledge_policy(node)
        elif isinstance(node, s3.Bucket):
            _acknowledge_bucket(node)


def acknowledge_bucket(bucket: s3.IBucket) -> None:
    """A replication bucket of a cross-region support stack (made outside ``scope``)."""
    if isinstance(bucket, s3.Bucket):
        _acknowledge_bucket(bucket)


def _acknowledge_bucket(bucket: s3.Bucket) -> None:
    cdk.Validations.of(bucket).acknowledge(
        cdk.Acknowledgment(id="AwsSolutions-S1", reason=_BUCKET_REASON)
    )


def _acknowledge_policy(policy: iam.Policy) -> None:
    stack = cdk.Stack.of(policy)
    document: dict[str, Any] = stack.resolve(policy.document.to_json()) or {}
    for statement in document.get("Statement", []):
        actions = _as_list(statement.get("Action"))
        services = {str(a).split(":", 1)[0] for a in actions}
        reasons = [_REASONS[s] for s in sorted(services) if s in _REASONS]
        if len(reasons) != len(services):
            continue  # a service this module has no reason for: the finding stays
        reason = "; ".join(reasons)
        for action in actions:
            if "*" in str(action):
                cdk.Validations.of(policy).acknowledge(
                    cdk.Acknowledgment(id=f"AwsSolutions-IAM5[Action::{action}]", reason=reason)
                )
        for resource in _as_list(statement.get("Resource")):
            text = nag_text(stack, resource) if not isinstance(resource, str) else resource
            if "*" in text:
                cdk.Validations.of(policy).acknowledge(
                    cdk.Acknowledgment(id=f"AwsSolutions-IAM5[Resource::{text}]", reason=reason)
                )


def _as_list(value: object) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
