"""Engine metrics as manifest data: every metric a manifest names exists in the pinned engine
version's recorded facts (``tests/engine_parsers/metrics/<engine>.json``, read from the wheels'
source), with the type its role needs; SGLang gets ``--enable-metrics`` wherever metrics are
scraped; a ``metrics`` block's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.engines.metrics import HISTOGRAMS, ROLES, engine_metrics, metrics_problems
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

FACTS_DIR = Path(__file__).resolve().parents[2] / "engine_parsers" / "metrics"
FACTS = {p.stem: json.loads(p.read_text()) for p in sorted(FACTS_DIR.glob("*.json"))}
MANIFESTS = {m.engine: m for m in builtin_engines()}
WITH_METRICS = sorted(e for e, m in MANIFESTS.items() if engine_metrics(m.raw) is not None)
ROLE_TYPES = {role: "histogram" if role in HISTOGRAMS else "gauge" for role in ROLES}


def test_engines_with_metrics_are_the_recorded_ones() -> None:
    # TensorRT-LLM 1.0.0, LMI and llama.cpp: no Prometheus metric names on record.
    assert WITH_METRICS == sorted(FACTS) == ["sglang", "vllm"]


@pytest.mark.parametrize("engine", sorted(FACTS))
def test_facts_are_of_the_pinned_engine_version(engine: str) -> None:
    assert FACTS[engine]["version"] == pinned().engine_versions[engine]


@pytest.mark.parametrize("engine", WITH_METRICS)
def test_every_manifest_metric_is_exported_with_its_role_type(engine: str) -> None:
    metrics = engine_metrics(MANIFESTS[engine].raw)
    assert metrics is not None
    exported: dict[str, Any] = FACTS[engine]["metrics"]
    assert set(metrics.names) == set(ROLES)
    for role, name in metrics.names.items():
        assert name in exported, f"{engine} {role}: {name} is not in the recorded metrics"
        assert exported[name] == ROLE_TYPES[role], (engine, role, name)
    assert metrics.model_label == FACTS[engine]["model_label"]
    assert metrics.path == "/metrics"


@pytest.mark.parametrize(
    ("engine", "target", "expected"),
    [
        ("sglang", "eks", ("SGLANG_ENABLE_METRICS", "true")),
        ("sglang", "hyperpod-eks", ("SGLANG_ENABLE_METRICS", "true")),
        ("vllm", "eks", None),  # vLLM serves /metrics by default
    ],
)
def test_metrics_are_enabled_where_they_are_scraped(
    engine: str, target: str, expected: tuple[str, str] | None
) -> None:
    spec = flat_spec(
        engine=engine, model="org/model", instance_type="g5.xlarge", name="m", target=target
    )
    tier1 = resolve(spec).tier1
    enabled = [pair for pair in tier1 if pair[0].endswith("ENABLE_METRICS")]
    assert enabled == ([expected] if expected else [])
    if expected:
        assert FACTS[engine]["enable_flag"] == "--enable-metrics"


def test_a_user_value_wins_over_the_enabled_metrics() -> None:
    spec = flat_spec(
        engine="sglang",
        model="org/model",
        instance_type="g5.xlarge",
        name="m",
        env={"SGLANG_ENABLE_METRICS": "false"},
    )
    assert ("SGLANG_ENABLE_METRICS", "true") not in resolve(spec).tier1


def test_enable_capability_must_be_a_boolean_capability() -> None:
    document = {
        "launch": {"metrics_path": "/metrics"},
        "capability_map": {"model": {"suffix": "MODEL", "value_type": "valued"}},
        "metrics": {"names": {"queue_depth": "q"}, "enable_capability": "model"},
    }
    (problem,) = metrics_problems(document, "x.json")
    assert str(problem).startswith(
        "x.json:/metrics/enable_capability: enable_capability must name a boolean capability"
    )
    del document["launch"]["metrics_path"]  # type: ignore[attr-defined]
    assert [p.pointer for p in metrics_problems(document, "x.json")] == [
        "/launch/metrics_path",
        "/metrics/enable_capability",
    ]


# -- the NetworkPolicy admits the cluster's scraper on the engine port -------------------------


def _ingress_sources(**fields: Any) -> list[list[str]]:
    from mlcc_constructs.core.serving.prepared import prepare
    from mlcc_constructs.core.serving.spec.context import RenderContext

    context = fields.pop("context", RenderContext())
    spec = flat_spec(model="org/model", instance_type="g5.xlarge", name="m", **fields)
    (policy,) = [
        o.object for o in prepare(spec, context=context).objects if o.id == "NetworkPolicy"
    ]
    return [[b["ipBlock"]["cidr"] for b in rule["from"]] for rule in policy["spec"]["ingress"]]


def test_the_scraper_reaches_an_engine_with_metrics_behind_no_load_balancer() -> None:
    from mlcc_constructs.core.platform.load_balancing import REFERENCE_CIDRS
    from mlcc_constructs.core.serving.spec.endpoint import Endpoint

    internal = list(REFERENCE_CIDRS["internal"])
    # internal: the load balancer rule already admits the scraper's subnets
    assert _ingress_sources(engine="vllm") == [internal]
    assert _ingress_sources(engine="vllm", endpoint=Endpoint(scheme="none")) == [internal]
    # an engine without metrics is not scraped
    assert _ingress_sources(engine="lmi", endpoint=Endpoint(scheme="none")) == []


def test_the_scraper_cidrs_come_from_the_render_context() -> None:
    from mlcc_constructs.core.serving.spec.context import RenderContext
    from mlcc_constructs.core.serving.spec.endpoint import Endpoint

    context = RenderContext(metrics_scraper_cidrs=["10.0.30.0/24", "10.0.31.0/24"])
    sources = _ingress_sources(engine="sglang", endpoint=Endpoint(scheme="none"), context=context)
    assert sources == [["10.0.30.0/24", "10.0.31.0/24"]]
    with pytest.raises(MlccError) as caught:
        RenderContext(metrics_scraper_cidrs=["10.0.30.0/33"])
    assert str(caught.value).startswith("/metrics_scraper_cidrs/0: not an IPv4 network")
