"""The deploy order of the HyperPod cluster and its networking add-ons on the app's EKS Auto
Mode cluster (core/platform/networking_addons.py cites why): the stacks in cdk.out's
manifest.json, the DependsOn of the templates, CoreDNS's placement; and the Kubernetes
version warning."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.platform.networking_addons import (
    NETWORKING_ADDONS,
    coredns_configuration,
)
from mlcc_constructs.core.platform.versions import hyperpod_version_warning, pinned
from tests._cdk_app import EKS_STACK, stack, synthesised, template

HYPERPOD_STACK = "mlcc-dev-hyperpod-cluster"
OPERATOR_STACK = "mlcc-dev-inference-operator"


@cache
def manifest() -> dict[str, Any]:
    """cdk.out/manifest.json of the app's synth."""
    app = synthesised()[0]
    directory = Path(app.synth().directory)
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _stack_dependencies(name: str) -> set[str]:
    artifacts = manifest()["artifacts"]
    return {d for d in artifacts[name].get("dependencies", []) if d in artifacts}


def _resources(kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical: resource
        for logical, resource in template(HYPERPOD_STACK)["Resources"].items()
        if resource["Type"] == kind
    }


def _addons() -> dict[str, tuple[str, dict[str, Any]]]:
    """Add-on name -> (logical id, resource) of the hyperpod-cluster stack."""
    return {
        r["Properties"]["AddonName"]: (logical, r)
        for logical, r in _resources("AWS::EKS::Addon").items()
    }


def _depends_on(resource: dict[str, Any]) -> set[str]:
    depends = resource.get("DependsOn", [])
    return {depends} if isinstance(depends, str) else set(depends)


@pytest.mark.parametrize(
    ("later", "earlier"),
    [
        (HYPERPOD_STACK, EKS_STACK),  # the add-ons need the EKS cluster
        (OPERATOR_STACK, HYPERPOD_STACK),  # the operator needs the HyperPod cluster
    ],
)
def test_stack_order(later: str, earlier: str) -> None:
    assert earlier in _stack_dependencies(later)
    assert later not in _stack_dependencies(earlier)


def test_the_hyperpod_cluster_waits_for_the_node_networking_only() -> None:
    (cluster,) = _resources("AWS::SageMaker::Cluster").values()
    addons = _addons()
    assert set(addons) == {addon.name for addon in NETWORKING_ADDONS}
    waited = {name for name, (logical, _) in addons.items() if logical in _depends_on(cluster)}
    assert waited == {"vpc-cni", "kube-proxy"}


def test_no_addon_waits_for_anything_of_the_hyperpod_stack() -> None:
    """The add-ons are created on the Auto Mode cluster alone: none depends on the HyperPod
    cluster (or its nodes), or on another resource of the stack."""
    for name, (_, resource) in _addons().items():
        assert _depends_on(resource) == set(), name


@pytest.mark.parametrize(
    ("name", "configuration"),
    [
        # Network policy enforcement stays on: the add-on's chart owns the Auto Mode switch too.
        ("vpc-cni", {"enableNetworkPolicy": "true"}),
        ("kube-proxy", None),
        ("coredns", coredns_configuration()),
    ],
)
def test_configuration_values(name: str, configuration: dict[str, Any] | None) -> None:
    properties = _addons()[name][1]["Properties"]
    given = properties.get("ConfigurationValues")
    assert (json.loads(given) if given is not None else None) == configuration


def test_coredns_prefers_auto_mode_and_keeps_its_defaults() -> None:
    affinity = coredns_configuration()["affinity"]
    node = affinity["nodeAffinity"]
    (required,) = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    keys = {e["key"] for e in required["matchExpressions"]}
    # Required: only the defaults (Linux, amd64/arm64), never the compute type: on a cluster
    # without Auto Mode CoreDNS must still schedule.
    assert keys == {"kubernetes.io/os", "kubernetes.io/arch"}
    (preferred,) = node["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["preference"]["matchExpressions"] == [
        {"key": "eks.amazonaws.com/compute-type", "operator": "In", "values": ["auto"]}
    ]
    assert "podAntiAffinity" in affinity
    # No tolerations: EKS's defaults (CriticalAddonsOnly) stay, the GPU taint is not tolerated.
    assert "tolerations" not in coredns_configuration()


@pytest.mark.parametrize(
    ("version", "warned"),
    [("1.34", False), ("1.28", False), ("1.35", True), ("1.36", True), ("1.27", True)],
)
def test_hyperpod_version_warning(version: str, warned: bool) -> None:
    documented = pinned().hyperpod_kubernetes_documented
    warning = hyperpod_version_warning(version, documented)
    assert (warning is not None) is warned
    if warning is not None:
        assert f"Kubernetes {version}" in warning
        assert "hyperpod_kubernetes_documented" in warning


def test_the_hyperpod_cluster_warns_of_the_pinned_version() -> None:
    expected = hyperpod_version_warning(
        pinned().kubernetes, pinned().hyperpod_kubernetes_documented
    )
    messages = [
        str(entry.data)
        for entry in stack(HYPERPOD_STACK).node.find_child("HyperPodCluster").node.metadata
        if entry.type == "aws:cdk:warning"
    ]
    if expected is None:
        assert not any("SageMaker HyperPod documents" in m for m in messages)
    else:
        assert any(expected in m for m in messages), messages
