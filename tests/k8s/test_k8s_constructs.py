"""cdk8s constructs: they emit exactly what the core renders, with explicit names, and synth
fails on an invalid object. jsii is started once per session (one App, several charts)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(profile="dev")
SPECS = {
    "vllm-eks": flat_spec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="llama-vllm", lora=True
    ),
    "sglang-hyperpod": flat_spec(
        engine="sglang",
        model=MODEL,
        instance_type="ml.g5.12xlarge",
        name="llama-sglang",
        target="hyperpod-eks",
        lora=True,
    ),
    "vllm-args": flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type="ml.g5.2xlarge",
        name="small-vllm",
        config_delivery="args",
    ),
}


def api_objects(chart: Any) -> list[Any]:
    import cdk8s

    return [c for c in chart.node.find_all() if isinstance(c, cdk8s.ApiObject)]


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    import cdk8s

    from mlcc_constructs import ServingChart, ServingChartProps

    app = cdk8s.App(outdir=str(tmp_path_factory.mktemp("dist")))
    charts = {
        key: ServingChart(app, key, props=ServingChartProps(spec=spec, context=CONTEXT))
        for key, spec in SPECS.items()
    }
    app.synth()  # runs every object's synth-time validation
    return {key: [o.to_json() for o in api_objects(chart)] for key, chart in charts.items()}


@pytest.mark.parametrize("key", sorted(SPECS))
def test_chart_emits_exactly_the_core_objects(
    synthesized: dict[str, list[dict[str, Any]]], key: str
) -> None:
    expected = list(render(SPECS[key], context=CONTEXT).objects)
    assert synthesized[key] == expected


def test_names_are_explicit(synthesized: dict[str, list[dict[str, Any]]]) -> None:
    names = {(o["kind"], o["metadata"]["name"]) for o in synthesized["vllm-eks"]}
    assert names == {
        ("ServiceAccount", "llama-vllm"),
        ("NetworkPolicy", "llama-vllm"),
        ("ConfigMap", "llama-vllm-config"),
        ("ConfigMap", "llama-vllm-wrapper"),
        ("PersistentVolume", "default-llama-vllm-model"),
        ("PersistentVolumeClaim", "llama-vllm-model"),
        ("Deployment", "llama-vllm"),
        ("Service", "llama-vllm"),
        ("Ingress", "llama-vllm"),
    }
    assert [o["kind"] for o in synthesized["vllm-args"]] == [  # streamed: no model volume
        "ServiceAccount",
        "NetworkPolicy",
        "Deployment",
        "Service",
        "Ingress",
    ]


def test_synth_fails_naming_object_field_and_fix(tmp_path: Path) -> None:
    import cdk8s

    from mlcc_constructs.k8s.deployment import EngineDeployment, EngineDeploymentProps

    app = cdk8s.App(outdir=str(tmp_path))
    chart = cdk8s.Chart(app, "user-chart", disable_resource_name_hashes=True)
    deployment = EngineDeployment(
        chart,
        "Llama",
        props=EngineDeploymentProps(deployment=prepare(SPECS["vllm-eks"], context=CONTEXT)),
    )
    deployment.resource.add_json_patch(
        cdk8s.JsonPatch.add("/spec/template/spec/containers/0/resourcez", {})
    )
    with pytest.raises(RuntimeError) as caught:
        app.synth()
    message = str(caught.value)
    assert (
        "[user-chart/Llama/Resource] Deployment/llama-vllm:/spec/template/spec/containers/0:"
        in message
    )
    assert "'resourcez' was unexpected" in message
    assert "fix: fix the field, or remove a JSON patch that set it" in message


def test_composable_config_map_and_deployment() -> None:
    import cdk8s

    from mlcc_constructs import (
        EngineConfigMap,
        EngineConfigMapProps,
        EngineDeployment,
        EngineDeploymentProps,
    )

    app = cdk8s.App()
    chart = cdk8s.Chart(app, "mine", disable_resource_name_hashes=True)
    spec = SPECS["vllm-eks"]
    deployment = prepare(spec, context=CONTEXT)
    config = EngineConfigMap(chart, "Config", props=EngineConfigMapProps(deployment=deployment))
    serving = EngineDeployment(
        chart, "Serve", props=EngineDeploymentProps(deployment=deployment, config_map=config)
    )
    assert serving.config_map is config
    assert config.data == {
        "VLLM_MODEL": MODEL,  # streamed (model_load's default on eks); adapters still mounted
        "VLLM_TENSOR_PARALLEL_SIZE": "4",
        "VLLM_SERVED_MODEL_NAME": "llama-vllm",
        "VLLM_ENABLE_LORA": "true",
        "VLLM_LOAD_FORMAT": "runai_streamer",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true",  # lora on eks: adapters load at runtime
    }
    # one engine-env ConfigMap (the one passed in) and the deployment's wrapper ConfigMap
    assert [o.kind for o in api_objects(chart)].count("ConfigMap") == 2
    # together they emit exactly the rendered list
    assert sorted(o.to_json()["metadata"]["name"] for o in api_objects(chart)) == sorted(
        e.object["metadata"]["name"] for e in deployment.objects
    )
    assert EngineDeployment.container_name == "engine"
    other = prepare(dataclasses.replace(spec, name="other"), context=CONTEXT)
    with pytest.raises(MlccError, match="/config_map: the ConfigMap belongs to another deployment"):
        EngineDeployment(
            chart, "Other", props=EngineDeploymentProps(deployment=other, config_map=config)
        )


@pytest.mark.parametrize(
    ("construct", "spec_key", "message"),
    [
        (
            "EngineDeployment",
            "sglang-hyperpod",
            "/target: EngineDeployment emits the Deployment of targets eks (got 'hyperpod-eks'; "
            "allowed: eks; fix: use ServingChart (any target), or a spec with target 'eks')",
        ),
        (
            "InferenceEndpointConfig",
            "vllm-eks",
            "/target: InferenceEndpointConfig emits the InferenceEndpointConfig of targets "
            "hyperpod-eks (got 'eks'; allowed: hyperpod-eks; fix: use ServingChart (any target), "
            "or a spec with target 'hyperpod-eks')",
        ),
        (
            "EngineConfigMap",
            "vllm-args",
            "/engine/config_delivery: config delivery 'args' puts the engine config in the "
            "container's "
            "argv: there is no ConfigMap (got 'args'; fix: drop the EngineConfigMap, or use "
            "engine.config_delivery='env')",
        ),
    ],
)
def test_construct_refuses_a_deployment_it_cannot_emit(
    construct: str, spec_key: str, message: str
) -> None:
    import cdk8s

    import mlcc_constructs

    chart = cdk8s.Chart(cdk8s.App(), "c")
    props = getattr(mlcc_constructs, f"{construct}Props")(
        deployment=prepare(SPECS[spec_key], context=CONTEXT)
    )
    with pytest.raises(MlccError) as caught:
        getattr(mlcc_constructs, construct)(chart, "X", props=props)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("props", "values", "message"),
    [
        (
            "ServingChartProps",
            {"spec": "llama"},
            "/spec: wrong type for ServingChartProps.spec (got 'llama'; allowed: DeploymentSpec; "
            "fix: pass DeploymentSpec (from mlcc_constructs import DeploymentSpec))",
        ),
        (
            "EngineDeploymentProps",
            {"deployment": None},
            "/deployment: wrong type for EngineDeploymentProps.deployment (got None; allowed: "
            "PreparedDeployment; fix: pass PreparedDeployment (from mlcc_constructs import "
            "PreparedDeployment))",
        ),
    ],
)
def test_props_are_type_checked_at_construction(
    props: str, values: dict[str, Any], message: str
) -> None:
    import mlcc_constructs

    with pytest.raises(MlccError) as caught:
        getattr(mlcc_constructs, props)(**values)
    assert str(caught.value) == message
