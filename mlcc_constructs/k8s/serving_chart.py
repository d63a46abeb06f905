"""``ServingChart``: one deployment spec → every object of its target, in one cdk8s chart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import cdk8s
import constructs

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.migration import PropsMigration, replaced_keywords
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import _RenderedObject, api_object
from mlcc_constructs.k8s._entries import kind_targets

if TYPE_CHECKING:  # imported on first use: a chart nobody autoscales never loads cdk8s-plus
    from mlcc_constructs.k8s.workload import EngineWorkload

_DEPLOYMENT = "Deployment"  # the rendered id (and kind) of the pods' workload on eks


@dataclass(frozen=True, kw_only=True)
class ServingChartProps:
    """Props of :class:`ServingChart`."""

    spec: DeploymentSpec
    """The deployment; ``spec.target`` picks the objects."""
    context: RenderContext | None = None
    """Account, region and profile (IEC TLS bucket, region fallback). Default: none (inferred from a
    model bucket named by ``stacks/buckets.json``)."""
    registry: EngineRegistry | None = None
    """Engine registry (plugins). Default: the built-in engines."""

    def __post_init__(self) -> None:
        check_fields(self)


class ServingChart(cdk8s.Chart):
    """A chart serving one model: exactly the objects ``mlcc render`` prints for the spec, in
    the same order, each a child named by its rendered id (``Deployment``, ``Service``,
    ``InferenceEndpointConfig``...). Resource names are explicit, never construct-path hashes.

    On ``eks``, :attr:`workload` is the Deployment as a cdk8s-plus-28 workload, for a team's
    ``HorizontalPodAutoscaler`` (``target=``) and ``NetworkPolicy`` (``selector=``, ``peer=``).
    """

    @replaced_keywords(
        PropsMigration(
            construct="ServingChart",
            props="ServingChartProps",
            required=("spec",),
            optional=("context", "registry"),
        )
    )
    def __init__(self, scope: constructs.Construct, id: str, *, props: ServingChartProps) -> None:
        root = scope.node.root
        if not isinstance(root, cdk8s.App):
            # Only a cdk8s App synthesizes charts: under a CDK Stack the chart is dropped.
            raise fail(
                f"ServingChart {id!r} must be in a cdk8s App, not under "
                f"{type(root).__name__} {scope.node.path or '(root)'!r}: a CDK app never writes "
                "cdk8s charts, so its manifests would be dropped",
                where="ServingChart",
                pointer="/scope",
                allowed="a cdk8s.App (or a construct under one)",
                fix="create it in cdk8s.App(); to apply manifests from a CDK stack, pass "
                "the chart's objects to an EKS manifest (e.g. cluster.add_cdk8s_chart)",
            )
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
        self._workload: EngineWorkload | None = None

    @property
    def workload(self) -> EngineWorkload:
        """The chart's Deployment as a cdk8s-plus-28 scaling target, pod selector and
        network-policy peer (``k8s/workload.py``); made on first use, the same one after.

        Attaching a ``HorizontalPodAutoscaler`` leaves ``spec.replicas`` out of the Deployment;
        until then the chart's objects are exactly the rendered list.

        :raises MlccError: the target renders no Deployment (``hyperpod-eks``: the inference
            operator owns the pods).
        """
        if self._workload is None:
            target = self.deployment.target
            if _DEPLOYMENT not in target.kinds:
                serving = kind_targets(_DEPLOYMENT)
                raise fail(
                    "ServingChart.workload is the Deployment a cdk8s-plus HorizontalPodAutoscaler "
                    "or NetworkPolicy targets, and this target renders none (it renders "
                    f"{', '.join(sorted(target.kinds))})",
                    where=self.node.path,
                    pointer="/target",
                    value=target.name,
                    allowed=", ".join(serving),
                    fix=f"use a spec with target {serving[0]!r} to autoscale or select pods with "
                    f"cdk8s-plus; on {target.name} the spec's replicas set the count",
                )
            from mlcc_constructs.k8s.workload import EngineWorkload

            resource = self.objects[_DEPLOYMENT]
            assert isinstance(resource, _RenderedObject)
            self._workload = EngineWorkload(resource, self.deployment)
        return self._workload
