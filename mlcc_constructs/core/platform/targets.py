"""Deployment targets as data: ``targets/<name>/manifest.json`` and the registry over them.

A target's manifest says which kinds it renders (each by its module in
:mod:`mlcc_constructs.core.serving.kinds`), which of them makes the serving pods, whether pods
take volumes, where the model is mounted, and whether TLS and cache injection apply. Code asks
the descriptor; it never compares target names. The built-in manifests
are checked against ``targets/manifest.schema.json`` by the test suite, so loading them skips
jsonschema (slow to import, and every ``mlcc`` command loads a target).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Literal

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.support.documents import read_json
from mlcc_constructs.core.support.errors import closest, fail

HuggingFaceModel = Literal["by-id", "mounted"]


@dataclass(frozen=True, kw_only=True)
class AdapterDelivery:
    """How LoRA adapters reach a target's pods (seed lora-delivery §2)."""

    strategy: str
    """``model-prefix`` (under the mounted model) or ``inference-component``."""
    mount_path: str | None = None
    """Where the pods see the model prefix. Default: none (no pods)."""
    subdir: str | None = None
    """The adapters' folder under the model prefix. Default: none."""

    @property
    def loads_at_runtime(self) -> bool:
        """The serving pods load adapters at runtime, through the engine's dynamic LoRA API
        (``model-prefix``: ``mlcc adapter add`` calls it); an inference component is made per
        adapter instead."""
        return self.strategy == "model-prefix"


@dataclass(frozen=True, kw_only=True)
class TargetDescriptor:
    """One deployment target from ``targets/<name>/manifest.json`` (field docs: its schema)."""

    name: str
    description: str
    model_mount_path: str
    adapter_delivery: AdapterDelivery
    kinds: tuple[str, ...]
    pod_volumes: bool
    service_account: bool
    cache_injection: bool
    tls_bucket: bool
    inference_gateway: bool = False
    """``endpoint.gateway`` is rendered (the HyperPod Inference Gateway). Default: false (it is
    refused)."""
    managed_cache_routing: bool = False
    """A deployment's ``routing`` and ``kv_cache`` are rendered (the HyperPod inference
    operator's ``intelligentRoutingSpec`` and ``kvCacheSpec``). Default: false (refused, with
    ``notes["routing"]`` / ``notes["kv_cache"]`` as the reason)."""
    model_streaming: bool = False
    """The pods may read an ``s3://`` model themselves (``model_load: stream``). Default: false
    (``notes["model_load"]`` says why)."""
    cluster_gpu_nodes: bool = False
    """Pods run on the EKS cluster's Auto Mode nodes (the app's GPU NodePool). Default: false."""
    metrics_scraped: bool = False
    """The platform scrapes the engine's Prometheus metrics (eks: the cluster's managed
    scraper; hyperpod-eks: the IEC's ``metrics``), so an engine's ``metrics_enable`` capability
    is emitted. Default: false."""
    pod_name_label: str | None = None
    """The label whose value is the deployment's name on its serving pods. Default: none (the
    target has no pods to select)."""
    workload: str | None = None
    """The kind whose objects define the serving pods (``Deployment``, ``InferenceEndpointConfig``):
    what ``mlcc argv -f`` and ``mlcc env -f`` read the engine process from, what ``mlcc adapter
    --discover`` reads live. Default: none (the target renders no Kubernetes objects)."""
    multi_node_workload: str | None = None
    """The kind that serves one model copy over several nodes (``nodes`` above 1) in place of
    :attr:`workload` (eks: ``LeaderWorkerSet``). Default: none (``nodes`` above 1 is refused,
    ``notes["nodes"]`` says why)."""
    huggingface_model: HuggingFaceModel = "by-id"
    """``by-id``: the engine downloads a Hugging Face model; ``mounted``: the platform stages it
    at ``model_mount_path`` (the HyperPod operator's init container, which alone has the token)."""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Why a spec field does not apply here, keyed by field name."""

    def workload_for(self, nodes: int) -> str | None:
        """The kind that makes the serving pods of a deployment over ``nodes`` nodes."""
        return self.multi_node_workload if nodes > 1 else self.workload

    def require_kubernetes(self) -> None:
        """Refuse a target that renders no Kubernetes objects (its ``kinds`` are empty)."""
        if not self.kinds:
            raise fail(
                "not a Kubernetes target",
                pointer="/target",
                value=self.name,
                allowed=", ".join(kubernetes_target_names()),
                fix=f"use {' or '.join(kubernetes_target_names())}"
                + (f" ({self.notes['render']})" if "render" in self.notes else ""),
            )

    def pod_selector(self, deployment_name: str) -> str:
        """The label selector of ``deployment_name``'s serving pods (``app=my-model``)."""
        if self.pod_name_label is None:
            raise fail(
                "the target has no pods to select",
                pointer="/target",
                value=self.name,
                allowed=", ".join(n for n in target_names() if load_target(n).pod_name_label),
                fix="pass the pods with --pod-url, or a target whose pods run on Kubernetes",
            )
        return f"{self.pod_name_label}={deployment_name}"


@cache
def target_names() -> tuple[str, ...]:
    """Every built-in target, sorted."""
    root = shipped_path("targets")
    return tuple(sorted(p.parent.name for p in root.glob("*/manifest.json")))


@cache
def kubernetes_target_names() -> tuple[str, ...]:
    """The targets the core renders into Kubernetes objects."""
    return tuple(n for n in target_names() if load_target(n).kinds)


@cache
def load_target(name: str) -> TargetDescriptor:
    """The descriptor of target ``name``; an unknown name suggests the closest ones."""
    if name not in target_names():
        near = closest(name, target_names())
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise fail(
            f"unknown target {name!r}",
            pointer="/target",
            value=name,
            allowed=", ".join(target_names()),
            fix=f"use one of the allowed targets{hint}",
        )
    document = read_json(shipped_path("targets") / name / "manifest.json")
    delivery = document["adapter_delivery"]
    return TargetDescriptor(
        name=document["target"],
        description=document.get("description", ""),
        workload=document.get("workload"),
        multi_node_workload=document.get("multi_node_workload"),
        kinds=tuple(document["kinds"]),
        model_mount_path=document["model_mount_path"],
        pod_volumes=document["pod_volumes"],
        service_account=document["service_account"],
        cache_injection=document["cache_injection"],
        tls_bucket=document["tls_bucket"],
        model_streaming=document.get("model_streaming", False),
        cluster_gpu_nodes=document.get("cluster_gpu_nodes", False),
        metrics_scraped=document.get("metrics_scraped", False),
        inference_gateway=document.get("inference_gateway", False),
        managed_cache_routing=document.get("managed_cache_routing", False),
        pod_name_label=document.get("pod_name_label"),
        huggingface_model=document.get("huggingface_model", "by-id"),
        notes=MappingProxyType(dict(document.get("notes", {}))),
        adapter_delivery=AdapterDelivery(
            strategy=delivery["strategy"],
            mount_path=delivery.get("mount_path"),
            subdir=delivery.get("subdir"),
        ),
    )
