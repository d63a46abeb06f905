"""``EngineWorkload``: the rendered engine Deployment as a cdk8s-plus-28 workload, so a team's
chart can point cdk8s-plus constructs at it: ``HorizontalPodAutoscaler(target=...)``,
``NetworkPolicy(selector=...)`` and ``NetworkPolicyRule(peer=...)``.

It implements the jsii interfaces ``IScalable``, ``IPodSelector`` and ``INetworkPolicyPeer``
(and ``IConstruct``'s ``node``) in Python; cdk8s-plus calls back into it over jsii. It is not a
construct: it adds nothing to the tree, so a chart's objects stay exactly the rendered list
until an autoscaler attaches.

Decisions (for reviewers):

* **An autoscaler owns the replica count.** ``markHasAutoscaler`` (called by the HPA's
  constructor) leaves ``spec.replicas`` out of the Deployment, as cdk8s-plus's own Deployment
  does: a ``replicas`` in the applied object would reset the HPA's count on every apply. A spec
  that sets ``replicas`` to anything but its default (1) is refused at synth, as cdk8s-plus
  refuses a Deployment with a fixed ``replicas``: the two would fight.
* **The pods are selected by the Deployment's own selector** (``app.kubernetes.io/name``) in
  the Deployment's namespace, so a NetworkPolicy selecting them lands in that namespace and a
  rule naming them as a peer carries a ``namespaceSelector`` for it.
* **The scaling target's containers are cdk8s-plus ``Container`` objects** made from the
  rendered pod template's ``containers`` (name, image, ports, CPU and memory requests and
  limits; cdk8s-plus-28 has no type for ``nvidia.com/gpu``). They describe the Deployment for
  cdk8s-plus's checks and for ``Metric.container_cpu(container=...)``; they render nothing, and
  are made on first use (a Deployment nobody autoscales costs no extra jsii calls).
* **An HPA's namespace is the team's to set** (cdk8s-plus does not copy it from the target):
  pass ``metadata=cdk8s.ApiObjectMetadata(namespace=workload.namespace)`` or build the HPA in
  a chart of that namespace. The HPA finds its target only in its own namespace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import cached_property
from typing import Any, TypeVar

import cdk8s
import cdk8s_plus_28 as kplus
import constructs
import jsii

from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.serving.spec.deployment import ScalingSpec
from mlcc_constructs.core.support.errors import Problem, fail
from mlcc_constructs.core.support.quantity import parse_quantity
from mlcc_constructs.k8s._api import _RenderedObject
from mlcc_constructs.k8s._entries import entry

ENTRY_ID = "Deployment"

_DEFAULT_REPLICAS = next(f.default for f in dataclasses.fields(ScalingSpec) if f.name == "replicas")

# Memory: the largest binary unit that spells the request exactly (28Gi stays 28 GiB).
_SIZES = (
    (2**50, cdk8s.Size.pebibyte),
    (2**40, cdk8s.Size.tebibytes),
    (2**30, cdk8s.Size.gibibytes),
    (2**20, cdk8s.Size.mebibytes),
)


@jsii.implements(kplus.IScalable, kplus.IPodSelector, kplus.INetworkPolicyPeer)
class EngineWorkload:
    """The engine Deployment of an ``eks`` deployment as a cdk8s-plus scaling target, pod
    selector and network-policy peer (module doc). Get one from
    :attr:`EngineDeployment.workload <mlcc_constructs.k8s.deployment.EngineDeployment>` or
    :attr:`ServingChart.workload <mlcc_constructs.k8s.serving_chart.ServingChart>`, or pass an
    ``EngineDeployment`` itself, which delegates here.

    :param resource: the Deployment object (the construct's ``Resource`` or the chart's
        ``Deployment``).
    :param deployment: the prepared deployment it was rendered from.
    """

    def __init__(self, resource: _RenderedObject, deployment: PreparedDeployment) -> None:
        document = entry(deployment, ENTRY_ID)
        if document is None:  # pragma: no cover - the constructs check the target first
            raise fail(f"{deployment.target.name} renders no Deployment", pointer="/target")
        self._resource = resource
        self._containers: list[dict[str, Any]] = document["spec"]["template"]["spec"]["containers"]
        self._replicas = deployment.spec.scaling.replicas
        self._autoscaled = deployment.spec.scaling.autoscaling is not None
        self._has_autoscaler = False
        self.name: str = document["metadata"]["name"]
        """The Deployment's name (the HPA's ``scaleTargetRef.name``)."""
        self.namespace: str = document["metadata"]["namespace"]
        """The Deployment's namespace: an HPA scaling it must live there too."""
        self.selector: dict[str, str] = dict(document["spec"]["selector"]["matchLabels"])
        """The labels that select its pods (``spec.selector.matchLabels``)."""
        self.port: int = deployment.container.port
        """The engine's port (the Service's target), e.g. for ``NetworkPolicyPort.tcp``."""

    @cached_property
    def containers(self) -> list[kplus.Container]:
        """The pod template's containers as cdk8s-plus ``Container`` descriptions."""
        return [_container(c) for c in self._containers]

    @cached_property
    def engine_container(self) -> kplus.Container:
        """The engine container (for ``Metric.container_cpu(container=...)``)."""
        return next(c for c in self.containers if c.name == ENGINE_CONTAINER)

    @property
    def node(self) -> constructs.Node:
        """The Deployment object's construct node (``IConstruct``): cdk8s-plus names the
        workload by its path and address in messages and policy ids."""
        return self._resource.node

    def with_(self, *mixins: constructs.IMixin) -> constructs.IConstruct:
        """``IConstruct.with``: applies the mixins to the Deployment object; returns this."""
        self._resource.node.with_(*mixins)
        return self

    @property
    def has_autoscaler(self) -> bool:
        """An autoscaler targets this Deployment (``IScalable.hasAutoscaler``)."""
        return self._has_autoscaler

    @has_autoscaler.setter
    def has_autoscaler(self, value: bool) -> None:
        if value:
            self.mark_has_autoscaler()
        elif self._has_autoscaler:
            # The replicas are gone from the Deployment; putting them back behind the HPA's
            # back would make the two fight over the count.
            raise fail(
                "an autoscaler already owns the replica count of this Deployment",
                where=f"Deployment/{self.name}",
                value=value,
                allowed="True",
                fix="remove the HorizontalPodAutoscaler that targets it instead",
            )

    def mark_has_autoscaler(self) -> None:
        """``IScalable.markHasAutoscaler``: the Deployment leaves out ``spec.replicas`` from now
        on (module doc); a non-default ``replicas`` in the spec fails the synth."""
        if self._has_autoscaler:
            return
        self._has_autoscaler = True
        self._resource.omit("spec", "replicas")
        if self._replicas != _DEFAULT_REPLICAS:
            self._resource.node.add_validation(_Refuse(self._replicas_problem()))
        if self._autoscaled:  # the spec's KEDA ScaledObject makes an HPA of its own
            self._resource.node.add_validation(_Refuse(self._keda_problem()))

    def to_scaling_target(self) -> kplus.ScalingTarget:
        """``IScalable.toScalingTarget``: apps/v1 Deployment, its name and containers; no
        ``replicas`` (the HPA owns the count, and a fixed count is reported in our words)."""
        return kplus.ScalingTarget(
            api_version="apps/v1", kind="Deployment", name=self.name, containers=self.containers
        )

    def to_pod_selector_config(self) -> kplus.PodSelectorConfig:
        """``IPodSelector.toPodSelectorConfig``: the Deployment's selector, in its namespace."""
        return kplus.PodSelectorConfig(
            label_selector=kplus.LabelSelector.of(labels=dict(self.selector)),
            namespaces=kplus.NamespaceSelectorConfig(names=[self.namespace]),
        )

    def to_network_policy_peer_config(self) -> kplus.NetworkPolicyPeerConfig:
        """``INetworkPolicyPeer.toNetworkPolicyPeerConfig``: the pods, by selector."""
        return kplus.NetworkPolicyPeerConfig(pod_selector=self.to_pod_selector_config())

    def to_pod_selector(self) -> kplus.IPodSelector:
        """``INetworkPolicyPeer.toPodSelector``: this workload."""
        return self

    def _keda_problem(self) -> Problem:
        return Problem(
            message=f"Deployment {self.namespace}/{self.name} is scaled by its spec's "
            "autoscaling (a KEDA ScaledObject, whose HorizontalPodAutoscaler owns the count): a "
            "second HorizontalPodAutoscaler would fight it",
            where=f"Deployment/{self.name}",
            pointer="/scaling/autoscaling",
            fix="keep one autoscaler: drop the cdk8s-plus HorizontalPodAutoscaler, or "
            "scaling.autoscaling from the DeploymentSpec",
        )

    def _replicas_problem(self) -> Problem:
        return Problem(
            message=f"a HorizontalPodAutoscaler scales Deployment {self.namespace}/{self.name}, "
            "so the spec may not fix its replicas (every apply would reset the HPA's count)",
            where=f"Deployment/{self.name}",
            pointer="/scaling/replicas",
            value=self._replicas,
            allowed=f"{_DEFAULT_REPLICAS} (the default: left out of the Deployment)",
            fix="drop scaling.replicas from the DeploymentSpec and set the HPA's min_replicas "
            "instead",
        )


@jsii.implements(constructs.IValidation)
class _Refuse:
    """Fails the synth with one problem."""

    def __init__(self, problem: Problem) -> None:
        self._problem = problem

    def validate(self) -> list[str]:
        return [str(self._problem)]


def _container(rendered: Mapping[str, Any]) -> kplus.Container:
    """A cdk8s-plus description of a rendered container (module doc)."""
    resources = rendered.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    cpu = _pair(requests.get("cpu"), limits.get("cpu"), _cpu)
    memory = _pair(requests.get("memory"), limits.get("memory"), _size)
    return kplus.Container(
        name=rendered["name"],
        image=rendered["image"],
        command=rendered.get("command"),
        args=rendered.get("args"),
        ports=[
            kplus.ContainerPort(
                number=port["containerPort"],
                name=port.get("name"),
                protocol=kplus.Protocol(port.get("protocol", "TCP")),
            )
            for port in rendered.get("ports", [])
        ],
        resources=kplus.ContainerResources(
            cpu=None if cpu is None else kplus.CpuResources(request=cpu[0], limit=cpu[1]),
            memory=None
            if memory is None
            else kplus.MemoryResources(request=memory[0], limit=memory[1]),
        ),
    )


_T = TypeVar("_T")


def _pair(
    request: str | int | None, limit: str | int | None, convert: Callable[[str | int], _T]
) -> tuple[_T | None, _T | None] | None:
    """A request and limit converted, or ``None`` when neither is set."""
    if request is None and limit is None:
        return None
    return (
        None if request is None else convert(request),
        None if limit is None else convert(limit),
    )


def _cpu(quantity: str | int) -> kplus.Cpu:
    cores = parse_quantity(quantity)
    if cores.denominator == 1:
        return kplus.Cpu.units(int(cores))
    return kplus.Cpu.millis(_whole(cores * 1000))


def _size(quantity: str | int) -> cdk8s.Size:
    size = parse_quantity(quantity)
    for unit, make in _SIZES:
        if size % unit == 0:
            return make(int(size / unit))
    return cdk8s.Size.kibibytes(float(size / 1024))


def _whole(amount: Fraction) -> int:
    return -(-amount.numerator // amount.denominator)  # ceiling: never under-request
