"""LoRA memory cap with pipeline stages: Llama-3.1-8B on 24 GiB GPUs (numbers by hand)."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.adapters.lora import check_memory_cap, model_geometry
from mlcc_constructs.core.support.errors import MlccError
from tests.test_memory_cap import LLAMA_31_8B


def test_fails_at_pp1_fits_at_pp2() -> None:
    geometry = model_geometry(LLAMA_31_8B)
    # PP=1: buffer 4 x 64 x 2 x (32 x 81,920) = 1,342,177,280 > cap 713,230,090
    with pytest.raises(MlccError, match="1,342,177,280 bytes per GPU"):
        check_memory_cap(geometry, gpu_memory_gib=24, tp=1, max_loras=4, rank=64)
    # PP=2: weights 16,060,522,496 / 2 = 8,030,261,248 per GPU;
    #   cap = floor((23,192,823,398.4 - 8,030,261,248) / 10) = 1,516,256,215
    #   buffer: 16 layers per stage: 4 x 64 x 2 x (16 x 81,920) = 671,088,640 <= cap
    check = check_memory_cap(geometry, gpu_memory_gib=24, tp=1, max_loras=4, rank=64, pp=2)
    assert (check.weights_bytes, check.cap_bytes, check.buffer_bytes) == (
        8_030_261_248,
        1_516_256_215,
        671_088_640,
    )
    assert check.elements_per_rank == 16 * 81_920
    assert check.ok


def test_pp_message_names_the_stage() -> None:
    geometry = model_geometry(LLAMA_31_8B)
    # PP=2, rank 256: 4 x 256 x 2 x 1,310,720 = 2,684,354,560 > 1,516,256,215
    with pytest.raises(MlccError) as error:
        check_memory_cap(geometry, gpu_memory_gib=24, tp=1, max_loras=4, rank=256, pp=2)
    text = str(error.value)
    assert "2,684,354,560" in text and "16 layers at TP 1 PP 2" in text and "/ PP 2)" in text
