"""A whole deployment spec document (parsed YAML/JSON, cdk.json entry, merged CLI layers) ->
the typed :class:`DeploymentSpec` and its render context, validated by the generated
``data/deployment-spec.schema.json`` (:mod:`.section_build`); every problem at once, each
naming the field's JSON pointer (``/compute/instance_type``). A document of the flat 0.1 shape
gets one problem naming where each of its fields moved (:mod:`.flat_shape`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SECTIONS, DeploymentSpec
from mlcc_constructs.core.serving.spec.flat_shape import flat_shape_problem
from mlcc_constructs.core.serving.spec.section_build import (
    SCHEMA_FILE,
    build_sections,
    schema,
    schema_problems,
)
from mlcc_constructs.core.support.errors import MlccError, raise_if_any

__all__ = ["CONTEXT_FIELDS", "SCHEMA_FILE", "build_document", "schema", "schema_problems"]

CONTEXT_FIELDS = ("account", "region", "profile")
_TOP_FIELDS = frozenset(DeploymentSpec.__dataclass_fields__)


def build_document(document: Mapping[str, Any]) -> tuple[DeploymentSpec, RenderContext]:
    """The spec and the render context of a whole document (a file's, an entry's)."""
    flat = flat_shape_problem(document)
    if flat is not None:
        raise MlccError([flat])
    raise_if_any(schema_problems(document))
    sections = build_sections({k: v for k, v in document.items() if k in SECTIONS}, checked=True)
    top = {k: v for k, v in document.items() if k in _TOP_FIELDS and k not in SECTIONS}
    context = RenderContext(**{k: document.get(k) for k in CONTEXT_FIELDS})
    return DeploymentSpec(**top, **sections), context
