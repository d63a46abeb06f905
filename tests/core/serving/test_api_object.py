"""``_api.api_object``: cdk8s synthesizes exactly the rendered dict through the Python
``to_json`` override (no JSON patches over jsii), a user's JSON patch still reaches the output
and is validated at synth, and a rendered object with problems fails synth naming them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(profile="dev")
SPECS = {
    "vllm-eks": flat_spec(
        engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="api-vllm", lora=True
    ),
    "sglang-hyperpod": flat_spec(
        engine="sglang",
        model=MODEL,
        instance_type="ml.g5.12xlarge",
        name="api-sglang",
        target="hyperpod-eks",
    ),
}


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    import cdk8s

    from mlcc_constructs import ServingChart, ServingChartProps

    out = tmp_path_factory.mktemp("api-dist")
    app = cdk8s.App(outdir=str(out))
    for key, spec in SPECS.items():
        ServingChart(app, key, props=ServingChartProps(spec=spec, context=CONTEXT))
    app.synth()
    return {key: (out / f"{key}.k8s.yaml").read_text() for key in SPECS}


@pytest.mark.parametrize("key", sorted(SPECS))
def test_synthesized_yaml_is_the_rendered_objects_in_order(
    synthesized: dict[str, str], key: str
) -> None:
    documents = list(yaml.safe_load_all(synthesized[key]))
    expected = list(render(SPECS[key], context=CONTEXT).objects)
    assert documents == expected
    # key order too, at every level (dict equality ignores it)
    assert [list(_walk(d)) for d in documents] == [list(_walk(o)) for o in expected]


def _walk(node: Any, path: str = "") -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{path}/{key}"
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{path}/{index}")


def test_to_json_returns_a_copy() -> None:
    import cdk8s

    from mlcc_constructs.k8s._api import api_object

    chart = cdk8s.Chart(cdk8s.App(), "copy", disable_resource_name_hashes=True)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    resource = api_object(chart, "Resource", obj)
    resource.to_json()["data"]["a"] = "changed"
    assert resource.to_json() == obj


def test_user_patch_reaches_the_output_and_is_validated(tmp_path: Path) -> None:
    import cdk8s

    from mlcc_constructs.k8s.deployment import EngineDeployment, EngineDeploymentProps

    app = cdk8s.App(outdir=str(tmp_path))
    chart = cdk8s.Chart(app, "patched", disable_resource_name_hashes=True)
    deployment = EngineDeployment(
        chart,
        "Serve",
        props=EngineDeploymentProps(deployment=prepare(SPECS["vllm-eks"], context=CONTEXT)),
    )
    deployment.resource.add_json_patch(cdk8s.JsonPatch.replace("/spec/replicas", 3))
    deployment.service.add_json_patch(cdk8s.JsonPatch.add("/metadata/annotations", {"team": "ml"}))
    app.synth()
    documents = list(yaml.safe_load_all((tmp_path / "patched.k8s.yaml").read_text()))
    expected = list(render(SPECS["vllm-eks"], context=CONTEXT).objects)
    by_kind = {d["kind"]: d for d in documents}
    assert by_kind["Deployment"]["spec"]["replicas"] == 3
    assert by_kind["Service"]["metadata"]["annotations"] == {"team": "ml"}
    untouched = [d for d in documents if d["kind"] not in ("Deployment", "Service")]
    assert untouched == [o for o in expected if o["kind"] not in ("Deployment", "Service")]
    # the patched object keeps the rendered top-level order
    assert list(by_kind["Deployment"]) == ["apiVersion", "kind", "metadata", "spec"]


@pytest.mark.parametrize("patched", [False, True])
def test_chart_labels_and_user_metadata_reach_the_output(tmp_path: Path, patched: bool) -> None:
    """A team's chart labels and metadata edits are kept; on a clash the rendered label wins."""
    import cdk8s

    from mlcc_constructs.k8s.deployment import EngineDeployment, EngineDeploymentProps

    app = cdk8s.App(outdir=str(tmp_path))
    labels = {"team": "ml", "app.kubernetes.io/name": "not-the-selector"}
    chart = cdk8s.Chart(app, "team", labels=labels, disable_resource_name_hashes=True)
    deployment = EngineDeployment(
        chart,
        "Serve",
        props=EngineDeploymentProps(deployment=prepare(SPECS["vllm-eks"], context=CONTEXT)),
    )
    deployment.resource.metadata.add_annotation("owner", "platform")
    if patched:
        deployment.resource.add_json_patch(cdk8s.JsonPatch.replace("/spec/replicas", 2))
    app.synth()
    documents = list(yaml.safe_load_all((tmp_path / "team.k8s.yaml").read_text()))
    rendered = {o["kind"]: o for o in render(SPECS["vllm-eks"], context=CONTEXT).objects}
    for document in documents:
        own = rendered[document["kind"]]["metadata"]["labels"]
        assert document["metadata"]["labels"] == {**own, "team": "ml"}
    deployment_doc = next(d for d in documents if d["kind"] == "Deployment")
    own_annotations = rendered["Deployment"]["metadata"].get("annotations", {})
    assert deployment_doc["metadata"]["annotations"] == {**own_annotations, "owner": "platform"}
    assert deployment_doc["spec"]["replicas"] == (2 if patched else 1)


def test_rendered_object_with_problems_fails_at_synth(tmp_path: Path) -> None:
    import cdk8s

    from mlcc_constructs.k8s._api import api_object

    app = cdk8s.App(outdir=str(tmp_path))
    chart = cdk8s.Chart(app, "bad", disable_resource_name_hashes=True)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dta": {}}
    api_object(chart, "Resource", obj)  # construction does not raise: synth reports it
    with pytest.raises(RuntimeError) as caught:
        app.synth()
    message = str(caught.value)
    assert "[bad/Resource] ConfigMap/c:" in message
    assert "'dta' was unexpected" in message


@pytest.mark.parametrize("patched", [False, True])
def test_omit_drops_a_field_and_leaves_the_rendered_dict_alone(patched: bool) -> None:
    import cdk8s

    from mlcc_constructs.k8s._api import api_object

    chart = cdk8s.Chart(cdk8s.App(), "omit", disable_resource_name_hashes=True)
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "1", "b": "2"},
    }
    original = copy.deepcopy(obj)
    resource = api_object(chart, "Resource", obj)
    if patched:
        resource.add_json_patch(cdk8s.JsonPatch.add("/data/c", "3"))
    resource.omit("data", "a")
    resource.omit("data", "absent")  # nothing to leave out: no error, at synth either
    resource.omit("nothing", "here")
    data = {"b": "2", "c": "3"} if patched else {"b": "2"}
    assert cdk8s.Testing.synth(chart) == [{**original, "data": data}]
    assert obj == original  # the caller's (the prepared deployment's) dict is not edited
    assert resource.problems() == []
