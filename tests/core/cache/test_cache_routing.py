"""``routing`` and ``kv_cache``: the HyperPod inference operator's intelligent routing and
managed tiered KV cache. Rendered IECs against the real v1 CRD (strict), the refusals (each
naming its field, value, allowed values and fix), and which targets and engines take them (their
manifests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.platform.targets import kubernetes_target_names, load_target
from mlcc_constructs.core.serving.kinds._crd_rules import strict
from mlcc_constructs.core.serving.kinds.inference_endpoint_config import RULES
from mlcc_constructs.core.serving.prepare.cache_routing import DOCS, TIERED_STORAGE_WARNING
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.cache_routing import (
    L2_URL_REQUIRED,
    ROUTING_STRATEGIES,
    KvCache,
    Routing,
)
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.serving.spec.files import schema, spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError, Problem
from tests._flat import flat_spec

CRD = "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
REDIS = "redis://redis.inference.svc.cluster.local:6379"


def _spec(**fields: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "llama",
        "target": "hyperpod-eks",
    }
    values.update(fields)
    return flat_spec(**values)


def _iec(**fields: Any) -> dict[str, Any]:
    obj = render(_spec(**fields), context=CONTEXT).objects[0]
    assert obj["kind"] == "InferenceEndpointConfig"
    return obj


def _problems(**fields: Any) -> list[Problem]:
    with pytest.raises(MlccError) as caught:
        prepare(_spec(**fields), context=CONTEXT)
    return list(caught.value.problems)


@pytest.fixture(scope="module")
def strict_crd(shared_dir: Path) -> Any:
    document = yaml.safe_load((shared_dir / CRD).read_text(encoding="utf-8"))
    version = next(v for v in document["spec"]["versions"] if v["name"] == "v1")
    return jsonschema.Draft202012Validator(strict(version["schema"]["openAPIV3Schema"]))


# -- rendering, against the real CRD ------------------------------------------------------------

RENDERED = [
    *(
        (f"routing-{strategy}", {"routing": Routing(strategy=strategy)})
        for strategy in ROUTING_STRATEGIES
    ),
    ("kv-l1", {"kv_cache": KvCache()}),
    ("kv-l1-off", {"kv_cache": KvCache(l1=False)}),
    ("kv-redis", {"kv_cache": KvCache(l2="redis", l2_url=REDIS)}),
    ("kv-tiered", {"kv_cache": KvCache(l2="tieredstorage")}),
    ("kv-file", {"kv_cache": KvCache(config_file="/opt/ml/model/kv-cache.yaml")}),
    (
        "both-and-autoscaling",
        {
            "routing": Routing(),
            "kv_cache": KvCache(l2="redis", l2_url=REDIS),
            "autoscaling": Autoscaling(max_replicas=2),
        },
    ),
]


@pytest.mark.parametrize(("case", "fields"), RENDERED, ids=[c for c, _ in RENDERED])
def test_rendered_iec_passes_the_strict_v1_crd(
    strict_crd: Any, case: str, fields: dict[str, Any]
) -> None:
    iec = _iec(**fields)
    assert [f"{list(e.absolute_path)}: {e.message}" for e in strict_crd.iter_errors(iec)] == []
    assert RULES.problems(iec) == []


@pytest.mark.parametrize(
    ("fields", "routing", "kv_cache"),
    [
        ({}, None, None),
        ({"routing": Routing()}, {"enabled": True, "routingStrategy": "prefixaware"}, None),
        (
            {"routing": Routing(strategy="session"), "kv_cache": KvCache()},
            {"enabled": True, "routingStrategy": "session"},
            {"enableL1Cache": True, "enableL2Cache": False},
        ),
        (
            {"kv_cache": KvCache(l1=False, l2="redis", l2_url=REDIS)},
            None,
            {
                "enableL1Cache": False,
                "enableL2Cache": True,
                "l2CacheSpec": {"l2CacheBackend": "redis", "l2CacheLocalUrl": REDIS},
            },
        ),
        (
            {"kv_cache": KvCache(l2="tieredstorage", config_file="/opt/kv.yaml")},
            None,
            {
                "enableL1Cache": True,
                "enableL2Cache": True,
                "l2CacheSpec": {"l2CacheBackend": "tieredstorage"},
                "cacheConfigFile": "/opt/kv.yaml",
            },
        ),
    ],
)
def test_the_iec_carries_what_the_spec_asks(
    fields: dict[str, Any], routing: Any, kv_cache: Any
) -> None:
    spec = _iec(**fields)["spec"]
    assert spec.get("intelligentRoutingSpec") == routing
    assert spec.get("kvCacheSpec") == kv_cache


def test_a_misspelt_kv_cache_field_fails_our_rules() -> None:
    iec = _iec(kv_cache=KvCache())
    iec["spec"]["kvCacheSpec"]["enableL3Cache"] = True
    assert [p.pointer for p in RULES.problems(iec)] == ["/spec/kvCacheSpec"]


def test_an_unknown_strategy_fails_our_rules_as_the_crds_enum() -> None:
    iec = _iec(routing=Routing())
    iec["spec"]["intelligentRoutingSpec"]["routingStrategy"] = "random"
    [problem] = RULES.problems(iec)
    assert problem.pointer == "/spec/intelligentRoutingSpec/routingStrategy"


# -- refusals -----------------------------------------------------------------------------------

BAD = [
    (
        "unknown strategy",
        {"routing": Routing(strategy="prefix-aware")},
        "/cache/routing/strategy",
        "prefix-aware",
        ", ".join(ROUTING_STRATEGIES),
        "did you mean prefixaware",
    ),
    (
        "unknown l2 backend",
        {"kv_cache": KvCache(l2="memcached")},
        "/cache/kv_cache/l2",
        "memcached",
        "redis, tieredstorage",
        "use redis",
    ),
    (
        "redis without its url",
        {"kv_cache": KvCache(l2="redis")},
        "/cache/kv_cache/l2_url",
        None,
        "redis://host:port",
        "set kv_cache.l2_url",
    ),
    (
        "a url without a backend",
        {"kv_cache": KvCache(l2_url=REDIS)},
        "/cache/kv_cache/l2_url",
        REDIS,
        "",
        "set kv_cache.l2: redis",
    ),
    (
        "not a redis url",
        {"kv_cache": KvCache(l2="redis", l2_url="http://redis:6379")},
        "/cache/kv_cache/l2_url",
        "http://redis:6379",
        "redis://host:port",
        "Redis cluster's endpoint",
    ),
    (
        "a relative config file",
        {"kv_cache": KvCache(config_file="kv.yaml")},
        "/cache/kv_cache/config_file",
        "kv.yaml",
        "an absolute path",
        "/opt/ml/model/kv-cache.yaml",
    ),
    (
        "kv_cache on sglang",
        {"engine": "sglang", "kv_cache": KvCache()},
        "/cache/kv_cache",
        "sglang",
        "vllm",
        "serve the model with vllm",
    ),
    (
        "routing on tensorrt-llm",
        {"engine": "tensorrt-llm", "routing": Routing()},
        "/cache/routing",
        "tensorrt-llm",
        "vllm",
        "serve the model with vllm",
    ),
    (
        "routing on eks",
        {
            "target": "eks",
            "compute": {"instance_type": "g5.12xlarge"},
            "cache": {"routing": Routing()},
        },
        "/cache/routing",
        "eks",
        "targets hyperpod-eks",
        "deploy to hyperpod-eks",
    ),
    (
        "kv_cache on eks",
        {
            "target": "eks",
            "compute": {"instance_type": "g5.12xlarge"},
            "cache": {"kv_cache": KvCache()},
        },
        "/cache/kv_cache",
        "eks",
        "targets hyperpod-eks",
        "drop cache.kv_cache",
    ),
]


@pytest.mark.parametrize(
    ("fields", "pointer", "value", "allowed", "fix"),
    [b[1:] for b in BAD],
    ids=[b[0] for b in BAD],
)
def test_bad_input_names_the_field_value_allowed_and_fix(
    fields: dict[str, Any], pointer: str, value: Any, allowed: str, fix: str
) -> None:
    problems = [p for p in _problems(**fields) if p.pointer == pointer]
    assert len(problems) == 1, [str(p) for p in _problems(**fields)]
    [problem] = problems
    assert problem.value == value
    assert allowed in problem.allowed
    assert fix in problem.fix
    assert problem.message


def test_an_engine_refusal_gives_the_reason_and_the_aws_page() -> None:
    [problem] = _problems(engine="sglang", routing=Routing())
    assert "vLLM-based inference containers only" in problem.message  # vllm manifest
    assert DOCS in problem.message


def test_an_eks_refusal_gives_the_targets_reason() -> None:
    [problem] = _problems(target="eks", instance_type="g5.12xlarge", kv_cache=KvCache())
    assert load_target("eks").notes["kv_cache"] in problem.message


def test_every_problem_is_reported_at_once() -> None:
    problems = _problems(
        engine="sglang", routing=Routing(strategy="fastest"), kv_cache=KvCache(l2="redis")
    )
    assert sorted(p.pointer for p in problems) == [
        "/cache/kv_cache",
        "/cache/kv_cache/l2_url",
        "/cache/routing",
        "/cache/routing/strategy",
    ]


# -- warnings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kv_cache", "expected"),
    [
        (KvCache(), []),
        (KvCache(l2="redis", l2_url=REDIS), []),
        (KvCache(l2="tieredstorage"), [TIERED_STORAGE_WARNING]),
        (KvCache(config_file="/opt/kv.yaml"), []),
    ],
)
def test_warnings(kv_cache: KvCache, expected: list[str]) -> None:
    warnings = prepare(_spec(kv_cache=kv_cache), context=CONTEXT).warnings
    assert [w for w in warnings if w.startswith("kv_cache")] == expected


def test_a_config_file_with_an_l2_backend_warns_that_the_file_wins() -> None:
    spec = _spec(kv_cache=KvCache(l2="redis", l2_url=REDIS, config_file="/opt/kv.yaml"))
    warnings = prepare(spec, context=CONTEXT).warnings
    assert any(w.startswith("kv_cache.config_file /opt/kv.yaml takes precedence") for w in warnings)


# -- where they apply: data, not names ----------------------------------------------------------


def test_only_hyperpod_eks_renders_them_and_every_other_target_says_why() -> None:
    supported = [n for n in kubernetes_target_names() if load_target(n).managed_cache_routing]
    assert supported == ["hyperpod-eks"]
    for name in kubernetes_target_names():
        target = load_target(name)
        if not target.managed_cache_routing:
            assert {"routing", "kv_cache"} <= set(target.notes), name
        else:
            assert "InferenceEndpointConfig" in target.kinds


def test_only_vllm_declares_them_citing_aws() -> None:
    declared = {m.engine: m.managed_cache_routing for m in builtin_engines()}
    assert [e for e, source in declared.items() if source] == ["vllm"]
    assert DOCS in str(declared["vllm"])


# -- spec files ---------------------------------------------------------------------------------


def test_a_spec_file_takes_routing_and_kv_cache() -> None:
    loaded = spec_from_mapping(
        {
            "engine": {"name": "vllm"},
            "model": {"uri": MODEL},
            "compute": {"instance_type": "ml.g5.12xlarge"},
            "target": "hyperpod-eks",
            "cache": {
                "routing": {"strategy": "kvaware"},
                "kv_cache": {"l1": True, "l2": "redis", "l2_url": REDIS},
            },
        },
        where="spec.yaml",
    )
    assert loaded.spec.cache.routing == Routing(strategy="kvaware")
    assert loaded.spec.cache.kv_cache == KvCache(l2="redis", l2_url=REDIS)


@pytest.mark.parametrize(
    ("field", "value", "pointer", "fix"),
    [
        ("routing", {"strategy": "sticky"}, "/cache/routing/strategy", "prefixaware, kvaware"),
        ("kv_cache", {"l2": "s3"}, "/cache/kv_cache/l2", "l2: tieredstorage"),
        ("kv_cache", {"l3": True}, "/cache/kv_cache", "see mlcc_constructs/data"),
    ],
)
def test_a_spec_file_refuses_bad_values(field: str, value: Any, pointer: str, fix: str) -> None:
    with pytest.raises(MlccError) as caught:
        spec_from_mapping(
            {
                "engine": {"name": "vllm"},
                "model": {"uri": MODEL},
                "compute": {"instance_type": "g5.12xlarge"},
                "cache": {field: value},
            },
            where="spec.yaml",
        )
    [problem] = caught.value.problems
    assert (problem.where, problem.pointer) == ("spec.yaml", pointer)
    assert fix in problem.fix


def test_the_spec_schema_offers_what_the_core_accepts() -> None:
    properties = schema()["properties"]["cache"]["properties"]
    assert properties["routing"]["properties"]["strategy"]["enum"] == list(ROUTING_STRATEGIES)
    assert properties["kv_cache"]["properties"]["l2"]["enum"] == list(L2_URL_REQUIRED)
    assert json.dumps(properties["routing"]).count("intelligentRoutingSpec") == 1
