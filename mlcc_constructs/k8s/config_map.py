"""``EngineConfigMap``: the active engine's env (Tier 1, then Tier 2) as a ConfigMap."""

from __future__ import annotations

from dataclasses import dataclass

import cdk8s
import constructs

from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.migration import PropsMigration, replaced_keywords
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._entries import entry, require_kind

ENTRY_ID = "ConfigMap"


@dataclass(frozen=True, kw_only=True)
class EngineConfigMapProps:
    """Props of :class:`EngineConfigMap`."""

    deployment: PreparedDeployment
    """The prepared deployment (``mlcc_constructs.core.serving.prepared.prepare``); its
    target must render a ConfigMap and its ``config_delivery`` must be ``env``."""

    def __post_init__(self) -> None:
        check_fields(self)


class EngineConfigMap(constructs.Construct):
    """ConfigMap ``<name>-config`` holding exactly the engine env the resolver computed
    (child ``Resource``)."""

    @replaced_keywords(
        PropsMigration(construct="EngineConfigMap", props="EngineConfigMapProps", prepared=True)
    )
    def __init__(
        self, scope: constructs.Construct, id: str, *, props: EngineConfigMapProps
    ) -> None:
        super().__init__(scope, id)
        deployment = props.deployment
        require_kind(deployment, "ConfigMap", construct="EngineConfigMap")
        document = entry(deployment, ENTRY_ID)
        if document is None:
            raise fail(
                "config delivery 'args' puts the engine config in the container's argv: "
                "there is no ConfigMap",
                pointer="/engine/config_delivery",
                value=deployment.spec.engine.config_delivery,
                fix="drop the EngineConfigMap, or use engine.config_delivery='env'",
            )
        self.props = props
        """The props this construct was made from."""
        self.name: str = deployment.names.config_map
        """The ConfigMap's name."""
        self.data: dict[str, str] = dict(document["data"])
        """The env it holds (Tier 1, then Tier 2)."""
        self.resource: cdk8s.ApiObject = api_object(self, "Resource", document)
        """The ConfigMap object."""
