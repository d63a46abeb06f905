"""The cluster's ECR pull through cache (:mod:`mlcc_constructs.core.platform.image_cache`).

* ``PullThroughCache<Upstream>`` (``PullThroughCacheDockerHub``): one
  ``AWS::ECR::PullThroughCacheRule`` per upstream a pinned engine image comes from, its
  repositories under the table's prefix (``docker-hub/``), credentialed upstreams with the
  team's existing Secrets Manager secret (named ``ecr-pullthroughcache/...``: the stack never
  creates or reads a secret value).
* ``ImageCachePullPolicy``: the Auto Mode node role's grant to pull through those rules:
  ``ecr:BatchImportUpstreamImage`` (fetch an image from upstream on its first pull) and
  ``ecr:CreateRepository`` (the cached repository, on that first pull), on the rules'
  repositories only (``repository/<prefix>/*``). The node role's managed policy already lets the
  kubelet read ECR (``AmazonEC2ContainerRegistryReadOnly``); these two actions are the pull
  through cache's own (https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-iam.html).
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr, aws_iam as iam
from constructs import Construct

from mlcc_constructs.aws._iam import nag_text
from mlcc_constructs.core.platform.image_cache import (
    PULL_THROUGH_ACTIONS,
    Upstream,
    cluster_upstreams,
)

POLICY_ID = "ImageCachePullPolicy"
PULL_ACTIONS = PULL_THROUGH_ACTIONS


def rule_id(upstream: Upstream) -> str:
    """The rule's child id: ``PullThroughCache`` + the upstream's name in PascalCase."""
    return "PullThroughCache" + "".join(part.title() for part in upstream.name.split("-"))


def add_pull_through_cache(
    owner: Construct, *, node_role: iam.IRole, secrets: Mapping[str, str]
) -> tuple[ecr.CfnPullThroughCacheRule, ...]:
    """The rules of :func:`cluster_upstreams` (``secrets``: upstream -> secret name or ARN,
    checked by :func:`~mlcc_constructs.core.platform.image_cache.parse_pull_through_secrets`)
    and the node role's grant to pull through them."""
    stack = cdk.Stack.of(owner)
    rules = []
    for upstream in cluster_upstreams():
        secret = secrets.get(upstream.name)
        rules.append(
            ecr.CfnPullThroughCacheRule(
                owner,
                rule_id(upstream),
                ecr_repository_prefix=upstream.ecr_repository_prefix,
                upstream_registry=upstream.name,
                upstream_registry_url=upstream.upstream_registry_url,
                credential_arn=_secret_arn(stack, secret) if secret else None,
            )
        )
    if not rules:
        return ()
    repositories = [
        stack.format_arn(
            service="ecr",
            resource="repository",
            resource_name=f"{upstream.ecr_repository_prefix}/*",
        )
        for upstream in cluster_upstreams()
    ]
    policy = iam.Policy(
        owner,
        POLICY_ID,
        statements=[iam.PolicyStatement(actions=list(PULL_ACTIONS), resources=repositories)],
    )
    policy.attach_to_role(node_role)
    for repository in repositories:
        cdk.Validations.of(policy).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::{nag_text(stack, repository)}]",
                reason="the repositories the pull through cache creates under its rule's "
                "prefix on first pull, named by the upstream image; two named actions",
            )
        )
    return tuple(rules)


def _secret_arn(stack: cdk.Stack, secret: str) -> str:
    """``secret`` as the rule's ``CredentialArn``: an ARN as given; a name as the ARN of that
    name in the stack's account and region (without the random suffix Secrets Manager appends;
    ECR's pattern accepts it, see docs/operations/not-verified.md)."""
    if secret.startswith("arn:"):
        return secret
    return stack.format_arn(
        service="secretsmanager",
        resource="secret",
        resource_name=secret,
        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
    )
