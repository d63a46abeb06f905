"""``EngineDeployment``: the engine's pods on a target that renders a Deployment (``eks``):
ServiceAccount, ConfigMaps, the static Mountpoint S3 CSI PersistentVolume and claim for an
``s3://`` model, the CacheBackend's client config, the Deployment and its Service."""

from __future__ import annotations

from dataclasses import dataclass

import cdk8s
import constructs

from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.prepare.deployment import PreparedDeployment
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._entries import require_kind
from mlcc_constructs.k8s.config_map import (
    ENTRY_ID as CONFIG_MAP_ENTRY,
    EngineConfigMap,
    EngineConfigMapProps,
)

# The rendered Deployment is this construct's primary child.
_PRIMARY = {"Deployment": "Resource"}


@dataclass(frozen=True, kw_only=True)
class EngineDeploymentProps:
    """Props of :class:`EngineDeployment`.

    Fields:

    ``deployment``: The prepared deployment; its target must render a Deployment (``eks``).
    ``config_map``: The ConfigMap the pods read (``env`` delivery), made from the same deployment.
        Default: a new child ``ConfigMap``.
    """

    deployment: PreparedDeployment
    config_map: EngineConfigMap | None = None

    def __post_init__(self) -> None:
        check_fields(self)


class EngineDeployment(constructs.Construct):
    """Every object of the deployment (``core/serving/renderers/eks.py``), the ConfigMap possibly
    owned elsewhere. The Deployment is the child ``Resource``; the others keep their rendered
    ids (``ServiceAccount``, ``ConfigMap``, ``WrapperConfigMap``, ``ModelVolume``,
    ``ModelClaim``, ``CacheConfigMap``, ``Service``).

    The engine container is named ``"engine"`` (:attr:`container_name`), a stable contract for
    functions that post-process the Deployment.
    """

    container_name = ENGINE_CONTAINER

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
                fix="drop config_map, or use config_delivery='env'",
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
        for rendered in deployment.objects:
            if rendered.id == CONFIG_MAP_ENTRY:
                if self.config_map is None:
                    self.config_map = EngineConfigMap(
                        self, CONFIG_MAP_ENTRY, props=EngineConfigMapProps(deployment=deployment)
                    )
                continue
            child_id = _PRIMARY.get(rendered.id, rendered.id)
            self.objects[rendered.id] = api_object(self, child_id, rendered.object)
        self.resource: cdk8s.ApiObject = self.objects["Deployment"]
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
        self.warnings: tuple[str, ...] = deployment.warnings
        """Resolver and render notes (omitted capabilities, unchecked versions)."""
