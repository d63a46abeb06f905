"""The one render pipeline: a :class:`DeploymentSpec` → its prepared facts → the ordered
``(construct id, object)`` list of its target's kinds → validated.

``mlcc render``, the cdk8s constructs (``ServingChart`` and the per-kind ones) and the CDK
serving stacks all emit exactly this list; none re-derives or drops an object. Which kinds a
target renders is data (its manifest's ``kinds``), and each kind is one module of
:mod:`mlcc_constructs.core.serving.kinds`, so the pipeline never compares target or kind
names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.kinds.registry import RenderedObject, validate_objects
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """The objects of one deployment, in apply order, and the notes for the user."""

    entries: tuple[RenderedObject, ...]
    prepared: PreparedDeployment

    @property
    def objects(self) -> tuple[dict[str, Any], ...]:
        """The objects alone, in apply order."""
        return tuple(entry.object for entry in self.entries)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Resolver and render notes (omitted capabilities, unchecked versions...)."""
        return self.prepared.warnings


def render(
    spec: DeploymentSpec,
    *,
    context: RenderContext | None = None,
    registry: EngineRegistry | None = None,
    validate: bool = True,
) -> Rendered:
    """Prepare, render and (by default) validate ``spec``; raises :class:`MlccError`."""
    prepared = prepare(spec, context=context, registry=registry)
    if validate:
        validate_objects(entry.object for entry in prepared.objects)
    return Rendered(entries=prepared.objects, prepared=prepared)
