"""The pinned CRDs' CEL rules (``x-kubernetes-validations``), evaluated with cel-python on every
custom resource the library renders, beside the structural checks (the CRD rule data of
``kinds/_crd_rules.py`` and the strict openAPIV3Schema checks of test_iec_crd.py and
test_cache_backend_cr.py), which do not run CEL.

The CRDs are read from ``../shared/crds`` (never copied here). A rule cel-python cannot evaluate
is listed in :data:`UNEVALUABLE` and fails the inventory test when it changes, never passes
silently. A custom kind whose CRD is not pinned there is listed in :data:`NO_PINNED_CRD`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.cache.parse import load_cache_backends, parse_cache_backend
from mlcc_constructs.core.serving.kinds.registry import kinds
from mlcc_constructs.core.support.errors import MlccError

celpy = pytest.importorskip(
    "celpy",
    reason="the CEL tier needs PyPI cel-python (pinned in requirements.lock; `make bootstrap` "
    "installs it)",
)

from tests._cel_rules import Outcome, Rule, crd_rules, evaluate  # noqa: E402

EXAMPLES = shipped_path("examples")
PROMETHEUS = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1"
IEC_CRD = "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
CRD_FILES = {
    "InferenceEndpointConfig": IEC_CRD,
    "CacheBackend": "crds/inferencecache.io_cachebackends.yaml",
}
L1_RULE = "quantity(string(self)).isGreaterThan(quantity('0'))"
L1_MESSAGE = "l1Capacity must be greater than zero"
POD_LOCAL_L1 = ("spec", "lmCache", "podLocal", "server", "l1Capacity")
NODE_LOCAL_L1 = ("spec", "lmCache", "nodeLocal", "server", "l1Capacity")
# The Kubernetes API groups the API server serves itself (no CRD).
BUILTIN_GROUPS = {"", "apps", "policy", "networking.k8s.io", "rbac.authorization.k8s.io"}
NO_PINNED_CRD = {
    "InferenceGatewayConfig": "rule data from the AWS docs' CRD reference (no CRD file pinned)",
    "LeaderWorkerSet": "kubernetes-sigs/lws CRD not pinned in ../shared/crds",
    "NodePool": "aws/karpenter-provider-aws CRD not pinned in ../shared/crds",
    "ScaledObject": "rule data from the KEDA docs (no CRD file pinned)",
    "SecretProviderClass": "kubernetes-sigs/secrets-store-csi-driver CRD not pinned",
    "ServiceMonitor": "rule data from the OpenShift monitoring API docs (no CRD file pinned)",
}
"""The custom kinds whose CEL rules are NOT evaluated: their CRDs are not in ../shared/crds
(their structural rule data lives in mlcc_constructs/data/crd_rules)."""
UNEVALUABLE: list[tuple[str, str, str]] = []
"""(kind, schema path, rule) of each pinned rule cel-python cannot evaluate: none today."""


def _custom_kinds() -> set[str]:
    return {k.kind for k in kinds() if k.api_version.rpartition("/")[0] not in BUILTIN_GROUPS}


@pytest.fixture(scope="module")
def rules(shared_dir: Path) -> dict[str, list[Rule]]:
    return {
        kind: crd_rules(yaml.safe_load((shared_dir / path).read_text()))
        for kind, path in CRD_FILES.items()
    }


def _rendered(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert cli.main(["render", *argv]) == 0
    return [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]


@pytest.fixture(scope="module")
def cache_backends() -> list[dict[str, Any]]:
    """The CacheBackend CRs the cdk8s construct emits for the shipped example and for a Redis
    remote tier."""
    import cdk8s

    from mlcc_constructs.core.cache import CacheBackendSpec
    from mlcc_constructs.k8s.cache_backend import CacheBackend, CacheBackendProps

    (example,) = load_cache_backends(EXAMPLES / "cachebackend.yaml")
    redis = example.spec.to_dict()
    redis["remoteStorage"] = {
        "provider": "Redis",
        "ownership": "External",
        "endpoint": "redis.cache.svc:6379",
        "redis": {"authentication": {"password": {"name": "redis", "key": "password"}}},
    }
    chart = cdk8s.Chart(cdk8s.App(), "cel")
    for name, spec in (("example", example.spec), ("redis", CacheBackendSpec.from_dict(redis))):
        CacheBackend(
            chart, name, props=CacheBackendProps(name=name, namespace="inference", spec=spec)
        )
    return [dict(o) for o in chart.to_json()]


@pytest.fixture
def custom_resources(
    capsys: pytest.CaptureFixture[str], cache_backends: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Every custom resource of the reference set, of the deployment example on both targets,
    and the CacheBackend CRs."""
    objects = _rendered(capsys, "-f", str(EXAMPLES / "reference.yaml"), "--prometheus-url",
                        PROMETHEUS)  # fmt: skip
    for target in ("eks", "hyperpod-eks"):
        objects += _rendered(capsys, "-f", str(EXAMPLES / "deployment.yaml"), "--target", target)
    objects += cache_backends
    return [o for o in objects if o["kind"] in _custom_kinds()]


def _outcomes(rules: list[Rule], obj: dict[str, Any]) -> Iterator[Outcome]:
    version = obj["apiVersion"].rpartition("/")[2]
    for rule in rules:
        if rule.version == version:
            yield from evaluate(rule, obj)


# -- the inventory -------------------------------------------------------------------------


def test_the_pinned_crds_rules(rules: dict[str, list[Rule]]) -> None:
    """Every CEL rule of the pinned CRDs, each evaluable by cel-python (with the Kubernetes
    quantity library supplied) or listed in UNEVALUABLE. The InferenceEndpointConfig CRD (v1,
    v1alpha1) has none: its checks are all structural."""
    inventory = {
        kind: [(r.version, r.where, r.rule) for r in found] for kind, found in rules.items()
    }
    assert inventory == {
        "InferenceEndpointConfig": [],
        "CacheBackend": [
            ("v1alpha1", "/" + "/".join(NODE_LOCAL_L1), L1_RULE),
            ("v1alpha1", "/" + "/".join(POD_LOCAL_L1), L1_RULE),
        ],
    }
    probe = {"spec": {"lmCache": {"podLocal": {"server": {"l1Capacity": "1Gi"}}}}}
    unevaluable = [
        (kind, rule.where, rule.rule)
        for kind, found in rules.items()
        for rule in found
        for outcome in evaluate(rule, probe)
        if outcome.verdict == "unevaluable"
    ]
    assert unevaluable == UNEVALUABLE


def test_every_custom_kind_is_checked_or_listed() -> None:
    assert _custom_kinds() == set(CRD_FILES) | set(NO_PINNED_CRD)


# -- rendered objects ----------------------------------------------------------------------


def test_every_rendered_custom_resource_meets_its_crds_rules(
    rules: dict[str, list[Rule]], custom_resources: list[dict[str, Any]]
) -> None:
    outcomes = [
        (f"{obj['kind']}/{obj['metadata']['name']}", outcome)
        for obj in custom_resources
        if obj["kind"] in rules
        for outcome in _outcomes(rules[obj["kind"]], obj)
    ]
    not_passed = [
        f"{label}{o.pointer}: {o.verdict}: {o.rule.rule}: {o.detail}"
        for label, o in outcomes
        if o.verdict != "passed"
    ]
    assert not_passed == []
    # not vacuous: the rule ran on each rendered CacheBackend's L1 capacity
    assert sorted((label, o.pointer) for label, o in outcomes) == [
        ("CacheBackend/example", "/" + "/".join(POD_LOCAL_L1)),
        ("CacheBackend/redis", "/" + "/".join(POD_LOCAL_L1)),
    ]
    kinds_seen = {obj["kind"] for obj in custom_resources}
    assert {"InferenceEndpointConfig", "CacheBackend"} <= kinds_seen


# -- each rule refuses an object that breaks it --------------------------------------------


@pytest.fixture(scope="module")
def structural(shared_dir: Path) -> jsonschema.Draft202012Validator:
    crd = yaml.safe_load((shared_dir / CRD_FILES["CacheBackend"]).read_text())
    return jsonschema.Draft202012Validator(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("capacity", ["0", "0Gi", "-1Gi", 0, "0.0"])
def test_the_pod_local_l1_rule_refuses_no_capacity(
    rules: dict[str, list[Rule]],
    cache_backends: list[dict[str, Any]],
    structural: jsonschema.Draft202012Validator,
    capacity: Any,
) -> None:
    """A rendered CacheBackend with no L1 capacity: the CRD's pattern lets it through, its CEL
    rule refuses it, and so does the library's own admission."""
    obj = copy.deepcopy(cache_backends[0])
    obj["spec"]["lmCache"]["podLocal"]["server"]["l1Capacity"] = capacity
    assert list(structural.iter_errors(obj)) == []
    verdicts = [(o.pointer, o.verdict, o.detail) for o in _outcomes(rules["CacheBackend"], obj)]
    assert verdicts == [("/" + "/".join(POD_LOCAL_L1), "failed", L1_MESSAGE)]
    with pytest.raises(MlccError) as caught:
        parse_cache_backend(obj, where="CacheBackend/example")
    assert f"l1Capacity: must be greater than zero (got {capacity!r})" in str(caught.value)


NODE_LOCAL_CASES = [("1m", "passed"), ("1", "passed"), ("0", "failed"), ("-8Gi", "failed")]


@pytest.mark.parametrize(("capacity", "verdict"), NODE_LOCAL_CASES)
def test_the_node_local_l1_rule(
    rules: dict[str, list[Rule]], cache_backends: list[dict[str, Any]], capacity: str, verdict: str
) -> None:
    """mlcc refuses the NodeLocal topology (it renders none), so no rendered object reaches this
    rule: a rendered CR moved to NodeLocal shows the rule evaluated both ways."""
    obj = copy.deepcopy(cache_backends[0])
    lm_cache = obj["spec"]["lmCache"]
    lm_cache["topology"] = "NodeLocal"
    lm_cache["nodeLocal"] = {
        "server": lm_cache.pop("podLocal")["server"] | {"l1Capacity": capacity}
    }
    verdicts = [(o.pointer, o.verdict) for o in _outcomes(rules["CacheBackend"], obj)]
    assert verdicts == [("/" + "/".join(NODE_LOCAL_L1), verdict)]


def test_a_rule_the_library_cannot_evaluate_is_reported() -> None:
    """A rule calling a Kubernetes library function not supplied here (the URL library), and a
    transition rule, are reported unevaluable with the reason, not passed."""
    url = Rule("v1", ("spec", "endpoint"), "isURL(self)", "must be a URL")
    (outcome,) = evaluate(url, {"spec": {"endpoint": "https://example.com"}})
    assert (outcome.verdict, outcome.detail) == (
        "unevaluable",
        "calls isURL, which cel-python does not have",
    )
    # inside || an undeclared function is an overload error to cel-python, not a failed rule
    # (the form of Karpenter's NodePool label-domain rules, which call the regex library's find)
    domain = Rule(
        "v1",
        ("spec", "key"),
        "self == 'a' || !self.find('^([^/]+)').endsWith('k8s.io')",
        "label domain k8s.io is restricted",
    )
    (outcome,) = evaluate(domain, {"spec": {"key": "example.com/x"}})
    assert (outcome.verdict, outcome.detail) == (
        "unevaluable",
        "calls find, which cel-python does not have",
    )
    immutable = Rule("v1", ("spec", "runtime"), "self == oldSelf", "immutable")
    (outcome,) = evaluate(immutable, {"spec": {"runtime": "vLLM"}})
    assert (outcome.verdict, outcome.detail) == (
        "unevaluable",
        "a transition rule (oldSelf): not run on create",
    )
