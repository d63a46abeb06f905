"""``EngineConfigMap``: the active engine's env (Tier 1, then Tier 2) as a ConfigMap."""

from __future__ import annotations

import cdk8s
import constructs

from mlcc_constructs.core import render
from mlcc_constructs.core.errors import fail
from mlcc_constructs.core.manifests import EngineRegistry
from mlcc_constructs.core.render import RenderContext
from mlcc_constructs.core.spec import DeploymentSpec
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._props import inputs_for


class EngineConfigMap(constructs.Construct):
    """ConfigMap ``<name>-config`` holding exactly the engine env the resolver computed.

    :param spec: the deployment (target ``eks``, ``config_delivery="env"``).
    :param context: render context. Default: none (account/region inferred from the bucket).
    :param registry: engine registry (plugins). Default: the built-in engines.
    """

    def __init__(
        self,
        scope: constructs.Construct,
        id: str,
        *,
        spec: DeploymentSpec,
        context: RenderContext | None = None,
        registry: EngineRegistry | None = None,
    ) -> None:
        super().__init__(scope, id)
        inputs = inputs_for("EngineConfigMap", "eks", spec, context, registry)
        document = render.config_map(inputs)
        if document is None:
            raise fail(
                "config delivery 'args' puts the engine config in the container's argv: "
                "there is no ConfigMap",
                pointer="config_delivery",
                value=spec.config_delivery,
                fix="drop the EngineConfigMap, or use config_delivery='env'",
            )
        self.name: str = inputs.names.config_map
        """The ConfigMap's name."""
        self.data: dict[str, str] = dict(document["data"])
        """The env it holds (Tier 1, then Tier 2)."""
        self.resource: cdk8s.ApiObject = api_object(self, "Resource", document)
        """The ConfigMap object."""
