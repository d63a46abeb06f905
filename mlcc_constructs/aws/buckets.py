"""``ModelBuckets``: the project's S3 buckets, one per key of ``stacks/buckets.json``, each
named as the props say (the app fills the descriptor's name patterns with its profile,
account and region: :func:`mlcc_constructs.core.platform.buckets.bucket_names`).

The other constructs take buckets as objects (``s3.IBucket``): a bucket of ``ModelBuckets``
(:meth:`ModelBuckets.bucket`), or one imported by name (``s3.Bucket.from_bucket_name``);
text where a bucket belongs is refused (:func:`bucket_problem`).

Every bucket is versioned, encrypted, blocks all public access, refuses plain HTTP, is
retained when the stack goes away, and writes server access logs to one log bucket. Each has one
lifecycle rule: an object's previous versions expire ``noncurrent_days`` (per bucket in
``stacks/buckets.json``, default 30) after they stop being current, unfinished multipart uploads
after 7 days; the access logs themselves expire after ``access_logs.expiration_days`` (90).

Encryption is SSE-S3 (S3-managed keys), on purpose: the readers of these buckets (the
Mountpoint S3 CSI driver role, the HyperPod inference operator, SageMaker) then need only
their S3 grants; SSE-KMS would add ``kms:Decrypt`` on a key to every reader, and S3 server
access logs can only be delivered to an SSE-S3 bucket anyway.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct

from mlcc_constructs.core.platform.buckets import (
    Lifecycle,
    access_log_lifecycle,
    bucket_lifecycles,
    bucket_patterns,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields

# S3 general purpose bucket names (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
# bucketnamingrules.html): 3-63 lower-case letters, digits, '.' and '-', starting and ending
# with a letter or digit.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True, kw_only=True)
class ModelBucketsProps:
    """Props of :class:`ModelBuckets`."""

    names: Mapping[str, str]
    """Descriptor key of ``stacks/buckets.json`` -> the bucket's name, for each bucket to create
    (each key gets the descriptor's lifecycle and the construct id of :class:`ModelBuckets`).
    Required. The app fills the descriptor's name patterns for its environment:
    ``bucket_names(account=..., region=..., profile=...)``
    (:func:`mlcc_constructs.core.platform.buckets.bucket_names`)."""

    def __post_init__(self) -> None:
        check_fields(self)
        keys = bucket_patterns()
        unknown = [key for key in self.names if key not in keys]
        bad = {
            key: name for key, name in self.names.items() if key in keys and not _valid_name(name)
        }
        problems = (
            [
                Problem(
                    message=f"unknown bucket key(s) {', '.join(unknown)}",
                    where="ModelBucketsProps",
                    pointer="/names",
                    value=unknown,
                    allowed=", ".join(sorted(keys)),
                    fix="name only buckets of stacks/buckets.json",
                )
            ]
            if unknown
            else []
        )
        problems += [
            Problem(
                message="not an S3 bucket name",
                where="ModelBucketsProps",
                pointer=json_pointer("names", key),
                value=name,
                allowed=_NAME_RULE,
                fix="pass bucket_names(account=..., region=..., profile=...)[key] (from "
                "mlcc_constructs.core.platform.buckets import bucket_names)",
            )
            for key, name in bad.items()
        ]
        raise_if_any(problems)


def concrete_environment(scope: Construct) -> tuple[str, str]:
    """The stack's account and region; refuses an environment-agnostic stack."""
    stack = cdk.Stack.of(scope)
    account, region = stack.account, stack.region
    if cdk.Token.is_unresolved(account) or cdk.Token.is_unresolved(region):
        raise fail(
            "bucket names need a concrete account and region",
            where=stack.node.path,
            fix="create the stack with env=cdk.Environment(account=..., region=...)",
        )
    return account, region


class ModelBuckets(Construct):
    """The descriptor's buckets plus one access-log bucket.

    Children: ``AccessLogs`` and one bucket per descriptor key, with the key in
    PascalCase as its id (``Core``, ``Artifacts``, ``Training``, ``Adapters``, ``Tls``).
    These ids are the buckets' logical ids: renaming one would replace a retained bucket.
    """

    def __init__(self, scope: Construct, id: str, *, props: ModelBucketsProps) -> None:
        super().__init__(scope, id)
        # Log delivery through a bucket policy (no ACLs, so BUCKET_OWNER_ENFORCED works),
        # whatever feature flags the enclosing app sets.
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        names = dict(props.names)
        # No explicit name: the log bucket is not one the rest of the project addresses.
        self.log_bucket: s3.IBucket = s3.Bucket(
            self,
            "AccessLogs",
            versioned=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=cdk.RemovalPolicy.RETAIN,
            lifecycle_rules=[lifecycle_rule(access_log_lifecycle())],
        )
        cdk.Validations.of(self.log_bucket).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions-S1",
                reason="this is the server access log target of the model buckets; "
                "logging it into itself would log its own log deliveries",
            )
        )
        self._buckets: dict[str, s3.IBucket] = {}
        lifecycles = bucket_lifecycles()
        for key in names:
            self._buckets[key] = s3.Bucket(
                self,
                _construct_id(key),
                bucket_name=names[key],
                versioned=True,
                encryption=s3.BucketEncryption.S3_MANAGED,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                enforce_ssl=True,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                removal_policy=cdk.RemovalPolicy.RETAIN,
                server_access_logs_bucket=self.log_bucket,
                server_access_logs_prefix=f"{names[key]}/",
                lifecycle_rules=[lifecycle_rule(lifecycles[key])],
            )

    @property
    def buckets(self) -> Mapping[str, s3.IBucket]:
        """Descriptor key → bucket, in descriptor order."""
        return dict(self._buckets)

    def bucket(self, key: str) -> s3.IBucket:
        """The bucket for descriptor key ``key`` (``"core"``, ``"tls"``, ...)."""
        if key not in self._buckets:
            raise fail(
                f"no bucket {key!r} in this ModelBuckets",
                where=self.node.path,
                value=key,
                allowed=", ".join(self._buckets),
            )
        return self._buckets[key]


def lifecycle_rule(lifecycle: Lifecycle) -> s3.LifecycleRule:
    """The one lifecycle rule of a bucket (id ``mlcc-lifecycle``): previous versions expire,
    unfinished multipart uploads are removed, current objects expire where ``lifecycle`` says."""
    return s3.LifecycleRule(
        id="mlcc-lifecycle",
        noncurrent_version_expiration=cdk.Duration.days(lifecycle.noncurrent_days),
        abort_incomplete_multipart_upload_after=cdk.Duration.days(
            lifecycle.abort_incomplete_upload_days
        ),
        expiration=cdk.Duration.days(lifecycle.expiration_days)
        if lifecycle.expiration_days is not None
        else None,
    )


def _construct_id(key: str) -> str:
    return "".join(part.capitalize() for part in key.split("_"))


def _valid_name(name: str) -> bool:
    return bool(_BUCKET_NAME.match(name)) and ".." not in name


_NAME_RULE = (
    "3-63 lower-case letters, digits, '.' and '-', starting and ending with a letter or digit"
)


def bucket_problem(value: object, *, where: str, pointer: str) -> Problem | None:
    """The problem of text where a bucket object belongs (``None`` for anything else: jsii
    interfaces pass the type check, so a bucket's name, ARN or descriptor key is caught here)."""
    if not isinstance(value, str):
        return None
    if value in bucket_patterns():
        message = "a key of stacks/buckets.json is not a bucket (its name needs the app's profile)"
        fix = (
            "pass the bucket object: ModelBuckets.bucket(key) of the buckets the app creates, "
            "or s3.Bucket.from_bucket_name(scope, id, bucket_names(account=..., region=..., "
            "profile=...)[key]) (from mlcc_constructs.core.platform.buckets import bucket_names)"
        )
    else:
        if cdk.Token.is_unresolved(value):
            message = "a bucket name known only at deploy time is not a bucket"
        elif value.startswith("arn:"):
            message = "an ARN is not a bucket"
        else:
            message = "a bucket name is not a bucket"
        fix = (
            "pass the bucket object (s3.Bucket.from_bucket_name(scope, id, name) for a bucket "
            "the app does not create)"
        )
    return Problem(
        message=message,
        where=where,
        pointer=pointer,
        value=value,
        allowed="s3.IBucket (from aws_cdk import aws_s3 as s3)",
        fix=fix,
    )


def require_bucket(value: s3.IBucket, *, where: str, pointer: str = "/bucket") -> s3.IBucket:
    """``value``, refused (:func:`bucket_problem`) when it is text: what a method taking a bucket
    checks (props check theirs when built)."""
    problem = bucket_problem(value, where=where, pointer=pointer)
    if problem is not None:
        raise MlccError(problem)
    return value
