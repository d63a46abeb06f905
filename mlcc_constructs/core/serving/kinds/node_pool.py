"""``NodePool`` (``karpenter.sh/v1``): the app's GPU node pool on EKS Auto Mode, rendered by
:func:`mlcc_constructs.core.platform.gpu_capacity.gpu_node_pool` and validated against the rule
data of the v1 CRD (``data/crd_rules/nodepools.karpenter.sh.v1.json``). Auto Mode serves the
API itself: no add-on installs it."""

from __future__ import annotations

from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds.registry import Kind, ready_condition

RULES = CrdRules(file="nodepools.karpenter.sh.v1.json")

KIND = Kind(
    kind="NodePool",
    api_version="karpenter.sh/v1",
    plural="nodepools",
    namespaced=False,
    apply_phase=0,
    validate=RULES.problems,
    readiness=ready_condition,
)
