"""cdk8s constructs: they emit exactly what the core renders, with explicit names, and synth
fails on an invalid object. jsii is started once per session (one App, several charts)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.errors import MlccError
from mlcc_constructs.core.render import RenderContext, render
from mlcc_constructs.core.spec import DeploymentSpec

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(profile="dev")
SPECS = {
    "vllm-eks": DeploymentSpec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="llama-vllm", lora=True
    ),
    "sglang-hyperpod": DeploymentSpec(
        engine="sglang",
        model=MODEL,
        instance_type="ml.g5.12xlarge",
        name="llama-sglang",
        target="hyperpod-eks",
        lora=True,
    ),
    "vllm-args": DeploymentSpec(
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

    from mlcc_constructs import ServingChart

    app = cdk8s.App(outdir=str(tmp_path_factory.mktemp("dist")))
    charts = {
        key: ServingChart(app, key, spec=spec, context=CONTEXT) for key, spec in SPECS.items()
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
        ("ConfigMap", "llama-vllm-config"),
        ("ConfigMap", "llama-vllm-wrapper"),
        ("PersistentVolume", "default-llama-vllm-model"),
        ("PersistentVolumeClaim", "llama-vllm-model"),
        ("Deployment", "llama-vllm"),
        ("Service", "llama-vllm"),
    }
    assert [o["kind"] for o in synthesized["vllm-args"]] == [
        "ServiceAccount",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Deployment",
        "Service",
    ]


def test_synth_fails_naming_object_field_and_fix(tmp_path: Path) -> None:
    import cdk8s

    from mlcc_constructs.k8s.deployment import EngineDeployment

    app = cdk8s.App(outdir=str(tmp_path))
    chart = cdk8s.Chart(app, "user-chart", disable_resource_name_hashes=True)
    deployment = EngineDeployment(chart, "Llama", spec=SPECS["vllm-eks"], context=CONTEXT)
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

    from mlcc_constructs import EngineConfigMap, EngineDeployment

    app = cdk8s.App()
    chart = cdk8s.Chart(app, "mine", disable_resource_name_hashes=True)
    spec = SPECS["vllm-eks"]
    config = EngineConfigMap(chart, "Config", spec=spec, context=CONTEXT)
    deployment = EngineDeployment(chart, "Serve", spec=spec, config_map=config, context=CONTEXT)
    assert deployment.config_map is config
    assert config.data == {
        "VLLM_MODEL": "/opt/ml/model",
        "VLLM_TENSOR_PARALLEL_SIZE": "4",
        "VLLM_ENABLE_LORA": "true",
    }
    # one engine-env ConfigMap (the one passed in) and the deployment's wrapper ConfigMap
    assert [o.kind for o in api_objects(chart)].count("ConfigMap") == 2
    assert EngineDeployment.container_name == "engine"
    other = dataclasses.replace(spec, name="other")
    with pytest.raises(MlccError, match="config_map: the ConfigMap belongs to another deployment"):
        EngineDeployment(chart, "Other", spec=other, config_map=config, context=CONTEXT)


@pytest.mark.parametrize(
    ("construct", "spec_key", "message"),
    [
        (
            "EngineDeployment",
            "sglang-hyperpod",
            "target: EngineDeployment renders target 'eks' (got 'hyperpod-eks'; allowed: eks; "
            "fix: use ServingChart (any target), or dataclasses.replace(spec, target='eks'))",
        ),
        (
            "InferenceEndpointConfig",
            "vllm-eks",
            "target: InferenceEndpointConfig renders target 'hyperpod-eks' (got 'eks'; allowed: "
            "hyperpod-eks; fix: use ServingChart (any target), or dataclasses.replace(spec, "
            "target='hyperpod-eks'))",
        ),
        (
            "EngineConfigMap",
            "vllm-args",
            "config_delivery: config delivery 'args' puts the engine config in the container's "
            "argv: there is no ConfigMap (got 'args'; fix: drop the EngineConfigMap, or use "
            "config_delivery='env')",
        ),
    ],
)
def test_construct_refuses_a_spec_it_cannot_render(
    construct: str, spec_key: str, message: str
) -> None:
    import cdk8s

    import mlcc_constructs

    chart = cdk8s.Chart(cdk8s.App(), "c")
    with pytest.raises(MlccError) as caught:
        getattr(mlcc_constructs, construct)(chart, "X", spec=SPECS[spec_key], context=CONTEXT)
    assert str(caught.value) == message
