"""``mlcc adapter clean`` and the models a cluster serves: the S3 prefixes mounted by the
objects we render (eks PersistentVolume, HyperPod InferenceEndpointConfig) are read back, and
a clean that would delete a served fine-tune is refused."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.adapters import s3_layout as L
from mlcc_constructs.core.adapters.clean import (
    CleanPlan,
    CleanUnit,
    ModelMount,
    model_mounts,
    mounted_problems,
)
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from tests._flat import flat_spec

CORE = "mlcc-models-dev-123456789012-us-east-1"
FINETUNE = L.full_finetune(CORE, "acme", "full-sft")
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")


def _rendered(target: str, model: str, model_load: str = "mount") -> dict[str, Any]:
    """The object of ``target`` that names the model's S3 prefix, as kubectl returns it."""
    spec = flat_spec(
        engine="vllm",
        model=model,
        instance_type="ml.g5.xlarge",
        name="ft",
        target=target,
        model_load=model_load,
    )
    kind = {"eks": "PersistentVolume", "hyperpod-eks": "InferenceEndpointConfig"}[target]
    kind = "Deployment" if model_load == "stream" else kind
    (found,) = [o for o in render(spec, context=CONTEXT).objects if o["kind"] == kind]
    return found


def _unit(kind: Any, location: L.S3Location) -> CleanUnit:
    return CleanUnit(kind=kind, uri=location.uri, record_keys=(), keys=(), bytes=0)


PLAN = CleanPlan(
    bucket=CORE,
    project="acme",
    prefixes=(),
    units=(
        _unit("full-finetune", FINETUNE),
        _unit(
            "adapter-version",
            L.adapter_version(
                L.canonical_adapter_home(CORE, L.base_model("org/base"), "acme", "bot"),
                "v0123456789ab",
            ),
        ),
    ),
)


@pytest.mark.parametrize("target", ["eks", "hyperpod-eks"])
def test_the_model_prefix_of_what_we_render_is_read_back(target: str) -> None:
    obj = _rendered(target, FINETUNE.uri)
    volumes = {"items": [obj]} if obj["kind"] == "PersistentVolume" else {"items": []}
    configs = {"items": [obj]} if obj["kind"] == "InferenceEndpointConfig" else None
    (mount,) = model_mounts(volumes, configs)
    assert mount.location == FINETUNE
    assert (
        mount.what
        == {
            "eks": "PersistentVolume default-ft-model",
            "hyperpod-eks": "InferenceEndpointConfig default/ft",
        }[target]
    )


def test_a_streamed_models_deployment_is_read_back() -> None:
    deployment = _rendered("eks", FINETUNE.uri, model_load="stream")
    (mount,) = model_mounts({"items": []}, None, {"items": [deployment]})
    assert mount == ModelMount(what="Deployment default/ft", location=FINETUNE)
    # a Deployment without the annotation (a mounted model, another app's) names no model
    other = {"metadata": {"name": "web", "namespace": "n", "annotations": {"a": "b"}}}
    assert model_mounts({"items": []}, None, {"items": [other]}) == []


def test_volumes_of_other_drivers_and_configs_of_other_sources_are_not_models() -> None:
    ebs = {"metadata": {"name": "data"}, "spec": {"csi": {"driver": "ebs.csi.aws.com"}}}
    fsx = {
        "metadata": {"name": "fsx", "namespace": "n"},
        "spec": {"modelSourceConfig": {"modelSourceType": "fsx"}},
    }
    whole_bucket = {
        "metadata": {"name": "all"},
        "spec": {
            "csi": {"driver": "s3.csi.aws.com", "volumeAttributes": {"bucketName": CORE}},
            "mountOptions": ["read-only"],
        },
    }
    assert model_mounts({"items": [ebs, whole_bucket]}, {"items": [fsx]}) == [
        ModelMount(what="PersistentVolume all", location=L.S3Location(bucket=CORE, key=""))
    ]


@pytest.mark.parametrize(
    ("mounted", "refused"),
    [
        (FINETUNE, True),  # the fine-tune a deployment serves
        (L.S3Location(bucket=CORE, key=FINETUNE.key.rstrip("/")), True),  # IEC: no slash
        (L.S3Location(bucket=CORE, key=FINETUNE.key + "sub/"), True),  # inside it
        (L.full_finetune(CORE, "acme", "other"), False),  # not in the plan
        (L.full_finetune(CORE, "acme2", "full-sft"), False),  # another project
        (L.base_model_location(CORE, L.base_model("org/base")), False),  # adapters' base
        (L.S3Location(bucket=CORE, key=""), False),  # the whole bucket
        (L.S3Location(bucket="other-bucket", key=FINETUNE.key), False),
    ],
)
def test_a_clean_is_refused_only_when_it_deletes_a_served_model(
    mounted: L.S3Location, refused: bool
) -> None:
    problems = mounted_problems(PLAN, [ModelMount(what="PersistentVolume pv", location=mounted)])
    if not refused:
        assert problems == []
        return
    assert [str(p) for p in problems] == [
        f"--force: PersistentVolume pv mounts {mounted.uri}: the model it serves is deleted by "
        f"this clean (full-finetune {FINETUNE.uri}) (fix: delete or re-point that deployment "
        "first, or pass --force)"
    ]
