"""The diff guard's replacement rules (``core/platform/replacement_rules.py``): an IEC that
gains, changes or drops ``intelligentRoutingSpec`` in place is an offending change unless the
declaration says the object is replaced. Two small templates per case, the real CDK diff."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.platform.replacement_rules import (
    SERVICE_TOKEN,
    forced_replacements,
    manifest_objects,
)
from mlcc_constructs.ops.diff_guard import diff_guard
from tests._cdk_app import REPO

RESOURCE = "InferenceEndpointConfigInferenceLlama0A1B2C3D"
TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
ROUTING = {"enabled": True, "routingStrategy": "prefixaware"}


def _iec(routing: dict[str, Any] | None, *, name: str = "llama", image: str = "v1") -> Any:
    spec: dict[str, Any] = {"modelName": name, "worker": {"image": image}}
    if routing is not None:
        spec["intelligentRoutingSpec"] = routing
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": name, "namespace": "inference"},
        "spec": spec,
    }


def _template(*objects: Any, logical_id: str = RESOURCE, join: bool = False) -> dict[str, Any]:
    text = json.dumps(list(objects), separators=(",", ":"))
    manifest: Any = text
    if join:  # a token inside the text, as CDK writes it: Fn::Join of strings and intrinsics
        head, _, tail = text.partition('"v1"')
        manifest = {"Fn::Join": ["", [head + '"', {"Ref": "ImageTag"}, '"' + tail]]}
    return {
        "Resources": {
            logical_id: {"Type": TYPE, "Properties": {"Manifest": manifest, "Overwrite": True}}
        }
    }


def _expectation(tmp_path: Path, resources: dict[str, Any]) -> Path:
    path = tmp_path / "expected.json"
    path.write_text(json.dumps({"description": "test", "resources": resources}), "utf-8")
    return path


MODIFIED = {RESOURCE: {"type": TYPE, "change": "modified", "properties": ["Manifest"]}}
REPLACED = {RESOURCE: {**MODIFIED[RESOURCE], "replacement": True}}
RULE = "rule iec-intelligent-routing: InferenceEndpointConfig inference/llama"

# (case, before, after, declaration, the rule's verb or None (no rule fires), guard offends)
CASES = [
    ("gains routing", _template(_iec(None)), _template(_iec(ROUTING)), MODIFIED, "gains", True),
    (
        "changes the strategy",
        _template(_iec(ROUTING)),
        _template(_iec({**ROUTING, "routingStrategy": "kvaware"})),
        MODIFIED,
        "changes",
        True,
    ),
    ("drops routing", _template(_iec(ROUTING)), _template(_iec(None)), MODIFIED, "drops", True),
    (
        "gains routing in a manifest with a token",
        _template(_iec(None), join=True),
        _template(_iec(ROUTING), join=True),
        MODIFIED,
        "gains",
        True,
    ),
    (
        "declared replaced",
        _template(_iec(None)),
        _template(_iec(ROUTING)),
        REPLACED,
        "gains",
        False,
    ),
    (
        "routing kept, image changed",
        _template(_iec(ROUTING)),
        _template(_iec(ROUTING, image="v2")),
        MODIFIED,
        None,
        False,
    ),
    (
        "no routing, image changed",
        _template(_iec(None)),
        _template(_iec(None, image="v2")),
        MODIFIED,
        None,
        False,
    ),
    (
        "a new object name in the same resource",
        _template(_iec(None)),
        _template(_iec(ROUTING, name="llama-routed")),
        MODIFIED,
        None,
        False,
    ),
    (
        "a new resource",
        {"Resources": {}},
        _template(_iec(ROUTING)),
        {RESOURCE: {"type": TYPE, "change": "added", "properties": []}},
        None,
        False,
    ),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("before", "after", "verb"), [(c[1], c[2], c[4]) for c in CASES], ids=IDS)
def test_forced_replacements(before: Any, after: Any, verb: str | None) -> None:
    found = forced_replacements(before, after)
    if verb is None:
        assert found == {}
    else:
        assert found == {
            RESOURCE: (
                f"{RULE} {verb} spec.intelligentRoutingSpec: the v1 InferenceEndpointConfig "
                "CRD rejects intelligentRoutingSpec on an existing deployment, and its enabled "
                "field cannot change once set",
            )
        }


def test_manifest_objects_reads_text_and_joins() -> None:
    for template in (_template(_iec(ROUTING)), _template(_iec(ROUTING), join=True)):
        objects = manifest_objects(template["Resources"][RESOURCE])
        assert list(objects) == [("InferenceEndpointConfig", "inference", "llama")]
    assert manifest_objects({"Type": "AWS::SQS::Queue", "Properties": {}}) == {}
    assert manifest_objects({"Properties": {"Manifest": "not json"}}) == {}


needs_node = pytest.mark.skipif(
    shutil.which("node") is None
    or not (REPO / "node_modules" / "@aws-cdk" / "cloudformation-diff").is_dir(),
    reason="needs node and `npm ci` (@aws-cdk/cloudformation-diff)",
)


@needs_node
@pytest.mark.parametrize(
    ("before", "after", "declaration", "verb", "offends"), [c[1:] for c in CASES], ids=IDS
)
def test_the_guard_reports_a_rejected_in_place_update(
    tmp_path: Path, before: Any, after: Any, declaration: Any, verb: str | None, offends: bool
) -> None:
    lines = diff_guard(before, after, _expectation(tmp_path, declaration))
    if not offends:
        assert lines == []
        return
    assert lines[:2] == [f"[~] {TYPE} {RESOURCE}", " └─ [~] Manifest"]
    assert len(lines) == 3
    assert lines[2].startswith(f"    ! {RULE} {verb} spec.intelligentRoutingSpec")
    assert (
        "deploy once without it, or give it a new name (docs/guides/cache.md, Routing and KV "
        "cache on HyperPod)"
    ) in lines[2]


@needs_node
def test_an_undeclared_routing_change_names_the_rule_too(tmp_path: Path) -> None:
    lines = diff_guard(_template(_iec(None)), _template(_iec(ROUTING)), _expectation(tmp_path, {}))
    assert lines[2] == "    ! not declared in the expectation"
    assert lines[3].startswith(f"    ! {RULE} gains spec.intelligentRoutingSpec")


WAIT = "ModelReadinessWait06F58403"


def _wait(token: Any, kind: str = "Custom::MlccWorkloadReadiness") -> dict[str, Any]:
    return {"Resources": {WAIT: {"Type": kind, "Properties": {"ServiceToken": token}}}}


OWN_TOKEN = {"Fn::GetAtt": ["MlccReadinessProviderframeworkonEvent", "Arn"]}
CLUSTER_TOKEN = {"Fn::ImportValue": "mlcc-dev-eks-cluster:ExportsOutputFnGetAtt"}

# (case, before, after, forced): CloudFormation cannot update a custom resource's ServiceToken.
TOKEN_CASES = [
    ("another provider", _wait(OWN_TOKEN), _wait(CLUSTER_TOKEN), True),
    ("the same provider", _wait(OWN_TOKEN), _wait(OWN_TOKEN), False),
    (
        "the generic custom resource type",
        _wait("arn:aws:lambda:us-east-1:1:function:a", "AWS::CloudFormation::CustomResource"),
        _wait("arn:aws:lambda:us-east-1:1:function:b", "AWS::CloudFormation::CustomResource"),
        True,
    ),
    (
        "not a custom resource",
        _wait("a", "AWS::SQS::Queue"),
        _wait("b", "AWS::SQS::Queue"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("before", "after", "forced"), [c[1:] for c in TOKEN_CASES], ids=[c[0] for c in TOKEN_CASES]
)
def test_a_custom_resource_service_token_change_is_forced(
    before: Any, after: Any, forced: bool
) -> None:
    found = forced_replacements(before, after)
    assert found == ({WAIT: (SERVICE_TOKEN,)} if forced else {})
