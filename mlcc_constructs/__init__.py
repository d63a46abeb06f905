"""mlcc-constructs: CDK and cdk8s constructs that serve LLMs on Amazon EKS and SageMaker HyperPod.

Construct classes are loaded lazily (PEP 562) so that ``import mlcc_constructs`` and the
pure ``mlcc`` commands never start the jsii runtime. Type checkers see every public name with
its real type through the ``TYPE_CHECKING`` imports, which list exactly the names of
``_LAZY`` (a test keeps the two equal).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

if TYPE_CHECKING:  # what type checkers see: the real types (at run time: __getattr__)
    from mlcc_constructs.aws.buckets import (
        ModelBuckets as ModelBuckets,
        ModelBucketsProps as ModelBucketsProps,
    )
    from mlcc_constructs.aws.gpu_node_pool import (
        GpuNodeClass as GpuNodeClass,
        GpuNodePool as GpuNodePool,
        GpuNodePoolProps as GpuNodePoolProps,
    )
    from mlcc_constructs.aws.hyperpod_cluster import (
        HyperPodCluster as HyperPodCluster,
        HyperPodClusterProps as HyperPodClusterProps,
        ImportedHyperPodCluster as ImportedHyperPodCluster,
        ImportedHyperPodClusterProps as ImportedHyperPodClusterProps,
    )
    from mlcc_constructs.aws.hyperpod_dependencies import (
        HyperPodDependencies as HyperPodDependencies,
        HyperPodDependenciesProps as HyperPodDependenciesProps,
    )
    from mlcc_constructs.aws.imported_cluster import (
        ImportedServingCluster as ImportedServingCluster,
        ImportedServingClusterProps as ImportedServingClusterProps,
        IServingCluster as IServingCluster,
    )
    from mlcc_constructs.aws.inference_components import (
        AdapterInferenceComponents as AdapterInferenceComponents,
        AdapterInferenceComponentsProps as AdapterInferenceComponentsProps,
    )
    from mlcc_constructs.aws.inference_operator import (
        HyperPodInferenceOperator as HyperPodInferenceOperator,
        HyperPodInferenceOperatorProps as HyperPodInferenceOperatorProps,
    )
    from mlcc_constructs.aws.kubernetes_objects import (
        KubernetesObjects as KubernetesObjects,
        KubernetesObjectsProps as KubernetesObjectsProps,
    )
    from mlcc_constructs.aws.nag import (
        MlccChecks as MlccChecks,
    )
    from mlcc_constructs.aws.readiness import (
        ReadinessProvider as ReadinessProvider,
    )
    from mlcc_constructs.aws.s3_csi import (
        S3CsiDriver as S3CsiDriver,
        S3CsiDriverProps as S3CsiDriverProps,
    )
    from mlcc_constructs.aws.served_model import (
        ServedModel as ServedModel,
        ServedModelProps as ServedModelProps,
    )
    from mlcc_constructs.aws.serving_cluster import (
        ServingCluster as ServingCluster,
        ServingClusterProps as ServingClusterProps,
    )
    from mlcc_constructs.aws.serving_fleet import (
        ServingFleet as ServingFleet,
        ServingFleetProps as ServingFleetProps,
    )
    from mlcc_constructs.aws.serving_stage import (
        ServingStage as ServingStage,
        ServingStageProps as ServingStageProps,
    )
    from mlcc_constructs.core.adapters.lora_rank import (
        AdapterRank as AdapterRank,
    )
    from mlcc_constructs.core.cache import (
        CacheBackendSpec as CacheBackendSpec,
    )
    from mlcc_constructs.core.engines.manifests import (
        EngineRegistry as EngineRegistry,
    )
    from mlcc_constructs.core.platform.catalog import (
        InstanceType as InstanceType,
    )
    from mlcc_constructs.core.platform.fleet import (
        CheckNetwork as CheckNetwork,
        FleetStage as FleetStage,
    )
    from mlcc_constructs.core.platform.fleet_pin import ModelPin as ModelPin
    from mlcc_constructs.core.platform.hyperpod import (
        InstanceGroup as InstanceGroup,
    )
    from mlcc_constructs.core.platform.hyperpod_taints import (
        Taint as Taint,
    )
    from mlcc_constructs.core.serving.manifest_ids import (
        manifest_logical_id as manifest_logical_id,
    )
    from mlcc_constructs.core.serving.plan import (
        plan_serving as plan_serving,
    )
    from mlcc_constructs.core.serving.prepared import (
        PreparedDeployment as PreparedDeployment,
        prepare as prepare,
    )
    from mlcc_constructs.core.serving.render import (
        render as render,
    )
    from mlcc_constructs.core.serving.spec.autoscaling import (
        Autoscaling as Autoscaling,
    )
    from mlcc_constructs.core.serving.spec.cache_routing import (
        KvCache as KvCache,
        Routing as Routing,
    )
    from mlcc_constructs.core.serving.spec.context import (
        RenderContext as RenderContext,
    )
    from mlcc_constructs.core.serving.spec.deployment import (
        CacheSpec as CacheSpec,
        ComputeSpec as ComputeSpec,
        DeploymentSpec as DeploymentSpec,
        EngineSpec as EngineSpec,
        LoraSpec as LoraSpec,
        ModelSpec as ModelSpec,
        RolloutSpec as RolloutSpec,
        ScalingSpec as ScalingSpec,
        SecretRef as SecretRef,
    )
    from mlcc_constructs.core.serving.spec.endpoint import (
        Endpoint as Endpoint,
        SecretsManagerSecret as SecretsManagerSecret,
    )
    from mlcc_constructs.core.serving.spec.gateway import (
        ClaimRule as ClaimRule,
        Gateway as Gateway,
        JwtAuth as JwtAuth,
    )
    from mlcc_constructs.k8s.cache_backend import (
        CacheBackend as CacheBackend,
        CacheBackendProps as CacheBackendProps,
    )
    from mlcc_constructs.k8s.config_map import (
        EngineConfigMap as EngineConfigMap,
        EngineConfigMapProps as EngineConfigMapProps,
    )
    from mlcc_constructs.k8s.deployment import (
        EngineDeployment as EngineDeployment,
        EngineDeploymentProps as EngineDeploymentProps,
    )
    from mlcc_constructs.k8s.inference_endpoint import (
        InferenceEndpointConfig as InferenceEndpointConfig,
        InferenceEndpointConfigProps as InferenceEndpointConfigProps,
    )
    from mlcc_constructs.k8s.namespaces import (
        Namespaces as Namespaces,
        NamespacesProps as NamespacesProps,
    )
    from mlcc_constructs.k8s.serving_chart import (
        ServingChart as ServingChart,
        ServingChartProps as ServingChartProps,
    )
    from mlcc_constructs.k8s.workload import (
        EngineWorkload as EngineWorkload,
    )

# public name -> module that defines it (the public API; loaded on first use)
_LAZY: dict[str, str] = {
    # -- spec types: DeploymentSpec and every type its fields take (a user builds these). The
    # sections of DeploymentSpec go here too, one line each (tests/project/test_public_api.py checks
    # that every mlcc_constructs class a public dataclass's field takes is listed).
    "DeploymentSpec": "mlcc_constructs.core.serving.spec.deployment",
    "CacheSpec": "mlcc_constructs.core.serving.spec.deployment",
    "ComputeSpec": "mlcc_constructs.core.serving.spec.deployment",
    "EngineSpec": "mlcc_constructs.core.serving.spec.deployment",
    "LoraSpec": "mlcc_constructs.core.serving.spec.deployment",
    "ModelSpec": "mlcc_constructs.core.serving.spec.deployment",
    "RolloutSpec": "mlcc_constructs.core.serving.spec.deployment",
    "ScalingSpec": "mlcc_constructs.core.serving.spec.deployment",
    "SecretRef": "mlcc_constructs.core.serving.spec.deployment",
    "Endpoint": "mlcc_constructs.core.serving.spec.endpoint",
    "SecretsManagerSecret": "mlcc_constructs.core.serving.spec.endpoint",
    "Gateway": "mlcc_constructs.core.serving.spec.gateway",
    "JwtAuth": "mlcc_constructs.core.serving.spec.gateway",
    "ClaimRule": "mlcc_constructs.core.serving.spec.gateway",
    "Autoscaling": "mlcc_constructs.core.serving.spec.autoscaling",
    "Routing": "mlcc_constructs.core.serving.spec.cache_routing",
    "KvCache": "mlcc_constructs.core.serving.spec.cache_routing",
    # -- rendering and preparing
    "RenderContext": "mlcc_constructs.core.serving.spec.context",
    "PreparedDeployment": "mlcc_constructs.core.serving.prepared",
    "prepare": "mlcc_constructs.core.serving.prepared",
    "render": "mlcc_constructs.core.serving.render",
    "EngineRegistry": "mlcc_constructs.core.engines.manifests",
    "AdapterRank": "mlcc_constructs.core.adapters.lora_rank",
    "CacheBackendSpec": "mlcc_constructs.core.cache",
    "EngineConfigMap": "mlcc_constructs.k8s.config_map",
    "EngineConfigMapProps": "mlcc_constructs.k8s.config_map",
    "EngineDeployment": "mlcc_constructs.k8s.deployment",
    "EngineDeploymentProps": "mlcc_constructs.k8s.deployment",
    "InferenceEndpointConfig": "mlcc_constructs.k8s.inference_endpoint",
    "InferenceEndpointConfigProps": "mlcc_constructs.k8s.inference_endpoint",
    "ServingChart": "mlcc_constructs.k8s.serving_chart",
    "ServingChartProps": "mlcc_constructs.k8s.serving_chart",
    "EngineWorkload": "mlcc_constructs.k8s.workload",
    "ModelBuckets": "mlcc_constructs.aws.buckets",
    "ModelBucketsProps": "mlcc_constructs.aws.buckets",
    "S3CsiDriver": "mlcc_constructs.aws.s3_csi",
    "S3CsiDriverProps": "mlcc_constructs.aws.s3_csi",
    "CacheBackend": "mlcc_constructs.k8s.cache_backend",
    "CacheBackendProps": "mlcc_constructs.k8s.cache_backend",
    "AdapterInferenceComponents": "mlcc_constructs.aws.inference_components",
    "AdapterInferenceComponentsProps": "mlcc_constructs.aws.inference_components",
    "KubernetesObjects": "mlcc_constructs.aws.kubernetes_objects",
    "KubernetesObjectsProps": "mlcc_constructs.aws.kubernetes_objects",
    "MlccChecks": "mlcc_constructs.aws.nag",
    "ReadinessProvider": "mlcc_constructs.aws.readiness",
    "InstanceGroup": "mlcc_constructs.core.platform.hyperpod",
    "InstanceType": "mlcc_constructs.core.platform.catalog",
    "Taint": "mlcc_constructs.core.platform.hyperpod_taints",
    "HyperPodCluster": "mlcc_constructs.aws.hyperpod_cluster",
    "HyperPodClusterProps": "mlcc_constructs.aws.hyperpod_cluster",
    "ImportedHyperPodCluster": "mlcc_constructs.aws.hyperpod_cluster",
    "ImportedHyperPodClusterProps": "mlcc_constructs.aws.hyperpod_cluster",
    "HyperPodDependencies": "mlcc_constructs.aws.hyperpod_dependencies",
    # -- a serving fleet: one model in several accounts and regions, CDK Pipelines waves
    "ServingFleet": "mlcc_constructs.aws.serving_fleet",
    "ServingFleetProps": "mlcc_constructs.aws.serving_fleet",
    "ServingStage": "mlcc_constructs.aws.serving_stage",
    "ServingStageProps": "mlcc_constructs.aws.serving_stage",
    "FleetStage": "mlcc_constructs.core.platform.fleet",
    "CheckNetwork": "mlcc_constructs.core.platform.fleet",
    "ModelPin": "mlcc_constructs.core.platform.fleet_pin",
    "HyperPodDependenciesProps": "mlcc_constructs.aws.hyperpod_dependencies",
    "HyperPodInferenceOperator": "mlcc_constructs.aws.inference_operator",
    "HyperPodInferenceOperatorProps": "mlcc_constructs.aws.inference_operator",
    "Namespaces": "mlcc_constructs.k8s.namespaces",
    "NamespacesProps": "mlcc_constructs.k8s.namespaces",
    "ServingCluster": "mlcc_constructs.aws.serving_cluster",
    "ServingClusterProps": "mlcc_constructs.aws.serving_cluster",
    "IServingCluster": "mlcc_constructs.aws.imported_cluster",
    "ImportedServingCluster": "mlcc_constructs.aws.imported_cluster",
    "ImportedServingClusterProps": "mlcc_constructs.aws.imported_cluster",
    "GpuNodeClass": "mlcc_constructs.aws.gpu_node_pool",
    "GpuNodePool": "mlcc_constructs.aws.gpu_node_pool",
    "GpuNodePoolProps": "mlcc_constructs.aws.gpu_node_pool",
    "ServedModel": "mlcc_constructs.aws.served_model",
    "ServedModelProps": "mlcc_constructs.aws.served_model",
    "plan_serving": "mlcc_constructs.core.serving.plan",
    "manifest_logical_id": "mlcc_constructs.core.serving.manifest_ids",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mlcc_constructs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)  # resolved on first use by __getattr__


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
