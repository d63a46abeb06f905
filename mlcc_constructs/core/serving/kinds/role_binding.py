"""``RoleBinding`` (``rbac.authorization.k8s.io/v1``): binds the readiness Lambda's Kubernetes
group (its EKS access entry's) to its ``Role`` (:mod:`mlcc_constructs.core.serving.readiness`)."""

from __future__ import annotations

from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, exists

KIND = Kind(
    kind="RoleBinding",
    api_version="rbac.authorization.k8s.io/v1",
    plural="rolebindings",
    namespaced=True,
    apply_phase=6,
    validate=core_object_problems,
    readiness=exists,
)
