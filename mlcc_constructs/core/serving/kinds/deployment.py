"""``Deployment``: the engine's pods where they are the library's own (eks), around the pod
template prepared once (:mod:`mlcc_constructs.core.serving.prepare.pod`, CacheBackend wiring
included).

* **Rollout**: ``maxSurge: 1, maxUnavailable: 0`` never drops serving capacity.
* **Readiness** as ``kubectl rollout status`` reads it: the controller observed the current
  generation and every replica is updated and available.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import (
    EngineView,
    Kind,
    Readiness,
    RenderedObject,
    env_of,
)
from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import pod_selector


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The engine Deployment (module doc)."""
    assert facts.pod_template is not None  # a target that lists Deployment has pod volumes
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(facts, facts.names.base),
        "spec": {
            "replicas": facts.spec.replicas,
            "selector": {"matchLabels": pod_selector(facts.names)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": copy.deepcopy(dict(facts.pod_template)),
        },
    }
    return [RenderedObject("Deployment", deployment)]


def readiness(obj: Mapping[str, Any]) -> Readiness:
    """Ready when every replica of the current generation is updated and available."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is not None and status.get("observedGeneration", -1) < generation:
        return Readiness("progressing", f"generation {generation} not observed yet")
    for entry in status.get("conditions") or []:
        if entry.get("type") == "Progressing" and entry.get("reason") == "ProgressDeadlineExceeded":
            return Readiness("failed", str(entry.get("message") or "progress deadline exceeded"))
    wanted = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas", 0))
    available = int(status.get("availableReplicas", 0))
    detail = f"{available}/{wanted} replicas available, {updated} updated"
    if updated >= wanted and available >= wanted and status.get("replicas", 0) <= wanted:
        return Readiness("ready", detail)
    return Readiness("progressing", detail)


def engine(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> EngineView:
    """The engine container's command, args and env (``envFrom`` ConfigMaps among ``objects``)."""
    pod = obj["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == ENGINE_CONTAINER)
    return EngineView(
        command=tuple(container["command"]) if "command" in container else None,
        args=tuple(container.get("args", ())),
        env=env_of(container, objects, namespace=obj["metadata"].get("namespace")),
    )


KIND = Kind(
    kind="Deployment",
    api_version="apps/v1",
    plural="deployments",
    namespaced=True,
    apply_phase=50,
    validate=core_object_problems,
    readiness=readiness,
    render=render,
    engine=engine,
)
