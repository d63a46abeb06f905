"""``S3CsiDriver``: the Mountpoint for Amazon S3 CSI driver add-on and its IRSA role.

The driver mounts S3 prefixes into pods (the model volume, and LoRA adapters under it), so
its role only reads: ``s3:ListBucket`` and ``s3:GetBucketLocation`` on the buckets,
``s3:GetObject`` on their objects. The TLS bucket gets the same read access and nothing
more: the HyperPod inference operator writes the certificates with its own role; the CSI
driver only mounts them for the pods that read them. Buckets are objects (``s3.IBucket``),
never names or ARN strings, so a grant cannot name a wildcard bucket.
:meth:`S3CsiDriver.grant_read` adds a bucket after construction.

Logical ids: the role and the add-on are this construct's children ``Role`` and ``Addon``.
``ServingCluster``'s driver puts them beside itself instead, as ``S3CsiRole`` and
``S3CsiDriverAddon`` (policy ``S3CsiRoleDefaultPolicyE2B11437``): the ids of stacks deployed
before, which a changed logical id would replace (``ServingCluster``'s *Logical ids*).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks, aws_iam as iam, aws_s3 as s3
from constructs import Construct

from mlcc_constructs.aws._iam import nag_text
from mlcc_constructs.aws.buckets import bucket_problem, require_bucket
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields

ADDON_NAME = "aws-mountpoint-s3-csi-driver"
SERVICE_ACCOUNT = "system:serviceaccount:kube-system:s3-csi-driver-sa"
AUDIENCE = "sts.amazonaws.com"
READ_BUCKET_ACTIONS = ("s3:GetBucketLocation", "s3:ListBucket")
READ_OBJECT_ACTIONS = ("s3:GetObject",)


def pinned_addon_version(addon: str = ADDON_NAME) -> str:
    """The add-on version pinned in ``mlcc_constructs/data/versions.json``."""
    return pinned().addon(addon)


@dataclass(frozen=True, kw_only=True)
class S3CsiDriverProps:
    """Props of :class:`S3CsiDriver`."""

    cluster: eks.ICluster | eks.Cluster
    """The EKS cluster the add-on is installed on."""
    oidc_provider: iam.IOpenIdConnectProvider
    """The cluster's IAM OIDC provider (IRSA trust)."""
    read_buckets: Sequence[s3.IBucket] = ()
    """Buckets the driver mounts read-only (``s3.IBucket``: ``ModelBuckets.bucket(key)``, or
    ``s3.Bucket.from_bucket_name(scope, id, name)``); default ``()`` (add some with
    :meth:`S3CsiDriver.grant_read`)."""
    tls_bucket: s3.IBucket | None = None
    """The bucket the HyperPod operator writes TLS certificates to (read access for the pods that
    mount them); default ``None``: no TLS statement (a cluster without the HyperPod inference
    operator)."""
    addon_version: str | None = None
    """Default: the version pinned in ``versions.json``."""
    resolve_conflicts: str = "OVERWRITE"
    """``ResolveConflicts`` of the add-on; default ``OVERWRITE``."""
    configuration_values: Mapping[str, Any] | None = None
    """The add-on's configuration (its schema: ``aws eks describe-addon-configuration --addon-name
    aws-mountpoint-s3-csi-driver``); default ``None`` (the add-on's defaults). The app passes
    :func:`mlcc_constructs.core.platform.gpu_capacity.s3_csi_addon_configuration`."""

    def __post_init__(self) -> None:
        check_fields(self)
        problems = [
            *(
                bucket_problem(ref, where="S3CsiDriverProps", pointer=f"/read_buckets/{index}")
                for index, ref in enumerate(self.read_buckets)
            ),
            bucket_problem(self.tls_bucket, where="S3CsiDriverProps", pointer="/tls_bucket"),
        ]
        raise_if_any(problem for problem in problems if problem is not None)


class S3CsiDriver(Construct):
    """The ``aws-mountpoint-s3-csi-driver`` EKS add-on with an IRSA role (children ``Role`` and
    ``Addon``)."""

    # The role's and the add-on's construct ids, and whether they go beside this construct
    # (in its scope) rather than under it: ServingCluster's own subclass sets them.
    _ROLE_ID = "Role"
    _ADDON_ID = "Addon"
    _BESIDE = False

    def __init__(self, scope: Construct, id: str, *, props: S3CsiDriverProps) -> None:
        super().__init__(scope, id)
        owner: Construct = scope if self._BESIDE else self
        role_id, addon_id = self._ROLE_ID, self._ADDON_ID
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
        self._read_statements: tuple[iam.PolicyStatement, iam.PolicyStatement] | None = None
        self._read_buckets: list[s3.IBucket] = []
        for ref in props.read_buckets:
            self.grant_read(ref)
        self.tls_bucket: s3.IBucket | None = props.tls_bucket
        if self.tls_bucket is not None:
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="TlsBucket",
                    actions=sorted(READ_BUCKET_ACTIONS + READ_OBJECT_ACTIONS),
                    resources=[self.tls_bucket.bucket_arn, self.tls_bucket.arn_for_objects("*")],
                )
            )
            self._acknowledge_objects(self.tls_bucket)
        self.addon = eks.CfnAddon(
            owner,
            addon_id,
            addon_name=ADDON_NAME,
            cluster_name=props.cluster.cluster_name,
            addon_version=props.addon_version or pinned_addon_version(),
            service_account_role_arn=self.role.role_arn,
            resolve_conflicts=props.resolve_conflicts,
            configuration_values=(
                json.dumps(props.configuration_values, sort_keys=True)
                if props.configuration_values is not None
                else None
            ),
        )

    @property
    def read_buckets(self) -> tuple[s3.IBucket, ...]:
        """The buckets the driver mounts read-only (the props', then :meth:`grant_read`'s)."""
        return tuple(self._read_buckets)

    def grant_read(self, bucket: s3.IBucket) -> s3.IBucket:
        """Let the driver mount ``bucket`` read-only: ``s3:ListBucket`` and
        ``s3:GetBucketLocation`` on it, ``s3:GetObject`` on its objects (the statements
        ``ReadModelBuckets`` and ``ReadModelObjects``). Returns the bucket object."""
        resolved = require_bucket(bucket, where="S3CsiDriver.grant_read")
        if self._read_statements is None:
            self._read_statements = (
                iam.PolicyStatement(sid="ReadModelBuckets", actions=list(READ_BUCKET_ACTIONS)),
                iam.PolicyStatement(sid="ReadModelObjects", actions=list(READ_OBJECT_ACTIONS)),
            )
            for statement in self._read_statements:
                self.role.add_to_policy(statement)
        buckets, objects = self._read_statements
        buckets.add_resources(resolved.bucket_arn)
        objects.add_resources(resolved.arn_for_objects("*"))
        self._read_buckets.append(resolved)
        self._acknowledge_objects(resolved)
        return resolved

    def _acknowledge_objects(self, bucket: s3.IBucket) -> None:
        # Object-level grants are "<bucket>/*" by nature; acknowledge exactly those.
        objects = nag_text(cdk.Stack.of(self), bucket.arn_for_objects("*"))
        cdk.Validations.of(self.role).acknowledge(
            cdk.Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::{objects}]",
                reason="s3:GetObject on the objects of one named bucket the CSI driver "
                "mounts read-only; no wildcard bucket and no wildcard action",
            )
        )
