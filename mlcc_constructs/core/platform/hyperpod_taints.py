"""Kubernetes taints and labels of HyperPod instance groups, and the tolerations pods get.

**Taints.** An instance group's ``KubernetesConfig.Taints`` (CloudFormation
``AWS::SageMaker::Cluster``; the API's ``ClusterKubernetesTaint``,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterKubernetesTaint.html):
``Key`` 1-317 characters of a qualified name (:data:`_QUALIFIED_NAME`), ``Value`` optional,
1-63 characters of a label value (:data:`_LABEL_VALUE`), ``Effect`` one of :data:`EFFECTS`;
at most :data:`MAX_ENTRIES` per group (``ClusterKubernetesConfig``,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterKubernetesConfig.html).
HyperPod keeps them on every node of the group, through replacement and scaling
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-custom-labels-and-taints.html,
whose first use case is keeping system pods off GPU instances).

**The default.** A GPU instance type (the catalog's ``gpus`` above 0) gets :data:`GPU_TAINT`,
``nvidia.com/gpu:NoSchedule``, the taint the app's Auto Mode GPU pool carries too
(:mod:`mlcc_constructs.core.platform.gpu_capacity`). A pod lands on such a node only if it
tolerates the taint: cert-manager, KEDA, the load balancer controller and the operator's
controller do not, so they stay on the EKS cluster's Auto Mode nodes.

**Who tolerates it.** The v1 ``InferenceEndpointConfig`` has no tolerations field, so an IEC
worker tolerates a taint only through the ``ExtendedResourceToleration`` admission plugin, which
EKS enables on its platform versions (https://docs.aws.amazon.com/eks/latest/userguide/
platform-versions.html lists it among the enabled admission controllers; EKS turned it on with
Kubernetes 1.19, aws/containers-roadmap issue 739): a pod requesting an extended resource gets the
toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}`` for each one
(kubernetes/kubernetes pull request 55839, :func:`extended_resource_tolerations`). A worker asking
for ``nvidia.com/gpu`` therefore tolerates :data:`GPU_TAINT` and nothing else: a taint of another
key, or ``NoExecute``, on a group an IEC must run on leaves it Pending (the check:
:mod:`mlcc_constructs.core.platform.hyperpod_tolerations`). ``PreferNoSchedule`` only steers the
scheduler and never blocks a pod (:data:`BLOCKING_EFFECTS`). Pods that must run on the GPU nodes
without requesting a GPU (the NVIDIA device plugin, HyperPod's health agent) carry
the GPU pool's toleration themselves
(:func:`mlcc_constructs.core.platform.gpu_capacity.gpu_toleration`).

**Labels.** ``KubernetesConfig.Labels``: at most :data:`MAX_ENTRIES`, keys as taint keys,
values 1-63 characters of a label value (same API pages).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.gpu_capacity import gpu_taint
from mlcc_constructs.core.support.errors import Problem, json_pointer
from mlcc_constructs.core.support.typecheck import check_fields

Effect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
EFFECTS: tuple[Effect, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""``ClusterKubernetesTaint.Effect``'s valid values."""
BLOCKING_EFFECTS: frozenset[str] = frozenset({"NoSchedule", "NoExecute"})
"""The effects that keep a pod which does not tolerate them off the node (Kubernetes: a
``PreferNoSchedule`` taint is a preference of the scheduler, not a rule)."""
MAX_ENTRIES = 50
MAX_KEY = 317
MAX_VALUE = 63
# The API's patterns (API_ClusterKubernetesTaint, API_ClusterKubernetesConfig), anchored.
_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_KEY_RULE = (
    f"1-{MAX_KEY} characters: an optional DNS prefix and '/', then letters, digits, '-', '_' "
    "and '.', starting and ending with a letter or digit"
)
_VALUE_RULE = (
    f"1-{MAX_VALUE} letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
)
_TAINT_KEYS = ("key", "value", "effect")


@dataclass(frozen=True, kw_only=True)
class Taint:
    """One Kubernetes node taint."""

    key: str
    """The taint's key (``nvidia.com/gpu``)."""
    effect: Effect
    """``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``."""
    value: str | None = None
    """The taint's value; default ``None`` (no value)."""

    def __post_init__(self) -> None:
        check_fields(self)

    def __str__(self) -> str:
        """``key[=value]:effect``, as ``kubectl taint`` writes it."""
        value = "" if self.value is None else f"={self.value}"
        return f"{self.key}{value}:{self.effect}"


GPU_TAINT = Taint(key=gpu_taint()["key"], effect="NoSchedule")
"""The default taint of a GPU instance group: the name of the GPU's extended resource, so that
``ExtendedResourceToleration`` makes every pod requesting a GPU tolerate it."""


@dataclass(frozen=True, kw_only=True)
class Toleration:
    """One pod toleration (Kubernetes ``core/v1`` ``Toleration``, without ``tolerationSeconds``).

    ``key``: the taint key it matches; ``""`` matches every key (with ``Exists``).
    ``operator``: ``Exists`` (any value) or ``Equal`` (``value`` only).
    ``effect``: the effect it matches; ``""`` matches every effect.
    ``value``: the value ``Equal`` compares with; default ``""``.
    """

    key: str
    operator: Literal["Exists", "Equal"]
    effect: str
    value: str = ""

    def __post_init__(self) -> None:
        check_fields(self)

    def tolerates(self, taint: Taint) -> bool:
        """Whether this toleration matches ``taint`` (Kubernetes' ``ToleratesTaint``)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == (taint.value or "")


def is_extended_resource(name: str) -> bool:
    """A resource name outside the ``kubernetes.io`` domain, fully qualified (``vendor/name``):
    an extended resource (``nvidia.com/gpu``), not ``cpu``, ``memory`` or ``hugepages-*``."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def extended_resource_tolerations(resources: Iterable[str]) -> tuple[Toleration, ...]:
    """The tolerations ``ExtendedResourceToleration`` adds to a pod requesting ``resources``
    (module doc): ``Exists`` / ``NoSchedule`` on each extended resource's name, sorted."""
    return tuple(
        Toleration(key=name, operator="Exists", effect="NoSchedule")
        for name in sorted({r for r in resources if is_extended_resource(r)})
    )


def blocking_taints(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> list[Taint]:
    """The taints of ``taints`` that keep a pod with ``tolerations`` off the node: a
    ``NoSchedule`` or ``NoExecute`` taint none of them tolerates."""
    held = tuple(tolerations)
    return [
        taint
        for taint in taints
        if taint.effect in BLOCKING_EFFECTS and not any(t.tolerates(taint) for t in held)
    ]


def default_taints(instance: InstanceType) -> tuple[Taint, ...]:
    """The taints of a group of ``instance`` (its catalog entry) that sets none:
    :data:`GPU_TAINT` on a GPU type, none on another."""
    return (GPU_TAINT,) if instance.gpus > 0 else ()


Report = Callable[[str, str, object, str], Problem]
"""``(message, pointer below the group, value, allowed) -> Problem``: the caller's problem."""


def parse_taints(value: object, report: Report, problems: list[Problem]) -> tuple[Taint, ...]:
    """The taints of a context value (a list of ``{"key", "value"?, "effect"}``); each bad entry
    is a problem appended to ``problems`` (pointers ``/taints/<i>/<field>``)."""
    if not isinstance(value, list) or len(value) > MAX_ENTRIES:
        problems.append(
            report(
                f"taints must be a list of at most {MAX_ENTRIES} taints",
                "/taints",
                value,
                '[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], or [] for none',
            )
        )
        return ()
    found: list[Taint] = []
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(value):
        taint = _taint(entry, json_pointer("taints", index), report, problems)
        if taint is None:
            continue
        pair = (taint.key, taint.effect)
        if pair in seen:  # Kubernetes keeps one taint per key and effect
            problems.append(
                report(
                    f"taint {taint.key}:{taint.effect} is given twice (also at index {seen[pair]})",
                    json_pointer("taints", index),
                    entry,
                    "one taint per key and effect",
                )
            )
            continue
        seen[pair] = index
        found.append(taint)
    return tuple(found)


def _taint(entry: object, pointer: str, report: Report, problems: list[Problem]) -> Taint | None:
    if not isinstance(entry, Mapping):
        problems.append(
            report("a taint must be an object", pointer, entry, "key, effect and optionally value")
        )
        return None
    before = len(problems)
    for name in sorted(set(entry) - set(_TAINT_KEYS)):
        problems.append(
            report(
                f"unknown key {name!r}",
                pointer + json_pointer(name),
                entry[name],
                ", ".join(_TAINT_KEYS),
            )
        )
    for name in ("key", "effect"):
        if name not in entry:
            problems.append(report(f"missing {name!r}", pointer, dict(entry), name))
    key, effect, text = entry.get("key"), entry.get("effect"), entry.get("value")
    if "key" in entry and not _is_key(key):
        problems.append(report("not a taint key", f"{pointer}/key", key, _KEY_RULE))
    if "effect" in entry and effect not in EFFECTS:
        problems.append(
            report("not a taint effect", f"{pointer}/effect", effect, ", ".join(EFFECTS))
        )
    if text is not None and not _is_value(text):
        problems.append(report("not a taint value", f"{pointer}/value", text, _VALUE_RULE))
    if len(problems) > before:
        return None
    assert isinstance(key, str) and effect in EFFECTS and (text is None or isinstance(text, str))
    return Taint(key=key, effect=effect, value=text)


def parse_labels(value: object, report: Report, problems: list[Problem]) -> dict[str, str]:
    """The node labels of a context value (an object of at most :data:`MAX_ENTRIES` names to
    values); each bad one is a problem appended to ``problems`` (pointers ``/labels/<name>``)."""
    if not isinstance(value, Mapping) or len(value) > MAX_ENTRIES:
        problems.append(
            report(
                f"labels must be an object of at most {MAX_ENTRIES} labels",
                "/labels",
                value,
                '{"team": "inference"}',
            )
        )
        return {}
    labels: dict[str, str] = {}
    for key in sorted(value, key=str):
        text = value[key]
        pointer = json_pointer("labels", key)
        if not _is_key(key):
            problems.append(report("not a label name", pointer, key, _KEY_RULE))
        elif not _is_value(text):
            problems.append(report("not a label value", pointer, text, _VALUE_RULE))
        else:
            labels[key] = text
    return labels


def _is_key(value: object) -> bool:
    return (
        isinstance(value, str) and 1 <= len(value) <= MAX_KEY and bool(_QUALIFIED_NAME.match(value))
    )


def _is_value(value: object) -> bool:
    return (
        isinstance(value, str) and 1 <= len(value) <= MAX_VALUE and bool(_LABEL_VALUE.match(value))
    )
