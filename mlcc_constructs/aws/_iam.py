"""IAM helpers shared by the constructs: roles from
:mod:`mlcc_constructs.core.platform.iam_statement`
statements, IRSA trust pinned to one service account, and the cdk-nag acknowledgement of each
wildcard resource with the statement's reason."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from mlcc_constructs.core.platform.iam_statement import Statement

AUDIENCE = "sts.amazonaws.com"


def policy_statement(statement: Statement) -> iam.PolicyStatement:
    """The CDK statement of ``statement``."""
    return iam.PolicyStatement(
        sid=statement.sid,
        actions=list(statement.actions),
        resources=list(statement.resources),
        conditions={op: dict(values) for op, values in statement.conditions.items()} or None,
    )


def grant(role: iam.Role, statements: Sequence[Statement]) -> None:
    """Add ``statements`` to ``role``'s policy and acknowledge each wildcard resource."""
    stack = cdk.Stack.of(role)
    for statement in statements:
        role.add_to_policy(policy_statement(statement))
        for resource in statement.resources:
            if "*" not in resource:
                continue
            cdk.Validations.of(role).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM5[Resource::{nag_text(stack, resource)}]",
                    reason=f"{statement.sid}: {statement.why}",
                )
            )


def irsa_principal(
    scope: Construct, id: str, provider: iam.IOpenIdConnectProvider, subject: str
) -> iam.OpenIdConnectPrincipal:
    """Trust for exactly one service account (``system:serviceaccount:<ns>:<name>``) of the
    cluster behind ``provider``, for the STS audience. The condition keys hold the issuer,
    which is a token, so they are resolved at deploy time (``CfnJson``)."""
    issuer = provider.open_id_connect_provider_issuer
    condition = cdk.CfnJson(scope, id, value={f"{issuer}:sub": subject, f"{issuer}:aud": AUDIENCE})
    return iam.OpenIdConnectPrincipal(provider, conditions={"StringEquals": condition})


def nag_text(stack: cdk.Stack, value: str) -> str:
    """``value`` as cdk-nag prints it in a finding id (``<Ref>``, ``<Res.Attr>``)."""
    return _render(stack.resolve(value))


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::ImportValue":
            return str(argument)
        if function == "Fn::GetAtt":
            return f"<{argument[0]}.{argument[1]}>"
        if function == "Fn::Join":
            return str(argument[0]).join(_render(part) for part in argument[1])
    return json.dumps(value, sort_keys=True)
