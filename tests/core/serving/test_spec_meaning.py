"""Values checked for meaning at render, from data (issue 39): the model loader's extra config
against the keys and types of the loader its load format picks (``data/loader_config``), an
autoscaling target in its metric's unit (``ROLE_RANGES``), and a node count given as a number
held to the fit rule of ``nodes: auto``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.engines.loader_config import loader_config_facts
from mlcc_constructs.core.engines.metrics import ROLE_RANGES, ROLES
from mlcc_constructs.core.engines.parser_facts import parser_facts
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

AMP = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123abcd-4567-89ef-0123-456789abcdef"
CONTEXT = RenderContext(
    account="123456789012", region="us-east-1", profile="dev", prometheus_query_url=AMP
)
S3_MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
KEY = "VLLM_MODEL_LOADER_EXTRA_CONFIG"
RUNAI = "the runai_streamer loader of vllm 0.31.0 (RunaiModelStreamerLoader)"
RUNAI_KEYS = (
    "concurrency (an integer of at least 1), distributed (a boolean), memory_limit (an "
    "integer of at least -1)"
)
RUNAI_SOURCE = (
    "mlcc_constructs/data/loader_config/vllm/0.31.0.json: "
    "vllm.model_executor.model_loader.runai_streamer_loader RunaiModelStreamerLoader.__init__"
)


def _prepare(**fields: Any) -> PreparedDeployment:
    values: dict[str, Any] = {
        "engine": "vllm",
        "model": S3_MODEL,
        "instance_type": "ml.g5.12xlarge",
        "name": "chat",
        **fields,
    }
    return prepare(flat_spec(**values), context=CONTEXT)


def _errors(**fields: Any) -> list[str]:
    with pytest.raises(MlccError) as caught:
        _prepare(**fields)
    return [str(p) for p in caught.value.problems]


# -- the model loader's extra config ---------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {KEY: '{"bogus": 1}'},
            f"/engine/env/{KEY}: {KEY} → 'bogus' is not a key {RUNAI} takes: the engine refuses "
            f"it when it loads the model (got 'bogus'; allowed: {RUNAI_KEYS}; fix: remove it; "
            f"the keys are recorded in {RUNAI_SOURCE})",
        ),
        (
            {KEY: '{"concurency": 32}'},
            f"/engine/env/{KEY}: {KEY} → 'concurency' is not a key {RUNAI} takes: the engine "
            f"refuses it when it loads the model (got 'concurency'; allowed: {RUNAI_KEYS}; fix: "
            f"did you mean concurrency? the keys are recorded in {RUNAI_SOURCE})",
        ),
        (
            {KEY: '{"concurrency": "32"}'},
            f"/engine/env/{KEY}: {KEY} → concurrency of {RUNAI} takes an integer of at least 1 "
            f"(got '32'; allowed: {RUNAI_KEYS}; fix: write \"concurrency\": 32 (a JSON integer, "
            "no quotes))",
        ),
        (
            {KEY: '{"memory_limit": -2}'},
            f"/engine/env/{KEY}: {KEY} → memory_limit of {RUNAI} takes an integer of at least -1 "
            f'(got -2; allowed: {RUNAI_KEYS}; fix: give "memory_limit" an integer of at least '
            "-1)",
        ),
        (
            {KEY: "concurrency=32"},
            f"/engine/env/{KEY}: {KEY} → --model-loader-extra-config takes a JSON object: the keys "
            f"of {RUNAI} (got 'concurrency=32'; allowed: {RUNAI_KEYS}; fix: write a JSON object, "
            'e.g. {"concurrency": ...}, or remove the key)',
        ),
    ],
)
def test_a_loader_config_the_streaming_loader_refuses_is_refused_at_render(
    env: dict[str, str], expected: str
) -> None:
    # an s3:// model on eks streams: the library sets --load-format runai_streamer (Tier 1)
    assert _errors(env=env) == [expected]


def test_a_loader_config_the_streaming_loader_takes_renders() -> None:
    value = '{"concurrency": 32, "memory_limit": -1, "distributed": false}'
    prepared = _prepare(env={KEY: value})
    assert (KEY, value) in prepared.resolution.tier2
    assert ("VLLM_LOAD_FORMAT", "runai_streamer") in prepared.resolution.tier1


@pytest.mark.parametrize(
    ("env", "loader", "allowed"),
    [
        (  # a mounted model: the default load format, DefaultModelLoader
            {KEY: '{"concurrency": 32}'},
            "the auto loader of vllm 0.31.0 (DefaultModelLoader)",
            "enable_multithread_load (a boolean), enable_weights_track (a boolean), num_threads "
            "(an integer of at least 1)",
        ),
        (  # the user's own load format picks the loader
            {"VLLM_LOAD_FORMAT": "dummy", KEY: '{"concurrency": 32}'},
            "the dummy loader of vllm 0.31.0 (DummyModelLoader)",
            "none",
        ),
    ],
)
def test_the_load_format_picks_the_loader_whose_keys_apply(
    env: dict[str, str], loader: str, allowed: str
) -> None:
    (error,) = _errors(model="org/model", env=env)
    assert error.startswith(f"/engine/env/{KEY}: {KEY} → 'concurrency' is not a key {loader} takes")
    assert f"allowed: {allowed};" in error


def test_a_load_format_whose_loader_is_not_recorded_goes_unchecked() -> None:
    env = {"VLLM_LOAD_FORMAT": "tensorizer", KEY: '{"tensorizer_config": {"uri": "s3://b/m"}}'}
    assert (KEY, env[KEY]) in _prepare(model="org/model", env=env).resolution.tier2


@pytest.mark.parametrize("path", sorted(data_path("loader_config").glob("*/*.json")))
def test_every_loader_facts_file_names_its_source_and_a_recorded_parser(path: Any) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    engine, version = path.parent.name, path.stem
    assert (document["engine"], document["version"]) == (engine, version)
    assert f"{engine}=={version}" in document["read_from"]["wheel"]
    parser = parser_facts(engine, version)
    assert parser is not None  # the same release's parser is recorded
    for flag in (document["flag"], document["load_format_flag"]):
        assert flag in parser.flags
    facts = loader_config_facts(engine, version)
    assert facts is not None and document["default_load_format"] in facts.loaders
    for loader in document["loaders"].values():
        assert loader["module"].startswith(f"{engine}.") and "." in loader["function"]
        for key in loader["keys"].values():
            assert key["type"] in ("boolean", "integer", "string", None)


# -- autoscaling targets in the metric's unit ------------------------------------------------


@pytest.mark.parametrize(
    ("autoscaling", "expected"),
    [
        (
            Autoscaling(max_replicas=2, metric="kv_cache_usage", target=50),
            "/scaling/autoscaling/target: target 50 is out of the range of "
            "vllm:kv_cache_usage_perc (kv_cache_usage: the used share of the KV cache, 0..1): "
            "the metric never passes 1, so the autoscaler would never scale out (got 50.0; "
            "allowed: above 0 and below 1; fix: give the target as a share: 0.5 for 50 %)",
        ),
        (
            Autoscaling(max_replicas=2, metric="vllm:kv_cache_usage_perc", target=1),
            "/scaling/autoscaling/target: target 1 is out of the range of "
            "vllm:kv_cache_usage_perc (kv_cache_usage: the used share of the KV cache, 0..1): "
            "the metric never passes 1, so the autoscaler would never scale out (got 1.0; "
            "allowed: above 0 and below 1; fix: give the target in the metric's unit, e.g. 0.8 "
            "for 80 %)",
        ),
    ],
)
def test_a_target_outside_the_metrics_range_is_refused(
    autoscaling: Autoscaling, expected: str
) -> None:
    assert _errors(autoscaling=autoscaling) == [expected]


def test_a_target_in_the_metrics_unit_renders() -> None:
    prepared = _prepare(
        autoscaling=Autoscaling(max_replicas=2, metric="kv_cache_usage", target=0.8)
    )
    (scaled,) = [e.object for e in prepared.objects if e.object["kind"] == "ScaledObject"]
    assert "vllm:kv_cache_usage_perc" in json.dumps(scaled)


def test_sglangs_share_metric_is_held_to_the_same_range() -> None:
    errors = _errors(
        engine="sglang", autoscaling=Autoscaling(max_replicas=2, metric="kv_cache_usage", target=80)
    )
    assert errors == [
        "/scaling/autoscaling/target: target 80 is out of the range of sglang:token_usage "
        "(kv_cache_usage: the used share of the KV cache, 0..1): the metric never passes 1, so "
        "the autoscaler would never scale out (got 80.0; allowed: above 0 and below 1; fix: "
        "give the target as a share: 0.8 for 80 %)"
    ]


def test_every_role_declares_its_unit() -> None:
    assert set(ROLE_RANGES) == set(ROLES)


# -- a node count given as a number, held to the fit rule of nodes: auto ---------------------

TEN_TB = 10 * 10**12


def test_ten_terabytes_on_one_node_is_refused() -> None:
    assert _errors(model_bytes=TEN_TB, nodes=1) == [
        "/compute/nodes: the model (9313.2 GiB) does not fit 1 node(s) of ml.g5.12xlarge: "
        "2328.3 GiB of weights per GPU (TP 4 x PP 1) in a 21.6 GiB budget leaves less than 10% "
        "for the KV cache (got 1; allowed: none up to 8 nodes of ml.g5.12xlarge; fix: pick an "
        "instance with more GPU memory, or a quantized (e.g. FP8) checkpoint)"
    ]


def test_a_count_too_small_is_refused_with_the_count_that_fits() -> None:
    assert _errors(model_bytes=1000 * 10**9, instance_type="ml.p5.48xlarge") == [
        "/compute/nodes: the model (931.3 GiB) does not fit 1 node(s) of ml.p5.48xlarge: "
        "116.4 GiB of weights per GPU (TP 8 x PP 1) in a 72.0 GiB budget leaves less than 10% "
        "for the KV cache (got 1; allowed: 2 or more (nodes: auto resolves to 2); fix: set "
        "nodes: 2 (or nodes: auto), pick an instance with more GPU memory, or a quantized "
        "(e.g. FP8) checkpoint)"
    ]


def test_a_tensor_parallel_degree_below_the_gpus_is_refused_naming_the_gpus_that_hold_it() -> None:
    (error,) = _errors(model_bytes=60 * 10**9, tensor_parallel_degree=1)
    assert error == (
        "/compute/nodes: the model (55.9 GiB) does not fit 1 node(s) of ml.g5.12xlarge: 55.9 GiB "
        "of weights per GPU (TP 1 x PP 1) in a 21.6 GiB budget leaves less than 10% for the KV "
        "cache (got 1; allowed: tensor_parallel_degree x pipeline_parallel_degree = 4; fix: "
        "shard the weights over all 4 GPUs (leave tensor_parallel_degree unset), or pick an "
        "instance with more GPU memory)"
    )


def test_a_count_that_holds_the_model_renders() -> None:
    prepared = _prepare(
        model_bytes=1000 * 10**9,
        instance_type="ml.p5.48xlarge",
        nodes=2,
        pipeline_parallel_degree=2,
    )
    assert (prepared.resolution.nodes, prepared.resolution.pipeline_parallel_degree) == (2, 2)
