"""CDK entry point (``cdk synth`` runs this through cdk.json): every stack of the app."""

from __future__ import annotations

import aws_cdk as cdk


def build_app(app: cdk.App | None = None) -> cdk.App:
    """Compose the app's stacks on ``app`` (a new ``cdk.App`` by default)."""
    return app or cdk.App()


if __name__ == "__main__":
    build_app().synth()
