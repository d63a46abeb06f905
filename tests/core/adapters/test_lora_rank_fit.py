"""Rank fit: snap_up(max(adapter r / rank_pattern, tune ranks, default), allowed)."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.adapters.lora_rank import AdapterRank, fit_max_rank, snap_up
from mlcc_constructs.core.support.errors import MlccError

VLLM_ALLOWED = (1, 8, 16, 32, 64, 128, 256, 320, 512)


@pytest.mark.parametrize(
    ("adapters", "tune_ranks", "default", "explicit", "rank", "need"),
    [
        # r=8 and r=48 with the default 16: max is 48, snapped up to 64
        ([AdapterRank(name="a", r=8), AdapterRank(name="b", r=48)], {}, 16, None, 64, 48),
        # rank_pattern wins over r: max 200 -> 256
        (
            [AdapterRank(name="a", r=16, rank_pattern={"q_proj": 200, "v_proj": 64})],
            {},
            16,
            None,
            256,
            200,
        ),
        # nothing recorded: the manifest default
        ([], {}, 16, None, 16, 16),
        # a recorded tune rank counts like an adapter
        ([AdapterRank(name="a", r=8)], {"sft": 100}, 16, None, 128, 100),
        ([], [300], 16, None, 320, 300),
        # exact allowed value is kept
        ([AdapterRank(name="a", r=32)], {}, 16, None, 32, 32),
        # explicit above the need wins silently
        ([AdapterRank(name="a", r=8)], {}, 16, 128, 128, 16),
    ],
)
def test_rank_fit_table(adapters, tune_ranks, default, explicit, rank, need) -> None:
    fit = fit_max_rank(adapters, tune_ranks, default, VLLM_ALLOWED, explicit)
    assert (fit.rank, fit.need, fit.warnings) == (rank, need, ())


def test_explicit_below_recorded_wins_with_a_warning() -> None:
    fit = fit_max_rank(
        [AdapterRank(name="support-bot", r=64), AdapterRank(name="tiny", r=8)],
        {},
        16,
        VLLM_ALLOWED,
        explicit=32,
    )
    assert fit.rank == 32
    assert fit.explicit
    assert fit.warnings == (
        "explicit max LoRA rank 32 is below the 64 the recorded adapters need: "
        "support-bot (r 64) will not load (derived: 64)",
    )


def test_need_above_largest_allowed_is_an_error() -> None:
    # at the field that asks for the rank: the adapters (lora_max_rank is no spec field)
    with pytest.raises(MlccError) as error:
        fit_max_rank([AdapterRank(name="huge", r=600)], {}, 16, VLLM_ALLOWED)
    assert str(error.value) == (
        "/lora/adapters: LoRA rank 600 is above the largest rank the engine allows "
        "(got 600; allowed: 1, 8, 16, 32, 64, 128, 256, 320, 512; "
        "fix: retrain the adapter with a smaller r / rank_pattern)"
    )


@pytest.mark.parametrize(
    ("explicit", "message"),
    [
        (
            1024,
            "/lora_max_rank: the explicit max LoRA rank is above the largest rank the engine "
            "allows (got 1024; allowed: 1, 8, 16, 32, 64, 128, 256, 320, 512; "
            "fix: use at most 512)",
        ),
        (
            48,
            "/lora_max_rank: the explicit max LoRA rank is not one the engine allows (got 48; "
            "allowed: 1, 8, 16, 32, 64, 128, 256, 320, 512; fix: use 64 or leave it unset to "
            "derive it (16 needed))",
        ),
    ],
)
def test_explicit_must_be_allowed(explicit: int, message: str) -> None:
    with pytest.raises(MlccError) as error:
        fit_max_rank([], {}, 16, VLLM_ALLOWED, explicit=explicit)
    assert str(error.value) == message


def test_snap_up_is_order_independent() -> None:
    assert snap_up(9, list(reversed(VLLM_ALLOWED))) == 16
    assert snap_up(512, VLLM_ALLOWED) == 512
