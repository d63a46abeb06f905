"""``Namespaces``: the ``Namespace`` objects the app's deployments live in (cdk8s), exactly as
:func:`mlcc_constructs.core.serving.kinds.namespace.namespace_object` makes them and the serving
stack applies them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cdk8s
import constructs

from mlcc_constructs.core.serving.kinds.namespace import namespace_object
from mlcc_constructs.core.support.typecheck import check_fields
from mlcc_constructs.k8s._api import api_object


@dataclass(frozen=True, kw_only=True)
class NamespacesProps:
    """Props of :class:`Namespaces`."""

    namespaces: Sequence[str]
    """The namespace names, in the order they are emitted."""

    def __post_init__(self) -> None:
        check_fields(self)


class Namespaces(constructs.Construct):
    """One ``Namespace`` per name; each child's id is the namespace name."""

    def __init__(self, scope: constructs.Construct, id: str, *, props: NamespacesProps) -> None:
        super().__init__(scope, id)
        self.objects: dict[str, cdk8s.ApiObject] = {
            name: api_object(self, name, namespace_object(name)) for name in props.namespaces
        }
        """The Namespace objects, by name."""
