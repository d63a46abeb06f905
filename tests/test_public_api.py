"""The public API keeps one convention: frozen keyword-only dataclasses for specs and props,
every field documented where ``help()`` shows it, type hints that resolve, and a type check
at construction."""

from __future__ import annotations

import dataclasses
import pydoc
import typing

import pytest

import mlcc_constructs
from mlcc_constructs.core.serving.spec import schema_gen
from mlcc_constructs.core.serving.spec.deployment import (
    ComputeSpec,
    DeploymentSpec,
    EngineSpec,
    LoraSpec,
    ModelSpec,
    ScalingSpec,
)
from mlcc_constructs.core.support.errors import MlccError

PUBLIC_DATACLASSES = sorted(
    name
    for name in mlcc_constructs.__all__
    if dataclasses.is_dataclass(getattr(mlcc_constructs, name))
)


def test_the_public_dataclasses() -> None:
    assert {"DeploymentSpec", "RenderContext", "ServingChartProps", "CacheBackendProps"} <= set(
        PUBLIC_DATACLASSES
    )


@pytest.mark.parametrize("name", PUBLIC_DATACLASSES)
def test_frozen_keyword_only_and_documented_in_help(name: str) -> None:
    cls = getattr(mlcc_constructs, name)
    params = cls.__dataclass_params__
    assert params.frozen
    shown = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    attribute_docs = schema_gen.attribute_docs(cls)  # a field's own docstring (issue 36)
    for field in dataclasses.fields(cls):
        assert field.kw_only, f"{name}.{field.name} is not keyword-only"
        assert f"``{field.name}``" in shown or attribute_docs.get(field.name), (
            f"{name}.{field.name} is documented neither in help() nor by its own docstring"
        )
    typing.get_type_hints(cls)  # resolves: no name hidden behind TYPE_CHECKING


def test_get_type_hints_of_the_deployment_spec() -> None:
    hints = typing.get_type_hints(DeploymentSpec)
    assert hints["lora"] is LoraSpec and hints["scaling"] is ScalingSpec
    assert typing.get_type_hints(LoraSpec)["enabled"] is bool
    assert typing.get_type_hints(ScalingSpec)["replicas"] is int


@pytest.mark.parametrize(
    ("section", "values", "expected"),
    [
        (
            LoraSpec,
            {"enabled": "no"},
            "/lora/enabled: wrong type for LoraSpec.enabled (got 'no'; allowed: bool; "
            "fix: pass bool)",
        ),
        (
            ScalingSpec,
            {"replicas": "3"},
            "/scaling/replicas: wrong type for ScalingSpec.replicas (got '3'; allowed: int; "
            "fix: pass int)",
        ),
        (
            ScalingSpec,
            {"replicas": True},
            "/scaling/replicas: wrong type for ScalingSpec.replicas (got True; allowed: int; "
            "fix: pass int)",
        ),
        (
            EngineSpec,
            {"name": "vllm", "env": {"VLLM_MAX_NUM_SEQS": 64}},
            "/engine/env: wrong type for EngineSpec.env (got mappingproxy({'VLLM_MAX_NUM_SEQS': "
            "64}); allowed: Mapping[str, str]; fix: pass Mapping[str, str])",
        ),
        (
            EngineSpec,
            {"name": "vllm", "config_delivery": "argv"},
            "/engine/config_delivery: wrong type for EngineSpec.config_delivery (got 'argv'; "
            "allowed: 'env' or 'args'; fix: pass 'env' or 'args')",
        ),
    ],
)
def test_a_spec_of_the_wrong_type_is_refused_at_construction(
    section: type, values: dict[str, object], expected: str
) -> None:
    with pytest.raises(MlccError) as caught:
        section(**values)
    assert str(caught.value) == expected


def test_a_section_of_the_wrong_type_is_refused_by_the_spec() -> None:
    with pytest.raises(MlccError) as caught:
        DeploymentSpec(
            engine=EngineSpec(name="vllm"),
            model=ModelSpec(uri="org/name"),
            compute=ComputeSpec(instance_type="g5.xlarge"),
            lora=True,  # type: ignore[arg-type]
        )
    assert str(caught.value) == (
        "/lora: wrong type for DeploymentSpec.lora (got True; allowed: LoraSpec; fix: pass "
        "LoraSpec)"
    )


def test_every_wrong_field_of_dict_sections_is_reported_at_once() -> None:
    with pytest.raises(MlccError) as caught:
        DeploymentSpec(
            engine={"name": 1},  # type: ignore[arg-type]
            model={"uri": "org/name"},  # type: ignore[arg-type]
            compute={"instance_type": None},  # type: ignore[arg-type]
            lora={"enabled": 1},  # type: ignore[arg-type]
        )
    assert [p.pointer for p in caught.value.problems] == [
        "/compute/instance_type",
        "/engine/name",
        "/lora/enabled",
    ]
