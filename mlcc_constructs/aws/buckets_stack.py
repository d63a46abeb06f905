"""Stack ``mlcc-<profile>-buckets``: every bucket of ``stacks/buckets.json``."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from mlcc_constructs.aws.buckets import ModelBuckets, ModelBucketsProps
from mlcc_constructs.aws.stack_environment import app_bucket_names, stack_env
from mlcc_constructs.core.platform.app_settings import AppEnvironment


class BucketsStack(cdk.Stack):
    """The model, artifacts, training, adapters and TLS buckets plus their access-log bucket."""

    def __init__(self, scope: Construct, *, environment: AppEnvironment) -> None:
        super().__init__(
            scope,
            environment.stack_name("buckets"),
            # The app's stack name in a fleet stage too (a stage would prefix it).
            stack_name=environment.stack_name("buckets"),
            env=stack_env(environment),
            description="mlcc buckets (names from stacks/buckets.json)",
        )
        self.model_buckets = ModelBuckets(
            self, "ModelBuckets", props=ModelBucketsProps(names=app_bucket_names(environment))
        )
