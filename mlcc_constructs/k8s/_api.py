"""Plain dict → ``cdk8s.ApiObject``, with the object validated again at synth.

The core renders complete objects; an ``ApiObject`` is created with the same apiVersion, kind
and metadata, and every other top-level field is added with a JSON patch (the Python binding
takes no ``spec=``/``data=``), so the synthesized object is the dict, key order included.
A validation registered on the object re-checks the final JSON at synth (core kinds against
the strict Kubernetes schemas, the IEC against the v1 CRD rules), which also catches a user's
own JSON patches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cdk8s
import constructs
import jsii

from mlcc_constructs.core.k8s_validation import object_problems

_HEADER = ("apiVersion", "kind", "metadata")


@jsii.implements(constructs.IValidation)
class _ObjectValidation:
    def __init__(self, api_object: cdk8s.ApiObject) -> None:
        self._api_object = api_object

    def validate(self) -> list[str]:
        return [str(problem) for problem in object_problems(self._api_object.to_json())]


def api_object(scope: constructs.Construct, id: str, obj: Mapping[str, Any]) -> cdk8s.ApiObject:
    """Emit ``obj`` (a rendered Kubernetes object) as an ``ApiObject`` child ``id`` of ``scope``."""
    metadata = dict(obj["metadata"])
    resource = cdk8s.ApiObject(
        scope,
        id,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        metadata=cdk8s.ApiObjectMetadata(
            name=metadata["name"], namespace=metadata.get("namespace")
        ),
    )
    resource.add_json_patch(cdk8s.JsonPatch.replace("/metadata", metadata))
    for key, value in obj.items():
        if key not in _HEADER:
            resource.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    resource.node.add_validation(_ObjectValidation(resource))
    return resource
