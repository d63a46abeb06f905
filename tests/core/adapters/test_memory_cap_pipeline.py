"""LoRA memory cap with pipeline stages: Llama-3.1-8B on 24 GiB GPUs (numbers by hand)."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.adapters.lora import check_memory_cap, model_geometry
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.core.adapters.test_memory_cap import LLAMA_31_8B


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


VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


@pytest.mark.parametrize(
    ("pp", "largest"),
    [
        # PP 1: cap 713,230,090 / (4 x 2 x 2,621,440 = 20,971,520 per rank) = 34.0: rank 32.
        (1, 32),
        # PP 2: cap 1,516,256,215 / (4 x 2 x 1,310,720 = 10,485,760 per rank) = 144.6: 128.
        (2, 128),
        # PP 4: weights 4,015,130,624; cap floor((23,192,823,398.4 - 4,015,130,624) / 10)
        #   = 1,917,769,277; 8 layers: 5,242,880 per rank: 365.8, so 320.
        (4, 320),
    ],
)
def test_more_stages_fit_a_larger_rank(pp: int, largest: int) -> None:
    from mlcc_constructs.core.adapters.lora import largest_fitting_rank, memory_check

    geometry = model_geometry(LLAMA_31_8B)
    check = memory_check(geometry, gpu_memory_gib=24, tp=1, max_loras=4, rank=8, pp=pp)
    assert largest_fitting_rank(check, geometry, max_loras=4, allowed=VLLM_RANKS) == largest


def test_the_fix_names_the_largest_rank_that_fits_the_stage() -> None:
    geometry = model_geometry(LLAMA_31_8B)
    with pytest.raises(MlccError) as error:
        check_memory_cap(
            geometry, gpu_memory_gib=24, tp=1, max_loras=4, rank=256, pp=2, allowed=VLLM_RANKS
        )
    (problem,) = error.value.problems
    assert "the largest allowed rank that fits at TP 1 PP 2 with max_loras 4: 128" in problem.fix
    # No allowed rank fits: said so, not a number.
    with pytest.raises(MlccError) as error:
        check_memory_cap(
            geometry, gpu_memory_gib=24, tp=1, max_loras=64, rank=8, pp=1, allowed=(8, 16)
        )
    (problem,) = error.value.problems
    assert "no allowed rank fits at TP 1 with max_loras 64" in problem.fix


@pytest.mark.parametrize(("nodes", "largest"), [(1, 32), (2, 128)])
def test_a_deployment_over_more_nodes_is_told_the_larger_rank_its_stage_fits(
    nodes: int, largest: int
) -> None:
    from mlcc_constructs.core.serving.prepared import prepare
    from mlcc_constructs.core.serving.spec.context import RenderContext

    spec = flat_spec(
        engine="vllm",
        model="s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B/",
        instance_type="ml.g5.xlarge",  # one 24 GiB GPU per node
        name="chat",
        nodes=nodes,
        tensor_parallel_degree=1,
        pipeline_parallel_degree=nodes,
        lora=True,
        model_config=LLAMA_31_8B,
        env={"VLLM_MAX_LORA_RANK": "512", "VLLM_MAX_LORAS": "4"},
    )
    with pytest.raises(MlccError) as error:
        prepare(spec, context=RenderContext(account="123456789012", region="us-east-1"))
    (problem,) = error.value.problems
    at = "at TP 1" + (f" PP {nodes}" if nodes > 1 else "")
    assert f"the largest allowed rank that fits {at} with max_loras 4: {largest}" in problem.fix
    assert f"over {32 // nodes} layers" in problem.message
