"""One model copy over several nodes: ``nodes`` and ``pipeline_parallel_degree``, the engines'
``multi_node`` launch, the LeaderWorkerSet on eks, and the bad input around them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs import cli
from mlcc_constructs.core.serving.kinds._readiness import lws_readiness
from mlcc_constructs.core.serving.kinds.registry import object_problems
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.core.engines.test_engine_parsers import FACTS, MANIFESTS, parse
from tests.engine_process import engine_process

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-405B-Instruct-FP8/"
AMP = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-12345678-1234-1234-1234-123456789012"
CONTEXT = RenderContext(
    account="123456789012", region="us-east-1", profile="dev", prometheus_query_url=AMP
)
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def _spec(**fields: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {
            "instance_type": "p5.48xlarge",
            "nodes": 2,
            "tensor_parallel_degree": 8,
            "pipeline_parallel_degree": 2,
        },
        "name": "llama-405b",
    }
    return flat_spec(**(values | fields))


def _objects(**fields: Any) -> list[dict[str, Any]]:
    return list(render(_spec(**fields), context=CONTEXT).objects)


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def test_two_p5_nodes_render_a_leader_worker_set_of_size_two() -> None:
    objects = _objects()
    assert not [o for o in objects if o["kind"] == "Deployment"]
    lws = _one(objects, "LeaderWorkerSet")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert object_problems(lws) == []
    group = lws["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert lws["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
    # One zone per group, not one group per zone (no exclusive-topology annotation).
    assert "leaderworkerset.sigs.k8s.io/exclusive-topology" not in lws["metadata"].get(
        "annotations", {}
    )
    for role in ("leaderTemplate", "workerTemplate"):
        pod = group[role]["spec"]
        assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "leaderworkerset.sigs.k8s.io/group-key", "operator": "Exists"}
                    ]
                },
                "matchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-key"],
                "topologyKey": "topology.kubernetes.io/zone",
            }
        ]
        (engine,) = [c for c in pod["containers"] if c["name"] == "engine"]
        limits = engine["resources"]["limits"]
        assert limits["nvidia.com/gpu"] == "8"  # the whole node
        # Every EFA interface of a p5.48xlarge, and libfabric on EFA with device RDMA.
        assert (
            limits["vpc.amazonaws.com/efa"]
            == engine["resources"]["requests"]["vpc.amazonaws.com/efa"]
            == "32"
        )
        env = {e["name"]: e.get("value") for e in engine["env"]}
        assert (env["FI_PROVIDER"], env["FI_EFA_USE_DEVICE_RDMA"]) == ("efa", "1")
    leader, worker = (
        next(c for c in group[r]["spec"]["containers"] if c["name"] == "engine")
        for r in ("leaderTemplate", "workerTemplate")
    )
    assert "readinessProbe" in leader and "startupProbe" in leader
    assert not [k for k in worker if k.endswith("Probe")]  # a headless worker serves no HTTP
    service = _one(objects, "Service")
    assert service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    policy = _one(objects, "NetworkPolicy")["spec"]
    own = {"podSelector": policy["podSelector"]}
    assert {"from": [own]} in policy["ingress"] and {"to": [own]} in policy["egress"]


@pytest.mark.parametrize("delivery", ["env", "args"])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_leader_and_worker_argv_parse_with_the_recorded_parser(
    tmp_path: Path, engine: str, delivery: str
) -> None:
    objects = _objects(engine=engine, config_delivery=delivery)
    ranks = {}
    for role in ("leader", "worker"):
        folder = tmp_path / role
        folder.mkdir()
        argv, _ = engine_process(objects, folder, role=role)
        namespace = parse(engine, argv)
        assert namespace.nnodes == 2
        ranks[role] = namespace.node_rank
        if engine == "vllm":
            assert namespace.tensor_parallel_size == 8
            assert namespace.pipeline_parallel_size == 2
            assert namespace.master_addr == "llama-405b-0.llama-405b.default"
            assert namespace.master_port == 29500
            assert bool(namespace.headless) is (role == "worker")
        else:
            assert (namespace.tp_size, namespace.pp_size) == (8, 2)
            assert namespace.dist_init_addr == "llama-405b-0.llama-405b.default:20000"
    assert ranks == {"leader": 0, "worker": 1}


@pytest.mark.parametrize("engine", sorted(e for e, m in MANIFESTS.items() if "multi_node" in m.raw))
def test_every_multi_node_flag_is_in_the_pinned_release_recorded_parser(engine: str) -> None:
    block = MANIFESTS[engine].raw["multi_node"]
    flags = FACTS[engine]["flags"]
    known = set(flags) | {a for f in flags.values() for a in f.get("aliases", [])}
    for role in ("leader", "worker"):
        emitted = [a for a in block[f"{role}_args"] if a.startswith("--")]
        assert emitted and set(emitted) <= known, (role, set(emitted) - known)
        assert {m for a in block[f"{role}_args"] for m in PLACEHOLDER.findall(a)} <= {
            "group_size",
            "worker_index",
            "leader_address",
            "master_port",
        }
    assert MANIFESTS[engine].capability("pipeline_parallel_degree") is not None


@pytest.mark.parametrize(("role", "rank"), [("leader", "0"), ("worker", "1")])
def test_mlcc_argv_role_prints_the_group_argv(
    capsys: pytest.CaptureFixture[str], role: str, rank: str
) -> None:
    args = ["argv", "--engine", "vllm", "--model", MODEL, "--instance-type", "p5.48xlarge",
            "--region", "us-east-1", "--name", "big", "--nodes", "2", "--pp", "2",
            "--role", role]  # fmt: skip
    assert cli.main(args) == 0
    argv: list[str] = json.loads(capsys.readouterr().out)
    namespace = parse("vllm", argv)
    assert namespace.node_rank == int(rank) and namespace.master_addr == "big-0.big.default"


def test_a_single_node_deployment_keeps_its_deployment_and_no_multi_node_flags(
    tmp_path: Path,
) -> None:
    objects = _objects(nodes=1, pipeline_parallel_degree=1, tensor_parallel_degree=None)
    assert not [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    argv, _ = engine_process(objects, tmp_path)
    assert "--nnodes" not in argv and "--pipeline-parallel-size" not in argv


def test_autoscaling_scales_whole_groups() -> None:
    from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling

    objects = _objects(autoscaling=Autoscaling(min_replicas=1, max_replicas=3))
    target = _one(objects, "ScaledObject")["spec"]["scaleTargetRef"]
    assert target == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "llama-405b",
    }
    assert "replicas" not in _one(objects, "LeaderWorkerSet")["spec"]


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ({"observedGeneration": 1, "readyReplicas": 2, "updatedReplicas": 2}, "ready"),
        ({"observedGeneration": 1, "readyReplicas": 1, "updatedReplicas": 2}, "progressing"),
        ({"observedGeneration": 0, "readyReplicas": 2, "updatedReplicas": 2}, "progressing"),
    ],
)
def test_leader_worker_set_readiness(status: dict[str, int], state: str) -> None:
    obj = {"metadata": {"generation": 1}, "spec": {"replicas": 2}, "status": status}
    assert lws_readiness(obj).state == state


def test_the_crd_rules_refuse_a_misspelt_field() -> None:
    lws = _one(_objects(), "LeaderWorkerSet")
    lws["spec"]["startupPolicy"] = "LeaderWhenever"
    lws["spec"]["leaderWorkerTemplate"]["sise"] = 2
    pointers = {p.pointer for p in object_problems(lws)}
    assert pointers == {"/spec/startupPolicy", "/spec/leaderWorkerTemplate"}


BAD = {
    "nodes below 1": (
        {"nodes": 0},
        "/compute/nodes: nodes must be a whole number of at least 1, or auto (got 0; allowed: 1, "
        "2, 3, "
        "... or auto; fix: set nodes to how many instances one model copy spans (1: one node), "
        "or auto to derive it from model.bytes)",
    ),
    "nodes not a number": (
        {"nodes": "two"},
        "/compute/nodes: wrong type for ComputeSpec.nodes (got 'two'; allowed: int or 'auto'; fix: "
        "pass int or 'auto')",
    ),
    "pipeline degree below 1": (
        {"pipeline_parallel_degree": 0},
        "/compute/pipeline_parallel_degree: pipeline_parallel_degree must be a whole number of at "
        "least "
        "1 (got 0; allowed: 1, 2, 3, ...; fix: set it to the pipeline stages (usually nodes), or "
        "leave it out for 1)",
    ),
    "TP x PP does not match the GPUs": (
        {"pipeline_parallel_degree": 1},
        "/compute/tensor_parallel_degree: tensor_parallel_degree x pipeline_parallel_degree (8 x "
        "1 = 8) "
        "must equal the GPUs per node x nodes (8 GPU(s) of ml.p5.48xlarge x 2 = 16) (got '8 x 1'"
        "; allowed: a product of 16; fix: set tensor_parallel_degree: 8 and "
        "pipeline_parallel_degree: 2 (the GPUs per node and the nodes), or change nodes)",
    ),
    "an engine without a multi-node launch": (
        {"engine": "tensorrt-llm", "pipeline_parallel_degree": 1, "tensor_parallel_degree": 16},
        "/compute/nodes: tensorrt-llm declares no multi-node launch (its manifest has no "
        "multi_node "
        "block): it serves on one node only (got 2; allowed: 1 (multi-node engines: sglang, "
        "vllm); fix: set nodes: 1 with an instance that holds the model, or use sglang or vllm)",
    ),
    "hyperpod-eks over several nodes": (
        {"target": "hyperpod-eks"},
        "/compute/nodes: the hyperpod-eks target serves one node per model copy: the "
        "InferenceEndpointConfig v1 has no multi-node field",
    ),
    "nodes auto without a model size": (
        {"nodes": "auto"},
        "/compute/nodes: nodes: auto needs the model's size to derive the node count (got 'auto'; "
        "allowed: 1, 2, 3, ... (or auto with model.bytes or model.config); fix: set model.bytes "
        "(the model's weights in bytes) or model.config (its config.json), or give nodes as a "
        "number)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_multi_node_input_is_refused_with_the_reason(case: str) -> None:
    fields, message = BAD[case]
    with pytest.raises(MlccError) as caught:
        render(_spec(**fields), context=CONTEXT)
    assert message in str(caught.value).splitlines()[0] or message in str(caught.value)


def test_a_bad_pod_template_field_is_named_under_its_template() -> None:
    lws = _one(_objects(), "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
        "imagePulPolicy"
    ] = "Always"
    pointers = [p.pointer for p in object_problems(lws)]
    assert pointers and all(
        p.startswith("/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0")
        for p in pointers
    ), pointers


def test_a_group_without_efa_serves_with_a_warning() -> None:
    # g6e.2xlarge: one L40S and no EFA; two nodes of it (TP 1, PP 2) collectives go over TCP.
    result = render(
        _spec(instance_type="ml.g6e.2xlarge", tensor_parallel_degree=1), context=CONTEXT
    )
    lws = _one(list(result.objects), "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    (engine,) = [c for c in template["containers"] if c["name"] == "engine"]
    assert "vpc.amazonaws.com/efa" not in engine["resources"]["limits"]
    assert "FI_PROVIDER" not in {e["name"] for e in engine["env"]}
    assert [w for w in result.warnings if "no Elastic Fabric Adapter" in w]


# Llama-3.1-405B-Instruct in BF16: 405.9e9 parameters x 2 bytes (its model card: 405B
# parameters, BF16); an FP8 checkpoint about half that.
BF16_405B, FP8_405B = 811_800_000_000, 410_000_000_000


@pytest.mark.parametrize(
    ("model_bytes", "nodes"),
    [(BF16_405B, 2), (FP8_405B, 1)],
    ids=["bf16 needs two p5", "fp8 fits one p5"],
)
def test_nodes_auto_sizes_the_group_from_the_model(model_bytes: int, nodes: int) -> None:
    fields = {"nodes": "auto", "model_bytes": model_bytes}
    fields |= {"tensor_parallel_degree": None, "pipeline_parallel_degree": 1}
    objects = _objects(**fields)
    if nodes == 1:
        assert not [o for o in objects if o["kind"] == "LeaderWorkerSet"]
        assert [o for o in objects if o["kind"] == "Deployment"]
        return
    group = _one(objects, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    assert group["size"] == nodes
    # TP the GPUs per node, PP the nodes.
    data = {k: v for o in objects if o["kind"] == "ConfigMap" for k, v in o["data"].items()}
    assert (data["VLLM_TENSOR_PARALLEL_SIZE"], data["VLLM_PIPELINE_PARALLEL_SIZE"]) == ("8", "2")


def test_nodes_auto_refuses_a_model_no_group_holds() -> None:
    with pytest.raises(MlccError) as caught:
        render(
            _spec(
                nodes="auto",
                model_bytes=100 * BF16_405B,
                tensor_parallel_degree=None,
                pipeline_parallel_degree=1,
            ),
            context=CONTEXT,
        )
    assert [p.pointer for p in caught.value.problems] == ["/compute/nodes"]


def test_two_groups_get_one_budget_over_every_pod_one_group_at_a_time() -> None:
    objects = _objects(replicas=2)
    budget = _one(objects, "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1  # one pod evicted costs its group: one group at a time
    assert budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    group = _one(objects, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    wanted = budget["selector"]["matchLabels"]
    for role in ("leaderTemplate", "workerTemplate"):  # leaders and workers alike
        labels = group[role]["metadata"]["labels"]
        assert wanted.items() <= labels.items(), role


def test_one_group_has_no_budget_and_the_warning_names_the_group() -> None:
    rendered = render(
        _spec(), context=RenderContext(account="123456789012", region="us-east-1", profile="prod")
    )
    assert not [o for o in rendered.objects if o["kind"] == "PodDisruptionBudget"]
    (note,) = [w for w in rendered.warnings if "no PodDisruptionBudget" in w]
    assert note.startswith("llama-405b: one group of 2 nodes and no PodDisruptionBudget")
    assert "any of its 2 nodes restarts the whole group" in note


@pytest.mark.parametrize(
    ("env", "nodes"),
    [({}, 2), ({"VLLM_MAX_MODEL_LEN": "8192"}, 1)],
    ids=["the config's 128k context needs two p4d", "the user's 8k context fits one"],
)
def test_nodes_auto_sizes_one_sequence_from_the_config_and_the_users_context(
    env: dict[str, str], nodes: int
) -> None:
    from tests.core.platform.test_node_sizing import MHA_70B

    spec = _spec(
        nodes="auto",
        instance_type="ml.p4d.24xlarge",
        model_config=MHA_70B,  # the size (parameters x 2 bytes) and the KV geometry
        tensor_parallel_degree=None,
        pipeline_parallel_degree=1,
        env=env,
    )
    rendered = render(spec, context=CONTEXT)
    groups = [o for o in rendered.objects if o["kind"] == "LeaderWorkerSet"]
    assert [g["spec"]["leaderWorkerTemplate"]["size"] for g in groups] == (
        [nodes] if nodes > 1 else []
    )
    (note,) = [w for w in rendered.warnings if w.startswith("nodes: auto ->")]
    source = "/engine/env/VLLM_MAX_MODEL_LEN" if env else "config.json max_position_embeddings"
    assert f"{nodes} node(s) x 8 GPUs" in note and source in note
