"""What every stack of an environment (the app's, a fleet stage's) takes from it: the explicit
``cdk.Environment`` (account and region written out, so no context lookup needs AWS
credentials), and the environment's buckets (``stacks/buckets.json`` named with its profile,
account and region) as the constructs take them."""

from __future__ import annotations

from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_s3 as s3
from constructs import Construct

from mlcc_constructs.core.platform.app_settings import AppEnvironment
from mlcc_constructs.core.platform.buckets import bucket_name, bucket_names


def stack_env(environment: AppEnvironment) -> cdk.Environment:
    """The explicit stack environment: no context lookup needs AWS credentials."""
    return cdk.Environment(account=environment.account, region=environment.region)


def app_bucket_names(environment: AppEnvironment) -> dict[str, str]:
    """Every bucket of ``stacks/buckets.json`` named for the app's profile, account and region
    (key -> name, in the descriptor's order)."""
    return bucket_names(
        account=environment.account, region=environment.region, profile=environment.profile
    )


def app_bucket(scope: Construct, environment: AppEnvironment, key: str) -> s3.IBucket:
    """The app's bucket ``key`` of ``stacks/buckets.json`` (``"core"``, ``"tls"``, ...), imported
    by its name into ``scope`` once (child ``<Key>Bucket``, e.g. ``CoreBucket``; an import
    creates no resource). The stacks other than ``mlcc-<profile>-buckets`` name the buckets
    rather than reference that stack's: no cross-stack export ties their deploys together."""
    construct_id = "".join(part.capitalize() for part in key.split("_")) + "Bucket"
    existing = scope.node.try_find_child(construct_id)
    if existing is not None:
        return cast(s3.IBucket, existing)
    name = bucket_name(
        key, account=environment.account, region=environment.region, profile=environment.profile
    )
    return s3.Bucket.from_bucket_name(scope, construct_id, name)
