"""LoRA memory cap on Llama-3.1-8B geometry, every byte count worked out by hand below."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.adapters.lora import (
    check_memory_cap,
    lora_buffer_bytes,
    lora_elements_per_rank,
    model_geometry,
)
from mlcc_constructs.core.support.errors import MlccError

# The fields of meta-llama/Llama-3.1-8B-Instruct's config.json that the cap reads.
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}

# Parameters, by hand:
#   embeddings + lm_head: 2 x 128256 x 4096                          = 1,050,673,152
#   per layer: q 4096x4096 = 16,777,216; k, v 4096x1024 = 4,194,304 each;
#              o 4096x4096 = 16,777,216; gate, up, down 4096x14336 = 58,720,256 each;
#              2 RMSNorms 2x4096 = 8,192
#              16,777,216 + 2x4,194,304 + 16,777,216 + 3x58,720,256 + 8,192 = 218,112,000
#   32 layers: 32 x 218,112,000                                       = 6,979,584,000
#   final norm                                                        = 4,096
#   total: 1,050,673,152 + 6,979,584,000 + 4,096                     = 8,030,261,248
PARAMS = 8_030_261_248

# Σ_modules (in_local + out_local) of one layer:
#   TP=1: q 4096+4096, k 4096+1024, v 4096+1024, gate 4096+14336, up 4096+14336,
#         o 4096+4096, down 14336+4096
#         = 8192 + 5120 + 5120 + 18432 + 18432 + 8192 + 18432 = 81,920
#   TP=4 (column-parallel split the output, row-parallel the input):
#         q 4096+1024, k 4096+256, v 4096+256, gate 4096+3584, up 4096+3584,
#         o 1024+4096, down 3584+4096
#         = 5120 + 4352 + 4352 + 7680 + 7680 + 5120 + 7680 = 41,984
PER_RANK_TP1 = 32 * 81_920  # 2,621,440
PER_RANK_TP4 = 32 * 41_984  # 1,343,488

# 24 GiB per GPU (A10G / L4) at utilization 0.9:
#   24 x 2^30 = 25,769,803,776; x 0.9 = 23,192,823,398.4
#   TP=1 weights 8,030,261,248 x 2 = 16,060,522,496
#        cap = floor((23,192,823,398.4 - 16,060,522,496) / 10) = floor(713,230,090.24)
#   TP=4 weights 16,060,522,496 / 4 = 4,015,130,624
#        cap = floor((23,192,823,398.4 - 4,015,130,624) / 10) = floor(1,917,769,277.44)
CAP_TP1 = 713_230_090
CAP_TP4 = 1_917_769_277


@pytest.fixture(scope="module")
def geometry():
    return model_geometry(LLAMA_31_8B)


def test_geometry_from_config(geometry) -> None:
    assert (geometry.layers, geometry.hidden, geometry.intermediate) == (32, 4096, 14336)
    assert (geometry.heads, geometry.kv_heads, geometry.head_dim) == (32, 8, 128)
    assert (geometry.dtype, geometry.dtype_bytes) == ("bfloat16", 2)
    assert geometry.parameters == PARAMS


def test_recorded_parameter_count_wins() -> None:
    config = {**LLAMA_31_8B, "num_parameters": 8_000_000_000}
    assert model_geometry(config).parameters == 8_000_000_000


@pytest.mark.parametrize(
    ("tp", "max_loras", "rank", "expected"),
    [
        # 4 x 64 x 2 x 2,621,440 = 1,342,177,280
        (1, 4, 64, 1_342_177_280),
        # 1 x 16 x 2 x 2,621,440 = 83,886,080
        (1, 1, 16, 83_886_080),
        # 4 x 64 x 2 x 1,343,488 = 687,865,856
        (4, 4, 64, 687_865_856),
        # 4 x 256 x 2 x 1,343,488 = 2,751,463,424
        (4, 4, 256, 2_751_463_424),
    ],
)
def test_buffer_bytes(geometry, tp: int, max_loras: int, rank: int, expected: int) -> None:
    assert lora_elements_per_rank(geometry, tp) == {1: PER_RANK_TP1, 4: PER_RANK_TP4}[tp]
    assert max_loras * rank * 2 * lora_elements_per_rank(geometry, tp) == expected
    assert lora_buffer_bytes(geometry, tp=tp, max_loras=max_loras, rank=rank) == expected


@pytest.mark.parametrize(
    ("tp", "max_loras", "rank", "buffer", "cap", "weights"),
    [
        # 4 x 16 x 2 x 2,621,440 = 335,544,320 ≤ 713,230,090
        (1, 4, 16, 335_544_320, CAP_TP1, 16_060_522_496),
        # 4 x 64 x 2 x 1,343,488 = 687,865,856 ≤ 1,917,769,277
        (4, 4, 64, 687_865_856, CAP_TP4, 4_015_130_624),
    ],
)
def test_within_cap(geometry, tp, max_loras, rank, buffer, cap, weights) -> None:
    check = check_memory_cap(geometry, gpu_memory_gib=24, tp=tp, max_loras=max_loras, rank=rank)
    assert (check.buffer_bytes, check.cap_bytes, check.weights_bytes) == (buffer, cap, weights)
    assert check.usable_bytes == 23_192_823_398
    assert check.ok


def test_above_cap_tp1_names_adapters_and_numbers(geometry) -> None:
    with pytest.raises(MlccError) as error:
        check_memory_cap(
            geometry,
            gpu_memory_gib=24,
            tp=1,
            max_loras=4,
            rank=64,
            adapters=["support-bot", "legal"],
        )
    assert str(error.value) == (
        "/lora/enabled: LoRA buffer 1,342,177,280 bytes per GPU (max_loras 4 x rank 64 x 2 bytes "
        "bfloat16 x 2,621,440 elements over 32 layers at TP 1) exceeds the cap 713,230,090 "
        "bytes = 10% of (GPU memory 24 GiB x utilization 0.9 = 23,192,823,398 bytes - weights "
        "16,060,522,496 bytes (8,030,261,248 parameters x 2 bytes bfloat16 / TP 1)); "
        "adapters: legal, support-bot (fix: lower max_loras or the max LoRA rank, raise the "
        "tensor parallel degree, spread the model over more pipeline stages (nodes), or use a "
        "GPU with more memory)"
    )


def test_above_cap_tp4(geometry) -> None:
    with pytest.raises(MlccError) as error:
        check_memory_cap(geometry, gpu_memory_gib=24, tp=4, max_loras=4, rank=256, adapters=["a"])
    text = str(error.value)
    assert "LoRA buffer 2,751,463,424 bytes per GPU" in text
    assert "1,343,488 elements over 32 layers at TP 4" in text
    assert "exceeds the cap 1,917,769,277 bytes" in text
    assert (
        "weights 4,015,130,624 bytes (8,030,261,248 parameters x 2 bytes bfloat16 / TP 4)" in text
    )
    assert "adapters: a" in text


def test_weights_alone_do_not_fit(geometry) -> None:
    with pytest.raises(MlccError) as error:
        check_memory_cap(geometry, gpu_memory_gib=16, tp=1, max_loras=1, rank=8)
    assert str(error.value).startswith(
        "/lora/enabled: the model does not fit: weights 16,060,522,496 bytes"
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {**LLAMA_31_8B, "num_hidden_layers": 0},
            "config.json:/num_hidden_layers: missing or not a positive integer (got 0; allowed: "
            "a positive integer; fix: point at the staged model folder holding the model's "
            "config.json)",
        ),
        (
            {**LLAMA_31_8B, "torch_dtype": "int3"},
            "config.json:/torch_dtype: missing or unknown dtype (got 'int3'; allowed: bfloat16, "
            "float16, half, float32, float)",
        ),
    ],
)
def test_bad_config(config, message: str) -> None:
    with pytest.raises(MlccError) as error:
        model_geometry(config)
    assert str(error.value) == message


def test_tp_must_divide(geometry) -> None:
    with pytest.raises(MlccError) as error:
        lora_elements_per_rank(geometry, 3)
    assert "num_attention_heads 32 is not divisible by the tensor parallel degree" in str(
        error.value
    )


def test_more_tp_ranks_than_kv_heads_replicates_one_head(geometry) -> None:
    # TP=16: q 4096+256, k/v 4096+128 (one replicated head), gate/up 4096+896,
    # o 256+4096, down 896+4096 = 4352 + 4224 + 4224 + 4992 + 4992 + 4352 + 4992 = 32,128
    assert lora_elements_per_rank(geometry, 16) == 32 * 32_128
