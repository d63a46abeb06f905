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
    assert "model_bytes" in str(err.value)


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
