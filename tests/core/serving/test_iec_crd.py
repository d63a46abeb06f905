"""Rendered InferenceEndpointConfigs against the upstream v1 CRD (../shared, read-only), and the
synth-time rule data (``mlcc_constructs/data/crd_rules/``) checked against that CRD."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mlcc_constructs.core.serving.kinds._crd_rules import strict
from mlcc_constructs.core.serving.kinds.inference_endpoint_config import RULES, endpoint_name
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SecretRef
from tests._flat import flat_spec
from tests.conftest import LLAMA_CPP_TEST_IMAGE

IEC_V1_RULES = RULES.schema
iec_problems = RULES.problems
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
                spec = flat_spec(
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
    hf = flat_spec(
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


# -- what a production team expects of the IEC: worker probes, a per-namespace endpoint name --

HEALTH = {"vllm": ("/health", 8000), "sglang": ("/health", 30000), "lmi": ("/ping", 8080)}


@pytest.mark.parametrize("case", [c for c, _ in CASES])
def test_the_worker_probes_the_engine_health_path_on_its_port(case: str) -> None:
    iec = dict(CASES)[case]
    worker = iec["spec"]["worker"]
    port = worker["modelInvocationPort"]["containerPort"]
    probes = worker["probes"]
    assert list(probes) == ["startupProbe", "readinessProbe", "livenessProbe"]
    for probe in probes.values():
        assert probe["httpGet"] == {
            "path": iec["spec"]["loadBalancer"]["healthCheckPath"],
            "port": port,
        }
    assert (
        probes["startupProbe"]["periodSeconds"] * probes["startupProbe"]["failureThreshold"] == 1800
    )
    engine = case.split("-")[0]
    if engine in HEALTH:
        assert (probes["livenessProbe"]["httpGet"]["path"], port) == HEALTH[engine]


def test_a_misspelt_probe_field_fails_our_rules() -> None:
    iec = copy.deepcopy(CASES[0][1])
    iec["spec"]["worker"]["probes"]["readinessProbe"]["periodSecond"] = 10
    assert [str(p) for p in iec_problems(iec)] == [
        "InferenceEndpointConfig/llama-vllm:/spec/worker/probes/readinessProbe: Additional "
        "properties are not allowed ('periodSecond' was unexpected) (InferenceEndpointConfig v1 "
        "CRD rules) (fix: remove the field or fix its spelling: the v1 CRD does not define it)"
    ]


@pytest.mark.parametrize(
    ("namespace", "name", "expected"),
    [
        ("inference", "llama-vllm", "inference-llama-vllm-1803d22f"),
        ("default", "llama", "default-llama-a99b609c"),
        # the readable part is cut to leave room for the hash, never ending in a dash
        ("n" * 63, "m" * 63, "n" * 54 + "-c8d93768"),
        ("team-a", "x" * 60, "team-a-" + "x" * 47 + "-e405f9d4"),
        ("a" * 53 + "-b", "c", "a" * 53 + "-a60c43cb"),
    ],
)
def test_endpoint_name(namespace: str, name: str, expected: str) -> None:
    got = endpoint_name(namespace, name)
    assert got == expected
    assert len(got) <= 63
    assert re.fullmatch(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$", got)


def test_endpoint_names_differ_where_the_joined_text_is_ambiguous() -> None:
    # "a-b" + "c" and "a" + "b-c" join to the same text; the hash keeps them apart
    assert endpoint_name("a-b", "c") != endpoint_name("a", "b-c")
    assert endpoint_name("team-a", "llama") != endpoint_name("team-b", "llama")
    assert endpoint_name("team-a", "llama") == endpoint_name("team-a", "llama")  # stable


def test_the_longest_names_pass_the_strict_crd(strict_validator: Any) -> None:
    spec = flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type="ml.g5.12xlarge",
        name="l" * 63,
        namespace="n" * 63,
        target="hyperpod-eks",
    )
    iec = render(spec, context=CONTEXT).objects[0]
    assert iec["metadata"]["name"] == iec["spec"]["modelName"] == "l" * 63
    assert iec["spec"]["endpointName"] == endpoint_name("n" * 63, "l" * 63)
    assert [e.message for e in strict_validator.iter_errors(iec)] == []
