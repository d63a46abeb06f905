"""Kubernetes updates that the API server rejects, found in two CloudFormation templates.

The serving stacks apply Kubernetes objects as CDK ``KubernetesResource`` custom resources
(``Properties.Manifest``: the objects as JSON text, applied with ``kubectl apply``). CloudFormation
sees a changed ``Manifest`` as an ordinary update, but some fields of a custom resource cannot
be updated on a live object: the update fails at deploy time and the stack rolls back. The
rules here (:data:`RULES`, one row per such field) find them in a template pair, so the diff
guard (:mod:`mlcc_constructs.ops.diff_guard`) can report them unless the change is declared a
replacement.

Facts: the v1 ``InferenceEndpointConfig`` CRD (aws/sagemaker-hyperpod-cli, chart 2.2.2):
``intelligentRoutingSpec`` is not supported on an existing deployment (adding it is rejected),
and its ``enabled`` field cannot change once set.

One CloudFormation rule sits beside them: a custom resource's ``ServiceToken`` cannot be
updated ("Updates aren't supported", AWS::CloudFormation::CustomResource in the CloudFormation
template reference), so a changed token fails the update the same way (:data:`SERVICE_TOKEN`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TOKEN = "${Token}"
"""What an intrinsic function (``Ref``, ``Fn::ImportValue``...) inside a ``Fn::Join`` manifest
reads as: the objects' JSON stays parseable, and equal tokens compare equal."""


@dataclass(frozen=True, kw_only=True)
class ReplacementRule:
    """A field of a Kubernetes kind that a live object cannot take in an update.

    ``id``: The rule's name in the diff guard's report.
    ``kind``: The object's ``kind``.
    ``field``: The ``spec`` field.
    ``reason``: Why the API server rejects the update (with its source).
    """

    id: str
    kind: str
    field: str
    reason: str


RULES = (
    ReplacementRule(
        id="iec-intelligent-routing",
        kind="InferenceEndpointConfig",
        field="intelligentRoutingSpec",
        reason="the v1 InferenceEndpointConfig CRD rejects intelligentRoutingSpec on an "
        "existing deployment, and its enabled field cannot change once set",
    ),
)

SERVICE_TOKEN = (
    "rule custom-resource-service-token: its ServiceToken changes, and CloudFormation does not "
    "update a custom resource's ServiceToken (AWS::CloudFormation::CustomResource: updates "
    "aren't supported)"
)


def _is_custom_resource(resource: Mapping[str, Any]) -> bool:
    kind = str(resource.get("Type", ""))
    return kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource"


def _service_token(resource: Mapping[str, Any]) -> str:
    return json.dumps((resource.get("Properties") or {}).get("ServiceToken"), sort_keys=True)


def manifest_objects(resource: Mapping[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The Kubernetes objects of a ``KubernetesResource`` by ``(kind, namespace, name)``: its
    ``Manifest`` text, or a ``Fn::Join`` of it with tokens (each read as :data:`_TOKEN`); empty
    for another resource or a manifest that is not JSON objects."""
    manifest = (resource.get("Properties") or {}).get("Manifest")
    text = _text(manifest)
    if text is None:
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return {}
    objects = document if isinstance(document, list) else [document]
    found = {}
    for obj in objects:
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            meta = obj["metadata"]
            key = (str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")))
            found[key] = obj
    return found


def _text(manifest: Any) -> str | None:
    if isinstance(manifest, str):
        return manifest
    if isinstance(manifest, Mapping) and list(manifest) == ["Fn::Join"]:
        separator, parts = manifest["Fn::Join"]
        if isinstance(separator, str) and isinstance(parts, list):
            return separator.join(p if isinstance(p, str) else _TOKEN for p in parts)
    return None


def forced_replacements(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    rules: tuple[ReplacementRule, ...] = RULES,
) -> dict[str, tuple[str, ...]]:
    """Logical id → why updating it in place would be rejected, for every resource of both
    templates whose objects change a field of ``rules`` (added, changed or dropped). A new
    resource, or an object under a new name, is a creation: no rule applies."""
    old_resources = before.get("Resources") or {}
    found: dict[str, tuple[str, ...]] = {}
    for logical_id, resource in sorted((after.get("Resources") or {}).items()):
        if logical_id not in old_resources:
            continue
        old_resource = old_resources[logical_id]
        old_objects = manifest_objects(old_resource)
        reasons = []
        if (
            _is_custom_resource(resource)
            and _is_custom_resource(old_resource)
            and _service_token(resource) != _service_token(old_resource)
        ):
            reasons.append(SERVICE_TOKEN)
        for key, obj in sorted(manifest_objects(resource).items()):
            old = old_objects.get(key)
            if old is None:
                continue
            for rule in rules:
                if key[0] != rule.kind:
                    continue
                change = _field_change(old, obj, rule.field)
                if change is not None:
                    reasons.append(
                        f"rule {rule.id}: {rule.kind} {key[1]}/{key[2]} {change} "
                        f"spec.{rule.field}: {rule.reason}"
                    )
        if reasons:
            found[logical_id] = tuple(reasons)
    return found


def _field_change(old: Mapping[str, Any], new: Mapping[str, Any], field: str) -> str | None:
    before = (old.get("spec") or {}).get(field)
    after = (new.get("spec") or {}).get(field)
    if before == after:
        return None
    if before is None:
        return "gains"
    return "drops" if after is None else "changes"
