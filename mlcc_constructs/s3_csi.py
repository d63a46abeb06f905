"""``S3CsiDriver``: the Mountpoint for Amazon S3 CSI driver add-on and its IRSA role."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from mlcc_constructs.core._resources import data_path

ADDON_NAME = "aws-mountpoint-s3-csi-driver"
SERVICE_ACCOUNT = "system:serviceaccount:kube-system:s3-csi-driver-sa"
AUDIENCE = "sts.amazonaws.com"


@cache
def pinned_addon_version(addon: str = ADDON_NAME) -> str:
    """The add-on version pinned in ``mlcc_constructs/data/versions.json``."""
    versions = json.loads(data_path("versions.json").read_text(encoding="utf-8"))
    return str(versions["eks_addons"][addon])


@dataclass(frozen=True, kw_only=True)
class S3CsiParentIds:
    """Ids for creating the role and the add-on directly in the parent scope."""

    role: str
    addon: str


@dataclass(frozen=True, kw_only=True)
class S3CsiDriverProps:
    """Props of :class:`S3CsiDriver`.

    ``cluster``: the EKS cluster the add-on is installed on.
    ``oidc_provider``: the cluster's IAM OIDC provider (IRSA trust).
    ``addon_version``: default: the version pinned in ``versions.json``.
    ``resolve_conflicts``: ``ResolveConflicts`` of the add-on; default ``OVERWRITE``.
    ``parent_ids``: default ``None``: the role and the add-on are this construct's
    children ``Role`` and ``Addon``.
    """

    cluster: eks.ICluster | eks.Cluster
    oidc_provider: iam.IOpenIdConnectProvider
    addon_version: str | None = None
    resolve_conflicts: str = "OVERWRITE"
    parent_ids: S3CsiParentIds | None = field(default=None)


class S3CsiDriver(Construct):
    """The ``aws-mountpoint-s3-csi-driver`` EKS add-on with an IRSA role."""

    def __init__(self, scope: Construct, id: str, *, props: S3CsiDriverProps) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        owner: Construct = scope if props.parent_ids else self
        role_id = props.parent_ids.role if props.parent_ids else "Role"
        addon_id = props.parent_ids.addon if props.parent_ids else "Addon"
        issuer = props.oidc_provider.open_id_connect_provider_issuer
        condition = cdk.CfnJson(
            self,
            "TrustCondition",
            value={f"{issuer}:sub": SERVICE_ACCOUNT, f"{issuer}:aud": AUDIENCE},
        )
        self.role = iam.Role(
            owner,
            role_id,
            assumed_by=iam.OpenIdConnectPrincipal(
                props.oidc_provider, conditions={"StringEquals": condition}
            ),
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="TlsBucket",
                actions=["s3:GetBucketLocation", "s3:GetObject", "s3:ListBucket"],
                resources=[
                    f"arn:{stack.partition}:s3:::hyperpod-tls-*",
                    f"arn:{stack.partition}:s3:::hyperpod-tls-*/*",
                ],
            )
        )
        self.addon = eks.CfnAddon(
            owner,
            addon_id,
            addon_name=ADDON_NAME,
            cluster_name=props.cluster.cluster_name,
            addon_version=props.addon_version or pinned_addon_version(),
            resolve_conflicts=props.resolve_conflicts,
        )
