"""Picking a construct's objects out of a prepared deployment's one rendered list."""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.platform.targets import load_target, target_names
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import MlccError, Problem


def kind_targets(kind: str) -> list[str]:
    """The targets whose renderer yields ``kind``, by name."""
    return [n for n in target_names() if kind in load_target(n).kinds]


def require_kind(deployment: PreparedDeployment, kind: str, *, construct: str) -> None:
    """Refuse a deployment whose target yields no ``kind`` (the construct has nothing to emit)."""
    if kind in deployment.target.kinds:
        return
    serving = kind_targets(kind)
    raise MlccError(
        Problem(
            message=f"{construct} emits the {kind} of targets {', '.join(serving)}",
            pointer="/target",
            value=deployment.target.name,
            allowed=", ".join(serving),
            fix=f"use ServingChart (any target), or a spec with target {serving[0]!r}",
        )
    )


def entry(deployment: PreparedDeployment, entry_id: str) -> dict[str, Any] | None:
    """The object rendered under construct id ``entry_id``, or ``None``."""
    return next((e.object for e in deployment.objects if e.id == entry_id), None)
