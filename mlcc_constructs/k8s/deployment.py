"""``EngineDeployment``: the engine's pods on a target that renders a Deployment (``eks``):
ServiceAccount, ConfigMaps, the static Mountpoint S3 CSI PersistentVolume and claim for an
``s3://`` model, the CacheBackend's client config, the Deployment and its Service.

The construct is also a cdk8s-plus-28 workload (``IScalable``, ``IPodSelector``,
``INetworkPolicyPeer``): a team's ``HorizontalPodAutoscaler`` and ``NetworkPolicy`` take it as
their target, selector or peer (``k8s/workload.py``: what each member returns and why).
"""

from __future__ import annotations

from dataclasses import dataclass

import cdk8s
import cdk8s_plus_28 as kplus
import constructs
import jsii

from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.migration import PropsMigration, replaced_keywords
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._entries import require_kind
from mlcc_constructs.k8s.config_map import (
    ENTRY_ID as CONFIG_MAP_ENTRY,
    EngineConfigMap,
    EngineConfigMapProps,
)
from mlcc_constructs.k8s.workload import ENTRY_ID as DEPLOYMENT_ENTRY, EngineWorkload

# The rendered Deployment is this construct's primary child.
_PRIMARY = {DEPLOYMENT_ENTRY: "Resource"}


@dataclass(frozen=True, kw_only=True)
class EngineDeploymentProps:
    """Props of :class:`EngineDeployment`."""

    deployment: PreparedDeployment
    """The prepared deployment; its target must render a Deployment (``eks``)."""
    config_map: EngineConfigMap | None = None
    """The ConfigMap the pods read (``env`` delivery), made from the same deployment. Default: a new
    child ``ConfigMap``."""

    def __post_init__(self) -> None:
        check_fields(self)


@jsii.implements(kplus.IScalable, kplus.IPodSelector, kplus.INetworkPolicyPeer)
class EngineDeployment(constructs.Construct):
    """Every object of the deployment (the kinds of target ``eks``), the ConfigMap possibly
    owned elsewhere. The Deployment is the child ``Resource``; the others keep their rendered
    ids (``ServiceAccount``, ``ConfigMap``, ``WrapperConfigMap``, ``ModelVolume``,
    ``ModelClaim``, ``CacheConfigMap``, ``Service``).

    The engine container is named ``"engine"`` (:attr:`container_name`), a stable contract for
    functions that post-process the Deployment.

    cdk8s-plus-28 constructs take it as a workload (members delegate to :attr:`workload`)::

        kplus.HorizontalPodAutoscaler(chart, "Hpa", target=serving, max_replicas=4,
                                      metadata=cdk8s.ApiObjectMetadata(namespace=serving.namespace))
        kplus.NetworkPolicy(chart, "Np", selector=serving, ingress=...)

    An attached autoscaler removes ``spec.replicas`` from the Deployment (it owns the count).
    """

    container_name = ENGINE_CONTAINER

    @replaced_keywords(
        PropsMigration(
            construct="EngineDeployment",
            props="EngineDeploymentProps",
            prepared=True,
            optional=("config_map",),
        )
    )
    def __init__(
        self, scope: constructs.Construct, id: str, *, props: EngineDeploymentProps
    ) -> None:
        super().__init__(scope, id)
        deployment = props.deployment
        require_kind(deployment, "Deployment", construct="EngineDeployment")
        names = deployment.names
        given = props.config_map
        if given is not None and not deployment.container.delivers_env:
            raise fail(
                "config delivery 'args' reads no ConfigMap",
                pointer="/config_map",
                value=given.name,
                fix="drop config_map, or use engine.config_delivery='env'",
            )
        if given is not None and given.name != names.config_map:
            raise fail(
                "the ConfigMap belongs to another deployment",
                pointer="/config_map",
                value=given.name,
                allowed=names.config_map,
                fix="pass the EngineConfigMap made from the same deployment",
            )
        self.props = props
        """The props this construct was made from."""
        self.config_map: EngineConfigMap | None = given
        """The ConfigMap the pods read (``None`` in ``args`` delivery)."""
        self.objects: dict[str, cdk8s.ApiObject] = {}
        """Every object this construct emits, by rendered id (``Deployment``, ``Service``...)."""
        workload: EngineWorkload | None = None
        for rendered in deployment.objects:
            if rendered.id == CONFIG_MAP_ENTRY:
                if self.config_map is None:
                    self.config_map = EngineConfigMap(
                        self, CONFIG_MAP_ENTRY, props=EngineConfigMapProps(deployment=deployment)
                    )
                continue
            child_id = _PRIMARY.get(rendered.id, rendered.id)
            made = api_object(self, child_id, rendered.object)
            self.objects[rendered.id] = made
            if rendered.id == DEPLOYMENT_ENTRY:
                workload = EngineWorkload(made, deployment)
        assert workload is not None  # require_kind: the target renders a Deployment
        self.workload: EngineWorkload = workload
        """The Deployment as a cdk8s-plus workload (this construct's interface members delegate
        to it): its ``selector``, ``containers`` and ``engine_container``."""
        self.resource: cdk8s.ApiObject = self.objects[DEPLOYMENT_ENTRY]
        """The Deployment."""
        self.service: cdk8s.ApiObject = self.objects["Service"]
        """The ClusterIP Service on the engine's port."""
        self.service_account: cdk8s.ApiObject = self.objects["ServiceAccount"]
        """The pods' ServiceAccount (IRSA role annotation when given)."""
        self.wrapper_config_map: cdk8s.ApiObject | None = self.objects.get("WrapperConfigMap")
        """The wrapper script and engine manifest the pods mount (``env`` delivery, Model-A)."""
        self.model_volume: cdk8s.ApiObject | None = self.objects.get("ModelVolume")
        """The static S3 CSI PersistentVolume (``s3://`` models only)."""
        self.model_claim: cdk8s.ApiObject | None = self.objects.get("ModelClaim")
        """Its PersistentVolumeClaim, mounted read-only at the target's model mount path."""
        self.name: str = names.base
        """Name of the Deployment, Service and ServiceAccount."""
        self.namespace: str = names.namespace
        """Their namespace (an autoscaler of the Deployment must be created there too)."""
        self.warnings: tuple[str, ...] = deployment.warnings
        """Resolver and render notes (omitted capabilities, unchecked versions)."""

    # -- cdk8s-plus-28 interfaces (k8s/workload.py), delegated to the Deployment's workload --

    @property
    def has_autoscaler(self) -> bool:
        """``IScalable.hasAutoscaler``: an autoscaler targets the Deployment."""
        return self.workload.has_autoscaler

    @has_autoscaler.setter
    def has_autoscaler(self, value: bool) -> None:
        self.workload.has_autoscaler = value

    def mark_has_autoscaler(self) -> None:
        """``IScalable.markHasAutoscaler``: the Deployment leaves out ``spec.replicas``."""
        self.workload.mark_has_autoscaler()

    def to_scaling_target(self) -> kplus.ScalingTarget:
        """``IScalable.toScalingTarget``: apps/v1 Deployment, its name and containers."""
        return self.workload.to_scaling_target()

    def to_pod_selector_config(self) -> kplus.PodSelectorConfig:
        """``IPodSelector.toPodSelectorConfig``: the Deployment's selector, in its namespace."""
        return self.workload.to_pod_selector_config()

    def to_network_policy_peer_config(self) -> kplus.NetworkPolicyPeerConfig:
        """``INetworkPolicyPeer.toNetworkPolicyPeerConfig``: the pods, by selector."""
        return self.workload.to_network_policy_peer_config()

    def to_pod_selector(self) -> kplus.IPodSelector:
        """``INetworkPolicyPeer.toPodSelector``: this construct."""
        return self
