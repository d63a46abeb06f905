"""``core/yaml_emit``: ``to_yaml`` writes exactly PyYAML's bytes, for every rendered object of
every engine x target x LoRA x delivery x model source and for generated trees."""

from __future__ import annotations

import itertools
from typing import Any

import yaml
from hypothesis import example, given, settings, strategies as st

from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SecretRef
from mlcc_constructs.core.support.yaml_output import _pyyaml, to_yaml
from tests._flat import flat_spec
from tests.conftest import LLAMA_CPP_TEST_IMAGE

CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")


def _objects() -> list[dict[str, Any]]:
    found = []
    for engine, target, lora, delivery, model in itertools.product(
        [m.engine for m in builtin_engines()],
        ("eks", "hyperpod-eks"),
        (False, True),
        ("env", "args"),
        ("s3://mlcc-models-dev-123456789012-us-east-1/models/org/name/", "org/name"),
    ):
        spec = flat_spec(
            engine=engine, model=model, instance_type="ml.g5.12xlarge", name="m", target=target,
            lora=lora, config_delivery=delivery, env={"NCCL_DEBUG": "WARN"},
            secret_env={"HF_TOKEN": SecretRef(name="hf", key="token")},
            image=LLAMA_CPP_TEST_IMAGE if engine == "llama-cpp" else None,
        )  # fmt: skip
        try:
            found += render(spec, context=CONTEXT).objects
        except Exception:  # combinations the core refuses render nothing to compare
            continue
    return found


OBJECTS = _objects()


def test_every_rendered_object_is_written_as_pyyaml_writes_it() -> None:
    assert len(OBJECTS) > 100
    for obj in OBJECTS:
        assert to_yaml([obj]) == _pyyaml([obj])
    assert to_yaml(OBJECTS) == _pyyaml(OBJECTS)


KEYS = st.sampled_from(["name", "yes", "app.kubernetes.io/name", "a b", "", "0777", "-x", "#c"])
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["yes", "null", "~", "1e3", "0x1f", "- a", "a: b", "line\nline\n", "x\n",
                     "  lead\nb\n", "a\n\nb\n", "a\n\n", "\n", "tab\there", "end \n",
                     "é ünïcode", "{{ x }}"]),
)  # fmt: skip
TREES = st.recursive(
    st.one_of(TEXT, st.integers(-(2**40), 2**40), st.booleans(), st.none()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS | TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(KEYS | TEXT, TREES, min_size=1, max_size=4), max_size=3))
# a "|+" block (keep chomping) ends its document open: PyYAML's "..." depends on the stream
@example([{"name": None, "\n": []}, {"name": {}}])
@example([{"k": "a\n\n"}, {"k": "b"}])
def test_generated_trees_are_written_as_pyyaml_writes_them(documents: list[Any]) -> None:
    text = to_yaml(documents)
    assert text == _pyyaml(documents)
    assert list(yaml.safe_load_all(text)) == documents
