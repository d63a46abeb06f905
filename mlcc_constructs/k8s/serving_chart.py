"""``ServingChart``: one deployment spec → the objects of its target, in one cdk8s chart."""

from __future__ import annotations

import cdk8s
import constructs

from mlcc_constructs.core.manifests import EngineRegistry
from mlcc_constructs.core.render import TARGETS, RenderContext, prepare
from mlcc_constructs.core.spec import DeploymentSpec
from mlcc_constructs.k8s.deployment import EngineDeployment
from mlcc_constructs.k8s.inference_endpoint import InferenceEndpointConfig


class ServingChart(cdk8s.Chart):
    """A chart serving one model: ``EngineDeployment`` (eks) or ``InferenceEndpointConfig``
    (hyperpod-eks). Resource names are explicit, never construct-path hashes.

    :param spec: the deployment; ``spec.target`` picks the objects.
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
        super().__init__(scope, id, disable_resource_name_hashes=True)
        self.serving: EngineDeployment | InferenceEndpointConfig
        """The construct that holds the target's objects (child id ``Serving``)."""
        if spec.target not in TARGETS:
            prepare(spec, context=context, registry=registry)  # raises: names the targets
        if spec.target == "hyperpod-eks":
            self.serving = InferenceEndpointConfig(
                self, "Serving", spec=spec, context=context, registry=registry
            )
        else:
            self.serving = EngineDeployment(
                self, "Serving", spec=spec, context=context, registry=registry
            )
        self.warnings: tuple[str, ...] = self.serving.warnings
        """Resolver and render notes."""
