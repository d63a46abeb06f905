"""The Grafana dashboard: generated from the engine manifests, byte-stable, shipped in the
package data equal to what the generator writes, its five panels present, and every metric a
panel's query names exported by the engine it queries, per the recorded engine facts
(``tests/engine_parsers/metrics/``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.serving.dashboard import DASHBOARD_FILE, PANELS, dashboard_json

FACTS_DIR = Path(__file__).resolve().parents[2] / "engine_parsers" / "metrics"
FACTS = {p.stem: json.loads(p.read_text()) for p in sorted(FACTS_DIR.glob("*.json"))}
SHIPPED = data_path(DASHBOARD_FILE).read_text(encoding="utf-8")
DASHBOARD: dict[str, Any] = json.loads(SHIPPED)
# A metric in PromQL: a name followed by its label selector (functions take parentheses).
METRIC = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")
SUFFIXES = ("_bucket", "_sum", "_count", "_total")


def exported(engine: str, name: str) -> bool:
    """``name`` as a query writes it is one of ``engine``'s recorded metrics (a histogram's
    ``_bucket``/``_sum``/``_count``, a counter's ``_total``)."""
    metrics: dict[str, str] = FACTS[engine]["metrics"]
    if name in metrics:
        return True
    for suffix in SUFFIXES:
        base = name.removesuffix(suffix)
        if base != name and metrics.get(base) in (
            ("counter",) if suffix == "_total" else ("histogram",)
        ):
            return True
    return False


def test_the_shipped_dashboard_is_the_generated_one() -> None:
    assert dashboard_json(builtin_engines()) == SHIPPED
    assert dashboard_json(builtin_engines()) == dashboard_json(reversed(builtin_engines()))


def test_it_shows_the_five_pictures() -> None:
    titles = [panel["title"] for panel in DASHBOARD["panels"]]
    assert titles == [title for title, *_ in PANELS]
    assert len(set(p["id"] for p in DASHBOARD["panels"])) == len(PANELS)
    for panel in DASHBOARD["panels"]:
        assert {t["refId"] for t in panel["targets"]} == set(FACTS), panel["title"]


def test_every_query_names_a_metric_its_engine_exports() -> None:
    checked = 0
    for panel in DASHBOARD["panels"]:
        for target in panel["targets"]:
            engine = target["refId"]
            names = METRIC.findall(target["expr"])
            assert names, target["expr"]
            for name in names:
                assert exported(engine, name), f"{panel['title']}: {engine} exports no {name}"
                checked += 1
    assert checked == len(PANELS) * len(FACTS)


def test_the_variables_read_the_engines_queue_metrics() -> None:
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert set(variables) == {"datasource", "namespace", "model"}
    for name in ("namespace", "model"):
        selector = re.search(r'__name__=~"([^"]+)"', variables[name]["definition"])
        assert selector is not None
        for metric in selector.group(1).split("|"):
            assert any(exported(engine, metric) for engine in FACTS), metric


def test_mlcc_dashboard_writes_it(tmp_path: Path) -> None:
    out = tmp_path / "dist" / "grafana-dashboard.json"
    command = [sys.executable, "-m", "mlcc_constructs.cli", "dashboard", "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == SHIPPED
