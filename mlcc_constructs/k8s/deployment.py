"""``EngineDeployment`` (target ``eks``): Deployment, Service, ServiceAccount and, for an
``s3://`` model, the static Mountpoint S3 CSI PersistentVolume and claim."""

from __future__ import annotations

import cdk8s
import constructs

from mlcc_constructs.core import render
from mlcc_constructs.core.errors import fail
from mlcc_constructs.core.manifests import EngineRegistry
from mlcc_constructs.core.render import ENGINE_CONTAINER, RenderContext
from mlcc_constructs.core.spec import DeploymentSpec
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._props import inputs_for
from mlcc_constructs.k8s.config_map import EngineConfigMap


class EngineDeployment(constructs.Construct):
    """The engine's pods on plain EKS (rules: ``mlcc_constructs.core.render``).

    The engine container is named ``"engine"`` (:attr:`container_name`), a stable contract for
    functions that post-process the Deployment. In ``env`` delivery the pods read
    ``config_map``; when none is given, one is created as the child ``ConfigMap``.

    :param spec: the deployment (target ``eks``).
    :param config_map: the ConfigMap to read (``env`` delivery). Default: a new child one.
    :param context: render context. Default: none (account/region inferred from the bucket).
    :param registry: engine registry (plugins). Default: the built-in engines.
    """

    container_name = ENGINE_CONTAINER

    def __init__(
        self,
        scope: constructs.Construct,
        id: str,
        *,
        spec: DeploymentSpec,
        config_map: EngineConfigMap | None = None,
        context: RenderContext | None = None,
        registry: EngineRegistry | None = None,
    ) -> None:
        super().__init__(scope, id)
        inputs = inputs_for("EngineDeployment", "eks", spec, context, registry)
        names = inputs.names
        self.service_account: cdk8s.ApiObject = api_object(
            self, "ServiceAccount", render.service_account(inputs)
        )
        """The pods' ServiceAccount (IRSA role annotation when given)."""
        self.config_map: EngineConfigMap | None = None
        """The ConfigMap the pods read (``None`` in ``args`` delivery)."""
        if spec.config_delivery == "env":
            if config_map is None:
                config_map = EngineConfigMap(
                    self, "ConfigMap", spec=spec, context=context, registry=registry
                )
            elif config_map.name != names.config_map:
                raise fail(
                    "the ConfigMap belongs to another deployment",
                    pointer="config_map",
                    value=config_map.name,
                    allowed=names.config_map,
                    fix="pass the EngineConfigMap made from the same spec",
                )
            self.config_map = config_map
        elif config_map is not None:
            raise fail(
                "config delivery 'args' reads no ConfigMap",
                pointer="config_map",
                value=config_map.name,
                fix="drop config_map, or use config_delivery='env'",
            )
        self.wrapper_config_map: cdk8s.ApiObject | None = None
        """The wrapper script and engine manifest the pods mount (``env`` delivery, Model-A)."""
        wrapper = render.wrapper_config_map(inputs)
        if wrapper is not None:
            self.wrapper_config_map = api_object(self, "WrapperConfigMap", wrapper)
        self.model_volume: cdk8s.ApiObject | None = None
        """The static S3 CSI PersistentVolume (``s3://`` models only)."""
        self.model_claim: cdk8s.ApiObject | None = None
        """Its PersistentVolumeClaim, mounted read-only at /opt/ml/model."""
        volume = render.model_volume(inputs)
        if volume is not None:
            self.model_volume = api_object(self, "ModelVolume", volume[0])
            self.model_claim = api_object(self, "ModelClaim", volume[1])
        self.resource: cdk8s.ApiObject = api_object(self, "Resource", render.deployment(inputs))
        """The Deployment."""
        self.service: cdk8s.ApiObject = api_object(self, "Service", render.service(inputs))
        """The ClusterIP Service on the engine's port."""
        self.name: str = names.base
        """Name of the Deployment, Service and ServiceAccount."""
        self.warnings: tuple[str, ...] = inputs.warnings
        """Resolver and render notes (omitted capabilities, unchecked versions)."""
