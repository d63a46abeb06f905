"""``nodes: auto``: the smallest node count whose GPUs hold the model's weights and still
leave the stated KV-cache headroom on every GPU.

Rule: with ``N`` nodes of ``G`` GPUs of ``M`` bytes each and vLLM's
``--gpu-memory-utilization`` ``u``, each GPU holds ``weights / (N x G)`` (TP x PP shards the
weights evenly over every GPU of the group) inside a budget of ``M x u``; what is left is the
KV cache. ``N`` is the smallest count with ``budget - share >= headroom``, the headroom
given as a fraction of the budget. Why a headroom at all: vLLM sizes its KV cache from what
the weights leave of ``M x u`` and refuses to start when that cache cannot hold one
``max_model_len`` sequence, so "the weights fit" is not enough; the caller states how much
it keeps for the cache (activations and CUDA graphs come out of the same headroom).
Pure: no I/O; the caller passes the model's bytes (``ModelSize.bytes``) and the instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import fail

GIB = 1024**3
DEFAULT_MAX_NODES = 8
"""Upper bound of the search when the caller gives none: an LWS group larger than this is a
design choice to make by hand, not a default."""


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
        return (
            f"nodes: auto -> {self.nodes} node(s) x {self.gpus_per_node} GPUs: "
            f"{self.weight_share_bytes / GIB:.1f} GiB of weights per GPU in a "
            f"{self.budget_bytes / GIB:.1f} GiB budget leaves {self.headroom_gib:.1f} GiB "
            f"({self.headroom_fraction:.0%}) for the KV cache"
        )


def nodes_for_model(
    *,
    model_bytes: int | None,
    instance: InstanceType,
    gpu_memory_utilization: float,
    kv_headroom_fraction: float,
    max_nodes: int = DEFAULT_MAX_NODES,
    where: str = "",
) -> NodeSizing:
    """The smallest node count (1..``max_nodes``) whose per-GPU headroom is at least
    ``kv_headroom_fraction`` of the per-GPU budget (module doc). Raises when the size is
    unknown or no count up to ``max_nodes`` leaves the headroom."""
    if model_bytes is None:
        raise fail(
            "nodes: auto needs the model's size: it derives the node count from the weights' bytes",
            where=where,
            pointer="/nodes",
            value="auto",
            fix="set the spec's model_bytes (the safetensors index's metadata.total_size), "
            "stage the model so its index is read, or give nodes as a number",
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
    budget = int(instance.gpu_memory_gib * GIB * gpu_memory_utilization)
    needed = budget * kv_headroom_fraction
    for nodes in range(1, max_nodes + 1):
        share = ceil(model_bytes / (nodes * instance.gpus))
        if budget - share >= needed:
            return NodeSizing(
                nodes=nodes,
                gpus_per_node=instance.gpus,
                weight_share_bytes=share,
                budget_bytes=budget,
                headroom_bytes=budget - share,
            )
    share = ceil(model_bytes / (max_nodes * instance.gpus))
    raise fail(
        f"the model ({model_bytes / GIB:.1f} GiB) does not fit {instance.name} even at "
        f"{max_nodes} nodes: {share / GIB:.1f} GiB of weights per GPU in a "
        f"{budget / GIB:.1f} GiB budget leaves less than {kv_headroom_fraction:.0%} for the "
        "KV cache",
        where=where,
        pointer="/nodes",
        value="auto",
        fix="pick an instance with more GPU memory, a quantized (e.g. FP8) checkpoint, or "
        "set nodes explicitly",
    )


KV_HEADROOM_FRACTION = 0.1
"""The share of each GPU's engine budget (its memory x ``gpu_memory_utilization``) that
``nodes: auto`` leaves free after the GPU's weight share, for the KV cache, activations and
CUDA graphs: the multi-node engines size their KV cache from what the weights leave and serve
only as many concurrent tokens as it holds, so weights that just fit serve almost nothing. A
tenth is a floor, not a tuning: set ``nodes`` as a number for more."""


def auto_nodes(spec: DeploymentSpec, instance: InstanceType) -> int | None:
    """The node count ``nodes: auto`` resolves to (``None``: the model's size is unknown):
    the fewest nodes whose GPUs hold the weights with :data:`KV_HEADROOM_FRACTION` left
    (:func:`~mlcc_constructs.core.serving.resolve.node_sizing.nodes_for_model`; a model that
    fits on none is refused there)."""
    if spec.model_bytes is None:
        return None
    return nodes_for_model(
        model_bytes=spec.model_bytes,
        instance=instance,
        gpu_memory_utilization=spec.gpu_memory_utilization,
        kv_headroom_fraction=KV_HEADROOM_FRACTION,
    ).nodes
