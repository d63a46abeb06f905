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


SPEC_PACKAGE = "mlcc_constructs.core.serving.spec"


@pytest.mark.parametrize("name", PUBLIC_DATACLASSES)
def test_frozen_keyword_only_and_documented(name: str) -> None:
    """Every field documented: the spec types (``core/serving/spec``) in the class docstring
    that ``help()`` shows, every other public dataclass field by field
    (tests/project/test_field_docs.py)."""
    cls = getattr(mlcc_constructs, name)
    params = cls.__dataclass_params__
    assert params.frozen
    shown = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    attribute_docs: dict[str, str] = {}  # a field's own docstring (issue 36), inherited ones too
    for base in reversed(cls.__mro__):
        if dataclasses.is_dataclass(base):
            attribute_docs |= schema_gen.attribute_docs(base)
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
        "LoraSpec (from mlcc_constructs import LoraSpec))"
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


# Exported classes a user gets from a factory, never builds field by field: the types of their
# fields are outputs (a Resolution, a RenderedObject...), not things to import.
BUILT_BY_A_FACTORY = {
    "PreparedDeployment": "prepare()",
    "CacheBackendSpec": "CacheBackendSpec.from_dict() of a CacheBackend's spec mapping",
}


def _package_classes(hint: object) -> set[type]:
    if isinstance(hint, type):
        return {hint} if hint.__module__.startswith("mlcc_constructs.") else set()
    return {c for a in typing.get_args(hint) for c in _package_classes(a)}


def test_every_type_a_spec_or_props_field_takes_is_exported_from_the_root() -> None:
    """So ``from mlcc_constructs import ...`` (what the type errors name) reaches every class a
    user builds to fill a DeploymentSpec or a props object, however deep."""
    todo = [getattr(mlcc_constructs, name) for name in PUBLIC_DATACLASSES]
    seen: set[type] = set()
    missing: dict[str, str] = {}
    while todo:
        cls = todo.pop()
        if cls in seen or cls.__name__ in BUILT_BY_A_FACTORY:
            continue
        seen.add(cls)
        for field_name, hint in typing.get_type_hints(cls).items():
            for taken in _package_classes(hint):
                if taken.__name__ not in mlcc_constructs.__all__:
                    missing[taken.__name__] = f"{cls.__name__}.{field_name}"
                if dataclasses.is_dataclass(taken):
                    todo.append(taken)
    assert missing == {}
    assert {"Endpoint", "SecretsManagerSecret", "Autoscaling", "Routing", "KvCache", "Gateway"} <= (
        {c.__name__ for c in seen}
    )
