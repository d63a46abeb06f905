"""LoRA rank fit (seed lora-delivery §3): a recorded adapter's rank need and the serving
``max_lora_rank`` fitted to every adapter a deployment serves, snapped up to what the engine
allows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class AdapterRank:
    """One recorded adapter's LoRA rank: PEFT ``r`` and its per-module ``rank_pattern``."""

    name: str = field(metadata=meta(minLength=1))
    """The adapter's name (named in errors)."""
    r: int = field(metadata=meta(minimum=1))
    """PEFT ``r``, the rank of every module without its own."""
    rank_pattern: Mapping[str, int] = field(
        default_factory=dict,
        metadata=meta(additionalProperties={"type": "integer", "minimum": 1}),
    )
    """Module name pattern → its rank (PEFT ``rank_pattern``). Default: none."""

    def __post_init__(self) -> None:
        if isinstance(self.rank_pattern, Mapping):
            object.__setattr__(self, "rank_pattern", MappingProxyType(dict(self.rank_pattern)))
        check_fields(self)

    @property
    def need(self) -> int:
        """The largest rank any module of this adapter uses."""
        return max([self.r, *self.rank_pattern.values()])


@dataclass(frozen=True, kw_only=True)
class RankFit:
    """The serving max LoRA rank and why: ``need`` is what recorded adapters/tunes require."""

    rank: int
    need: int
    explicit: bool
    warnings: tuple[str, ...] = ()


def snap_up(
    value: int, allowed: Sequence[int], *, what: str = "LoRA rank", pointer: str = "/lora/adapters"
) -> int:
    """The smallest allowed value ≥ ``value``; above the largest allowed → error at ``pointer``
    (the field that asks for that rank)."""
    ordered = sorted(allowed)
    for candidate in ordered:
        if candidate >= value:
            return candidate
    raise fail(
        f"{what} {value} is above the largest rank the engine allows",
        pointer=pointer,
        value=value,
        allowed=", ".join(str(a) for a in ordered),
        fix="retrain the adapter with a smaller r / rank_pattern",
    )


def fit_max_rank(
    adapters: Iterable[AdapterRank],
    tune_ranks: Mapping[str, int] | Iterable[int],
    default: int,
    allowed: Sequence[int],
    explicit: int | None = None,
    *,
    explicit_pointer: str = "/lora_max_rank",
) -> RankFit:
    """``snap_up(max(r / rank_pattern of every adapter, tune ranks, default), allowed)``.

    ``tune_ranks`` are ranks recorded at tune submit (technique → rank, or plain ints).
    An ``explicit`` user rank (set at ``explicit_pointer``) wins; it must be an allowed value,
    and a warning names the adapters that need more. A need above the largest allowed rank is
    an error at ``/lora_adapters``.
    """
    adapters = tuple(adapters)
    ranks = tuple(tune_ranks.values()) if isinstance(tune_ranks, Mapping) else tuple(tune_ranks)
    need = max([default, *ranks, *(a.need for a in adapters)])
    ordered = sorted(allowed)
    if explicit is None:
        return RankFit(rank=snap_up(need, ordered), need=need, explicit=False)
    if explicit > ordered[-1]:
        raise fail(
            "the explicit max LoRA rank is above the largest rank the engine allows",
            pointer=explicit_pointer,
            value=explicit,
            allowed=", ".join(str(a) for a in ordered),
            fix=f"use at most {ordered[-1]}",
        )
    if explicit not in ordered:
        raise fail(
            "the explicit max LoRA rank is not one the engine allows",
            pointer=explicit_pointer,
            value=explicit,
            allowed=", ".join(str(a) for a in ordered),
            fix=f"use {snap_up(explicit, ordered)} or leave it unset to derive it ({need} needed)",
        )
    warnings: list[str] = []
    if explicit < need:
        over = [f"{a.name} (r {a.need})" for a in adapters if a.need > explicit]
        over += [f"tune rank {r}" for r in ranks if r > explicit]
        warnings.append(
            f"explicit max LoRA rank {explicit} is below the {need} the recorded adapters need: "
            f"{', '.join(over)} will not load (derived: {snap_up(need, ordered)})"
        )
    return RankFit(rank=explicit, need=need, explicit=True, warnings=tuple(warnings))
