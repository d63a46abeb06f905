"""Targets are data: every shipped target manifest is valid, and the registry reads it."""

from __future__ import annotations

import json

import jsonschema
import pytest

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.platform.targets import kubernetes_target_names, load_target, target_names
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec


def test_the_shipped_targets() -> None:
    assert target_names() == ("eks", "hyperpod-eks", "realtime-inference")
    assert kubernetes_target_names() == ("eks", "hyperpod-eks")


@pytest.mark.parametrize("name", target_names())
def test_every_shipped_target_manifest_matches_the_schema(name: str) -> None:
    schema = json.loads(shipped_path("targets/manifest.schema.json").read_text())
    document = json.loads((shipped_path("targets") / name / "manifest.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(document)) == []
    assert document["target"] == name


def test_an_unknown_target_names_the_closest() -> None:
    with pytest.raises(MlccError) as caught:
        load_target("ekss")
    assert str(caught.value) == (
        "/target: unknown target 'ekss' (got 'ekss'; allowed: eks, hyperpod-eks, "
        "realtime-inference; fix: use one of the allowed targets (did you mean eks?))"
    )


def test_a_target_without_kinds_is_refused_for_kubernetes_objects() -> None:
    with pytest.raises(MlccError) as caught:
        load_target("realtime-inference").require_kubernetes()
    assert "not a Kubernetes target" in str(caught.value)
    assert "realtime-inference is rendered by the CDK app" in str(caught.value)


def test_every_kubernetes_target_names_its_pods_by_a_label() -> None:
    assert {n: load_target(n).pod_selector("llama") for n in kubernetes_target_names()} == {
        "eks": "app.kubernetes.io/name=llama",
        "hyperpod-eks": "app=llama",  # the label the inference operator puts on an IEC's pods
    }


def test_the_eks_pod_name_label_is_on_the_rendered_pods_and_in_the_selector() -> None:
    from mlcc_constructs.core.serving.render import render
    from mlcc_constructs.core.serving.spec.context import RenderContext

    spec = flat_spec(engine="vllm", model="org/name", instance_type="ml.g5.xlarge", name="llama")
    objects = render(spec, context=RenderContext(profile="dev")).objects
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    label = load_target("eks").pod_name_label
    assert label is not None
    assert deployment["spec"]["template"]["metadata"]["labels"][label] == "llama"
    assert deployment["spec"]["selector"]["matchLabels"][label] == "llama"
