"""Rendered InferenceEndpointConfigs against the upstream v1 CRD (../shared, read-only), and the
synth-time rule set (core.k8s_validation.IEC_V1_RULES) checked against that CRD."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import LLAMA_CPP_TEST_IMAGE

from mlcc_constructs.core.context import RenderContext
from mlcc_constructs.core.k8s_validation import IEC_V1_RULES, iec_problems, strict
from mlcc_constructs.core.render import render
from mlcc_constructs.core.spec import DeploymentSpec, SecretRef

CRD = "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
ENGINES = ("vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp")
CONSTRAINTS = ("type", "pattern", "maxLength", "minimum", "maximum", "enum", "format")


@pytest.fixture(scope="session")
def crd_v1(shared_dir: Path) -> dict[str, Any]:
    document = yaml.safe_load((shared_dir / CRD).read_text(encoding="utf-8"))
    version = next(v for v in document["spec"]["versions"] if v["name"] == "v1")
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture(scope="session")
def strict_validator(crd_v1: dict[str, Any]) -> Any:
    return jsonschema.Draft202012Validator(strict(crd_v1))


def rendered_iecs() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for engine in ENGINES:
        for lora in (False, True) if engine in ("vllm", "sglang") else (False,):
            for delivery in (
                ("env", "args") if engine in ("vllm", "sglang", "tensorrt-llm") else ("env",)
            ):
                spec = DeploymentSpec(
                    engine=engine,
                    model=MODEL,
                    instance_type="ml.g5.12xlarge",
                    name=f"llama-{engine}",
                    target="hyperpod-eks",
                    lora=lora,
                    config_delivery=delivery,
                    env={"NCCL_DEBUG": "WARN"},
                    image=LLAMA_CPP_TEST_IMAGE if engine == "llama-cpp" else None,
                )
                cases.append(
                    (f"{engine}-{lora}-{delivery}", render(spec, context=CONTEXT).objects[0])
                )
    hf = DeploymentSpec(
        engine="vllm",
        model="mistralai/Mistral-7B-Instruct-v0.3",
        instance_type="ml.g5.24xlarge",
        name="mistral-vllm",
        target="hyperpod-eks",
        secret_env={
            "HF_TOKEN": SecretRef(name="hf", key="token"),
            "API_KEY": SecretRef(name="a", key="k"),
        },
    )
    cases.append(("vllm-hf", render(hf, context=CONTEXT).objects[0]))
    return cases


CASES = rendered_iecs()


@pytest.mark.parametrize(("case", "iec"), CASES, ids=[c for c, _ in CASES])
def test_rendered_iec_passes_the_strict_crd(
    strict_validator: Any, case: str, iec: dict[str, Any]
) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in strict_validator.iter_errors(iec)]
    assert errors == []


@pytest.mark.parametrize("sample", ["example-iec-vllm-hf.yaml", "example-iec-vllm-s3.yaml"])
def test_upstream_samples_pass_the_strict_crd(
    shared_dir: Path, strict_validator: Any, sample: str
) -> None:
    document = yaml.safe_load((shared_dir / "examples" / sample).read_text(encoding="utf-8"))
    assert [e.message for e in strict_validator.iter_errors(document)] == []


def test_a_misspelt_field_fails_the_strict_crd_and_our_rules(strict_validator: Any) -> None:
    iec = copy.deepcopy(CASES[0][1])
    iec["spec"]["worker"]["enviromentVariables"] = []
    assert any("enviromentVariables" in e.message for e in strict_validator.iter_errors(iec))
    assert [str(p) for p in iec_problems(iec)] == [
        "InferenceEndpointConfig/llama-vllm:/spec/worker: Additional properties are not allowed "
        "('enviromentVariables' was unexpected) (InferenceEndpointConfig v1 CRD rules) (fix: "
        "remove the field or fix its spelling: the v1 CRD does not define it)"
    ]


@pytest.mark.parametrize(
    ("pointer", "value", "message"),
    [
        (
            ("spec", "instanceType"),
            "g5.12xlarge",
            "/spec/instanceType: 'g5.12xlarge' does not match '^ml\\\\..*'",
        ),
        (("spec", "endpointName"), "e" * 64, "/spec/endpointName: '" + "e" * 64 + "' is too long"),
    ],
)
def test_our_rules_name_the_field(pointer: tuple[str, ...], value: str, message: str) -> None:
    iec = copy.deepcopy(CASES[0][1])
    iec[pointer[0]][pointer[1]] = value
    problems = [str(p) for p in iec_problems(iec)]
    assert problems and problems[0].startswith(f"InferenceEndpointConfig/llama-vllm:{message}")


def _walk(ours: dict[str, Any], theirs: dict[str, Any], path: str) -> list[str]:
    """Every difference between a rule in IEC_V1_RULES and the CRD at the same path."""
    if "properties" not in theirs:  # metadata: the CRD leaves it to the API server
        return []
    diffs = []
    missing_required = set(theirs.get("required", [])) - set(ours.get("required", []))
    if missing_required:
        diffs.append(f"{path}: CRD requires {sorted(missing_required)}")
    for name, rule in ours.get("properties", {}).items():
        crd = theirs["properties"].get(name)
        if crd is None:
            diffs.append(f"{path}/{name}: not in the CRD")
            continue
        for key in CONSTRAINTS:
            if key in rule and key != "type" and rule[key] != crd.get(key):
                diffs.append(f"{path}/{name}: {key} {rule[key]!r} != CRD {crd.get(key)!r}")
            if key in crd and key not in rule and key not in ("type", "format"):
                diffs.append(f"{path}/{name}: CRD {key} {crd[key]!r} not checked")
        if rule.get("type") and crd.get("type") and rule["type"] != crd["type"]:
            diffs.append(f"{path}/{name}: type {rule['type']} != CRD {crd['type']}")
        if "items" in rule:
            diffs += _walk(rule["items"], crd.get("items", {}), f"{path}/{name}/items")
        extra = rule.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("pattern") != crd["additionalProperties"].get(
            "pattern"
        ):
            diffs.append(f"{path}/{name}: quantity pattern differs from the CRD")
        diffs += _walk(rule, crd, f"{path}/{name}")
    return diffs


def test_synth_rules_match_the_crd(crd_v1: dict[str, Any]) -> None:
    assert _walk(dict(IEC_V1_RULES), crd_v1, "") == []


def test_rules_are_not_vacuous() -> None:
    spec = IEC_V1_RULES["properties"]["spec"]
    assert spec["required"] == ["modelName", "modelSourceConfig", "worker"]
    assert spec["properties"]["instanceType"]["pattern"] == "^ml\\..*"
    assert spec["properties"]["modelName"]["maxLength"] == 63
