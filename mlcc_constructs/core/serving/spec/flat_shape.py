"""The flat spec shape of mlcc-constructs 0.1 (every field at the top level) and its move to
the sections of 0.2: where each flat field went (:data:`MOVED`), the one error a flat document
gets (:func:`flat_shape_problem`) and the rewrite ``mlcc spec migrate`` writes
(:func:`migrate_document`). Plain data in, plain data out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.support.errors import Problem

MOVED: dict[str, tuple[str, str]] = {
    "engine": ("engine", "name"),
    "image": ("engine", "image"),
    "engine_version": ("engine", "version"),
    "config_delivery": ("engine", "config_delivery"),
    "quantization": ("engine", "quantization"),
    "gpu_memory_utilization": ("engine", "gpu_memory_utilization"),
    "env": ("engine", "env"),
    "secret_env": ("engine", "secret_env"),
    "model": ("model", "uri"),
    "model_bytes": ("model", "bytes"),
    "model_config": ("model", "config"),
    "model_load": ("model", "load"),
    "instance_type": ("compute", "instance_type"),
    "instance_types": ("compute", "instance_types"),
    "tensor_parallel_degree": ("compute", "tensor_parallel_degree"),
    "pipeline_parallel_degree": ("compute", "pipeline_parallel_degree"),
    "nodes": ("compute", "nodes"),
    "lora": ("lora", "enabled"),
    "lora_adapters": ("lora", "adapters"),
    "lora_tune_ranks": ("lora", "tune_ranks"),
    "api_key_secret": ("endpoint", "api_key_secret"),
    "allow_from": ("endpoint", "allow_from"),
    "max_request_seconds": ("endpoint", "max_request_seconds"),
    "replicas": ("scaling", "replicas"),
    "autoscaling": ("scaling", "autoscaling"),
    "rollout": ("rollout", "strategy"),
    "accept_downtime": ("rollout", "accept_downtime"),
    "ready_timeout_seconds": ("rollout", "ready_timeout_seconds"),
    "cache_backend": ("cache", "backend"),
    "kv_cache": ("cache", "kv_cache"),
    "routing": ("cache", "routing"),
}
"""Each flat (0.1) field that moved into a section -> ``(section, field)``. The fields not
named here kept their place (``name``, ``served_model_name``, ``namespace``, ``target``,
``region``, ``service_account_role_arn``, ``endpoint`` and the context's ``account`` and
``profile``)."""

_SECTION_NAMES = frozenset(section for section, _ in MOVED.values())


def flat_fields(document: Mapping[str, Any]) -> list[str]:
    """The flat fields of ``document``, in its order: a moved field's name at the top level,
    unless it is also a section's name and holds a mapping (``engine: {name: vllm}`` is the new
    shape, ``engine: vllm`` the old)."""
    return [
        key
        for key, value in document.items()
        if key in MOVED and not (key in _SECTION_NAMES and isinstance(value, Mapping))
    ]


def flat_shape_problem(document: Mapping[str, Any], *, where: str = "") -> Problem | None:
    """The one problem of a document of the flat shape, naming where each of its flat fields
    moved; ``None`` for a document with none."""
    found = flat_fields(document)
    if not found:
        return None
    moves = "; ".join(f"{key} moved to {'.'.join(MOVED[key])}" for key in found)
    return Problem(
        message=f"the spec has the flat shape of mlcc-constructs 0.1: {moves}",
        where=where,
        pointer="/",
        fix="run mlcc spec migrate FILE --in-place (or -o NEW_FILE); see CHANGELOG.md 0.2.0",
    )


def migrate_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` in the sectioned shape: each flat field moved into its section, the order
    kept (a section stands where its first field stood, its fields in their order); a document
    already sectioned comes back equal."""
    found = set(flat_fields(document))
    result: dict[str, Any] = {}
    for key, value in document.items():
        if key in found:
            section, name = MOVED[key]
            result.setdefault(section, {})[name] = value
        elif key in _SECTION_NAMES and isinstance(value, Mapping):
            result[key] = {**result.get(key, {}), **value}  # a copy: the input stays as it was
        else:
            result[key] = value
    return result
