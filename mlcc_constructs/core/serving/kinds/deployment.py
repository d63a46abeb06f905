"""``Deployment``: the engine's pods where they are the library's own (eks), around the pod
template prepared once (:mod:`mlcc_constructs.core.serving.prepare.pod`, CacheBackend wiring
included).

* **Rollout**: the spec's ``rollout``
  (:func:`~mlcc_constructs.core.serving.prepare.disruption.rollout_strategy`): ``surge``
  (default) is ``maxSurge: 1, maxUnavailable: 0``, which never drops serving capacity and needs
  a spare GPU node; ``replace`` is ``maxSurge: 0, maxUnavailable: 1`` for a cluster with none.
* **Readiness** as ``kubectl rollout status`` reads it: the controller observed the current
  generation and every replica is updated and available
  (:func:`~mlcc_constructs.core.serving.kinds._readiness.deployment_readiness`, the rule the
  serving stacks' readiness Lambda also judges with).
* **Streamed model** (``model_load: stream``): the annotation
  ``mlcc-constructs/streamed-model`` holds the model's URI, which ``mlcc adapter clean`` reads
  back (no PersistentVolume names it) before it deletes a model a deployment serves.
* **Progress deadline**: ``progressDeadlineSeconds`` is the deployment's ready timeout
  (:mod:`mlcc_constructs.core.serving.prepare.ready_timeout`), not Kubernetes' 600 s default,
  which a large model's first start outlasts: the Deployment reports
  ``ProgressDeadlineExceeded`` when the deploy's own deadline passes, not before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.platform.labels import STREAMED_MODEL_ANNOTATION
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._readiness import deployment_readiness
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import (
    EngineView,
    Kind,
    PodShape,
    RenderedObject,
    pod_engine,
)
from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.prepare.disruption import rollout_strategy
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import pod_selector
from mlcc_constructs.core.support.json_types import json_copy


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The engine Deployment (module doc); nothing over several nodes (the LeaderWorkerSet)."""
    if facts.resolution.nodes > 1:
        return []
    assert facts.pod_template is not None  # a target that lists Deployment has pod volumes
    meta = metadata(facts, facts.names.base)
    if facts.resolution.model_load == "stream":  # no PersistentVolume names the model
        meta["annotations"] = {STREAMED_MODEL_ANNOTATION: facts.source.uri}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": facts.spec.scaling.replicas,
            "progressDeadlineSeconds": facts.ready_timeout.seconds,
            "selector": {"matchLabels": pod_selector(facts.names)},
            "strategy": rollout_strategy(facts.spec.rollout.strategy),
            "template": json_copy(dict(facts.pod_template)),
        },
    }
    if facts.spec.scaling.autoscaling is not None:
        # KEDA's HPA owns the count (kinds/scaled_object.py): a replicas here would reset it on
        # every apply, as cdk8s-plus leaves it out under an attached HPA (k8s/workload.py).
        workload: dict[str, Any] = deployment["spec"]  # type: ignore[assignment]
        del workload["replicas"]
    return [RenderedObject("Deployment", deployment)]


def engine(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> EngineView:
    """The engine container's command, args and env (``envFrom`` ConfigMaps among ``objects``)."""
    pod = obj["spec"]["template"]["spec"]
    return pod_engine(pod, ENGINE_CONTAINER, objects, namespace=obj["metadata"].get("namespace"))


def pods(obj: Mapping[str, Any]) -> list[PodShape]:
    """Every pod of a Deployment is its template."""
    return [PodShape("pod", obj["spec"]["template"])]


KIND = Kind(
    kind="Deployment",
    api_version="apps/v1",
    plural="deployments",
    namespaced=True,
    apply_phase=50,
    validate=core_object_problems,
    readiness=deployment_readiness,
    render=render,
    engine=engine,
    pods=pods,
)
