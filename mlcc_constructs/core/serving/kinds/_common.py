"""Pieces several kind modules share: object metadata and the readers of status."""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import object_labels


def metadata(facts: DeploymentFacts, name: str, *, namespaced: bool = True) -> dict[str, Any]:
    """``metadata`` of one object of the deployment: name, namespace (unless cluster-scoped),
    labels."""
    result: dict[str, Any] = {"name": name}
    if namespaced:
        result["namespace"] = facts.names.namespace
    result["labels"] = object_labels(facts.names, facts.resolution.manifest.engine)
    return result
