"""Every PromQL expression the project renders, run by the real Prometheus: ``promtool``
(Debian's ``prometheus`` package, which ``make test`` installs) parses each one and evaluates it
with ``promtool test rules`` on input series named and labelled as the pinned engines export
them (``tests/engine_parsers/metrics/<engine>.json``, recorded from the engines' source, not
from our manifests), with the labels the cluster's scraper adds (``namespace``, the pod).

The queries come from what the library renders, never re-typed here: the KEDA ScaledObject
trigger (eks) and the IEC ``prometheusTrigger`` (hyperpod-eks) of an autoscaled deployment for
every engine and every metric role it may scale on, and every panel and variable of the
shipped Grafana dashboard. A query on a metric the engine does not export, or with a label it
does not carry, selects nothing and fails (``test_a_query_on_a_metric_the_engine_lacks_fails``
shows it). Scale to zero's wake-up signals are CloudWatch metrics, not PromQL (not here).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import ComputeSpec, EngineSpec, ModelSpec, ScalingSpec
from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.engines.metrics import HISTOGRAMS, ROLE_RANGES
from mlcc_constructs.core.platform.keda import NAMESPACE_LABEL
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling, scaling_roles
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not found: `make test` installs Debian's prometheus package "
    "(apt-get install prometheus); run it through make",
)
RECORDED = Path(__file__).resolve().parents[2] / "engine_parsers" / "metrics"
AMP = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123abcd-4567-89ef-0123-456789abcdef"
CONTEXT = RenderContext(
    account="123456789012", region="us-east-1", profile="dev", prometheus_query_url=AMP
)
NAMESPACE = "team-a"
SERVED = "chat"
PODS = {"chat-0": 3.0, "chat-1": 4.0}
"""Two pods of the deployment and each gauge's value there."""
DECOY = {NAMESPACE_LABEL: "team-b", "pod": "other-0"}
"""A pod of another deployment (namespace team-b, model other): its series must never count."""
BUCKETS = (("0.1", 0), ("0.5", 10), ("+Inf", 10))
"""A histogram's per-minute bucket increments: every observation between 0.1 and 0.5."""
EVAL = "10m"


@dataclass(frozen=True)
class Query:
    """One rendered expression, the engine whose series it reads, where it was rendered."""

    engine: str
    where: str
    expr: str


def _target(metric: str) -> float:
    """A target in the metric's unit: 5 requests, or four fifths of a bounded share."""
    span = ROLE_RANGES.get(metric)
    return 5 if span is None or span.maximum is None else span.maximum * 0.8


def _autoscaled(engine: str, target: str, metric: str) -> DeploymentSpec:
    """The one spec of this module: an autoscaled deployment of ``engine`` on ``target``."""
    return DeploymentSpec(
        name=SERVED,
        namespace=NAMESPACE,
        target=target,
        engine=EngineSpec(name=engine),
        model=ModelSpec(uri="org/model"),
        compute=ComputeSpec(instance_type="g5.12xlarge"),
        scaling=ScalingSpec(
            autoscaling=Autoscaling(max_replicas=3, metric=metric, target=_target(metric))
        ),
    )


def _walk_queries(document: Any) -> Iterator[str]:
    """Every PromQL string of a rendered object: a KEDA prometheus trigger's ``query`` or the
    IEC's ``prometheusTrigger.query`` (any ``query`` key whose value reads a metric)."""
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "query" and isinstance(value, str) and "{" in value:
                yield value
            else:
                yield from _walk_queries(value)
    elif isinstance(document, list):
        for item in document:
            yield from _walk_queries(item)


def _scaling_queries() -> list[Query]:
    queries = []
    for manifest in EngineRegistry.load():
        if manifest.metrics is None:
            continue
        for role in sorted(scaling_roles(manifest.metrics)):
            for target in ("eks", "hyperpod-eks"):
                prepared = prepare(_autoscaled(manifest.engine, target, role), context=CONTEXT)
                found = [q for o in prepared.objects for q in _walk_queries(o.object)]
                assert found, f"{manifest.engine} on {target} scaling on {role}: no query"
                queries += [Query(manifest.engine, f"{target} {role}", q) for q in found]
    return queries


def _dashboard() -> dict[str, Any]:
    return json.loads(data_path("grafana-dashboard.json").read_text())


def _grafana(expr: str) -> str:
    """A dashboard expression as Grafana sends it with one namespace and one model picked."""
    return expr.replace("$namespace", NAMESPACE).replace("$model", SERVED)


def _dashboard_queries() -> list[Query]:
    return [
        Query(target["refId"], f"panel {panel['title']!r}", _grafana(target["expr"]))
        for panel in _dashboard()["panels"]
        for target in panel["targets"]
    ]


def _recorded(engine: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((RECORDED / f"{engine}.json").read_text())
    return document


def _labels(pairs: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(pairs.items())) + "}"


def _input_series(engine: str) -> list[dict[str, str]]:
    """Every metric the engine exports, as the scraper stores it, on the deployment's two pods
    and on the decoy: gauges hold their pod's value, counters and histogram buckets grow."""
    recorded = _recorded(engine)
    model_label = recorded["model_label"]
    pods = [
        ({NAMESPACE_LABEL: NAMESPACE, "pod": p, model_label: SERVED}, v) for p, v in PODS.items()
    ]
    pods.append(({**DECOY, model_label: "other"}, 100.0))
    series = []
    for name, kind in sorted(recorded["metrics"].items()):
        for labels, value in pods:
            if kind == "gauge":
                series.append({"series": name + _labels(labels), "values": f"{value:g}x20"})
            elif kind == "counter":
                exposed = name if name.endswith("_total") else name + "_total"
                series.append({"series": exposed + _labels(labels), "values": "0+1x20"})
            elif kind == "histogram":
                for le, step in BUCKETS:
                    bucket = {**labels, "le": le}
                    series.append(
                        {"series": f"{name}_bucket{_labels(bucket)}", "values": f"0+{step}x20"}
                    )
    return series


def _expected(query: Query, model_label: str) -> list[dict[str, Any]]:
    """What the query must return on :func:`_input_series`: only the deployment's two pods
    count (the decoy's 100 never does)."""
    expr = query.expr
    grouped = re.match(r"^(sum|avg|count) by \((\w+)\)", expr)
    if expr.startswith("histogram_quantile(0.95,"):
        # All observations fall in (0.1, 0.5]: the 95th percentile interpolates to 0.48.
        by = re.search(r"sum by \(le, (\w+)\)", expr)
        assert by, expr
        return [{"labels": _labels({by.group(1): _owner(by.group(1), model_label)}), "value": 0.48}]
    values = list(PODS.values())
    if grouped:
        reading, by = grouped.groups()
        total = {"sum": sum(values), "avg": sum(values) / len(values), "count": len(values)}[
            reading
        ]
        return [{"labels": _labels({by: _owner(by, model_label)}), "value": total}]
    assert expr.startswith("sum("), expr  # the autoscalers' trigger: the pods' sum
    return [{"labels": "{}", "value": sum(values)}]


def _owner(label: str, model_label: str) -> str:
    return {NAMESPACE_LABEL: NAMESPACE, model_label: SERVED}[label]


def _promtool_test(tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    unit = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(unit, sort_keys=False))
    return subprocess.run(
        [PROMTOOL, "test", "rules", "test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _unit(query: Query) -> dict[str, Any]:
    expr = query.expr
    if expr.startswith("histogram_quantile"):
        # promtool compares floats exactly; the quantile's interpolation is 0.48 give or take
        # the last bit (rounded here to 1/1000, outside the rendered query).
        expr = f"round({expr}, 0.001)"
    return {
        "name": f"{query.engine} {query.where}",
        "interval": "1m",
        "input_series": _input_series(query.engine),
        "promql_expr_test": [
            {
                "expr": expr,
                "eval_time": EVAL,
                "exp_samples": _expected(query, _recorded(query.engine)["model_label"]),
            }
        ],
    }


def test_every_rendered_query_parses(tmp_path: Path) -> None:
    queries = _scaling_queries() + _dashboard_queries()
    rules = {
        "groups": [
            {
                "name": "mlcc",
                "rules": [
                    {"record": f"mlcc:query_{i}", "expr": q.expr} for i, q in enumerate(queries)
                ],
            }
        ]
    }
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    assert PROMTOOL is not None
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", "rules.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(queries)} rules found" in checked.stdout


def test_the_scaling_triggers_read_the_deployments_pods_only(tmp_path: Path) -> None:
    queries = _scaling_queries()
    # vLLM and SGLang, each scaling on every gauge role, on both targets
    assert {(q.engine, q.where.split()[0]) for q in queries} == {
        ("vllm", "eks"),
        ("vllm", "hyperpod-eks"),
        ("sglang", "eks"),
        ("sglang", "hyperpod-eks"),
    }
    ran = _promtool_test(tmp_path, [_unit(q) for q in queries])
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_every_dashboard_panel_reads_the_engines_series(tmp_path: Path) -> None:
    queries = _dashboard_queries()
    histograms = [q for q in queries if q.expr.startswith("histogram_quantile")]
    assert len(histograms) == 2 * len(HISTOGRAMS)  # both engines, both latency panels
    ran = _promtool_test(tmp_path, [_unit(q) for q in queries])
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_the_dashboard_variables_list_the_namespaces_and_models(tmp_path: Path) -> None:
    """Grafana's ``label_values(<selector>, <label>)``: the selector is PromQL, and it must
    match every engine's queue series (the decoy's team-b and other included: a variable lists
    them all)."""
    tests = []
    for variable in _dashboard()["templating"]["list"][1:]:
        selector, label = re.fullmatch(
            r"label_values\((.+), (\w+)\)", variable["query"]["query"]
        ).groups()  # type: ignore[union-attr]
        for engine in ("vllm", "sglang"):
            owners = {NAMESPACE_LABEL: (NAMESPACE, "team-b"), "model_name": (SERVED, "other")}
            tests.append(
                {
                    "interval": "1m",
                    "input_series": _input_series(engine),
                    "promql_expr_test": [
                        {
                            "expr": f"count by ({label}) ({selector})",
                            "eval_time": EVAL,
                            "exp_samples": [
                                {"labels": _labels({label: owners[label][0]}), "value": len(PODS)},
                                {"labels": _labels({label: owners[label][1]}), "value": 1},
                            ],
                        }
                    ],
                }
            )
    ran = _promtool_test(tmp_path, tests)
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.parametrize(
    ("mistake", "wrong"),
    [
        ("a metric the engine does not export", ("num_requests_waiting", "num_request_waiting")),
        ("a served-model label the engine does not carry", ("model_name=", "model=")),
    ],
)
def test_a_query_on_a_metric_the_engine_lacks_fails(
    tmp_path: Path, mistake: str, wrong: tuple[str, str]
) -> None:
    (query,) = [
        q for q in _scaling_queries() if q.engine == "vllm" and q.where == "eks queue_depth"
    ]
    broken = Query(query.engine, query.where, query.expr.replace(*wrong))
    assert broken.expr != query.expr, mistake
    ran = _promtool_test(tmp_path, [_unit(broken)])
    assert ran.returncode != 0, mistake
    # the query selects nothing: promtool expected the pods' sum and got no series
    assert "exp: {} 7E+00\n        got: nil" in ran.stderr, ran.stdout + ran.stderr
