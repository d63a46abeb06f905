"""``Role`` (``rbac.authorization.k8s.io/v1``): what the serving stacks' readiness Lambda may
read in a deployment's namespace (rendered by :mod:`mlcc_constructs.core.serving.readiness`,
applied by the CDK shell beside the deployment's objects, not part of the deployment)."""

from __future__ import annotations

from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, exists

KIND = Kind(
    kind="Role",
    api_version="rbac.authorization.k8s.io/v1",
    plural="roles",
    namespaced=True,
    apply_phase=5,
    validate=core_object_problems,
    readiness=exists,
)
