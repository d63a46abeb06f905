"""The cold start: the formula (table-driven: the floor, a big model, an unknown size, the
network bound), the physical limit, where the model's size comes from, the load path, the
safetensors index, and that the startup probe, the do-not-disrupt window and the ready timeout
are one budget in every rendered object."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.serving.kinds.registry import of_kind, validate_objects
from mlcc_constructs.core.serving.prepare import cold_start as cs
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.resolve import model_size as ms
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
LLAMA_8B = 16_060_522_496  # model.safetensors.index.json metadata.total_size
LLAMA_70B = 141_107_412_992
MOUNT, STREAM, HUB = 31_000_000, 1_900_000_000, 50 * 2**20
G5_12X, G5_X, P5 = lookup("g5.12xlarge"), lookup("g5.xlarge"), lookup("p5.48xlarge")


def _cold(
    size: int | None,
    path: cs.LoadPath = "mount",
    *,
    instances: tuple[Any, ...] = (G5_12X,),
    nodes: bool = True,
) -> cs.ColdStart:
    return cs.cold_start(
        size=ms.ModelSize(bytes=size, source=None if size is None else "spec"),
        instances=instances,
        path=path,
        launches_nodes=nodes,
    )


def _period(seconds: float) -> int:
    return 10 * math.ceil(math.ceil(seconds) / 10)


FORMULA = [
    # (case, size, path, instance, nodes, weight load, startup probe seconds)
    ("8B over the mount", LLAMA_8B, "mount", G5_12X, True, math.ceil(LLAMA_8B / MOUNT),
     _period(1.5 * (math.ceil(LLAMA_8B / MOUNT) + 300))),
    # A small load: the 600 s floor, not 1.5 x (9 + 300) = 464.
    ("floor: 8B streamed", LLAMA_8B, "stream", G5_12X, True, math.ceil(LLAMA_8B / STREAM), 600),
    ("floor: a tiny model", 1000, "mount", G5_12X, False, 1, 600),
    # A big model grows the probe past today's 30 minutes.
    ("70B over the mount", LLAMA_70B, "mount", G5_12X, True, math.ceil(LLAMA_70B / MOUNT),
     _period(1.5 * (math.ceil(LLAMA_70B / MOUNT) + 300))),
    ("70B from the Hub", LLAMA_70B, "huggingface", G5_12X, True, math.ceil(LLAMA_70B / HUB),
     _period(1.5 * (math.ceil(LLAMA_70B / HUB) + 300))),
    # The network binds: g5.xlarge's 2.5 Gbps baseline (312.5 MB/s; its 10 Gbps burst is not
    # planned on) is slower than the streamer's 1.9 GB/s.
    ("network-bound stream", LLAMA_70B, "stream", G5_X, True, math.ceil(LLAMA_70B / 312_500_000),
     _period(1.5 * (math.ceil(LLAMA_70B / 312_500_000) + 300))),
    # p5's 3200 Gbps is far above any load path: the path binds (75 s, under the floor).
    ("path-bound on p5", LLAMA_70B, "stream", P5, True, math.ceil(LLAMA_70B / STREAM), 600),
    # No size: no weight load to estimate, today's 30 minutes.
    ("unknown size", None, "mount", G5_12X, True, None, 1800),
    ("unknown size, Hub", None, "huggingface", G5_X, False, None, 1800),
]  # fmt: skip


@pytest.mark.parametrize(
    ("size", "path", "instance", "nodes", "load", "startup"),
    [case[1:] for case in FORMULA],
    ids=[case[0] for case in FORMULA],
)
def test_the_formula(
    size: int | None, path: cs.LoadPath, instance: Any, nodes: bool, load: int | None, startup: int
) -> None:
    cold = _cold(size, path, instances=(instance,), nodes=nodes)
    node = 300 if nodes else 0
    assert [p.name for p in cold.phases] == list(cs.PHASES)
    assert [p.seconds for p in cold.phases] == [node, 300, load, 300]
    assert (cold.startup_s, cold.startup_failures) == (startup, startup // 10)
    assert cold.pod_start_s == 300 + startup  # the image pull, then the probe's allowance
    assert cold.launch_s == node + 300 + startup
    assert cold.expected_s == (None if load is None else node + 300 + load + 300)


@pytest.mark.parametrize(
    ("size", "instance", "seconds"),
    [
        (LLAMA_8B, G5_12X, math.ceil(LLAMA_8B / 5_000_000_000)),  # 40 Gbps: 4 s
        (LLAMA_8B, G5_X, math.ceil(LLAMA_8B / 312_500_000)),  # 2.5 Gbps baseline: 52 s
        (LLAMA_70B, P5, math.ceil(LLAMA_70B / 400_000_000_000)),  # 3200 Gbps: 1 s
        (None, G5_12X, None),
    ],
)
def test_the_physical_limit_is_model_bytes_over_the_baseline_bandwidth(
    size: int | None, instance: Any, seconds: int | None
) -> None:
    cold = _cold(size, "stream", instances=(instance,))
    assert cold.physical_limit_s == seconds
    if size is not None:  # no load path beats it
        assert cold.physical_limit_s is not None
        assert cold.physical_limit_s <= cold.phase("weight_load").seconds


def test_fallback_types_plan_on_the_slowest_network() -> None:
    cold = _cold(LLAMA_8B, "stream", instances=(G5_12X, G5_X))
    assert cold.instance.node_name == "g5.xlarge"
    assert cold.load_bytes_per_second == G5_X.network_bytes_per_second == 312_500_000


def test_every_phase_says_what_it_assumes_and_where_the_figure_comes_from() -> None:
    for size in (LLAMA_8B, None):
        for phase in _cold(size).phases:
            assert phase.assumption and phase.source
    load = _cold(None).phase("weight_load")
    assert "set model.bytes" in load.assumption


def test_the_load_paths_are_data_keyed_by_name() -> None:
    # The streaming helper's model_load: stream plugs in by name.
    assert set(cs.load_paths()) == {"mount", "stream", "prefetch", "huggingface"}


@pytest.mark.parametrize(
    ("source_kind", "platform_mounts", "prefetch", "model_load", "path"),
    [
        ("s3", False, True, "mount", "mount"),  # eks: Mountpoint, whatever the IEC would do
        ("s3", True, True, "mount", "prefetch"),  # HyperPod operator prefetch
        ("s3", True, False, "mount", "mount"),  # HyperPod with LoRA: prefetch off, mounted
        ("s3", False, True, "stream", "stream"),  # the engine streams s3:// itself
        ("s3", True, True, "stream", "stream"),
        ("huggingface", False, True, "mount", "huggingface"),
        ("huggingface", True, True, "stream", "huggingface"),
    ],
)
def test_the_load_path(
    source_kind: str, platform_mounts: bool, prefetch: bool, model_load: str, path: str
) -> None:
    assert (
        cs.load_path(
            source_kind=source_kind,
            platform_mounts=platform_mounts,
            prefetch=prefetch,
            model_load=model_load,
        )
        == path
    )


CONFIG_8B: dict[str, Any] = {
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "torch_dtype": "bfloat16",
    "num_parameters": 8_030_261_248,
}


@pytest.mark.parametrize(
    ("fields", "size"),
    [
        # The spec's field wins over everything.
        ({"model_bytes": 7, "index_bytes": 8, "model_config": CONFIG_8B}, (7, "spec")),
        ({"index_bytes": 8, "model_config": CONFIG_8B}, (8, "index")),
        ({"model_config": CONFIG_8B}, (LLAMA_8B, "model_config")),
        ({"model_config": {"torch_dtype": "bfloat16"}}, (None, None)),  # no geometry
        ({}, (None, None)),
    ],
)
def test_where_the_model_size_comes_from(fields: dict[str, Any], size: tuple[Any, Any]) -> None:
    found = ms.model_size(model_bytes=fields.pop("model_bytes", None), **fields)
    assert (found.bytes, found.source) == size


def test_the_safetensors_index_gives_its_total_size() -> None:
    document = {"metadata": {"total_size": LLAMA_8B}, "weight_map": {}}
    assert ms.index_total_size(document) == LLAMA_8B


@pytest.mark.parametrize(
    "document",
    [
        {"weight_map": {}},
        {"metadata": {}},
        {"metadata": {"total_size": 0}},
        {"metadata": {"total_size": "16060522496"}},
        {"metadata": {"total_size": True}},
        {"metadata": []},
        [],
    ],
)
def test_an_index_without_a_size_is_refused(document: Any) -> None:
    with pytest.raises(MlccError) as caught:
        ms.index_total_size(document, where="s3://b/m/model.safetensors.index.json")
    (problem,) = caught.value.problems
    assert (problem.where, problem.pointer) == (
        "s3://b/m/model.safetensors.index.json",
        "/metadata/total_size",
    )
    assert problem.allowed == "a positive integer (bytes)"
    assert "model.bytes" in problem.fix


# -- one budget in every object ------------------------------------------------------------


def _prepared(**fields: Any) -> PreparedDeployment:
    values: dict[str, Any] = {
        "engine": "vllm",
        "model": MODEL,
        "name": "chat",
        **fields,
    }
    values["instance_type"] = values.get("instance_type") or "ml.g5.12xlarge"
    prepared = prepare(flat_spec(**values), context=CONTEXT)
    validate_objects(e.object for e in prepared.objects)
    return prepared


def _only(prepared: PreparedDeployment, kind: str) -> Mapping[str, Any]:
    (found,) = of_kind([e.object for e in prepared.objects], kind)
    return found


@pytest.mark.parametrize("size", [None, 1000, LLAMA_8B, LLAMA_70B])
def test_the_probe_the_do_not_disrupt_window_and_the_deadline_are_one_budget(
    size: int | None,
) -> None:
    # 70B (131 GiB) fits no one g5.12xlarge (4 x 24 GiB): it is held on eight 40 GiB A100s
    big = size == LLAMA_70B
    prepared = _prepared(model_bytes=size, instance_type="ml.p4d.24xlarge" if big else None)
    cold = prepared.cold_start
    assert prepared.ready_timeout.cold_start is cold  # computed once, carried
    deployment = _only(prepared, "Deployment")
    pod = deployment["spec"]["template"]
    (engine,) = (c for c in pod["spec"]["containers"] if c["name"] == "engine")
    probe = engine["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == cold.startup_s
    assert pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == (f"{cold.pod_start_s}s")
    assert cold.pod_start_s == cold.phase("image_pull").seconds + cold.startup_s
    assert deployment["spec"]["progressDeadlineSeconds"] == prepared.ready_timeout.seconds
    assert prepared.ready_timeout.seconds == min(3300, max(600, cold.launch_s))


def test_without_a_size_the_budget_stays_thirty_minutes() -> None:
    pod = _only(_prepared(), "Deployment")["spec"]["template"]
    (engine,) = pod["spec"]["containers"]
    assert engine["startupProbe"]["failureThreshold"] * 10 == 1800
    assert pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "2100s"


def test_a_size_sizes_the_probe_of_the_iec_worker_too() -> None:
    prepared = _prepared(
        target="hyperpod-eks", model_bytes=LLAMA_70B, lora=True, instance_type="ml.p4d.24xlarge"
    )
    cold = prepared.cold_start
    assert (cold.load_path, cold.phase("node_start").seconds) == ("mount", 0)
    iec = _only(prepared, "InferenceEndpointConfig")
    probe = iec["spec"]["worker"]["probes"]["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == cold.startup_s > 1800
    assert iec["spec"]["maxDeployTimeInSeconds"] == prepared.ready_timeout.seconds == 3300
    assert any("past the 3300 s the deploy waits" in w for w in prepared.warnings)


@pytest.mark.parametrize("value", [0, -1, -16_060_522_496])
def test_a_model_size_that_is_not_positive_is_refused_naming_the_field(value: int) -> None:
    with pytest.raises(MlccError) as caught:
        _prepared(model_bytes=value)
    (problem,) = [p for p in caught.value.problems if p.pointer == "/model/bytes"]
    assert (problem.value, problem.allowed) == (value, "a positive integer (bytes)")
    assert "metadata.total_size" in problem.fix


@pytest.mark.parametrize("value", [True, 1.5, "16060522496", 2.0])
def test_a_model_size_that_is_not_an_integer_is_refused_in_python(value: Any) -> None:
    with pytest.raises(MlccError) as caught:
        flat_spec(engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", model_bytes=value)
    (problem,) = caught.value.problems
    assert (problem.pointer, problem.value) == ("/model/bytes", value)


# -- several nodes: one model copy over a LeaderWorkerSet group ---------------------------

LLAMA_405B = 811_000_000_000  # ~405B parameters x 2 bytes BF16 (a round figure for the test)


@pytest.mark.parametrize("nodes", [2, 3, 4])
def test_a_group_loads_in_parallel_then_forms_before_the_warm_up(nodes: int) -> None:
    one = _cold(LLAMA_405B, "stream", instances=(P5,))
    group = cs.cold_start(
        size=ms.ModelSize(bytes=LLAMA_405B, source="spec"),
        instances=(P5,),
        path="stream",
        launches_nodes=True,
        nodes=nodes,
    )
    assert [p.name for p in group.phases] == list(cs.GROUP_PHASES)
    load = math.ceil(LLAMA_405B / STREAM)
    # Each node loads the whole checkpoint at the same rate as one node: not 1/nodes of it.
    assert group.phase("weight_load").seconds == one.phase("weight_load").seconds == load
    assert [p.seconds for p in group.phases] == [300, 300, load, 120, 300]
    assert group.expected_s == 300 + 300 + load + 120 + 300 == one.expected_s + 120
    assert group.startup_s == _period(1.5 * (load + 120 + 300)) > one.startup_s
    assert group.launch_s == 300 + 300 + group.startup_s
    # S3 serves the checkpoint once per node; every node bills the whole cold start.
    assert group.bytes_read == nodes * LLAMA_405B
    assert group.node_seconds == nodes * group.expected_s
    assert f"each of the {nodes} nodes" in group.phase("weight_load").assumption
    assert "save_sharded_state" in group.phase("weight_load").source


def test_one_node_has_no_group_phase_and_reads_the_checkpoint_once() -> None:
    cold = _cold(LLAMA_8B)
    assert "group_init" not in [p.name for p in cold.phases]
    assert (cold.nodes, cold.bytes_read, cold.node_seconds) == (1, LLAMA_8B, cold.expected_s)
    assert "each of the" not in cold.phase("weight_load").assumption
    unknown = _cold(None)
    assert (unknown.bytes_read, unknown.node_seconds) == (None, None)


def test_the_group_init_phase_is_data_with_its_assumption() -> None:
    fact = cs._data()["phases"]["group_init"]
    assert fact["seconds"] == 120 and "not a measurement" in fact["source"]
    reads = cs._data()["multi_node_reads"]
    assert reads["per_node"] == "checkpoint" and "sharded_state" in reads["assumption"]


def test_a_multi_node_deployment_sizes_the_leader_probe_from_the_group_cold_start() -> None:
    prepared = _prepared(
        instance_type="ml.p5.48xlarge",
        nodes=2,
        tensor_parallel_degree=8,
        pipeline_parallel_degree=2,
        model_bytes=LLAMA_405B,
    )
    cold = prepared.cold_start
    assert cold.nodes == 2 and cold.phase("group_init").seconds == 120
    lws = _only(prepared, "LeaderWorkerSet")
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    (engine,) = (c for c in leader["spec"]["containers"] if c["name"] == "engine")
    probe = engine["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == cold.startup_s
    assert prepared.ready_timeout.seconds == min(3300, max(600, cold.launch_s))
    document = cold.to_json()["nodes"]
    assert document["count"] == 2
    assert document["bytes_read_total"] == 2 * LLAMA_405B
    assert document["node_seconds"] == 2 * cold.expected_s
