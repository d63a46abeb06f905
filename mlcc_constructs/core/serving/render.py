"""The one render pipeline: a :class:`DeploymentSpec` → its prepared facts → the ordered
``(construct id, object)`` list of its target → validated.

``mlcc render``, the cdk8s constructs (``ServingChart`` and the per-kind ones) and the CDK
serving stack all emit exactly this list; none re-derives or drops an object. The target's
manifest names the module that lays the objects out (``core/serving/renderers/<target>.py``), so the
pipeline never compares target names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.kinds.validation import validate_objects
from mlcc_constructs.core.serving.prepare.deployment import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec


class RenderedObject(NamedTuple):
    """One object of a deployment and the construct id it is emitted under."""

    id: str
    """Construct id, unique within the deployment (``Deployment``, ``ConfigMap``...)."""
    object: dict[str, Any]
    """The Kubernetes object."""


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


def render_prepared(prepared: PreparedDeployment) -> tuple[RenderedObject, ...]:
    """The objects of an already prepared deployment, through its target's renderer."""
    renderer = prepared.target.renderer_module()
    entries: list[RenderedObject] = renderer.render(prepared)
    return tuple(entries)


def render(
    spec: DeploymentSpec,
    *,
    context: RenderContext | None = None,
    registry: EngineRegistry | None = None,
    validate: bool = True,
) -> Rendered:
    """Prepare, render and (by default) validate ``spec``; raises :class:`MlccError`."""
    prepared = prepare(spec, context=context, registry=registry)
    entries = prepared.objects
    if validate:
        validate_objects(entry.object for entry in entries)
    return Rendered(entries=entries, prepared=prepared)
