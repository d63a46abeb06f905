"""One render pipeline: over the full matrix (every engine x target x LoRA x config delivery x
cache backend x model source), the cdk8s chart emits exactly the core's objects, object for
object and in order, and refuses exactly what the core refuses with the same problems."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.cache import CacheBackendSpec
from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.platform.targets import kubernetes_target_names
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.conftest import LLAMA_CPP_TEST_IMAGE
from tests.core.cache.test_cache_admission import seed_safe_spec

CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
SOURCES = {
    "s3": "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/",
    "hf": "meta-llama/Llama-3.1-8B-Instruct",
}
MATRIX = list(
    itertools.product(
        sorted(m.engine for m in builtin_engines()),
        kubernetes_target_names(),
        (False, True),  # LoRA
        ("env", "args"),
        (False, True),  # cache backend
        sorted(SOURCES),
    )
)


def _spec(
    engine: str, target: str, lora: bool, delivery: str, cache: bool, source: str
) -> DeploymentSpec:
    manifest = next(m for m in builtin_engines() if m.engine == engine)
    values: dict[str, Any] = {
        "engine": {"name": engine, "config_delivery": delivery},
        "model": {"uri": SOURCES[source]},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": f"{engine}-{target}-{int(lora)}-{delivery}-{int(cache)}-{source}",
        "namespace": "inference",
        "target": target,
        "lora": {"enabled": lora},
    }
    if engine == "llama-cpp":
        values["image"] = LLAMA_CPP_TEST_IMAGE
    if cache:
        runtime = manifest.raw.get("cache_runtime", "VLLM")
        values["cache_backend"] = CacheBackendSpec.from_dict(seed_safe_spec(runtime))
    return flat_spec(**values)


def _core(spec: DeploymentSpec) -> list[dict[str, Any]] | list[str]:
    try:
        return list(render(spec, context=CONTEXT).objects)
    except MlccError as error:
        return [str(p) for p in error.problems]


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[Any, ...], Any]:
    """Every cell of the matrix as one chart of one app, synthesized once; a refused cell
    holds the problems the chart raised."""
    import cdk8s

    from mlcc_constructs import ServingChart, ServingChartProps

    out = tmp_path_factory.mktemp("matrix")
    app = cdk8s.App(outdir=str(out))
    results: dict[tuple[Any, ...], Any] = {}
    for index, cell in enumerate(MATRIX):
        try:
            ServingChart(
                app, f"c{index}", props=ServingChartProps(spec=_spec(*cell), context=CONTEXT)
            )
        except MlccError as error:
            results[cell] = [str(p) for p in error.problems]
    app.synth()
    for index, cell in enumerate(MATRIX):
        if cell not in results:
            text = (out / f"c{index}.k8s.yaml").read_text()
            results[cell] = [d for d in yaml.safe_load_all(text) if d is not None]
    return results


@pytest.mark.parametrize(
    "cell", MATRIX, ids=["-".join(str(part) for part in cell) for cell in MATRIX]
)
def test_the_chart_emits_exactly_the_core_objects(
    charts: dict[tuple[Any, ...], Any], cell: tuple[Any, ...]
) -> None:
    assert charts[cell] == _core(_spec(*cell))


def test_the_matrix_renders_more_than_it_refuses(charts: dict[tuple[Any, ...], Any]) -> None:
    rendered = [cell for cell, result in charts.items() if result and isinstance(result[0], dict)]
    assert len(rendered) > len(MATRIX) // 3  # the comparison is not vacuous


def test_a_cache_backend_ships_its_client_config_map_in_the_chart(
    charts: dict[tuple[Any, ...], Any],
) -> None:
    """The bug this pipeline fixed: the chart's Deployment mounts <name>-lmcache-mp, so the
    chart must carry that ConfigMap."""
    objects = charts[("sglang", "eks", True, "env", True, "s3")]
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    mounted = {
        v["configMap"]["name"]
        for v in deployment["spec"]["template"]["spec"]["volumes"]
        if "configMap" in v
    }
    assert mounted <= {name for kind, name in names if kind == "ConfigMap"}
    assert any(name.endswith("-lmcache-mp") for _, name in names)
