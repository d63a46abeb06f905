"""Plain dict → ``cdk8s.ApiObject``, validated in Python and emitted without jsii round trips.

The core renders complete objects. Each becomes one :class:`_RenderedObject`: an ``ApiObject``
(same apiVersion, kind and metadata name/namespace, so cdk8s sees a normal object) whose
Python ``to_json`` override returns the rendered dict. cdk8s calls that override at synth
(jsii routes the JavaScript ``toJson`` to it), so an object costs one ``create`` and one
``toJson`` call over jsii, whatever its size.

Why not JSON patches plus a synth-time validation per object: cdk8s validates the WHOLE app
once per chart it synthesizes (``App._synthChart``), so a validation per object is called
charts x objects times over jsii, each fetching the object's JSON back; 500 deployments cost
minutes. Here the rendered dict is validated in Python once, when the object is created (core
kinds against the strict Kubernetes schemas, the IEC against the v1 CRD rules).

Trade-off, and how user edits are still caught: a synth-time validation is registered only on
an object that needs one, i.e. one whose rendered dict has problems (reported at synth, as
before) or one a user patched with ``add_json_patch``. The first patch switches the object to
cdk8s's own rendering (the rendered content is applied as JSON patches ahead of the user's),
and the validation then re-checks the final patched JSON at synth.

Labels and annotations from outside the core still reach the output: a chart's ``labels`` and a
user's ``resource.metadata.add_label`` / ``add_annotation`` are read from the JavaScript object
at synth and merged under the rendered ones (on a key clash the rendered value wins: selectors
depend on it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import cdk8s
import constructs
import jsii

from mlcc_constructs.core.serving.kinds.registry import object_problems
from mlcc_constructs.core.support.errors import Problem

_HEADER = ("apiVersion", "kind", "metadata")
_MERGED_METADATA = ("labels", "annotations")


class _RenderedObject(cdk8s.ApiObject):
    """An ``ApiObject`` whose JSON is a rendered dict (see the module docstring)."""

    def __init__(self, scope: constructs.Construct, id: str, obj: Mapping[str, Any]) -> None:
        metadata = obj["metadata"]
        super().__init__(
            scope,
            id,
            api_version=obj["apiVersion"],
            kind=obj["kind"],
            metadata=cdk8s.ApiObjectMetadata(
                name=metadata["name"], namespace=metadata.get("namespace")
            ),
        )
        # The same top-level key order as ApiObject.toJson: apiVersion, kind, metadata, rest.
        self._rendered: dict[str, Any] = {k: obj[k] for k in _HEADER if k in obj}
        self._rendered.update((k, v) for k, v in obj.items() if k not in _HEADER)
        self._patched = False
        self._validation: _ObjectValidation | None = None
        self._problems: list[Problem] = object_problems(self._rendered)
        if self._problems:
            self._validate_at_synth()

    def _validate_at_synth(self) -> None:
        if self._validation is None:
            self._validation = _ObjectValidation(self)
            self.node.add_validation(self._validation)

    def add_json_patch(self, *ops: cdk8s.JsonPatch) -> None:
        """Apply RFC 6902 operations to the synthesized object (validated again at synth)."""
        if not self._patched:
            self._patched = True
            rendered_metadata = self._rendered["metadata"]
            for key, value in rendered_metadata.get("labels", {}).items():
                self.metadata.add_label(key, value)
            for key, value in rendered_metadata.get("annotations", {}).items():
                self.metadata.add_annotation(key, value)
            content = [
                cdk8s.JsonPatch.add(f"/metadata/{key}", value)
                for key, value in rendered_metadata.items()
                if key not in _MERGED_METADATA
            ]
            content += [
                cdk8s.JsonPatch.add(f"/{key}", value)
                for key, value in self._rendered.items()
                if key not in _HEADER
            ]
            super().add_json_patch(*content)
            self._validate_at_synth()
        super().add_json_patch(*ops)

    def omit(self, *path: str) -> None:
        """Leave the field at ``path`` (keys from the top, e.g. ``"spec", "replicas"``) out of
        the synthesized object; nothing happens when it is absent.

        Before a user patch the rendered dict is edited (copied along ``path`` first: its
        nested dicts are shared with the prepared deployment, which other constructs and
        ``mlcc render`` read); after one, a ``remove`` operation follows the user's patches.
        """
        if self._patched:
            if _holds(super().to_json(), path):
                super().add_json_patch(cdk8s.JsonPatch.remove("/" + "/".join(path)))
            return
        if not _holds(self._rendered, path):
            return
        parent = self._rendered
        for key in path[:-1]:
            parent[key] = dict(parent[key])
            parent = parent[key]
        del parent[path[-1]]
        self._problems = object_problems(self._rendered)
        if self._problems:
            self._validate_at_synth()

    def to_json(self) -> Any:
        """The object's Kubernetes JSON: the rendered dict with labels and annotations set
        outside the core merged in, or cdk8s's own rendering once patched."""
        if self._patched:
            return super().to_json()
        rendered = copy.deepcopy(self._rendered)
        outside = super().to_json().get("metadata", {})
        metadata = rendered["metadata"]
        for field in _MERGED_METADATA:
            extra = outside.get(field)
            if extra:
                own = metadata.get(field, {})
                metadata[field] = {**own, **{k: v for k, v in extra.items() if k not in own}}
        return rendered

    def problems(self) -> list[Problem]:
        """Problems of the JSON this object synthesizes."""
        if self._patched:
            return object_problems(super().to_json())
        return self._problems


def _holds(obj: Any, path: tuple[str, ...]) -> bool:
    """``obj`` has a field at ``path`` (dict keys from the top)."""
    for key in path:
        if not isinstance(obj, Mapping) or key not in obj:
            return False
        obj = obj[key]
    return True


@jsii.implements(constructs.IValidation)
class _ObjectValidation:
    def __init__(self, api_object: _RenderedObject) -> None:
        self._api_object = api_object

    def validate(self) -> list[str]:
        return [str(problem) for problem in self._api_object.problems()]


def api_object(scope: constructs.Construct, id: str, obj: Mapping[str, Any]) -> _RenderedObject:
    """Emit ``obj`` (a rendered Kubernetes object) as an ``ApiObject`` child ``id`` of ``scope``."""
    return _RenderedObject(scope, id, obj)
