"""CDK entry point (``cdk synth`` runs this through cdk.json): every stack of the app."""

from __future__ import annotations

import sys

import aws_cdk as cdk

from mlcc_constructs.core.errors import MlccError
from stacks import BucketsStack, EksClusterStack, environment_from_context


def build_app(app: cdk.App | None = None) -> cdk.App:
    """Compose the app's stacks on ``app`` (a new ``cdk.App`` by default).

    The environment (profile, account, region, availability zones) comes from the app's
    context: ``cdk.json``, overridden with ``cdk synth -c key=value``.
    """
    app = app or cdk.App()
    environment = environment_from_context(app)
    BucketsStack(app, environment=environment)
    EksClusterStack(app, environment=environment)
    return app


if __name__ == "__main__":
    try:
        build_app().synth()
    except MlccError as error:
        for problem in error.problems:
            print(f"app.py: error: {problem}", file=sys.stderr)
        sys.exit(1)
