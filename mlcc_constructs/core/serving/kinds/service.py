"""``Service``: the deployment's ClusterIP Service on the engine's port."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.leader_worker_set import leader_selector
from mlcc_constructs.core.serving.kinds.registry import (
    Kind,
    Readiness,
    RenderedObject,
    load_balancer_address,
)
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import pod_selector


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The Service selecting the deployment's pods."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(facts, facts.names.base),
        "spec": {
            "type": "ClusterIP",
            "selector": pod_selector(facts.names)
            # Over several nodes only each group's leader serves the API.
            | (leader_selector() if facts.resolution.nodes > 1 else {}),
            "ports": [
                {
                    "name": "http",
                    "port": facts.container.port,
                    "targetPort": "http",
                    "protocol": "TCP",
                }
            ],
        },
    }
    return [RenderedObject("Service", service)]


def readiness(obj: Mapping[str, Any]) -> Readiness:
    """A ClusterIP Service is ready once it exists; a LoadBalancer one once it has an address."""
    if (obj.get("spec") or {}).get("type") != "LoadBalancer":
        return Readiness("ready", str((obj.get("spec") or {}).get("clusterIP", "exists")))
    return load_balancer_address(obj)


KIND = Kind(
    kind="Service",
    api_version="v1",
    plural="services",
    namespaced=True,
    apply_phase=60,
    validate=core_object_problems,
    readiness=readiness,
    render=render,
)
