"""Shared construct plumbing: turn construct props into checked render inputs."""

from __future__ import annotations

from mlcc_constructs.core.errors import fail
from mlcc_constructs.core.manifests import EngineRegistry
from mlcc_constructs.core.render import RenderContext, RenderInputs, prepare
from mlcc_constructs.core.spec import DeploymentSpec


def inputs_for(
    construct: str,
    target: str,
    spec: DeploymentSpec,
    context: RenderContext | None,
    registry: EngineRegistry | None,
) -> RenderInputs:
    """Render inputs of ``spec`` for ``target``; a spec for another target is refused."""
    if spec.target != target:
        raise fail(
            f"{construct} renders target {target!r}",
            pointer="target",
            value=spec.target,
            allowed=target,
            fix=f"use ServingChart (any target), or dataclasses.replace(spec, target={target!r})",
        )
    return prepare(spec, context=context, registry=registry)
