"""The one registry of Kubernetes kinds: every kind the library renders is registered once with
how it is rendered, validated, ordered and required, and how a live object's readiness is read;
targets name registered kinds only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.cache import parse_spec
from mlcc_constructs.core.platform.gpu_capacity import gpu_node_pool
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.platform.targets import load_target, target_names
from mlcc_constructs.core.serving.kinds import registry
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds.inference_endpoint_config import FAILED_STATE, READY_STATE
from mlcc_constructs.core.serving.kinds.registry import (
    Readiness,
    kind_named,
    kind_of,
    kinds,
    object_problems,
    of_kind,
    readiness,
    requirement,
)
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.core.cache.test_cache_admission import seed_safe_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")


def test_every_kind_module_registers_one_kind() -> None:
    found = {k.kind: k for k in kinds()}
    assert sorted(found) == [
        "CacheBackend",
        "ConfigMap",
        "Deployment",
        "InferenceEndpointConfig",
        "InferenceGatewayConfig",
        "Ingress",
        "LeaderWorkerSet",
        "Namespace",
        "NetworkPolicy",
        "NodePool",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "ScaledObject",
        "SecretProviderClass",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
    ]
    modules = {
        p.stem
        for p in Path(registry.__file__).parent.glob("*.py")
        if not p.stem.startswith("_") and p.stem != "registry"
    }
    assert len(modules) == len(found)  # one module, one kind
    assert len({(k.api_version, k.kind) for k in kinds()}) == len(found)
    assert all(k.plural == k.plural.lower() and k.plural.endswith("s") for k in kinds())


@pytest.mark.parametrize("target", target_names())
def test_targets_name_registered_kinds_and_their_workload(target: str) -> None:
    descriptor = load_target(target)
    for name in descriptor.kinds:
        assert kind_named(name).render is not None, name
    if descriptor.kinds:
        assert descriptor.workload in descriptor.kinds
        assert kind_named(str(descriptor.workload)).engine is not None
    else:
        assert descriptor.workload is None


def test_an_unknown_kind_name_is_refused_with_the_closest() -> None:
    with pytest.raises(MlccError) as caught:
        kind_named("Deploymnet")
    assert str(caught.value) == (
        "no registered Kubernetes kind 'Deploymnet' (got 'Deploymnet'; allowed: CacheBackend, "
        "ConfigMap, Deployment, InferenceEndpointConfig, InferenceGatewayConfig, Ingress, "
        "LeaderWorkerSet, Namespace, NetworkPolicy, NodePool, PersistentVolume, "
        "PersistentVolumeClaim, PodDisruptionBudget, Role, RoleBinding, ScaledObject, "
        "SecretProviderClass, Service, ServiceAccount, ServiceMonitor; "
        "fix: did you mean Deployment?)"
    )


def test_an_object_of_no_registered_kind_is_a_problem() -> None:
    problems = object_problems({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}})
    assert [p.pointer for p in problems] == ["/apiVersion"]
    assert problems[0].where == "Job/j"
    assert problems[0].message == "the library renders no such kind"
    # the same kind name in another group is not the registered kind either
    assert kind_of({"apiVersion": "example.com/v1", "kind": "Deployment"}) is None


def _prepared(target: str, **values: Any) -> Any:
    spec = flat_spec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="m", target=target,
        namespace="inference", **values,
    )  # fmt: skip
    return prepare(spec, context=CONTEXT)


def test_objects_come_in_apply_order_by_phase() -> None:
    cache = parse_spec(seed_safe_spec("SGLang"))
    sglang = flat_spec(
        engine="sglang", model=MODEL, instance_type="ml.g5.12xlarge", name="m",
        namespace="inference", cache_backend=cache,
    )  # fmt: skip
    prepared = prepare(sglang, context=CONTEXT)
    assert [e.id for e in prepared.objects] == [
        "ServiceAccount",
        "NetworkPolicy",
        "ConfigMap",
        "WrapperConfigMap",
        "CacheConfigMap",
        "ModelVolume",
        "ModelClaim",
        "Deployment",
        "Service",
        "Ingress",
    ]
    phases = [kind_of(e.object).apply_phase for e in prepared.objects]  # type: ignore[union-attr]
    assert phases == sorted(phases)


def test_an_iec_requires_the_operator_add_on_and_core_kinds_nothing() -> None:
    (iec,) = (e.object for e in _prepared("hyperpod-eks").objects)
    assert requirement(iec) == ADDON_NAME
    assert {requirement(e.object) for e in _prepared("eks").objects} == {None}
    assert requirement({"apiVersion": "example.com/v1", "kind": "Thing"}) is None


def test_of_kind_selects_by_kind_and_group() -> None:
    objects = [e.object for e in _prepared("eks").objects]
    assert [o["metadata"]["name"] for o in of_kind(objects, "ConfigMap")] == [
        "m-config",
        "m-wrapper",
    ]
    fake = {"apiVersion": "example.com/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert of_kind([fake], "ConfigMap") == []


# -- validation by kind -------------------------------------------------------------------


def test_the_gpu_node_pool_is_valid_against_the_nodepool_rules() -> None:
    assert object_problems(gpu_node_pool(["g5", "g6e"])) == []


def test_a_misspelt_or_wrong_node_pool_field_is_named() -> None:
    pool = gpu_node_pool(["g5"])
    pool["spec"]["disruption"]["consolidationPolicy"] = "WhenUnderutilized"  # the v1beta1 value
    pool["spec"]["template"]["spec"]["taint"] = []
    assert [str(p) for p in object_problems(pool)] == [
        "NodePool/mlcc-gpu:/spec/disruption/consolidationPolicy: 'WhenUnderutilized' is not one "
        "of ['WhenEmpty', 'WhenEmptyOrUnderutilized'] (NodePool v1 CRD rules) (fix: use one of "
        "the values the NodePool CRD allows)",
        "NodePool/mlcc-gpu:/spec/template/spec: Additional properties are not allowed ('taint' "
        "was unexpected) (NodePool v1 CRD rules) (fix: remove the field or fix its spelling: the "
        "v1 NodePool CRD does not define it)",
    ]


def test_a_cache_backend_object_is_validated_by_its_admission() -> None:
    good = {
        "apiVersion": "inferencecache.io/v1alpha1",
        "kind": "CacheBackend",
        "metadata": {"name": "c", "namespace": "serving"},
        "spec": seed_safe_spec(),
    }
    assert object_problems(good) == []
    bad = {**good, "spec": {**seed_safe_spec(), "runtime": "TGI"}}
    assert [p.pointer for p in object_problems(bad)] == ["/spec/runtime"]


def _crd_rule_kinds() -> list[tuple[str, CrdRules]]:
    found = []
    for kind in kinds():
        owner = getattr(kind.validate, "__self__", None)
        if isinstance(owner, CrdRules):
            found.append((kind.kind, owner))
    return found


def test_custom_resources_validate_against_rule_data_named_by_crd_version() -> None:
    found = dict(_crd_rule_kinds())
    assert sorted(found) == [
        "InferenceEndpointConfig",
        "InferenceGatewayConfig",
        "NodePool",
        "ServiceMonitor",
    ]
    for name, rules in found.items():
        kind = kind_named(name)
        document = rules.document
        group, _, version = kind.api_version.rpartition("/")
        assert rules.file == f"{kind.plural}.{group}.{version}.json"
        assert (document["apiVersion"], document["kind"]) == (kind.api_version, kind.kind)
        assert document["source"] and document["description"]
        assert document["schema"]["properties"]["kind"] == {"const": kind.kind}


# -- readiness ------------------------------------------------------------------------------


def _deployment(wanted: int, generation: int, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "m", "generation": generation},
        "spec": {"replicas": wanted},
        "status": status,
    }


def _iec(state: str | None, generation: int = 2, observed: int = 2) -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": observed}
    if state is not None:
        status["state"] = state
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "m", "generation": generation},
        "status": status,
    }


def _ready_condition(kind: str, api_version: str, status: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "generation": 1},
        "status": {
            "conditions": [
                {"type": "Ready", "status": status, "reason": "Why", "observedGeneration": 1}
            ]
        },
    }


READINESS = [
    ("Deployment", None, Readiness("absent", "not found")),
    (
        "Deployment",
        _deployment(2, 3, observedGeneration=2, updatedReplicas=2, availableReplicas=2),
        Readiness("progressing", "generation 3 not observed yet"),
    ),
    (
        "Deployment",
        _deployment(2, 3, observedGeneration=3, replicas=3, updatedReplicas=1, availableReplicas=2),
        Readiness("progressing", "2/2 replicas available, 1 updated"),
    ),
    (
        "Deployment",
        _deployment(2, 3, observedGeneration=3, replicas=2, updatedReplicas=2, availableReplicas=2),
        Readiness("ready", "2/2 replicas available, 2 updated"),
    ),
    (
        "Deployment",
        _deployment(
            1,
            1,
            observedGeneration=1,
            conditions=[
                {
                    "type": "Progressing",
                    "reason": "ProgressDeadlineExceeded",
                    "message": "ReplicaSet m-1 has timed out progressing.",
                }
            ],
        ),
        Readiness("failed", "ReplicaSet m-1 has timed out progressing."),
    ),
    ("InferenceEndpointConfig", _iec(READY_STATE), Readiness("ready", "DeploymentComplete")),
    ("InferenceEndpointConfig", _iec(FAILED_STATE), Readiness("failed", "DeploymentFailed")),
    (
        "InferenceEndpointConfig",
        _iec("DeploymentInProgress"),
        Readiness("progressing", "DeploymentInProgress"),
    ),
    (
        "InferenceEndpointConfig",
        _iec(READY_STATE, generation=3),
        Readiness("progressing", "generation 3 not observed yet (DeploymentComplete)"),
    ),
    ("InferenceEndpointConfig", _iec(None), Readiness("progressing", "no state yet")),
    ("PersistentVolumeClaim", {"status": {"phase": "Bound"}}, Readiness("ready", "Bound")),
    ("PersistentVolumeClaim", {"status": {"phase": "Lost"}}, Readiness("failed", "Lost")),
    ("PersistentVolume", {"status": {"phase": "Available"}}, Readiness("progressing", "Available")),
    ("Namespace", {"status": {"phase": "Terminating"}}, Readiness("failed", "Terminating")),
    ("ConfigMap", {"data": {}}, Readiness("ready", "exists")),
    (
        "Service",
        {"spec": {"type": "ClusterIP", "clusterIP": "10.0.0.7"}},
        Readiness("ready", "10.0.0.7"),
    ),
    (
        "Service",
        {"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}},
        Readiness("progressing", "no load balancer address yet"),
    ),
    (
        "NodePool",
        _ready_condition("NodePool", "karpenter.sh/v1", "True"),
        Readiness("ready", "Why"),
    ),
    (
        "CacheBackend",
        _ready_condition("CacheBackend", "inferencecache.io/v1alpha1", "False"),
        Readiness("progressing", "Why"),
    ),
    ("CacheBackend", {"status": {}}, Readiness("progressing", "no Ready condition yet")),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "live", "expected"), READINESS)
def test_readiness_is_read_as_each_kind_reports_it(
    kind: str, live: Mapping[str, Any] | None, expected: Readiness
) -> None:
    assert readiness(live, kind_named(kind)) == expected


def test_the_iec_states_read_are_states_of_the_crd(shared_dir: Path) -> None:
    crd = yaml.safe_load(
        (
            shared_dir / "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
        ).read_text(encoding="utf-8")
    )
    (v1,) = (v for v in crd["spec"]["versions"] if v["name"] == "v1")
    states = v1["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["state"]
    assert {READY_STATE, FAILED_STATE} <= set(states["enum"])


def test_a_team_tls_bucket_names_the_iec_certificate_output() -> None:
    spec = flat_spec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="m",
        target="hyperpod-eks", namespace="inference",
    )  # fmt: skip
    context = RenderContext(region="us-east-1", tls_bucket="acme-tls-certs")
    (iec,) = (e.object for e in prepare(spec, context=context).objects)
    assert iec["spec"]["tlsConfig"] == {
        "tlsCertificateOutputS3Uri": "s3://acme-tls-certs/inference/m"
    }
    with pytest.raises(MlccError) as caught:
        RenderContext(tls_bucket="Not_A_Bucket")
    assert [p.pointer for p in caught.value.problems] == ["/tls_bucket"]
