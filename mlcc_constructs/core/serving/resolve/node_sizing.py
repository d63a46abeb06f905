"""``nodes: auto``: the smallest node count whose GPUs hold the model's weights and still
leave the stated KV-cache headroom on every GPU.

Rule: with ``N`` nodes of ``G`` GPUs of ``M`` bytes each and vLLM's
``--gpu-memory-utilization`` ``u``, each GPU holds ``weights / (N x G)`` (TP x PP shards the
weights evenly over every GPU of the group) inside a budget of ``M x u``; what is left is the
KV cache. ``N`` is the smallest count with ``budget - share >= headroom``, the headroom
given as a fraction of the budget. Why a headroom at all: vLLM sizes its KV cache from what
the weights leave of ``M x u`` and refuses to start when that cache cannot hold one
``max_model_len`` sequence ("The model's max seq len ... is larger than the maximum number of
tokens that can be stored in KV cache": vllm-project/vllm#2163 made it an error), so "the
weights fit" is not enough; the caller states how much it keeps for the cache (activations
and CUDA graphs come out of the same headroom).

With the model's ``config.json`` (:class:`KvNeed`), the headroom is also at least one
context-length sequence's KV cache on each GPU: ``2 (K and V) x ceil(layers / PP) x
max(kv_heads / TP, 1) x head_dim x dtype bytes`` per token (a TP rank holds its share of the
KV heads, at least one; a stage its layers; the cache in the model's dtype, vLLM's
``--kv-cache-dtype auto``), times the context length: the engine's setting when the user gives
one, else the config's ``max_position_embeddings`` (what vLLM and SGLang default to). TP is the
GPUs per node and PP the nodes, the layout ``auto`` resolves to.
Pure: no I/O; the caller passes the model's bytes (``ModelSize.bytes``) and the instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import ceil
from typing import Any

from mlcc_constructs.core.adapters.lora import ModelGeometry, model_geometry
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.serving.resolve.model_size import model_size
from mlcc_constructs.core.serving.resolve.settings import EngineSettings
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

GIB = 1024**3
DEFAULT_MAX_NODES = 8
"""Upper bound of the search when the caller gives none: an LWS group larger than this is a
design choice to make by hand, not a default."""


@dataclass(frozen=True, kw_only=True)
class KvNeed:
    """One context-length sequence's KV cache, which every GPU must hold (module doc).

    ``geometry``: the decoder's shape (from its ``config.json``). ``context_length``: the
    tokens of one sequence. ``source``: where the length comes from (a pointer)."""

    geometry: ModelGeometry
    context_length: int
    source: str

    def bytes_per_gpu(self, *, tp: int, pp: int) -> int:
        """KV bytes of one sequence on one GPU of a TP x PP group."""
        g = self.geometry
        per_token = 2 * ceil(g.layers / pp) * max(g.kv_heads // tp, 1) * g.head_dim
        return per_token * g.dtype_bytes * self.context_length


@dataclass(frozen=True, kw_only=True)
class NodeSizing:
    """The node count ``nodes: auto`` resolves to, with the numbers behind it."""

    nodes: int
    gpus_per_node: int
    weight_share_bytes: int
    """Weights per GPU: model bytes / (nodes x GPUs per node)."""
    budget_bytes: int
    """Per-GPU memory vLLM may use: GPU memory x utilization."""
    headroom_bytes: int
    """What is left per GPU for the KV cache: budget - weight share."""
    kv: KvNeed | None = None
    """The one-sequence KV need the headroom also covers (``None``: no config.json)."""

    @property
    def headroom_gib(self) -> float:
        """:attr:`headroom_bytes` in GiB."""
        return self.headroom_bytes / GIB

    @property
    def headroom_fraction(self) -> float:
        """:attr:`headroom_bytes` as a fraction of :attr:`budget_bytes`."""
        return self.headroom_bytes / self.budget_bytes

    @property
    def explanation(self) -> str:
        """One line the CLI prints."""
        text = (
            f"nodes: auto -> {self.nodes} node(s) x {self.gpus_per_node} GPUs: "
            f"{self.weight_share_bytes / GIB:.1f} GiB of weights per GPU in a "
            f"{self.budget_bytes / GIB:.1f} GiB budget leaves {self.headroom_gib:.1f} GiB "
            f"({self.headroom_fraction:.0%}) for the KV cache"
        )
        if self.kv is not None:
            one = self.kv.bytes_per_gpu(tp=self.gpus_per_node, pp=self.nodes)
            text += (
                f"; one {self.kv.context_length:,}-token sequence needs {one / GIB:.2f} GiB of it "
                f"({self.kv.source})"
            )
        return text


def nodes_for_model(
    *,
    model_bytes: int | None,
    instance: InstanceType,
    gpu_memory_utilization: float,
    kv_headroom_fraction: float,
    max_nodes: int = DEFAULT_MAX_NODES,
    where: str = "",
    kv: KvNeed | None = None,
) -> NodeSizing:
    """The smallest node count (1..``max_nodes``) whose per-GPU headroom is at least
    ``kv_headroom_fraction`` of the per-GPU budget and, with ``kv``, one sequence's KV cache at
    that count's TP (the GPUs per node) and PP (the nodes) (module doc). Raises when the size
    is unknown or no count up to ``max_nodes`` leaves the headroom."""
    if model_bytes is None:
        raise fail(
            "nodes: auto needs the model's size: it derives the node count from the weights' bytes",
            where=where,
            pointer="/compute/nodes",
            value="auto",
            fix="set the spec's model.bytes (the safetensors index's metadata.total_size) or "
            "model.config (its config.json), or give nodes as a number",
        )
    if not 0 < gpu_memory_utilization <= 1:
        raise fail(
            "gpu_memory_utilization must be in (0, 1]",
            where=where,
            value=gpu_memory_utilization,
            allowed="0 < value <= 1",
        )
    if not 0 <= kv_headroom_fraction < 1:
        raise fail(
            "the KV-cache headroom fraction must be in [0, 1)",
            where=where,
            value=kv_headroom_fraction,
            allowed="0 <= value < 1",
        )
    budget = gpu_budget(instance, gpu_memory_utilization)
    for nodes in range(1, max_nodes + 1):
        share, need = _share_and_need(
            model_bytes, budget, kv_headroom_fraction, kv, tp=instance.gpus, pp=nodes
        )
        if budget - share >= need:
            return NodeSizing(
                nodes=nodes,
                gpus_per_node=instance.gpus,
                weight_share_bytes=share,
                budget_bytes=budget,
                headroom_bytes=budget - share,
                kv=kv,
            )
    share = ceil(model_bytes / (max_nodes * instance.gpus))
    sequence = (
        f" or one {kv.context_length:,}-token sequence's KV cache "
        f"({kv.bytes_per_gpu(tp=instance.gpus, pp=max_nodes) / GIB:.2f} GiB per GPU, "
        f"{kv.source})"
        if kv is not None
        else ""
    )
    raise fail(
        f"the model ({model_bytes / GIB:.1f} GiB) does not fit {instance.name} even at "
        f"{max_nodes} nodes: {share / GIB:.1f} GiB of weights per GPU in a "
        f"{budget / GIB:.1f} GiB budget leaves less than {kv_headroom_fraction:.0%} for the "
        f"KV cache{sequence}",
        where=where,
        pointer="/compute/nodes",
        value="auto",
        fix="pick an instance with more GPU memory, a quantized (e.g. FP8) checkpoint, or "
        "set nodes explicitly",
    )


def gpu_budget(instance: InstanceType, gpu_memory_utilization: float) -> int:
    """Per-GPU bytes the engine may use: the GPU's memory x ``gpu_memory_utilization``."""
    return int(instance.gpu_memory_gib * GIB * gpu_memory_utilization)


def _share_and_need(
    model_bytes: int, budget: int, fraction: float, kv: KvNeed | None, *, tp: int, pp: int
) -> tuple[int, float]:
    """The weights one GPU of a TP x PP group holds, and the headroom it must keep (module doc)."""
    sequence = kv.bytes_per_gpu(tp=tp, pp=pp) if kv is not None else 0
    return ceil(model_bytes / (tp * pp)), max(budget * fraction, sequence)


KV_HEADROOM_FRACTION = 0.1
"""The share of each GPU's engine budget (its memory x ``gpu_memory_utilization``) that
``nodes: auto`` leaves free after the GPU's weight share, for the KV cache, activations and
CUDA graphs: the multi-node engines size their KV cache from what the weights leave and serve
only as many concurrent tokens as it holds, so weights that just fit serve almost nothing. A
tenth is a floor, not a tuning: set ``nodes`` as a number for more."""


CONTEXT_LENGTH_DIMENSIONS = ("max_model_len", "context_length", "ctx_size")
"""The manifest dimensions that set an engine's context length (vLLM's and LMI's
``max_model_len``, SGLang's ``context_length``, llama.cpp's ``ctx_size``)."""


def context_length(settings: EngineSettings) -> tuple[int, str] | None:
    """The context length the user set for the engine (first of
    :data:`CONTEXT_LENGTH_DIMENSIONS`, a whole number) and its pointer; ``None`` when unset (a
    value that is not a number is the dimension check's to refuse)."""
    for name in CONTEXT_LENGTH_DIMENSIONS:
        given = settings.dimension(name)
        if given is not None and given.value.isdigit():
            return int(given.value), given.pointer
    return None


def kv_need(
    model_config: Mapping[str, Any] | None, *, context_length: tuple[int, str] | None = None
) -> KvNeed | None:
    """The KV need of ``model_config``'s decoder (``None`` without a config, one the geometry
    cannot read, or no context length): ``context_length`` (the user's engine setting, with
    its pointer) else the config's ``max_position_embeddings``."""
    if model_config is None:
        return None
    try:
        geometry = model_geometry(model_config)
    except MlccError:
        return None  # not a decoder config the geometry reads: the fraction alone applies
    if context_length is not None:
        length, source = context_length
        return KvNeed(geometry=geometry, context_length=length, source=source)
    default = model_config.get("max_position_embeddings")
    if isinstance(default, bool) or not isinstance(default, int) or default <= 0:
        return None
    return KvNeed(
        geometry=geometry,
        context_length=default,
        source="config.json max_position_embeddings, the engines' default context length",
    )


def auto_sizing(
    spec: DeploymentSpec,
    instance: InstanceType,
    *,
    context_length: tuple[int, str] | None = None,
) -> NodeSizing | None:
    """What ``nodes: auto`` resolves to (``None``: the model's size is unknown): the fewest
    nodes whose GPUs hold the weights (the spec's ``model_bytes``, else ``model_config``'s
    parameters x dtype bytes: the cold start's size) with :data:`KV_HEADROOM_FRACTION` and one
    sequence's KV cache (:func:`kv_need`) left (:func:`nodes_for_model`; a model that fits on
    none is refused there)."""
    size = model_size(model_bytes=spec.model.bytes, model_config=spec.model.config)
    if size.bytes is None:
        return None
    return nodes_for_model(
        model_bytes=size.bytes,
        instance=instance,
        gpu_memory_utilization=spec.engine.gpu_memory_utilization,
        kv_headroom_fraction=KV_HEADROOM_FRACTION,
        kv=kv_need(spec.model.config, context_length=context_length),
    )


def explicit_nodes_problem(
    spec: DeploymentSpec,
    instance: InstanceType,
    *,
    tp: int,
    pp: int,
    context_length: tuple[int, str] | None = None,
) -> Problem | None:
    """Why a ``nodes`` given as a number cannot hold the model (the rule of ``nodes: auto``:
    the weights over the group's TP x PP GPUs leave :data:`KV_HEADROOM_FRACTION` of the budget
    and one sequence's KV cache on every GPU), naming the count that would; ``None`` when it
    fits or the model's size is unknown."""
    nodes = spec.compute.nodes
    size = model_size(model_bytes=spec.model.bytes, model_config=spec.model.config)
    utilization = spec.engine.gpu_memory_utilization
    if size.bytes is None or not isinstance(nodes, int) or not 0 < utilization <= 1:
        return None
    budget = gpu_budget(instance, utilization)
    kv = kv_need(spec.model.config, context_length=context_length)
    share, need = _share_and_need(size.bytes, budget, KV_HEADROOM_FRACTION, kv, tp=tp, pp=pp)
    if budget - share >= need:
        return None
    sequence = (
        f" or one {kv.context_length:,}-token sequence's KV cache "
        f"({kv.bytes_per_gpu(tp=tp, pp=pp) / GIB:.2f} GiB per GPU, {kv.source})"
        if kv is not None
        else ""
    )
    try:
        fits: NodeSizing | None = auto_sizing(spec, instance, context_length=context_length)
    except MlccError:
        fits = None
    if fits is not None and fits.nodes > nodes:
        allowed = f"{fits.nodes} or more (nodes: auto resolves to {fits.nodes})"
        fix = (
            f"set nodes: {fits.nodes} (or nodes: auto), pick an instance with more GPU "
            "memory, or a quantized (e.g. FP8) checkpoint"
        )
    elif fits is not None:  # every GPU of the nodes would hold it: a TP below them does not
        allowed = f"tensor_parallel_degree x pipeline_parallel_degree = {nodes * instance.gpus}"
        fix = f"shard the weights over all {nodes * instance.gpus} GPUs (leave "
        fix += "tensor_parallel_degree unset), or pick an instance with more GPU memory"
    else:
        allowed = f"none up to {DEFAULT_MAX_NODES} nodes of {instance.name}"
        fix = "pick an instance with more GPU memory, or a quantized (e.g. FP8) checkpoint"
    return Problem(
        message=f"the model ({size.bytes / GIB:.1f} GiB) does not fit {nodes} node(s) of "
        f"{instance.name}: {share / GIB:.1f} GiB of weights per GPU (TP {tp} x PP {pp}) in a "
        f"{budget / GIB:.1f} GiB budget leaves less than {KV_HEADROOM_FRACTION:.0%} for the KV "
        f"cache{sequence}",
        pointer="/compute/nodes",
        value=nodes,
        allowed=allowed,
        fix=fix,
    )
