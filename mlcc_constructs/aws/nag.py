"""``MlccChecks``: the project's cdk-nag pack (cdk-nag 3.x), run beside AwsSolutions.

It applies :mod:`mlcc_constructs.core.platform.eks_rules` to every ``AWS::EKS::Cluster`` resource,
so ``aws_eks_v2`` clusters (which the AwsSolutions EKS rules do not see) are checked too::

    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), MlccChecks(app))

Rule ids: ``Mlcc-EKSPublicEndpoint`` and ``Mlcc-EKSControlPlaneLogs``; acknowledge one with
``cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=..., reason=...))``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import aws_cdk as cdk
import jsii
from cdk_nag import IApplyRule, NagMessageLevel, NagPack, NagRuleCompliance
from constructs import IConstruct

from mlcc_constructs.core.platform.eks_rules import (
    CLUSTER_TYPE,
    missing_log_types,
    public_endpoint_problem,
)

PACK = "Mlcc"
PUBLIC_ENDPOINT = "EKSPublicEndpoint"
CONTROL_PLANE_LOGS = "EKSControlPlaneLogs"

Predicate = Callable[[Mapping[str, Any]], bool]


@jsii.implements(IApplyRule)
class _Rule:
    """One rule application (cdk-nag's IApplyRule). jsii finds an interface's members on the
    class, so each is a property."""

    def __init__(
        self, node: cdk.CfnResource, suffix: str, info: str, explanation: str, failing: Predicate
    ) -> None:
        self._node = node
        self._suffix = suffix
        self._info = info
        self._explanation = explanation
        self._failing = failing

    @property
    def node(self) -> cdk.CfnResource:
        return self._node

    @property
    def rule_suffix_override(self) -> str | None:
        return self._suffix

    @property
    def info(self) -> str:
        return self._info

    @property
    def explanation(self) -> str:
        return self._explanation

    @property
    def level(self) -> NagMessageLevel:
        return NagMessageLevel.ERROR

    def rule(self, node: cdk.CfnResource) -> NagRuleCompliance:
        if node.cfn_resource_type != CLUSTER_TYPE:
            return NagRuleCompliance.NOT_APPLICABLE
        return (
            NagRuleCompliance.NON_COMPLIANT
            if self._failing(_properties(node))
            else NagRuleCompliance.COMPLIANT
        )


class MlccChecks(NagPack):
    """The project's rules for every EKS cluster (public endpoint, control-plane logs)."""

    def __init__(self, scope: IConstruct | None = None, *, verbose: bool | None = None) -> None:
        super().__init__(scope, verbose=verbose)
        self._pack_name = PACK

    @property
    def name(self) -> str:
        return PACK

    def _apply(self, rule: _Rule) -> None:
        # _Rule implements IApplyRule for jsii (read-only properties; mypy wants setters).
        self._apply_rule(cast(IApplyRule, rule))

    def _check_resource(self, node: cdk.CfnResource) -> None:
        # Both rules see EKS clusters only: any other resource is not applicable, which
        # cdk-nag records nowhere, so it is answered here without the jsii round trips of two
        # rule applications (about 15 calls from node into Python per resource).
        if node.cfn_resource_type != CLUSTER_TYPE:
            return
        self._apply(
            _Rule(
                node,
                PUBLIC_ENDPOINT,
                "The EKS cluster's API endpoint is public without CIDR limits.",
                "Anyone on the internet can reach the Kubernetes API; keep the endpoint private "
                "or list the networks that may reach it (endpoint_public_cidrs).",
                lambda props: public_endpoint_problem(props) is not None,
            )
        )
        self._apply(
            _Rule(
                node,
                CONTROL_PLANE_LOGS,
                "The EKS cluster does not publish every control-plane log type.",
                "api, audit, authenticator, controllerManager and scheduler logs show who did "
                "what to the cluster and why workloads were (not) scheduled.",
                lambda props: bool(missing_log_types(props)),
            )
        )


def _properties(node: cdk.CfnResource) -> Mapping[str, Any]:
    """The resource's CloudFormation properties (``ResourcesVpcConfig``...), resolved: tokens
    become ``Ref``/``GetAtt`` objects. (Raw overrides added with ``add_property_override`` are
    not seen, as in cdk-nag's own rules.)"""
    rendered = node._render_properties(node._cfn_properties)
    properties: Mapping[str, Any] = cdk.Stack.of(node).resolve(rendered)
    return properties
