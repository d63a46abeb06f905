"""The public API keeps one convention: frozen keyword-only dataclasses for specs and props,
every field documented where ``help()`` shows it, type hints that resolve, and a type check
at construction."""

from __future__ import annotations

import dataclasses
import pydoc
import typing

import pytest

import mlcc_constructs
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
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
    for field in dataclasses.fields(cls):
        assert field.kw_only, f"{name}.{field.name} is not keyword-only"
        assert f"``{field.name}``" in shown, f"{name}.{field.name} is not documented in help()"
    typing.get_type_hints(cls)  # resolves: no name hidden behind TYPE_CHECKING


def test_get_type_hints_of_the_deployment_spec() -> None:
    hints = typing.get_type_hints(DeploymentSpec)
    assert hints["lora"] is bool and hints["replicas"] is int


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"lora": "no"},
            "/lora: wrong type for DeploymentSpec.lora (got 'no'; allowed: bool; fix: pass bool)",
        ),
        (
            {"replicas": "3"},
            "/replicas: wrong type for DeploymentSpec.replicas (got '3'; allowed: int; "
            "fix: pass int)",
        ),
        (
            {"replicas": True},
            "/replicas: wrong type for DeploymentSpec.replicas (got True; allowed: int; "
            "fix: pass int)",
        ),
        (
            {"env": {"VLLM_MAX_NUM_SEQS": 64}},
            "/env: wrong type for DeploymentSpec.env (got mappingproxy({'VLLM_MAX_NUM_SEQS': 64}); "
            "allowed: Mapping[str, str]; fix: pass Mapping[str, str])",
        ),
        (
            {"config_delivery": "argv"},
            "/config_delivery: wrong type for DeploymentSpec.config_delivery (got 'argv'; "
            "allowed: 'env' or 'args'; fix: pass 'env' or 'args')",
        ),
    ],
)
def test_a_spec_of_the_wrong_type_is_refused_at_construction(
    values: dict[str, object], expected: str
) -> None:
    with pytest.raises(MlccError) as caught:
        DeploymentSpec(engine="vllm", model="org/name", instance_type="g5.xlarge", **values)
    assert str(caught.value) == expected


def test_every_wrong_field_is_reported_at_once() -> None:
    with pytest.raises(MlccError) as caught:
        DeploymentSpec(engine=1, model="org/name", instance_type=None, lora=1)  # type: ignore[arg-type]
    assert [p.pointer for p in caught.value.problems] == ["/engine", "/instance_type", "/lora"]
