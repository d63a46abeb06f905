"""``nodes: auto`` sizing (core/serving/resolve/node_sizing.py) with real model sizes.

Sizes (bytes of the weights; safetensors ``model.safetensors.index.json`` ``metadata.total_size``
or the model card's stated size, rounded):
- Llama-3.1-405B BF16 ~812 GB, FP8 ~410 GB (huggingface.co/meta-llama/Llama-3.1-405B-Instruct,
  .../Llama-3.1-405B-Instruct-FP8);
- DeepSeek-V3 FP8 ~690 GB (huggingface.co/deepseek-ai/DeepSeek-V3, 671B params + MTP in FP8);
- Llama-3.1-70B BF16 ~141 GB (huggingface.co/meta-llama/Llama-3.1-70B-Instruct).
Instances (GPU memory per GPU, aws.amazon.com/ec2/instance-types/p5, /p4, /g6e): p5.48xlarge
8 x H100 80 GiB; p4d.24xlarge 8 x A100 40 GiB; p5e.48xlarge 8 x H200 141 GB (131 GiB);
g6e.48xlarge 8 x L40S 48 GiB. Built here: the catalog's entries for them come from another branch.
"""

from __future__ import annotations

import pytest

from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.serving.resolve.node_sizing import GIB, nodes_for_model
from mlcc_constructs.core.support.errors import MlccError


def _instance(name: str, gpu_type: str, gib: int) -> InstanceType:
    return InstanceType(
        name=name, gpus=8, gpu_type=gpu_type, gpu_memory_gib=gib, vcpus=192,
        memory_gib=2048, network_gbps=3200.0,
    )  # fmt: skip


P5 = _instance("ml.p5.48xlarge", "H100", 80)
P4D = _instance("ml.p4d.24xlarge", "A100", 40)
P5E = _instance("ml.p5e.48xlarge", "H200", 131)
G6E = _instance("ml.g6e.48xlarge", "L40S", 48)

LLAMA_405B_BF16 = 812 * 10**9
LLAMA_405B_FP8 = 410 * 10**9
DEEPSEEK_V3_FP8 = 690 * 10**9
LLAMA_70B_BF16 = 141 * 10**9


@pytest.mark.parametrize(
    ("model_bytes", "instance", "nodes"),
    [
        # 812e9/8 = 101.5 GB per GPU > 72 GiB budget; /16 = 50.8 GB leaves 26 GB: 2 nodes
        (LLAMA_405B_BF16, P5, 2),
        (LLAMA_405B_FP8, P5, 1),  # 51.3 GB per GPU in a 77.3 GB budget
        (DEEPSEEK_V3_FP8, P5, 2),  # 86.3 GB per GPU at 1 node
        (DEEPSEEK_V3_FP8, P5E, 1),  # 86.3 GB in a 126.6 GB budget
        (LLAMA_70B_BF16, P4D, 1),  # 17.6 GB in 38.7 GB
        (LLAMA_405B_BF16, P4D, 3),  # 2 nodes: 50.8 GB > 38.7; 3 nodes: 33.8 <= 34.8 allowed
        (LLAMA_405B_BF16, G6E, 3),  # 2 nodes: 50.8 GB > 46.4 GB budget; 3: 33.8
    ],
)
def test_smallest_node_count_leaving_the_headroom(
    model_bytes: int, instance: InstanceType, nodes: int
) -> None:
    sizing = nodes_for_model(
        model_bytes=model_bytes,
        instance=instance,
        gpu_memory_utilization=0.9,
        kv_headroom_fraction=0.1,
    )
    assert sizing.nodes == nodes
    assert sizing.weight_share_bytes * nodes * 8 >= model_bytes
    assert sizing.headroom_fraction >= 0.1
    assert sizing.budget_bytes == int(instance.gpu_memory_gib * GIB * 0.9)
    assert sizing.headroom_bytes == sizing.budget_bytes - sizing.weight_share_bytes
    if nodes > 1:  # one node fewer would not leave the headroom
        fewer = model_bytes / ((nodes - 1) * 8)
        assert sizing.budget_bytes - fewer < 0.1 * sizing.budget_bytes
    assert f"{nodes} node(s)" in sizing.explanation


def test_unknown_size_names_how_to_give_it() -> None:
    with pytest.raises(MlccError, match="nodes: auto needs the model's size") as err:
        nodes_for_model(
            model_bytes=None, instance=P5, gpu_memory_utilization=0.9, kv_headroom_fraction=0.1
        )
    assert "model.bytes" in str(err.value)


def test_too_big_for_the_maximum_node_count() -> None:
    with pytest.raises(MlccError, match=r"does not fit ml\.p4d\.24xlarge even at 2 nodes"):
        nodes_for_model(
            model_bytes=LLAMA_405B_BF16,
            instance=P4D,
            gpu_memory_utilization=0.9,
            kv_headroom_fraction=0.1,
            max_nodes=2,
        )


def test_larger_headroom_needs_more_nodes() -> None:
    # 405B FP8 on p5: 51.3 GB per GPU leaves 34% of 77.3 GB; asking for 40% needs 2 nodes
    small = nodes_for_model(
        model_bytes=LLAMA_405B_FP8, instance=P5, gpu_memory_utilization=0.9,
        kv_headroom_fraction=0.3,
    )  # fmt: skip
    large = nodes_for_model(
        model_bytes=LLAMA_405B_FP8, instance=P5, gpu_memory_utilization=0.9,
        kv_headroom_fraction=0.4,
    )  # fmt: skip
    assert (small.nodes, large.nodes) == (1, 2)


# -- one sequence's KV cache, from the model's config.json ---------------------------------

# A 70B-class decoder without grouped-query attention (64 KV heads, one per query head) and a
# 128k context: its KV cache, not its weights, decides the node count.
MHA_70B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "num_hidden_layers": 80,
    "head_dim": 128,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


def test_the_kv_bytes_of_one_sequence_per_gpu_by_hand() -> None:
    from mlcc_constructs.core.serving.resolve.node_sizing import kv_need

    need = kv_need(MHA_70B)
    assert need is not None and need.context_length == 131072
    assert "max_position_embeddings" in need.source
    # TP 8: 64 / 8 = 8 KV heads per GPU; PP 1: 80 layers.
    # 2 x 80 x 8 x 128 x 2 bytes = 327,680 bytes a token; x 131,072 tokens = 42,949,672,960.
    assert need.bytes_per_gpu(tp=8, pp=1) == 42_949_672_960
    # PP 3: ceil(80 / 3) = 27 layers: 2 x 27 x 8 x 128 x 2 x 131,072.
    assert need.bytes_per_gpu(tp=8, pp=3) == 2 * 27 * 8 * 128 * 2 * 131072
    # More TP ranks than KV heads: each rank holds one (Llama-3.1's 8 KV heads at TP 16).
    gqa = kv_need(MHA_70B | {"num_key_value_heads": 8}, context_length=(1000, "/engine/env/X"))
    assert gqa is not None and (gqa.context_length, gqa.source) == (1000, "/engine/env/X")
    assert gqa.bytes_per_gpu(tp=16, pp=1) == 2 * 80 * 1 * 128 * 2 * 1000
    # No config, or one without a context length: no sequence rule (the fraction alone).
    assert kv_need(None) is None
    assert kv_need({k: v for k, v in MHA_70B.items() if k != "max_position_embeddings"}) is None


@pytest.mark.parametrize(
    ("context", "nodes"),
    [
        # 159.9 GB of weights on p4d (38.7 GB budget): 1 node leaves 18.7 GB, 10% needs 3.9;
        # one 128k sequence needs 42.9 GB at PP 1, 21.5 GB at PP 2 (28.7 GB left): 2 nodes.
        (None, 2),
        # An 8k context needs 2.7 GB at PP 1: the fraction decides, 1 node.
        ((8192, "/engine/env/VLLM_MAX_MODEL_LEN"), 1),
    ],
)
def test_one_long_sequence_can_need_more_nodes_than_the_weights(
    context: tuple[int, str] | None, nodes: int
) -> None:
    from mlcc_constructs.core.adapters.lora import model_geometry
    from mlcc_constructs.core.serving.resolve.node_sizing import kv_need

    weights = model_geometry(MHA_70B).parameters * 2
    without = nodes_for_model(
        model_bytes=weights, instance=P4D, gpu_memory_utilization=0.9, kv_headroom_fraction=0.1
    )
    assert without.nodes == 1 and without.kv is None
    need = kv_need(MHA_70B, context_length=context)
    sizing = nodes_for_model(
        model_bytes=weights,
        instance=P4D,
        gpu_memory_utilization=0.9,
        kv_headroom_fraction=0.1,
        kv=need,
    )
    assert sizing.nodes == nodes
    assert need is not None
    assert sizing.headroom_bytes >= need.bytes_per_gpu(tp=8, pp=nodes)
    assert f"one {need.context_length:,}-token sequence needs" in sizing.explanation


def test_a_sequence_no_group_holds_is_named_in_the_refusal() -> None:
    from mlcc_constructs.core.serving.resolve.node_sizing import kv_need

    with pytest.raises(MlccError) as caught:
        nodes_for_model(
            model_bytes=10**9,
            instance=P4D,
            gpu_memory_utilization=0.9,
            kv_headroom_fraction=0.1,
            max_nodes=1,
            kv=kv_need(MHA_70B),
        )
    (problem,) = caught.value.problems
    assert "or one 131,072-token sequence's KV cache (40.00 GiB per GPU" in problem.message
