"""IAM permissions as plain data: :class:`Statement` (one ``Allow``) and :class:`Arns` (ARNs of
one partition, region and account, CloudFormation tokens allowed). The role modules
(:mod:`~mlcc_constructs.core.platform.hyperpod_iam`,
:mod:`~mlcc_constructs.core.platform.alb_controller_iam`)
return statements; ``aws/_iam.py`` turns them into CDK ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

Conditions = Mapping[str, Mapping[str, Any]]
OWN_ACCOUNT: Conditions = MappingProxyType(
    {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}}
)
"""Only resources of the caller's own account."""


@dataclass(frozen=True, kw_only=True)
class Statement:
    """One ``Allow`` statement.

    Fields:

    ``sid``: the statement id.
    ``actions``: the actions, none a wildcard.
    ``resources``: the resources.
    ``conditions``: the condition block (operator → key → value).
    ``why``: why a resource holds ``*`` (empty when none does).
    """

    sid: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: Conditions = field(default_factory=lambda: MappingProxyType({}))
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class Arns:
    """Builds ARNs of one partition, region and account.

    Fields:

    ``partition``: ``aws`` (or a token).
    ``region``: the region.
    ``account``: the account id.
    """

    partition: str
    region: str
    account: str

    def of(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        """``arn:<partition>:<service>:<region>:<account>:<resource>``."""
        return (
            f"arn:{self.partition}:{service}:{self.region if region else ''}:"
            f"{self.account if account else ''}:{resource}"
        )

    def any_region(self, service: str, resource: str) -> str:
        """``arn:<partition>:<service>:*:*:<resource>`` (resources of other accounts too)."""
        return f"arn:{self.partition}:{service}:*:*:{resource}"

    def bucket(self, name: str) -> str:
        """An S3 bucket's ARN."""
        return f"arn:{self.partition}:s3:::{name}"


def wildcard_actions(statements: Sequence[Statement]) -> list[str]:
    """Every action holding ``*`` (there must be none)."""
    return [action for s in statements for action in s.actions if "*" in action]
