"""``InferenceEndpointConfig`` (target ``hyperpod-eks``): the HyperPod inference operator's CR."""

from __future__ import annotations

import cdk8s
import constructs

from mlcc_constructs.core import render
from mlcc_constructs.core.manifests import EngineRegistry
from mlcc_constructs.core.render import RenderContext
from mlcc_constructs.core.spec import DeploymentSpec
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._props import inputs_for


class InferenceEndpointConfig(constructs.Construct):
    """One ``inference.sagemaker.aws.amazon.com/v1`` ``InferenceEndpointConfig``.

    ``prefetchEnabled`` is false for LoRA with an S3 model (adapters written later to the model
    prefix must stay visible); the TLS output URI is on the ``tls`` bucket of
    ``stacks/buckets.json`` for the context's account, region and profile.

    :param spec: the deployment (target ``hyperpod-eks``).
    :param context: account/region/profile of the TLS bucket. Default: none (account and
        region inferred from a model bucket named by ``stacks/buckets.json``).
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
        inputs = inputs_for("InferenceEndpointConfig", "hyperpod-eks", spec, context, registry)
        self.resource: cdk8s.ApiObject = api_object(
            self, "Resource", render.inference_endpoint_config(inputs)
        )
        """The InferenceEndpointConfig object."""
        self.name: str = inputs.names.base
        """Its name (also ``modelName`` and ``endpointName``)."""
        self.warnings: tuple[str, ...] = inputs.warnings
        """Resolver and render notes."""
