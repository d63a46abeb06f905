"""What an app (or one spec's deployments) needs from the AWS account, as plain data.

This is the ONE preflight module that reads deployment specs and app settings: every other
preflight module takes :class:`AppNeeds`. When the spec's shape changes, only
:func:`deployment_needs` changes.

Peak GPU nodes of a deployment whose pods run on the cluster's own nodes (the EKS target):
``max_replicas x nodes`` (``nodes``: the nodes one model copy spans, a LeaderWorkerSet group
above 1), plus one more copy (``nodes`` nodes) when its ``rollout`` is ``surge`` (the rolling
update's ``maxSurge: 1`` starts a new pod, or group, before an old one stops:
:mod:`mlcc_constructs.core.serving.prepare.disruption`). A deployment on HyperPod runs on its
instance groups, which count against SageMaker's quotas, not EC2's (:class:`HyperPodGroupNeed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mlcc_constructs.core.platform.app_settings import AppEnvironment
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.hyperpod import HyperPodSettings
from mlcc_constructs.core.platform.image_cache import SECRETS_KEY
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME as INFERENCE_ADDON
from mlcc_constructs.core.platform.versions import PinnedVersions
from mlcc_constructs.core.serving.prepared import PreparedDeployment


@dataclass(frozen=True, kw_only=True)
class InstanceNeed:
    """GPU nodes a deployment may run at once on the cluster's own nodes.

    ``types``: the instance types it may run on, preferred first (its fallbacks after).
    ``peak_nodes``: the most nodes at once (module doc). ``where``: the deployment.
    """

    types: tuple[InstanceType, ...]
    peak_nodes: int
    where: str

    @property
    def preferred(self) -> InstanceType:
        """The type the deployment asks for first."""
        return self.types[0]


@dataclass(frozen=True, kw_only=True)
class SecretNeed:
    """A Secrets Manager secret the app names: ``secret`` (name or ARN), ``purpose`` (the field
    naming it, e.g. ``secret_env HF_TOKEN``), ``region`` (where it must be), ``where``."""

    secret: str
    purpose: str
    region: str
    where: str


@dataclass(frozen=True, kw_only=True)
class CertificateNeed:
    """An ACM certificate an endpoint serves HTTPS with, for ``hostname`` (``None``: the
    endpoint names no host), in the deployment's ``region``."""

    arn: str
    hostname: str | None
    region: str
    where: str


@dataclass(frozen=True, kw_only=True)
class HostedZoneNeed:
    """A Route 53 hosted zone that must hold ``hostname`` (the endpoint's alias record)."""

    zone_id: str
    hostname: str
    where: str


@dataclass(frozen=True, kw_only=True)
class ModelNeed:
    """An ``s3://`` model the engine loads: its ``bucket`` and ``prefix`` (ending in ``/``), the
    size the spec says (``model_bytes``, ``None`` when it says none) and the bucket's
    ``region``."""

    uri: str
    bucket: str
    prefix: str
    model_bytes: int | None
    region: str
    where: str


@dataclass(frozen=True, kw_only=True)
class RoleNeed:
    """An IAM role the app grants access to (``admin_role_arns``)."""

    arn: str
    where: str


@dataclass(frozen=True, kw_only=True)
class HyperPodGroupNeed:
    """Instances of one type a created HyperPod cluster's instance groups run (summed over
    its groups of that type)."""

    instance_type: str
    count: int
    where: str


@dataclass(frozen=True, kw_only=True)
class AppNeeds:
    """Everything preflight checks the account for.

    ``region``/``account``/``zones``: where the app deploys (``zones`` empty: any zone).
    ``instances``: the GPU nodes of each deployment on the cluster's own nodes.
    ``hyperpod_groups``: a created HyperPod cluster's instances per type (empty: none).
    ``hyperpod``: whether the app runs a HyperPod cluster (created or imported).
    ``kubernetes``: the cluster's Kubernetes version (``None``: not known, spec mode).
    ``hyperpod_documented``: the versions HyperPod documents (pinned).
    ``addons``: each EKS add-on the app installs with its pinned build.
    ``secrets``, ``certificates``, ``hosted_zones``, ``models``, ``roles``: as named.
    ``bootstrap``: whether the app's stacks need a CDK bootstrap (app mode).
    ``cluster``: an existing EKS cluster whose Kubernetes version the add-on builds are checked
    for (spec mode's ``--cluster``; ``None``: ``kubernetes`` is the version).
    """

    region: str
    account: str | None
    zones: tuple[str, ...] = ()
    instances: tuple[InstanceNeed, ...] = ()
    hyperpod_groups: tuple[HyperPodGroupNeed, ...] = ()
    hyperpod: bool = False
    kubernetes: str | None = None
    hyperpod_documented: tuple[str, ...] = ()
    addons: tuple[tuple[str, str], ...] = ()
    secrets: tuple[SecretNeed, ...] = ()
    certificates: tuple[CertificateNeed, ...] = ()
    hosted_zones: tuple[HostedZoneNeed, ...] = ()
    models: tuple[ModelNeed, ...] = ()
    roles: tuple[RoleNeed, ...] = ()
    bootstrap: bool = False
    cluster: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeploymentNeeds:
    """What one deployment needs (:func:`deployment_needs`)."""

    instance: InstanceNeed | None
    secrets: tuple[SecretNeed, ...]
    certificate: CertificateNeed | None
    hosted_zone: HostedZoneNeed | None
    model: ModelNeed | None


API_KEY_PURPOSE = "endpoint.api_key_secret"
"""A :class:`SecretNeed`'s purpose for a deployment's API key (its fix creates a random key)."""


def peak_nodes(prepared: PreparedDeployment) -> int:
    """The most GPU nodes the deployment runs at once (module doc)."""
    nodes = prepared.resolution.nodes
    surge = nodes if prepared.spec.rollout.strategy == "surge" else 0
    return prepared.max_replicas * nodes + surge


def deployment_needs(prepared: PreparedDeployment, *, where: str, region: str) -> DeploymentNeeds:
    """What one prepared deployment needs from the account; ``region``: the app's (a secret or
    certificate without a region of its own is looked up there).

    Spec fields read here (and nowhere else in preflight): ``rollout.strategy``,
    ``engine.secret_env`` (its :class:`SecretsManagerSecret` values), ``endpoint.api_key_secret``,
    ``endpoint.certificate_arn``, ``endpoint.hostname``, ``endpoint.hosted_zone_id``,
    ``model.bytes``; and the prepared facts
    ``target``, ``instance_types``, ``max_replicas``, ``resolution.nodes``, ``source`` (the
    model after the context placed it) and ``model_region``."""
    from mlcc_constructs.core.serving.spec.endpoint import SecretsManagerSecret

    spec = prepared.spec
    instance = None
    if prepared.target.cluster_gpu_nodes:
        instance = InstanceNeed(
            types=tuple(prepared.instance_types), peak_nodes=peak_nodes(prepared), where=where
        )
    secrets = [
        SecretNeed(
            secret=ref.secret, purpose=f"engine.secret_env {variable}", region=region, where=where
        )
        for variable, ref in sorted(spec.engine.secret_env.items())
        if isinstance(ref, SecretsManagerSecret)
    ]
    endpoint = spec.endpoint
    if endpoint.api_key_secret is not None:
        secrets.append(
            SecretNeed(
                secret=endpoint.api_key_secret,
                purpose=API_KEY_PURPOSE,
                region=region,
                where=where,
            )
        )
    certificate = None
    if endpoint.certificate_arn is not None:
        certificate = CertificateNeed(
            arn=endpoint.certificate_arn, hostname=endpoint.hostname, region=region, where=where
        )
    zone = None
    if endpoint.hosted_zone_id is not None and endpoint.hostname is not None:
        zone = HostedZoneNeed(
            zone_id=endpoint.hosted_zone_id, hostname=endpoint.hostname, where=where
        )
    model = None
    source = prepared.source
    if source.kind == "s3" and source.bucket is not None:
        model = ModelNeed(
            uri=source.uri,
            bucket=source.bucket,
            prefix=source.prefix or "",
            model_bytes=spec.model.bytes,
            region=prepared.model_region or region,
            where=where,
        )
    return DeploymentNeeds(
        instance=instance,
        secrets=tuple(secrets),
        certificate=certificate,
        hosted_zone=zone,
        model=model,
    )


def spec_needs(
    deployments: Sequence[tuple[str, PreparedDeployment]],
    *,
    region: str,
    account: str | None,
    kubernetes: str | None = None,
    cluster: str | None = None,
    pinned: PinnedVersions | None = None,
) -> AppNeeds:
    """What some deployments need on a cluster the app does not describe (``mlcc preflight
    -f SPEC``): instances, secrets, certificates, zones and models; the pinned add-on builds
    and the HyperPod version only when the cluster is named (``cluster``: its version is read)
    or its ``kubernetes`` version given (the HyperPod inference operator's build only when a
    deployment runs on HyperPod)."""
    each = [deployment_needs(p, where=w, region=region) for w, p in deployments]
    on_hyperpod = any(not p.target.cluster_gpu_nodes for _, p in deployments)
    addons: tuple[tuple[str, str], ...] = ()
    if (kubernetes is not None or cluster is not None) and pinned is not None:
        addons = tuple(
            (name, version)
            for name, version in sorted(pinned.eks_addons.items())
            if on_hyperpod or name != INFERENCE_ADDON
        )
    return _gathered(
        each,
        region=region,
        account=account,
        kubernetes=kubernetes,
        cluster=cluster,
        hyperpod=on_hyperpod,
        hyperpod_documented=pinned.hyperpod_kubernetes_documented if pinned else (),
        addons=addons,
    )


def app_needs(
    deployments: Sequence[tuple[str, PreparedDeployment]],
    *,
    environment: AppEnvironment,
    pull_through_secrets: Mapping[str, str] | None,
    hyperpod: HyperPodSettings | None,
    pinned: PinnedVersions,
) -> AppNeeds:
    """What the whole app needs: its deployments', the ECR pull through cache's secrets
    (``ecr_pull_through_secrets``), the admin roles, the HyperPod cluster's instance groups,
    the pinned add-on builds the stacks install (the HyperPod inference operator's only with a
    HyperPod cluster) and the CDK bootstrap."""
    region = environment.region
    each = [deployment_needs(p, where=w, region=region) for w, p in deployments]
    cache_secrets = tuple(
        SecretNeed(
            secret=secret,
            purpose=f"{SECRETS_KEY} {upstream}",
            region=region,
            where=f"CDK context /{SECRETS_KEY}/{upstream}",
        )
        for upstream, secret in sorted((pull_through_secrets or {}).items())
    )
    groups: dict[str, int] = {}
    if hyperpod is not None and not hyperpod.imported:
        for group in hyperpod.groups:
            groups[group.instance_type] = groups.get(group.instance_type, 0) + group.count
    addons = tuple(
        (name, version)
        for name, version in sorted(pinned.eks_addons.items())
        if hyperpod is not None or name != INFERENCE_ADDON
    )
    return _gathered(
        each,
        region=region,
        account=environment.account,
        zones=environment.availability_zones,
        extra_secrets=cache_secrets,
        roles=tuple(
            RoleNeed(arn=arn, where="CDK context /admin_role_arns")
            for arn in environment.admin_role_arns
        ),
        hyperpod_groups=tuple(
            HyperPodGroupNeed(
                instance_type=name,
                count=count,
                where=f"{hyperpod.where}:{hyperpod.pointer}" if hyperpod else "",
            )
            for name, count in sorted(groups.items())
        ),
        hyperpod=hyperpod is not None,
        kubernetes=pinned.kubernetes,
        hyperpod_documented=pinned.hyperpod_kubernetes_documented,
        addons=addons,
        bootstrap=True,
    )


def _gathered(
    each: Iterable[DeploymentNeeds],
    *,
    region: str,
    account: str | None,
    extra_secrets: tuple[SecretNeed, ...] = (),
    **rest: object,
) -> AppNeeds:
    """The deployments' needs collected into one :class:`AppNeeds`."""
    listed = list(each)
    return AppNeeds(
        region=region,
        account=account,
        instances=tuple(n.instance for n in listed if n.instance is not None),
        secrets=_merged(extra_secrets + tuple(s for n in listed for s in n.secrets)),
        certificates=_merged(n.certificate for n in listed if n.certificate is not None),
        hosted_zones=_merged(n.hosted_zone for n in listed if n.hosted_zone is not None),
        models=_merged(n.model for n in listed if n.model is not None),
        **rest,  # type: ignore[arg-type]
    )


_Need = TypeVar("_Need", SecretNeed, CertificateNeed, HostedZoneNeed, ModelNeed)


def _merged(needs: Iterable[_Need]) -> tuple[_Need, ...]:
    """Needs equal but for who needs them, once each (in first-seen order), their ``where``
    joined: three deployments of one model are one check."""
    found: dict[_Need, list[str]] = {}
    for need in needs:
        found.setdefault(dataclasses.replace(need, where=""), []).append(need.where)
    return tuple(
        dataclasses.replace(need, where=", ".join(dict.fromkeys(wheres)))
        for need, wheres in found.items()
    )
