"""``core/schema_check``: the deployment-spec schema checked without jsonschema reports what
jsonschema reports, message for message and field for field (a differential test)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from mlcc_constructs.core.serving.spec.files import schema
from mlcc_constructs.core.support.schema_check import iter_errors

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "eks", "hyperpod-eks", "env", "args", "vllm", "x", "0.9", "123456789012"]),
    st.sampled_from(["arn:aws:iam::123456789012:role/r", "s3://b/m/", "Prod", "a/b"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["name", "key", "r", "rank_pattern", "q", "x"]), inner, max_size=3
        ),
    ),
    max_leaves=6,
)
FIELDS = [*sorted(schema()["properties"]), "instance-type", "unknown"]


def _as_tuples(errors: Any) -> list[tuple[list[str], str, str]]:
    return sorted(([str(p) for p in e.path], e.message, str(e.validator)) for e in errors)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=8) | VALUES)
def test_reports_exactly_what_jsonschema_reports(document: Any) -> None:
    expected = jsonschema.Draft202012Validator(schema()).iter_errors(document)
    assert _as_tuples(iter_errors(document, schema())) == _as_tuples(expected)


def test_a_schema_outside_the_subset_is_refused() -> None:
    with pytest.raises(ValueError, match="'oneOf' is outside the supported subset"):
        list(iter_errors({}, {"oneOf": [{"type": "string"}]}))
