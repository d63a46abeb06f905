"""Stack outputs from the core's plain ones (:class:`~mlcc_constructs.core.serving.endpoint.
outputs.StackOutput`)."""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from constructs import Construct

from mlcc_constructs.core.serving.endpoint.outputs import StackOutput


def add_stack_outputs(
    scope: Construct, found: Sequence[StackOutput], prefix: str
) -> list[cdk.CfnOutput]:
    """``found`` as ``CfnOutput`` children of ``scope``, their logical ids ``<prefix><key>``
    (readable where ``cdk deploy`` prints them: ``EndpointUrl``, not a hashed path)."""
    made = []
    for output in found:
        cfn = cdk.CfnOutput(scope, output.key, value=output.value, description=output.description)
        cfn.override_logical_id(f"{prefix}{output.key}")
        made.append(cfn)
    return made
