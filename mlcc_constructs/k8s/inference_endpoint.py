"""``InferenceEndpointConfig``: the HyperPod inference operator's CR of a deployment."""

from __future__ import annotations

from dataclasses import dataclass

import cdk8s
import constructs

from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.migration import PropsMigration, replaced_keywords
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import api_object
from mlcc_constructs.k8s._entries import entry, require_kind

KIND = "InferenceEndpointConfig"


@dataclass(frozen=True, kw_only=True)
class InferenceEndpointConfigProps:
    """Props of :class:`InferenceEndpointConfig`."""

    deployment: PreparedDeployment
    """The prepared deployment; its target must render an InferenceEndpointConfig
    (``hyperpod-eks``)."""

    def __post_init__(self) -> None:
        check_fields(self)


class InferenceEndpointConfig(constructs.Construct):
    """One ``inference.sagemaker.aws.amazon.com/v1`` ``InferenceEndpointConfig`` (child
    ``Resource``).

    ``prefetchEnabled`` is false for LoRA with an S3 model (adapters written later to the model
    prefix must stay visible); the TLS output URI is on the ``tls`` bucket of
    ``stacks/buckets.json`` for the deployment's account, region and profile.
    """

    @replaced_keywords(
        PropsMigration(
            construct="InferenceEndpointConfig", props="InferenceEndpointConfigProps", prepared=True
        )
    )
    def __init__(
        self, scope: constructs.Construct, id: str, *, props: InferenceEndpointConfigProps
    ) -> None:
        super().__init__(scope, id)
        deployment = props.deployment
        require_kind(deployment, KIND, construct="InferenceEndpointConfig")
        document = entry(deployment, KIND)
        assert document is not None  # the target's kinds include it
        self.props = props
        """The props this construct was made from."""
        self.resource: cdk8s.ApiObject = api_object(self, "Resource", document)
        """The InferenceEndpointConfig object."""
        self.name: str = deployment.names.base
        """Its name (also ``modelName``; ``endpointName`` is unique per namespace:
        ``core.serving.kinds.inference_endpoint_config.endpoint_name``)."""
        self.warnings: tuple[str, ...] = deployment.warnings
        """Resolver and render notes."""
