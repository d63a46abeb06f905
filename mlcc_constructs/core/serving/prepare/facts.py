"""What the kinds render a deployment from: :class:`DeploymentFacts`, computed once by
:func:`~mlcc_constructs.core.serving.prepared.prepare` (which adds the rendered
objects to them: :class:`~mlcc_constructs.core.serving.prepared.PreparedDeployment`).
The kind modules only lay these facts out; they decide nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.serving.prepare.cold_start import ColdStart
from mlcc_constructs.core.serving.prepare.container import Container
from mlcc_constructs.core.serving.prepare.names import Names
from mlcc_constructs.core.serving.prepare.ready_timeout import ReadyTimeout
from mlcc_constructs.core.serving.prepare.secrets import SecretsPlan
from mlcc_constructs.core.serving.resolve.resolution import Resolution
from mlcc_constructs.core.serving.spec.autoscaling import ScalingMetric, scaling_metric
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, ModelSource

if TYPE_CHECKING:
    from mlcc_constructs.core.cache.admission import Admission


@dataclass(frozen=True, kw_only=True)
class DeploymentFacts:
    """Every fact a deployment's objects are rendered from."""

    spec: DeploymentSpec
    """The spec, with ``engine_version`` filled in from its image (the tag, else the pinned
    image's) when it was unset."""
    target: TargetDescriptor
    """The target's descriptor."""
    resolution: Resolution
    """The engine config (Tier 1, Tier 2, plain env) and the parsed model source."""
    names: Names
    """The objects' names."""
    container: Container
    """The engine container, whatever object carries it."""
    pod_template: Mapping[str, Any] | None
    """The pod template, where the target's pods are the library's own (``pod_volumes``): the engine
    container as Kubernetes runs it, its volumes, and the CacheBackend's wiring (flags, env, native
    sidecar, shared memory, client config) already applied. ``None`` where the platform makes the
    pods (an IEC's operator)."""
    model_region: str | None
    """The model bucket's region (``s3://`` models)."""
    tls_uri: str | None
    """Where the IEC writes its TLS certificate (targets with ``tls_bucket``)."""
    load_balancer_cidrs: tuple[str, ...]
    """The CIDRs of the subnets the endpoint's load balancers live in (the render context's for its
    scheme); empty for scheme ``none``."""
    secrets: SecretsPlan
    """Where the secrets come from: Kubernetes Secrets as named, Secrets Manager values through the
    deployment's SecretProviderClass."""
    cache: Admission | None
    """The admitted CacheBackend, or ``None``."""
    warnings: tuple[str, ...]
    """Resolver and render notes for the user."""
    ready_timeout: ReadyTimeout
    """How long a deploy waits for the workload to be ready (the spec's ``ready_timeout_seconds``,
    else the formula of :mod:`~mlcc_constructs.core.serving.prepare.ready_timeout`); also the
    workload's own deadline. It carries the deployment's cold start (:attr:`cold_start`)."""
    min_replicas: int
    """The fewest pods the deployment runs
    (:func:`~mlcc_constructs.core.serving.prepare.disruption.min_replicas`): what its
    PodDisruptionBudget and the single-replica warning follow."""
    instance_types: tuple[InstanceType, ...]
    """Every instance type the pods may run on, preferred first: the spec's ``instance_type``
    (``resolution.instance``), then its ``instance_types`` fallbacks."""
    prometheus_query_url: str | None = None
    """Where an autoscaler reads the engine's metrics (the render context's Amazon Managed Service
    for Prometheus query endpoint). Default: none."""
    cluster_region: str | None = None
    """The cluster's AWS region (the render context's, else the spec's): where the autoscaler's AWS
    calls go. Default: none (unknown)."""
    metrics_scraper_cidrs: tuple[str, ...] = ()
    """Where the target's Prometheus scraper reaches the engine port from, for an engine with
    metrics on a target that scrapes them (the render context's, else its internal load balancer
    subnets). Default: none."""
    service_monitor_namespace: str | None = None
    """The namespace of the Prometheus Operator's Prometheus that scrapes the engine through a
    ServiceMonitor (the render context's ``prometheus_operator_namespace``, for an engine with
    metrics on a target that scrapes them). Default: none (no ServiceMonitor)."""

    @property
    def cold_start(self) -> ColdStart:
        """The deployment's cold start, computed once
        (:mod:`~mlcc_constructs.core.serving.prepare.cold_start`): the startup probe's
        allowance, the do-not-disrupt window and the ready timeout all come from it."""
        return self.ready_timeout.cold_start

    @property
    def source(self) -> ModelSource:
        """The parsed model source."""
        return self.resolution.source

    @property
    def served_name(self) -> str:
        """The model clients send (the API's ``model``, what the engine labels its series
        with): ``served_model_name``, else the deployment's name."""
        return self.spec.served_model_name or self.names.base

    @property
    def max_replicas(self) -> int:
        """The most replicas the deployment may run (each one instance's GPUs):
        ``autoscaling.max_replicas``, else the fixed ``replicas``."""
        autoscaling = self.spec.scaling.autoscaling
        return autoscaling.max_replicas if autoscaling is not None else self.spec.scaling.replicas

    @property
    def scales_to_zero(self) -> bool:
        """The deployment runs no replica while idle (``autoscaling.scale_to_zero``)."""
        return (
            self.spec.scaling.autoscaling is not None
            and self.spec.scaling.autoscaling.scale_to_zero
        )

    @property
    def scaling_metric(self) -> ScalingMetric | None:
        """The metric an autoscaled deployment scales on (``None``: fixed replicas)."""
        metrics = self.resolution.manifest.metrics
        if self.spec.scaling.autoscaling is None or metrics is None:
            return None
        return scaling_metric(self.spec.scaling.autoscaling, metrics)

    @property
    def engine_env(self) -> dict[str, str]:
        """Tier 1 then Tier 2 (what ``env`` delivery carries)."""
        return dict(self.resolution.tier1 + self.resolution.tier2)


def _admission() -> type[Admission]:
    from mlcc_constructs.core.cache.admission import Admission

    return Admission


# The CacheBackend model loads only for a deployment that has one (start-up of `mlcc render`):
# the annotation resolves on first use, so typing.get_type_hints still sees the real type.
DeploymentFacts.__annotations__["cache"] = "_admission() | None"
