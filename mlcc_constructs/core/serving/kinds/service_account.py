"""``ServiceAccount``: the pods' identity; the IRSA role annotation when a role ARN is given."""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, exists
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts

IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The ServiceAccount of the deployment's pods (no token mounted: the engine needs none)."""
    meta = metadata(facts, facts.names.base)
    role = facts.spec.service_account_role_arn
    if role:
        meta["annotations"] = {IRSA_ANNOTATION: role}
    account: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": meta,
        "automountServiceAccountToken": False,
    }
    return [RenderedObject("ServiceAccount", account)]


KIND = Kind(
    kind="ServiceAccount",
    api_version="v1",
    plural="serviceaccounts",
    namespaced=True,
    apply_phase=10,
    validate=core_object_problems,
    readiness=exists,
    render=render,
)
