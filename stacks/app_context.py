"""The app's environment from its CDK context (the rules, and the GPU pool's and the egress'
settings: :mod:`mlcc_constructs.core.platform.app_settings`) as the stacks take it, and the
app's buckets (``stacks/buckets.json`` named with its profile) as the constructs take them
(:mod:`mlcc_constructs.aws.stack_environment`, which a fleet stage's stacks use too)."""

from __future__ import annotations

import aws_cdk as cdk

from mlcc_constructs.aws.stack_environment import app_bucket, app_bucket_names, stack_env
from mlcc_constructs.core.platform.app_settings import AppEnvironment, read_environment

__all__ = [
    "AppEnvironment",
    "app_bucket",
    "app_bucket_names",
    "environment_from_context",
    "stack_env",
]


def environment_from_context(app: cdk.App) -> AppEnvironment:
    """Read and check ``profile``, ``account``, ``region`` and the access keys."""
    return read_environment(app.node.try_get_context)
