"""The app's environment from its CDK context (the rules, and the GPU pool's and the egress'
settings: :mod:`mlcc_constructs.core.platform.app_settings`) as the stacks take it."""

from __future__ import annotations

import aws_cdk as cdk

from mlcc_constructs.core.platform.app_settings import AppEnvironment, read_environment


def stack_env(environment: AppEnvironment) -> cdk.Environment:
    """The explicit stack environment: no context lookup needs AWS credentials."""
    return cdk.Environment(account=environment.account, region=environment.region)


def environment_from_context(app: cdk.App) -> AppEnvironment:
    """Read and check ``profile``, ``account``, ``region`` and the access keys."""
    return read_environment(app.node.try_get_context)
