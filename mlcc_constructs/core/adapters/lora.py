"""The LoRA memory cap (seed lora-delivery §3); the rank fit is ``core/adapters/lora_rank.py``.

Integrator API:

- :func:`fit_max_rank` ``(adapters, tune_ranks, default, allowed, explicit=None) -> RankFit``:
  the serving ``max_lora_rank``. ``adapters`` are :class:`AdapterRank` (see
  ``adapter_record.AdapterRecord.rank()``), ``default``/``allowed`` come from the engine
  manifest's ``capability_map.lora_max_rank``.
- :func:`model_geometry` ``(config_json_dict) -> ModelGeometry`` from a staged ``config.json``.
- :func:`lora_buffer_bytes` ``(geometry, tp=, max_loras=, rank=) -> int`` per GPU.
- :func:`check_memory_cap` ``(geometry, gpu_memory_gib=, tp=, max_loras=, rank=,
  utilization=0.9, adapters=(), pp=1, allowed=()) -> MemoryCheck``; raises :class:`MlccError`
  naming the adapters and every number when the buffer is above 10% of the free memory, and
  the largest of the ``allowed`` ranks that fits.
- :func:`largest_fitting_rank` ``(check, geometry, max_loras=, allowed=) -> int | None``: the
  largest allowed rank whose buffer fits under a :class:`MemoryCheck`'s cap. With ``pp``
  pipeline stages each GPU holds its stage's layers and 1/(TP x PP) of the weights, so the
  same GPUs fit a larger rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.support.errors import MlccError, Problem, fail

GIB = 1 << 30
CAP_FRACTION = Fraction(1, 10)
"""The LoRA buffer may use at most this share of (GPU memory x utilization - weights)."""

# vLLM's LoRA-capable linear layers of a Llama-style decoder. Column-parallel layers split
# their output across TP ranks, row-parallel ones their input.
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
ROW_PARALLEL = ("o_proj", "down_proj")

DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}
)


# --- model geometry ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ModelGeometry:
    """What the memory cap needs from a decoder's ``config.json``."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype: str
    dtype_bytes: int
    parameters: int
    """Parameter count: ``num_parameters`` when the config has it, else computed (see below)."""


def _positive_int(config: Mapping[str, Any], key: str, problems: list[Problem]) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        problems.append(
            Problem(
                message="missing or not a positive integer",
                where="config.json",
                pointer=f"/{key}",
                value=value,
                allowed="a positive integer",
                fix="point at the staged model folder holding the model's config.json",
            )
        )
        return 1
    return value


def model_geometry(config: Mapping[str, Any]) -> ModelGeometry:
    """Geometry from a Hugging Face ``config.json`` dict (Llama/Mistral/Qwen style).

    Keys: ``num_hidden_layers``, ``hidden_size``, ``intermediate_size``,
    ``num_attention_heads``, ``num_key_value_heads`` (default: heads), ``head_dim`` (default:
    hidden / heads), ``torch_dtype`` (or ``dtype``). The parameter count is ``num_parameters``
    when present, else embeddings (``vocab_size`` x hidden, twice unless
    ``tie_word_embeddings``) + per layer (q, k, v, o, gate, up, down + 2 norms) + final norm.
    """
    problems: list[Problem] = []
    layers = _positive_int(config, "num_hidden_layers", problems)
    hidden = _positive_int(config, "hidden_size", problems)
    intermediate = _positive_int(config, "intermediate_size", problems)
    heads = _positive_int(config, "num_attention_heads", problems)
    kv_heads = (
        _positive_int(config, "num_key_value_heads", problems)
        if "num_key_value_heads" in config
        else heads
    )
    head_dim = (
        _positive_int(config, "head_dim", problems) if "head_dim" in config else hidden // heads
    )
    vocab = _positive_int(config, "vocab_size", problems) if "num_parameters" not in config else 0
    dtype = config.get("torch_dtype", config.get("dtype"))
    if dtype not in DTYPE_BYTES:
        problems.append(
            Problem(
                message="missing or unknown dtype",
                where="config.json",
                pointer="/torch_dtype",
                value=dtype,
                allowed=", ".join(DTYPE_BYTES),
            )
        )
    if problems:
        raise MlccError(problems)
    if "num_parameters" in config:
        parameters = _positive_int(config, "num_parameters", problems)
        if problems:
            raise MlccError(problems)
    else:
        q_out, kv_out = heads * head_dim, kv_heads * head_dim
        per_layer = (
            hidden * q_out + 2 * hidden * kv_out + q_out * hidden + 3 * hidden * intermediate
        ) + 2 * hidden
        embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings", False) else 2)
        parameters = embeddings + layers * per_layer + hidden
    return ModelGeometry(
        layers=layers,
        hidden=hidden,
        intermediate=intermediate,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        dtype=str(dtype),
        dtype_bytes=DTYPE_BYTES[str(dtype)],
        parameters=parameters,
    )


# --- memory cap -------------------------------------------------------------------------


def _check_tp(geometry: ModelGeometry, tp: int) -> None:
    problems = []
    if tp < 1:
        problems.append(Problem(message="tensor parallel degree must be ≥ 1", value=tp))
    else:
        for what, count in (
            ("num_attention_heads", geometry.heads),
            ("intermediate_size", geometry.intermediate),
        ):
            if count % tp:
                problems.append(
                    Problem(
                        message=f"{what} {count} is not divisible by the tensor parallel degree",
                        pointer="/compute/tensor_parallel_degree",
                        value=tp,
                    )
                )
        if geometry.kv_heads % tp and tp % geometry.kv_heads:
            problems.append(
                Problem(
                    message=f"num_key_value_heads {geometry.kv_heads} and the tensor parallel "
                    "degree must divide one another",
                    pointer="/compute/tensor_parallel_degree",
                    value=tp,
                )
            )
    if problems:
        raise MlccError(problems)


def module_shapes(geometry: ModelGeometry, tp: int) -> dict[str, tuple[int, int]]:
    """Per-GPU ``(in_local, out_local)`` of each LoRA module of one layer at TP ``tp``.

    Column-parallel (q, k, v, gate, up) split the output, row-parallel (o, down) the input;
    with more TP ranks than KV heads each rank holds one replicated KV head.
    """
    _check_tp(geometry, tp)
    g = geometry
    q_out = g.heads * g.head_dim
    kv_local = max(g.kv_heads // tp, 1) * g.head_dim
    return {
        "q_proj": (g.hidden, q_out // tp),
        "k_proj": (g.hidden, kv_local),
        "v_proj": (g.hidden, kv_local),
        "gate_proj": (g.hidden, g.intermediate // tp),
        "up_proj": (g.hidden, g.intermediate // tp),
        "o_proj": (q_out // tp, g.hidden),
        "down_proj": (g.intermediate // tp, g.hidden),
    }


def lora_elements_per_rank(geometry: ModelGeometry, tp: int, pp: int = 1) -> int:
    """Σ_layers Σ_modules (in_local + out_local): buffer elements per unit of rank per LoRA.

    With ``pp`` pipeline stages a GPU holds the adapters of its stage's layers only: the
    largest stage, ``ceil(layers / pp)`` layers, bounds the per-GPU buffer."""
    per_layer = sum(i + o for i, o in module_shapes(geometry, tp).values())
    return math.ceil(geometry.layers / pp) * per_layer


def lora_buffer_bytes(
    geometry: ModelGeometry, *, tp: int, max_loras: int, rank: int, pp: int = 1
) -> int:
    """LoRA buffer bytes per GPU: max_loras x rank x dtype_bytes x Σ_layers Σ_modules (in+out)
    (the layers of one pipeline stage when ``pp`` > 1)."""
    return max_loras * rank * geometry.dtype_bytes * lora_elements_per_rank(geometry, tp, pp)


def weights_bytes_per_gpu(geometry: ModelGeometry, tp: int, pp: int = 1) -> int:
    """Parameters x dtype bytes / (TP x PP) (rounded up): each GPU of a TP x PP group holds
    its tensor shard of its stage's layers."""
    return math.ceil(geometry.parameters * geometry.dtype_bytes / (tp * pp))


@dataclass(frozen=True, kw_only=True)
class MemoryCheck:
    """Every number of the memory cap, per GPU, in bytes."""

    buffer_bytes: int
    cap_bytes: int
    gpu_memory_bytes: int
    usable_bytes: int
    """GPU memory x utilization (rounded down)."""
    weights_bytes: int
    elements_per_rank: int

    @property
    def ok(self) -> bool:
        """True when the buffer fits under the cap."""
        return self.buffer_bytes <= self.cap_bytes


def memory_check(
    geometry: ModelGeometry,
    *,
    gpu_memory_gib: float,
    tp: int,
    max_loras: int,
    rank: int,
    utilization: float = 0.9,
    pp: int = 1,
) -> MemoryCheck:
    """Compute the cap's numbers without judging (see :func:`check_memory_cap`).

    ``cap = floor(10% x (gpu_memory_gib x 2^30 x utilization - weights per GPU))``; the
    arithmetic is exact (fractions), so the numbers are reproducible by hand.
    """
    memory = Fraction(str(gpu_memory_gib)) * GIB
    usable = memory * Fraction(str(utilization))
    weights = weights_bytes_per_gpu(geometry, tp, pp)
    cap = math.floor((usable - weights) * CAP_FRACTION)
    return MemoryCheck(
        buffer_bytes=lora_buffer_bytes(geometry, tp=tp, max_loras=max_loras, rank=rank, pp=pp),
        cap_bytes=cap,
        gpu_memory_bytes=math.floor(memory),
        usable_bytes=math.floor(usable),
        weights_bytes=weights,
        elements_per_rank=lora_elements_per_rank(geometry, tp, pp),
    )


def check_memory_cap(
    geometry: ModelGeometry,
    *,
    gpu_memory_gib: float,
    tp: int,
    max_loras: int,
    rank: int,
    utilization: float = 0.9,
    adapters: Iterable[str] = (),
    pp: int = 1,
    allowed: Sequence[int] = (),
) -> MemoryCheck:
    """Refuse a LoRA buffer above 10% of (per-GPU memory x utilization - per-GPU weights).

    ``gpu_memory_gib`` is the catalog's per-GPU memory; ``adapters`` are the names the
    error lists; ``allowed``: the engine's allowed ranks, the largest that fits is named in
    the fix. Returns the numbers when the buffer fits; raises :class:`MlccError` naming the
    adapters and every number when it does not (or when the weights alone don't fit).
    """
    if max_loras < 1 or rank < 1 or not 0 < utilization <= 1:
        raise fail(
            "max_loras and rank must be ≥ 1 and utilization in (0, 1]",
            value={"max_loras": max_loras, "rank": rank, "utilization": utilization},
        )
    check = memory_check(
        geometry,
        gpu_memory_gib=gpu_memory_gib,
        tp=tp,
        max_loras=max_loras,
        rank=rank,
        utilization=utilization,
        pp=pp,
    )
    if check.ok:
        return check
    names = ", ".join(sorted(adapters)) or "none recorded"
    weights = (
        f"weights {check.weights_bytes:,} bytes ({geometry.parameters:,} parameters x "
        f"{geometry.dtype_bytes} bytes {geometry.dtype} / TP {tp}"
        + (f" / PP {pp})" if pp > 1 else ")")
    )
    if check.cap_bytes < 0:
        message = (
            f"the model does not fit: {weights} exceed GPU memory {gpu_memory_gib} GiB x "
            f"utilization {utilization} = {check.usable_bytes:,} bytes per GPU; adapters: {names}"
        )
        fix = "use a larger GPU or raise the tensor parallel degree"
    else:
        message = (
            f"LoRA buffer {check.buffer_bytes:,} bytes per GPU (max_loras {max_loras} x rank "
            f"{rank} x {geometry.dtype_bytes} bytes {geometry.dtype} x "
            f"{check.elements_per_rank:,} elements over {math.ceil(geometry.layers / pp)} "
            f"layers at TP {tp}"
            f"{f' PP {pp}' if pp > 1 else ''}) "
            f"exceeds the cap {check.cap_bytes:,} bytes = 10% of (GPU memory {gpu_memory_gib} "
            f"GiB x utilization {utilization} = {check.usable_bytes:,} bytes - {weights}); "
            f"adapters: {names}"
        )
        fits = largest_fitting_rank(check, geometry, max_loras=max_loras, allowed=allowed)
        at = f"at TP {tp}" + (f" PP {pp}" if pp > 1 else "")
        fix = (
            "lower max_loras or the max LoRA rank"
            + (
                f" (the largest allowed rank that fits {at} with max_loras {max_loras}: {fits})"
                if fits is not None
                else (f" (no allowed rank fits {at} with max_loras {max_loras})" if allowed else "")
            )
            + ", raise the tensor parallel degree, spread the model over more pipeline stages "
            "(nodes), or use a GPU with more memory"
        )
    raise fail(message, pointer="/lora/enabled", fix=fix)


def largest_fitting_rank(
    check: MemoryCheck, geometry: ModelGeometry, *, max_loras: int, allowed: Sequence[int]
) -> int | None:
    """The largest of ``allowed`` whose buffer (``max_loras`` x rank x dtype bytes x the
    check's elements per rank: its TP and its stage's layers) fits under ``check``'s cap;
    ``None`` when none does."""
    per_rank = max_loras * geometry.dtype_bytes * check.elements_per_rank
    fitting = [rank for rank in allowed if rank * per_rank <= check.cap_bytes]
    return max(fitting) if fitting else None
