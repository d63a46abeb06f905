"""Specs from short flat keyword tables in tests: ``flat_spec(engine="vllm", model=...,
instance_type=..., replicas=2)`` (a section's fields may also be given as a dict:
``compute={"instance_type": ...}``) builds the sectioned :class:`DeploymentSpec` by moving each
flat name into its section with the map of the 0.1 -> 0.2 migration
(:data:`~mlcc_constructs.core.serving.spec.flat_shape.MOVED`), values as given (Python objects
included). Tests of the sectioned API itself build sections directly (test_spec_sections.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from mlcc_constructs.core.serving.spec.deployment import (
    CacheSpec,
    ComputeSpec,
    DeploymentSpec,
    EngineSpec,
    LoraSpec,
    ModelSpec,
    RolloutSpec,
    ScalingSpec,
)
from mlcc_constructs.core.serving.spec.endpoint import Endpoint
from mlcc_constructs.core.serving.spec.flat_shape import MOVED, migrate_document

SECTION_TYPES: dict[str, type] = {
    "engine": EngineSpec,
    "model": ModelSpec,
    "compute": ComputeSpec,
    "lora": LoraSpec,
    "endpoint": Endpoint,
    "scaling": ScalingSpec,
    "rollout": RolloutSpec,
    "cache": CacheSpec,
}


def sectioned(flat: dict[str, Any], base: DeploymentSpec | None = None) -> dict[str, Any]:
    """``DeploymentSpec`` keywords from flat ones (``base``: the spec whose sections the flat
    names change, for :func:`replace_flat`)."""
    top: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        if key == "endpoint" and isinstance(value, Endpoint):
            sections.setdefault("endpoint", {}).update(
                {f.name: getattr(value, f.name) for f in dataclasses.fields(Endpoint)}
            )
            continue
        if key in SECTION_TYPES and isinstance(value, dict):  # already a section's fields
            sections.setdefault(key, {}).update(value)
            continue
        if key in MOVED:
            section, name = MOVED[key]
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    for section, values in sections.items():
        if base is not None:
            top[section] = dataclasses.replace(getattr(base, section), **values)
        else:
            top[section] = SECTION_TYPES[section](**values)
    return top


def flat_spec(**flat: Any) -> DeploymentSpec:
    """A spec from flat (0.1) keyword names."""
    return DeploymentSpec(**sectioned(flat))


def replace_flat(spec: DeploymentSpec, **flat: Any) -> DeploymentSpec:
    """``dataclasses.replace`` with flat (0.1) keyword names."""
    return dataclasses.replace(spec, **sectioned(flat, base=spec))


def sectioned_doc(document: Any) -> Any:
    """A spec document (or a list of them) written with flat (0.1) names, in sections: the
    migration ``mlcc spec migrate`` applies (tests keep their short flat tables)."""
    if isinstance(document, list):
        return [sectioned_doc(entry) for entry in document]
    return migrate_document(document)
