"""``ServingChart``: one deployment spec → every object of its target, in one cdk8s chart."""

from __future__ import annotations

from dataclasses import dataclass

import cdk8s
import constructs

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.prepare.deployment import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import api_object


@dataclass(frozen=True, kw_only=True)
class ServingChartProps:
    """Props of :class:`ServingChart`.

    Fields:

    ``spec``: The deployment; ``spec.target`` picks the objects.
    ``context``: Account, region and profile (IEC TLS bucket, region fallback). Default: none
        (inferred from a model bucket named by ``stacks/buckets.json``).
    ``registry``: Engine registry (plugins). Default: the built-in engines.
    """

    spec: DeploymentSpec
    context: RenderContext | None = None
    registry: EngineRegistry | None = None

    def __post_init__(self) -> None:
        check_fields(self)


class ServingChart(cdk8s.Chart):
    """A chart serving one model: exactly the objects ``mlcc render`` prints for the spec, in
    the same order, each a child named by its rendered id (``Deployment``, ``Service``,
    ``InferenceEndpointConfig``...). Resource names are explicit, never construct-path hashes.
    """

    def __init__(self, scope: constructs.Construct, id: str, *, props: ServingChartProps) -> None:
        super().__init__(scope, id, disable_resource_name_hashes=True)
        self.props = props
        """The props this chart was made from."""
        self.deployment: PreparedDeployment = prepare(
            props.spec, context=props.context, registry=props.registry
        )
        """The prepared deployment (every fact computed once)."""
        self.objects: dict[str, cdk8s.ApiObject] = {
            rendered.id: api_object(self, rendered.id, rendered.object)
            for rendered in self.deployment.objects
        }
        """Every object of the chart, by rendered id."""
        self.warnings: tuple[str, ...] = self.deployment.warnings
        """Resolver and render notes."""
