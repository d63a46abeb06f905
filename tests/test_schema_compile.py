"""``core/schema_compile``: the compiled predicates answer exactly as jsonschema does (valid or
not) on rendered objects and on mutations of them, for every kind a target renders."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from mlcc_constructs.core.serving.kinds import _schemas
from mlcc_constructs.core.serving.kinds._crd_rules import strict
from mlcc_constructs.core.serving.kinds.inference_endpoint_config import RULES
from mlcc_constructs.core.serving.kinds.registry import kind_of
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.schema_compile import compile_schema

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
OBJECTS = [
    obj
    for target in ("eks", "hyperpod-eks")
    for obj in render(
        DeploymentSpec(
            engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="m", target=target,
            lora=True, service_account_role_arn="arn:aws:iam::123456789012:role/r",
        ),
        context=CONTEXT,
    ).objects
]  # fmt: skip


def _schema(obj: dict[str, Any]) -> Any:
    kind = kind_of(obj)
    if kind is not None and kind.validate == RULES.problems:
        return strict(RULES.schema)
    return _schemas._core_schema(obj["kind"], obj["apiVersion"])


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**40), st.floats(allow_nan=False),
    st.text(max_size=6), st.sampled_from(["", "TCP", "Memory", "1Gi", "ReadOnlyMany", "http"]),
    st.just([]), st.just({}), st.just({"unexpected": 1}), st.just(["x"]),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    index=st.integers(0, len(OBJECTS) - 1),
    picks=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("rdk"), LEAVES), max_size=3),
)
def test_the_compiled_answer_is_jsonschemas(index: int, picks: list[tuple[int, str, Any]]) -> None:
    obj = copy.deepcopy(OBJECTS[index])
    for position, action, shared in picks:
        value = copy.deepcopy(shared)  # hypothesis may hand the same object twice
        paths = _paths(obj)[1:]
        if not paths:
            break
        *parent_path, last = paths[position % len(paths)]
        parent = obj
        for part in parent_path:
            parent = parent[part]
        if action == "r":  # replace the node
            parent[last] = value
        elif action == "d" and isinstance(parent, dict):  # delete a key
            del parent[last]
        elif action == "k" and isinstance(parent, dict):  # add a key
            parent[f"extra{position % 3}"] = value
    schema = _schema(OBJECTS[index])
    expected = not list(jsonschema.Draft202012Validator(schema).iter_errors(obj))
    assert compile_schema(schema)(obj) is expected


@pytest.mark.parametrize("obj", OBJECTS, ids=[o["kind"] for o in OBJECTS])
def test_rendered_objects_are_valid_both_ways(obj: dict[str, Any]) -> None:
    schema = _schema(obj)
    assert compile_schema(schema)(obj)
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(obj))


def test_a_keyword_outside_the_subset_is_refused() -> None:
    with pytest.raises(ValueError) as caught:
        compile_schema({"patternProperties": {"^a": {"type": "string"}}})
    assert str(caught.value) == (
        "JSON Schema keywords outside the compiled subset: ['patternProperties']"
    )


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"type": "integer"}, True, False),
        ({"type": "integer"}, 2.0, True),
        ({"enum": [1]}, True, False),
        ({"const": False}, 0, False),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1, False),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "1", True),
        ({"minimum": 1}, True, True),
        ({"pattern": "^a"}, 5, True),
        ({"type": "object", "required": ["a"]}, {}, False),
        ({"additionalProperties": False, "properties": {"a": {}}}, {"b": 1}, False),
    ],
)
def test_draft_2020_12_corners(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    assert compile_schema(schema)(instance) is valid
    assert (not list(jsonschema.Draft202012Validator(schema).iter_errors(instance))) is valid


def _manifest_schema() -> Any:
    import json

    from mlcc_constructs.core._resources import shipped_path

    return json.loads(shipped_path("engines/manifest.schema.json").read_text())


@settings(max_examples=300, deadline=None)
@given(
    engine=st.sampled_from(["vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp"]),
    picks=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("rdk"), LEAVES), max_size=3),
)
def test_the_compiled_manifest_schema_answers_as_jsonschema(
    engine: str, picks: list[tuple[int, str, Any]]
) -> None:
    import json

    from mlcc_constructs.core._resources import shipped_path

    schema = _manifest_schema()
    document = json.loads((shipped_path("engines") / engine / "manifest.json").read_text())
    for position, action, shared in picks:
        value = copy.deepcopy(shared)
        paths = _paths(document)[1:]
        *parent_path, last = paths[position % len(paths)]
        parent = document
        for part in parent_path:
            parent = parent[part]
        if action == "r":
            parent[last] = value
        elif action == "d" and isinstance(parent, dict):
            del parent[last]
        elif action == "k" and isinstance(parent, dict):
            parent[f"extra{position % 3}"] = value
    expected = not list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert compile_schema(schema)(document) is expected


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        ({"allOf": [{"type": "string"}, {"minLength": 2}]}, "a", False),
        ({"if": {"const": 1}, "then": {"type": "integer"}, "else": {"type": "string"}}, "x", True),
        ({"not": {"type": "string"}}, "x", False),
        ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"A": 1}, False),
        ({"uniqueItems": True}, [1, True], True),
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1}], False),
        ({"maxProperties": 0}, {"a": 1}, False),
        ({"minItems": 1}, [], False),
        ({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}, 1, False),
    ],
)
def test_the_keywords_of_the_manifest_schema(
    schema: dict[str, Any], instance: Any, valid: bool
) -> None:
    assert compile_schema(schema)(instance) is valid
    assert (not list(jsonschema.Draft202012Validator(schema).iter_errors(instance))) is valid
