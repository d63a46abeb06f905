"""A model's size in bytes and where it was found, first found wins (:func:`model_size`): the
spec's ``model_bytes``; the staged model's safetensors index (``metadata.total_size``,
:func:`index_total_size`) when a caller read it (``mlcc plan --read-index``: render and synth
are offline and never do); the spec's ``model_config`` (parameters x dtype bytes, an estimate);
else unknown. The cold start's weight load and ``nodes: auto`` read the same size."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.adapters.lora import model_geometry
from mlcc_constructs.core.support.errors import MlccError, fail

SizeSource = Literal["spec", "index", "model_config"]
INDEX_FILE = "model.safetensors.index.json"
"""The index a sharded safetensors model carries beside its shards."""


@dataclass(frozen=True, kw_only=True)
class ModelSize:
    """The weights' size in bytes (``None``: unknown) and where it was found (module doc)."""

    bytes: int | None = None
    source: SizeSource | None = None


def model_size(
    *,
    model_bytes: int | None,
    model_config: Mapping[str, Any] | None = None,
    index_bytes: int | None = None,
) -> ModelSize:
    """The weights' size, first found wins (module doc): ``model_bytes`` (the spec's field),
    ``index_bytes`` (the staged index's ``total_size``, when read), ``model_config``'s
    parameters x dtype bytes."""
    if model_bytes is not None:
        return ModelSize(bytes=model_bytes, source="spec")
    if index_bytes is not None:
        return ModelSize(bytes=index_bytes, source="index")
    if model_config is not None:
        try:
            geometry = model_geometry(model_config)
        except MlccError:
            pass  # not a decoder config the geometry reads: the size stays unknown
        else:
            return ModelSize(
                bytes=geometry.parameters * geometry.dtype_bytes, source="model_config"
            )
    return ModelSize()


def index_total_size(document: Any, *, where: str = INDEX_FILE) -> int:
    """``metadata.total_size`` of a safetensors index document (the bytes of every shard's
    tensors), checked to be a positive integer."""
    metadata = document.get("metadata") if isinstance(document, Mapping) else None
    total = metadata.get("total_size") if isinstance(metadata, Mapping) else None
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise fail(
            "no model size in the safetensors index",
            where=where,
            pointer="/metadata/total_size",
            value=total,
            allowed="a positive integer (bytes)",
            fix="point at the staged model's model.safetensors.index.json, or set model.bytes "
            "in the spec",
        )
    return total
