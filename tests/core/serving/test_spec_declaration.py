"""Each deployment spec field is declared once (issue 36): the dataclasses are the declaration;
``data/deployment-spec.schema.json`` and the CLI's flag table (``data/spec-flags.json``) are
generated from them (``tools/spec_schema.py``) and agree with them, and with ``mlcc render``'s
parser, field for field: a field missing in one of them fails here."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.cli import build_parser
from mlcc_constructs.cli._common import flag_layers, spec_flag_table, spec_flags
from mlcc_constructs.core.serving.spec.build import schema
from mlcc_constructs.core.serving.spec.deployment import SECTIONS, DeploymentSpec
from mlcc_constructs.core.serving.spec.schema_gen import (
    CONTEXT_PROPERTIES,
    flags_document,
    spec_fields,
    spec_schema,
)

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "mlcc_constructs" / "data"


def _leaf_paths_of_dataclasses() -> list[str]:
    hints = typing.get_type_hints(DeploymentSpec)
    paths = []
    for field in dataclasses.fields(DeploymentSpec):
        if field.name in SECTIONS:
            section = hints[field.name]
            paths += [f"{field.name}.{f.name}" for f in dataclasses.fields(section)]
        else:
            paths.append(field.name)
    return paths


def _leaf_paths_of_schema() -> list[str]:
    paths = []
    for name, prop in schema()["properties"].items():
        if name in CONTEXT_PROPERTIES:
            continue
        if name in SECTIONS:
            paths += [f"{name}.{sub}" for sub in prop["properties"]]
        else:
            paths.append(name)
    return paths


def test_the_committed_files_are_what_the_dataclasses_generate() -> None:
    assert json.loads((DATA / "deployment-spec.schema.json").read_text()) == spec_schema()
    assert json.loads((DATA / "spec-flags.json").read_text()) == flags_document(list(spec_fields()))
    check = subprocess.run(
        [sys.executable, "tools/spec_schema.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr


def test_schema_flag_table_and_dataclasses_name_the_same_fields_in_order() -> None:
    from_dataclasses = _leaf_paths_of_dataclasses()
    assert _leaf_paths_of_schema() == from_dataclasses
    assert list(spec_flag_table()) == from_dataclasses
    assert len(from_dataclasses) == len(set(from_dataclasses)) > 38  # 38 flat fields, +Endpoint's


def test_every_field_is_described_and_bounded_where_its_metadata_says() -> None:
    properties = schema()["properties"]
    for path in _leaf_paths_of_schema():
        head, _, tail = path.partition(".")
        prop = properties[head]["properties"][tail] if tail else properties[head]
        assert prop.get("description"), path
    compute = properties["compute"]["properties"]
    assert compute["tensor_parallel_degree"]["minimum"] == 1
    assert properties["rollout"]["properties"]["ready_timeout_seconds"] == {
        **properties["rollout"]["properties"]["ready_timeout_seconds"],
        "minimum": 60,
        "maximum": 3300,
    }
    assert properties["endpoint"]["properties"]["max_request_seconds"]["default"] == 600
    assert properties["rollout"]["properties"]["strategy"]["enum"] == ["surge", "replace"]
    assert schema()["required"] == ["engine", "model", "compute"]
    assert properties["compute"]["required"] == ["instance_type"]


def _option_strings(command: str) -> set[str]:
    parser = build_parser(command)
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    leaf = sub.choices[command]  # type: ignore[attr-defined]
    return {s for action in leaf._actions for s in action.option_strings}


def test_every_declared_flag_is_an_option_of_mlcc_render_and_sets_its_field() -> None:
    render_flags = _option_strings("render")
    declared = {flag for entry in spec_flag_table().values() for flag in entry["flags"]}
    assert declared <= render_flags, sorted(declared - render_flags)
    assert set(spec_flags()) - {"account", "profile"} <= set(spec_flag_table())


# Options of `mlcc render` that set no spec field: where output goes, the render context of the
# cluster, plugins. A new option that sets a field must be declared on the field instead.
NOT_SPEC_FIELDS = {
    "-h",
    "--help",
    "-f",
    "--file",
    "--out",
    "--account",
    "--profile",
    "--load-balancer-cidrs",
    "--prometheus-url",
    "--prometheus-operator-namespace",
    "--image-registry",
    "--plugin-dir",
    "--override-builtin",
}


def test_every_option_of_mlcc_render_is_a_declared_field_or_named_as_none() -> None:
    declared = {flag for entry in spec_flag_table().values() for flag in entry["flags"]}
    assert _option_strings("render") - NOT_SPEC_FIELDS == declared


SAMPLES: dict[str, tuple[list[str], Any]] = {
    "str": (["x-1"], "x-1"),
    "int": (["3"], 3),
    "float": (["0.5"], 0.5),
    "int-or-auto": (["auto"], "auto"),
    "bool": ([], True),
    "list": (["a-1"], ["a-1"]),
}


@pytest.mark.parametrize(
    "path",
    [p for p, e in spec_flag_table().items() if e["flags"] and e["kind"] != "mapping"],
)
def test_a_flag_lands_on_its_field(path: str) -> None:
    entry = spec_flag_table()[path]
    values, expected = SAMPLES[entry["kind"]]
    if entry["choices"]:
        values, expected = [entry["choices"][-1]], entry["choices"][-1]
    args = build_parser("render").parse_args(["render", entry["flags"][0], *values])
    layers = flag_layers(args)
    assert len(layers) == 1
    where, layer = layers[0]
    assert where == entry["flags"][0]
    head, _, tail = path.partition(".")
    assert layer == ({head: {tail: expected}} if tail else {head: expected})
