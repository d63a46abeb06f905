"""The explicit ``cdk.Environment`` every stack of an environment takes (the app's, a fleet
stage's): account and region written out, so no context lookup needs AWS credentials."""

from __future__ import annotations

import aws_cdk as cdk

from mlcc_constructs.core.platform.app_settings import AppEnvironment


def stack_env(environment: AppEnvironment) -> cdk.Environment:
    """The explicit stack environment: no context lookup needs AWS credentials."""
    return cdk.Environment(account=environment.account, region=environment.region)
