"""The synth-time validator (schemas with their references inlined) agrees with the upstream
kubernetes-validate package on valid objects and on mutated, invalid ones."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest

from mlcc_constructs.core.serving.kinds._schemas import core_object_problems, kubernetes_version
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SecretRef
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")


def _objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for engine in ("vllm", "sglang", "lmi"):
        spec = flat_spec(
            engine=engine,
            model=MODEL,
            instance_type="ml.g5.12xlarge",
            name=f"v-{engine}",
            secret_env={"HF_TOKEN": SecretRef(name="hf", key="token")},
        )
        objects += render(spec, context=CONTEXT, validate=False).objects
    return objects


def _containers(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths of every object (dict) inside ``node``."""
    if isinstance(node, dict):
        yield path
        for key, value in node.items():
            yield from _containers(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _containers(value, (*path, index))


def _upstream_accepts(obj: dict[str, Any]) -> bool:
    try:
        kubernetes_validate.validate(obj, kubernetes_version(), strict=True)
    except kubernetes_validate.ValidationError:
        return False
    return True


def _mutations(seed: int, per_object: int) -> Iterator[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    for obj in _objects():
        yield f"{obj['kind']}/{obj['metadata']['name']}", obj
        paths = list(_containers(obj))
        for _ in range(per_object):
            mutated = copy.deepcopy(obj)
            path = rng.choice(paths)
            target = mutated
            for part in path:
                target = target[part]
            # apiVersion and kind pick the schema (upstream cannot even look one up for a list)
            header = ("apiVersion", "kind") if not path else ()
            scalars = [k for k, v in target.items() if isinstance(v, str | int) and k not in header]
            if scalars and rng.random() < 0.5:
                key = rng.choice(scalars)
                target[key] = [target[key]]  # wrong type
                yield f"{obj['kind']}{list(path)}.{key}: list", mutated
            else:
                target["bogusField"] = 1  # unknown field (strict schemas)
                yield f"{obj['kind']}{list(path)}: unknown field", mutated


@pytest.mark.parametrize(("label", "obj"), list(_mutations(seed=7, per_object=4)))
def test_agrees_with_upstream_kubernetes_validate(label: str, obj: dict[str, Any]) -> None:
    assert (core_object_problems(obj) == []) == _upstream_accepts(obj), label
