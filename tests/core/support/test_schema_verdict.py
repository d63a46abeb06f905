"""``core/support/schema_verdict``: jsonschema-rs's yes/no is jsonschema's, on rendered objects
and mutations of them (every kind a target renders, the NodePool, engine manifests), so a caller
may skip jsonschema's messages when the answer is yes. What jsonschema-rs reads otherwise than
jsonschema (tuples, sets, non-string keys, ``inf``/``nan``) gets no yes: jsonschema decides."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.engines import manifest_checks
from mlcc_constructs.core.engines.manifest_checks import manifest_problems
from mlcc_constructs.core.platform.gpu_capacity import gpu_node_pool
from mlcc_constructs.core.serving.kinds import _crd_rules, _schemas
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.inference_endpoint_config import RULES
from mlcc_constructs.core.serving.kinds.registry import kind_of, object_problems
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.schema_verdict import _json_data, verdict
from tests._flat import flat_spec
from tests.conftest import LLAMA_CPP_TEST_IMAGE

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
ENGINES = ("vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp")
OBJECTS = [
    obj
    for target in ("eks", "hyperpod-eks")
    for obj in render(
        flat_spec(
            engine="vllm", model=MODEL, instance_type="ml.g5.12xlarge", name="m", target=target,
            lora=True, service_account_role_arn="arn:aws:iam::123456789012:role/r",
        ),
        context=CONTEXT,
    ).objects
] + [gpu_node_pool(["g5"])]  # fmt: skip


def _pair(obj: dict[str, Any]) -> tuple[Callable[[Any], bool], Any]:
    """The verdict and the jsonschema validator the object's kind validates with."""
    kind = kind_of(obj)
    assert kind is not None
    rules = getattr(kind.validate, "__self__", None)
    if isinstance(rules, CrdRules):
        return _crd_rules._verdict(rules.file), _crd_rules._validator(rules.file)
    found = _schemas._core_verdict(obj["kind"], obj["apiVersion"])
    assert found is not None
    return found, _schemas._core_validator(obj["kind"], obj["apiVersion"])


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**40), st.floats(allow_nan=False),
    st.text(max_size=6), st.sampled_from(["", "TCP", "Memory", "1Gi", "ReadOnlyMany", "http"]),
    st.just([]), st.just({}), st.just({"unexpected": 1}), st.just(["x"]),
)  # fmt: skip
# jsonschema-rs calls a tuple an array and inf/nan null, and refuses sets and non-string keys
OTHER_LEAVES = st.sampled_from(
    [("x",), (), {"x"}, {1: "x"}, math.inf, -math.inf, math.nan, [math.inf], Decimal("1.5")]
)
LEAVES = st.one_of(JSON_LEAVES, OTHER_LEAVES)
PICKS = st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("rdk"), LEAVES), max_size=3)


def _mutate(document: Any, picks: list[tuple[int, str, Any]]) -> Any:
    document = copy.deepcopy(document)
    for position, action, shared in picks:
        value = copy.deepcopy(shared)  # hypothesis may hand the same object twice
        paths = _paths(document)[1:]
        if not paths:
            break
        *parent_path, last = paths[position % len(paths)]
        parent = document
        for part in parent_path:
            parent = parent[part]
        if action == "r":  # replace the node
            parent[last] = value
        elif action == "d" and isinstance(parent, dict):  # delete a key
            del parent[last]
        elif action == "k" and isinstance(parent, dict):  # add a key
            parent[f"extra{position % 3}"] = value
    return document


def _agrees(check: Callable[[Any], bool], validator: Any, instance: Any) -> None:
    expected = validator.is_valid(instance)
    answer = check(instance)
    assert not answer or expected  # a yes is always jsonschema's: skipping its messages is safe
    if _json_data(instance):
        assert answer is expected  # on JSON data the answers are the same
    else:
        assert answer is False


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(OBJECTS) - 1), picks=PICKS)
def test_the_verdict_is_jsonschemas(index: int, picks: list[tuple[int, str, Any]]) -> None:
    check, validator = _pair(OBJECTS[index])
    _agrees(check, validator, _mutate(OBJECTS[index], picks))


def _manifest(engine: str) -> Any:
    return json.loads((shipped_path("engines") / engine / "manifest.json").read_text())


@settings(max_examples=200, deadline=None)
@given(engine=st.sampled_from(ENGINES), picks=PICKS)
def test_the_manifest_verdict_is_jsonschemas(
    engine: str, picks: list[tuple[int, str, Any]]
) -> None:
    check, validator = manifest_checks._schema_verdict(), manifest_checks._schema_validator()
    _agrees(check, validator, _mutate(_manifest(engine), picks))


@pytest.mark.parametrize("obj", OBJECTS, ids=[o["kind"] for o in OBJECTS])
def test_rendered_objects_are_valid_both_ways(obj: dict[str, Any]) -> None:
    check, validator = _pair(obj)
    assert check(obj)
    assert validator.is_valid(obj)


@pytest.mark.parametrize("target", ["eks", "hyperpod-eks"])
@pytest.mark.parametrize("engine", ENGINES)
def test_rendered_objects_are_json_data(engine: str, target: str) -> None:
    """What the renderers hand the verdict is JSON data: jsonschema-rs judges it alone."""
    image = {"image": LLAMA_CPP_TEST_IMAGE} if engine == "llama-cpp" else {}
    for lora in (False, True) if engine in ("vllm", "sglang") else (False,):
        for model in (MODEL, "meta-llama/Llama-3.1-8B-Instruct"):
            spec = flat_spec(
                engine=engine, model=model, instance_type="ml.g5.12xlarge", name="m",
                target=target, lora=lora, env={"X_EXTRA": "1"}, **image,
            )  # fmt: skip
            assert all(_json_data(obj) for obj in render(spec, context=CONTEXT).objects)
    assert _json_data(gpu_node_pool(["g5", "p4d"]))


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][0]
    return found


def test_what_the_verdict_cannot_judge_is_worded_by_jsonschema() -> None:
    deployment = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == "Deployment"))
    _container(deployment)["args"] = ("--port", "8000")  # a tuple: jsonschema-rs says array
    deployment["spec"]["replicas"] = math.inf  # jsonschema-rs says null, which replicas allows
    assert [p.message for p in core_object_problems(deployment)] == [
        "inf is not of type 'integer', 'null' (Kubernetes 1.35 strict schema)",
        "('--port', '8000') is not of type 'array', 'null' (Kubernetes 1.35 strict schema)",
    ]
    assert [p.pointer for p in core_object_problems(deployment)] == [
        "/spec/replicas",
        "/spec/template/spec/containers/0/args",
    ]


@pytest.mark.parametrize(
    "value",
    [{"a": (1,)}, {1: "a"}, {"a": {"b"}}, [math.nan], "\ud800", Decimal("1"), {"a": 1e400}],
    ids=["tuple", "int-key", "set", "nan", "lone-surrogate", "decimal", "inf"],
)
def test_data_outside_json_gets_no_yes(value: Any) -> None:
    assert verdict({})(value) is False  # jsonschema (which accepts them all here) decides
    assert jsonschema.Draft202012Validator({}).is_valid(value)


def test_the_final_answer_is_jsonschemas_where_the_verdict_says_no(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The callers' problems of objects the verdict cannot judge, valid ones included: the same
    as jsonschema's alone (the verdict forced to no)."""
    deployment = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == "Deployment"))
    deployment["metadata"]["labels"] = {"a": "b", "c": "d"}
    iec = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == RULES.document["kind"]))
    iec["spec"]["worker"]["resources"] = {"limits": {"cpu": math.inf}}
    manifest = _manifest("vllm")
    manifest["launch"]["port"] = math.inf
    tupled = _manifest("vllm")
    tupled["launch"]["command"] = tuple(tupled["launch"]["command"])
    cases = [
        (object_problems, deployment), (object_problems, iec),
        (lambda d: manifest_problems(d, "m.json"), manifest),
        (lambda d: manifest_problems(d, "m.json"), tupled),
    ]  # fmt: skip
    found = [[str(p) for p in problems(obj)] for problems, obj in cases]
    monkeypatch.setattr(_schemas, "_core_verdict", lambda kind, api_version: lambda _: False)
    monkeypatch.setattr(_crd_rules, "_verdict", lambda file: lambda _: False)
    monkeypatch.setattr(manifest_checks, "_schema_verdict", lambda: lambda _: False)
    assert found == [[str(p) for p in problems(obj)] for problems, obj in cases]
    assert found[0] == []


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
        ({"format": "email"}, "not an address", True),  # formats are annotations
        ({"type": "string", "format": "date-time"}, "yesterday", True),
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
def test_draft_2020_12_corners(schema: dict[str, Any], instance: Any, valid: bool) -> None:
    assert verdict(schema)(instance) is valid
    assert jsonschema.Draft202012Validator(schema).is_valid(instance) is valid
