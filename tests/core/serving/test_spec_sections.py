"""``DeploymentSpec`` in sections (issue 36): at most 14 top-level fields, every field with its
one attribute docstring, plain dicts read as a file's sections are (same errors), the flat 0.1
shape refused with one error naming where each field went, and ``mlcc spec migrate``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import (
    CacheSpec,
    ComputeSpec,
    DeploymentSpec,
    EngineSpec,
    LoraSpec,
    ModelSpec,
    RolloutSpec,
    ScalingSpec,
)
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.endpoint import Endpoint
from mlcc_constructs.core.serving.spec.files import load_spec_file, spec_from_mapping
from mlcc_constructs.core.serving.spec.flat_shape import MOVED, migrate_document
from mlcc_constructs.core.serving.spec.schema_gen import attribute_docs
from mlcc_constructs.core.support.errors import MlccError

ROOT = Path(__file__).resolve().parents[3]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SECTION_CLASSES = (
    EngineSpec,
    ModelSpec,
    ComputeSpec,
    LoraSpec,
    Endpoint,
    ScalingSpec,
    RolloutSpec,
    CacheSpec,
)


def _minimal(**sections: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": EngineSpec(name="vllm"),
        "model": ModelSpec(uri=MODEL),
        "compute": ComputeSpec(instance_type="ml.g5.2xlarge"),
        "name": "llama",
    }
    return DeploymentSpec(**{**values, **sections})


def test_at_most_fourteen_top_level_fields_and_three_required() -> None:
    fields = dataclasses.fields(DeploymentSpec)
    assert len(fields) <= 14
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    assert required == ["engine", "model", "compute"]
    assert [f.name for f in dataclasses.fields(EngineSpec) if f.name == "name"] == ["name"]


@pytest.mark.parametrize("cls", [DeploymentSpec, *SECTION_CLASSES], ids=lambda c: c.__name__)
def test_every_field_has_one_attribute_docstring(cls: type) -> None:
    docs = attribute_docs(cls)
    assert [f.name for f in dataclasses.fields(cls) if not docs.get(f.name)] == []


def test_a_section_given_as_a_dict_equals_its_dataclass() -> None:
    typed = _minimal(
        scaling=ScalingSpec(replicas=2, autoscaling=None),
        rollout=RolloutSpec(strategy="replace"),
    )
    plain = DeploymentSpec(
        engine={"name": "vllm"},  # type: ignore[arg-type]
        model={"uri": MODEL},  # type: ignore[arg-type]
        compute={"instance_type": "ml.g5.2xlarge"},  # type: ignore[arg-type]
        scaling={"replicas": 2},  # type: ignore[arg-type]
        rollout={"strategy": "replace"},  # type: ignore[arg-type]
        name="llama",
    )
    assert plain == typed
    assert render(plain).objects == render(typed).objects


def test_a_dict_section_gets_the_errors_of_a_file() -> None:
    bad = {"instance_type": 3, "nodes": 0}
    with pytest.raises(MlccError) as as_dict:
        DeploymentSpec(engine=EngineSpec(name="vllm"), model=ModelSpec(uri=MODEL), compute=bad)  # type: ignore[arg-type]
    with pytest.raises(MlccError) as as_file:
        spec_from_mapping(
            {"engine": {"name": "vllm"}, "model": {"uri": MODEL}, "compute": bad}, where=""
        )
    assert (
        str(as_dict.value)
        == str(as_file.value)
        == (
            "/compute/instance_type: 3 is not of type 'string' (fix: see "
            "mlcc_constructs/data/deployment-spec.schema.json for the fields)\n"
            "/compute/nodes: 0 is less than the minimum of 1 (fix: see "
            "mlcc_constructs/data/deployment-spec.schema.json for the fields)"
        )
    )


def test_a_section_of_the_wrong_type_names_its_place() -> None:
    with pytest.raises(MlccError) as caught:
        LoraSpec(enabled="no")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "/lora/enabled: wrong type for LoraSpec.enabled (got 'no'; allowed: bool; fix: pass bool)"
    )


FLAT = {
    "name": "llama",
    "engine": "vllm",
    "model": MODEL,
    "instance_type": "ml.g5.12xlarge",
    "replicas": 2,
    "env": {"VLLM_MAX_NUM_SEQS": "64"},
    "api_key_secret": "team/key",
    "endpoint": {"scheme": "internal"},
    "rollout": "surge",
    "namespace": "inference",
}


def test_a_flat_spec_gets_one_error_naming_where_each_field_moved() -> None:
    with pytest.raises(MlccError) as caught:
        spec_from_mapping(FLAT, where="spec.yaml")
    assert str(caught.value) == (
        "spec.yaml:/: the spec has the flat shape of mlcc-constructs 0.1: engine moved to "
        "engine.name; model moved to model.uri; instance_type moved to compute.instance_type; "
        "replicas moved to scaling.replicas; env moved to engine.env; api_key_secret moved to "
        "endpoint.api_key_secret; rollout moved to rollout.strategy (fix: run mlcc spec migrate "
        "FILE --in-place (or -o NEW_FILE); see CHANGELOG.md 0.2.0)"
    )


def test_migrate_moves_each_field_and_keeps_the_order() -> None:
    migrated = migrate_document(FLAT)
    assert migrated == {
        "name": "llama",
        "engine": {"name": "vllm", "env": {"VLLM_MAX_NUM_SEQS": "64"}},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "scaling": {"replicas": 2},
        "endpoint": {"api_key_secret": "team/key", "scheme": "internal"},
        "rollout": {"strategy": "surge"},
        "namespace": "inference",
    }
    assert list(migrated) == list(dict.fromkeys(migrated))  # order: first appearance
    assert list(migrated["endpoint"]) == ["api_key_secret", "scheme"]
    assert migrate_document(migrated) == migrated  # a sectioned document is left as it is
    assert FLAT["engine"] == "vllm"  # the input is not changed
    loaded = spec_from_mapping(migrated, where="")
    assert loaded.spec.endpoint.api_key_secret == "team/key"
    assert loaded.spec.scaling.replicas == 2


def test_every_flat_field_moves_to_a_field_that_exists() -> None:
    for flat, (section, name) in MOVED.items():
        field = DeploymentSpec.__dataclass_fields__[section]
        section_type = {
            "engine": EngineSpec,
            "model": ModelSpec,
            "compute": ComputeSpec,
            "lora": LoraSpec,
            "endpoint": Endpoint,
            "scaling": ScalingSpec,
            "rollout": RolloutSpec,
            "cache": CacheSpec,
        }[field.name]
        assert name in section_type.__dataclass_fields__, flat


def _mlcc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


LIST_FILE = """\
# two deployments
# of the old shape
- engine: vllm
  model: org/a   # lost: PyYAML drops comments after the first field
  instance_type: ml.g5.2xlarge
  name: a
  autoscaling: {max_replicas: 2}
  lora: true
- name: b
  engine: sglang
  model: org/b
  instance_type: ml.g5.2xlarge
"""


def test_spec_migrate_rewrites_a_list_in_place_atomically(tmp_path: Path) -> None:
    path = tmp_path / "specs.yaml"
    path.write_text(LIST_FILE, encoding="utf-8")
    out = _mlcc("spec", "migrate", str(path), "--in-place")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == f"wrote {path}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["specs.yaml"]  # no temporary left
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# two deployments\n# of the old shape\n- engine:\n    name: vllm\n")
    assert yaml.safe_load(text) == [
        {
            "engine": {"name": "vllm"},
            "model": {"uri": "org/a"},
            "compute": {"instance_type": "ml.g5.2xlarge"},
            "name": "a",
            "scaling": {"autoscaling": {"max_replicas": 2}},
            "lora": {"enabled": True},
        },
        {
            "name": "b",
            "engine": {"name": "sglang"},
            "model": {"uri": "org/b"},
            "compute": {"instance_type": "ml.g5.2xlarge"},
        },
    ]
    rendered = _mlcc("render", "-f", str(path), "--prometheus-url", "https://aps.example.com")
    assert rendered.returncode == 0, rendered.stderr


def test_spec_migrate_writes_stdout_or_another_file(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(FLAT), encoding="utf-8")
    shown = _mlcc("spec", "migrate", str(path))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == migrate_document(FLAT)
    out = tmp_path / "new" / "spec.json"
    written = _mlcc("spec", "migrate", str(path), "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert json.loads(out.read_text()) == migrate_document(FLAT)
    assert json.loads(path.read_text()) == FLAT  # -o leaves the file as it was
    assert load_spec_file(out).spec.model.uri == MODEL


def test_spec_migrate_takes_one_destination(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("engine: vllm\n", encoding="utf-8")
    out = _mlcc("spec", "migrate", str(path), "--in-place", "-o", str(tmp_path / "x.yaml"))
    assert out.returncode == 2
    assert "not allowed with argument" in out.stderr


def test_the_help_says_comments_are_lost() -> None:
    out = _mlcc("spec", "migrate", "--help")
    assert out.returncode == 0
    assert "PyYAML drops" in " ".join(out.stdout.split())


def test_the_examples_and_cdk_json_have_the_sectioned_shape() -> None:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    entries = list(context["reference_deployments"])
    for example in sorted((ROOT / "examples").glob("*.yaml")):
        if example.name == "cachebackend.yaml":
            continue
        document = yaml.safe_load(example.read_text())
        entries += document if isinstance(document, list) else [document]
    for entry in entries:
        assert migrate_document(entry) == entry
        assert {"engine", "model", "compute"} <= set(entry)


def test_an_autoscaling_dict_in_a_typed_section_is_refused() -> None:
    # a dict where the section's own field needs a dataclass: the type check names it
    with pytest.raises(MlccError) as caught:
        ScalingSpec(autoscaling={"max_replicas": 2})  # type: ignore[arg-type]
    assert str(caught.value).startswith(
        "/scaling/autoscaling: wrong type for ScalingSpec.autoscaling"
    )
    assert ScalingSpec(autoscaling=Autoscaling(max_replicas=2)).autoscaling is not None
