"""``ModelBuckets``: the project's S3 buckets, named only by ``stacks/buckets.json``.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct

from mlcc_constructs.core.platform.buckets import (
    Lifecycle,
    access_log_lifecycle,
    bucket_lifecycles,
    bucket_name,
    bucket_names,
    bucket_patterns,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail
from mlcc_constructs.core.support.typecheck import check_fields

BucketRef = s3.IBucket | str
"""A bucket a construct reads or writes: the team's own ``s3.IBucket`` (created in the app,
or imported with ``s3.Bucket.from_bucket_name``), a descriptor key of ``stacks/buckets.json``
(``"core"``, ``"tls"``, ...: the app's buckets, named with the props' ``profile``), or any
other valid S3 bucket name, taken literally (``"acme-tls-certs"``). Descriptor keys win: a
bucket whose name is one of them is passed as an object. Never an ARN."""

# S3 general purpose bucket names (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
# bucketnamingrules.html): 3-63 lower-case letters, digits, '.' and '-', starting and ending
# with a letter or digit.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True, kw_only=True)
class ModelBucketsProps:
    """Props of :class:`ModelBuckets`."""

    profile: str
    """Fills ``${profile}`` in the descriptor's name patterns; ``${account}`` and ``${region}``
    come from the stack, which must have an explicit environment. Required."""
    keys: Sequence[str] | None = None
    """The descriptor buckets to create (default: every bucket in the descriptor)."""

    def __post_init__(self) -> None:
        check_fields(self)


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
        account, region = concrete_environment(self)
        names = bucket_names(account=account, region=region, profile=props.profile)
        keys = tuple(props.keys) if props.keys is not None else tuple(bucket_patterns())
        unknown = [key for key in keys if key not in names]
        if unknown:
            raise fail(
                f"unknown bucket key(s) {', '.join(unknown)}",
                where="ModelBucketsProps.keys",
                value=unknown,
                allowed=", ".join(sorted(names)),
            )
        # No explicit name: bucket names are written only in stacks/buckets.json, and
        # the log bucket is not one the rest of the project addresses.
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
        for key in keys:
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


def resolve_bucket(
    scope: Construct, ref: BucketRef, *, profile: str | None, props: str, field: str
) -> s3.IBucket:
    """The bucket ``ref`` names (see :data:`BucketRef`) as an ``s3.IBucket``: an object as
    given; a descriptor key or a literal name imported into ``scope`` by name, once per name
    (child ``<Name>Bucket``, e.g. ``CoreBucket``: an import creates no resource). ``props`` and
    ``field`` name the prop in errors (``S3CsiDriverProps``, ``tls_bucket``); ``profile`` fills
    ``${profile}`` of a descriptor key."""
    if not isinstance(ref, str):
        return ref
    problem = bucket_ref_problem(ref, where=props, pointer=f"/{field}")
    if problem is not None:
        raise MlccError(problem)
    name = ref
    if ref in bucket_patterns():
        if profile is None:
            raise fail(
                f"bucket {ref!r} is given by descriptor key but no profile is set",
                where=f"{props}.profile",
                fix="pass profile=... (fills ${profile} in stacks/buckets.json) or pass "
                "the bucket object",
            )
        account, region = concrete_environment(scope)
        name = bucket_name(ref, account=account, region=region, profile=profile)
    construct_id = "".join(part.capitalize() for part in re.split(r"[^a-z0-9]+", ref)) + "Bucket"
    existing = scope.node.try_find_child(construct_id)
    if existing is not None:
        return cast(s3.IBucket, existing)
    return s3.Bucket.from_bucket_name(scope, construct_id, name)


def bucket_ref_problem(ref: object, *, where: str, pointer: str) -> Problem | None:
    """The problem of a bucket given as text (``None``: an object, a descriptor key or a valid
    bucket name): an ARN, a deploy-time token, or no bucket name at all."""
    if not isinstance(ref, str):
        return None
    keys = bucket_patterns()
    if ref in keys or (
        _BUCKET_NAME.match(ref) and ".." not in ref and not cdk.Token.is_unresolved(ref)
    ):
        return None
    if cdk.Token.is_unresolved(ref):
        message = "a bucket name known only at deploy time is not a bucket"
    elif ref.startswith("arn:"):
        message = "an ARN is not a bucket"
    else:
        message = "not a bucket"
    return Problem(
        message=message,
        where=where,
        pointer=pointer,
        value=ref,
        allowed=f"an s3.IBucket, a key of stacks/buckets.json ({', '.join(sorted(keys))}) or "
        "an S3 bucket name (3-63 lower-case letters, digits, '.', '-')",
        fix="pass the bucket object (s3.Bucket.from_bucket_name(scope, id, name) for a bucket "
        "the app does not create)",
    )
