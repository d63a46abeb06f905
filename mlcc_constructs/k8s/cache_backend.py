"""``CacheBackend``: the ``inferencecache.io/v1alpha1`` CacheBackend object itself, for
clusters that run the inference-cache operator (operator mode).

Without the operator, wire the engine pods directly with
:func:`mlcc_constructs.core.cache.inject_cache_backend` instead; both take the same
:class:`~mlcc_constructs.core.cache.CacheBackendSpec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import cdk8s
import constructs
import jsii

from mlcc_constructs.core.cache import (
    API_VERSION,
    KIND,
    CacheBackendSpec,
    admit,
    parse_cache_backend,
)
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.support.migration import PropsMigration, replaced_keywords
from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class CacheBackendProps:
    """Props of :class:`CacheBackend`: ``CacheBackend(scope, id, props=CacheBackendProps(...))``."""

    name: str
    """``metadata.name`` of the CacheBackend. Required."""
    spec: CacheBackendSpec
    """The typed spec (admitted when the construct is created and again at synth). Required."""
    namespace: str | None = None
    """``metadata.namespace``. Default: none (the chart's or kubectl's namespace)."""
    labels: Mapping[str, str] | None = None
    """``metadata.labels``. Default: none (no labels)."""

    def __post_init__(self) -> None:
        check_fields(self)


@jsii.implements(constructs.IValidation)
class _Admission:
    """Re-admits the final JSON at synth, so a JSON patch cannot slip a reserved override in."""

    def __init__(self, resource: cdk8s.ApiObject) -> None:
        self._resource = resource

    def validate(self) -> list[str]:
        try:
            parse_cache_backend(self._resource.to_json(), where=self._resource.node.path)
        except MlccError as error:
            return [str(problem) for problem in error.problems]
        return []


class CacheBackend(constructs.Construct):
    """An ``inferencecache.io/v1alpha1`` CacheBackend object (child ``Resource``).

    Admission runs on construction (raises :class:`MlccError` with every problem; it runs once
    per spec object: a spec from :func:`~mlcc_constructs.core.cache.parse_spec` or an earlier
    construct is not re-checked) and again at synth on the emitted JSON.

    :param scope: the parent construct (a cdk8s Chart or below).
    :param id: the construct id.
    :param props: name, spec, namespace and labels (:class:`CacheBackendProps`).
    """

    @replaced_keywords(
        PropsMigration(
            construct="CacheBackend",
            props="CacheBackendProps",
            required=("name", "spec"),
            optional=("namespace", "labels"),
        )
    )
    def __init__(self, scope: constructs.Construct, id: str, *, props: CacheBackendProps) -> None:
        super().__init__(scope, id)
        self.props: CacheBackendProps = props
        """The props this object was made from."""
        admit(props.spec, where=f"{self.node.path}/Resource")
        labels = dict(props.labels) if props.labels else None
        self.resource: cdk8s.ApiObject = cdk8s.ApiObject(
            self,
            "Resource",
            api_version=API_VERSION,
            kind=KIND,
            metadata=cdk8s.ApiObjectMetadata(
                name=props.name, namespace=props.namespace, labels=labels
            ),
        )
        """The CacheBackend ApiObject."""
        self.resource.add_json_patch(cdk8s.JsonPatch.add("/spec", props.spec.to_dict()))
        self.resource.node.add_validation(_Admission(self.resource))
        self.name: str = props.name
        """``metadata.name``."""
        self.spec: CacheBackendSpec = props.spec
        """The admitted spec."""
