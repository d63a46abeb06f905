"""The Kubernetes names of a deployment's objects and the rules for them.

Every user-facing object gets an explicit name: an RFC 1035 label for the base name (a Service
name must be one, and the IEC's ``endpointName`` is limited to 63 characters), DNS-1123 for the
rest (:func:`object_names`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlcc_constructs.core.platform.labels import MANAGED_BY as MANAGED_BY  # its old home
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.support.kube_names import MAX_LABEL, is_label, is_rfc1035_label

MAX_NAME = MAX_LABEL


def name_problems(name: str | None, *, pointer: str = "/name") -> list[Problem]:
    """Problems with a deployment's base name (the Deployment, Service and IEC are named so).

    RFC 1035 label: a Service name must start with a letter, and the IEC's ``endpointName`` is
    limited to 63 characters, so the base name satisfies the strictest of them.
    """
    allowed = "lower-case letters, digits and '-', starting with a letter, at most 63"
    if not name:
        return [
            Problem(
                message="a name is required to render Kubernetes objects",
                pointer=pointer,
                allowed=allowed,
                fix="pass --name, e.g. --name my-model",
            )
        ]
    if not is_rfc1035_label(name):
        suggestion = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:MAX_NAME].rstrip("-")
        if suggestion and not suggestion[0].isalpha():
            suggestion = ("m-" + suggestion)[:MAX_NAME].rstrip("-")
        return [
            Problem(
                message="not a valid Kubernetes name (RFC 1035 label)",
                pointer=pointer,
                value=name,
                allowed=allowed,
                fix=f"use e.g. {suggestion!r}" if suggestion else "choose a name like my-model",
            )
        ]
    return []


def namespace_problems(namespace: str, *, pointer: str = "/namespace") -> list[Problem]:
    """Problems with a namespace name (DNS-1123 label)."""
    if not is_label(namespace):
        return [
            Problem(
                message="not a valid namespace name (DNS-1123 label)",
                pointer=pointer,
                value=namespace,
                allowed="lower-case letters, digits and '-', at most 63",
                fix="use e.g. 'inference'",
            )
        ]
    return []


@dataclass(frozen=True, kw_only=True)
class Names:
    """Explicit Kubernetes names of one deployment's objects.

    Fields:

    ``base``: The Deployment, Service, ServiceAccount and IEC.
    ``namespace``
    ``config_map``
    ``wrapper``
    ``claim``
    ``volume``: The cluster-scoped PersistentVolume: ``<namespace>-<name>-model``.
    ``secrets``: The SecretProviderClass and the Kubernetes Secret it syncs from Secrets
        Manager: ``<name>-secrets``.
    """

    base: str
    namespace: str
    config_map: str
    wrapper: str
    claim: str
    volume: str
    secrets: str


def object_names(name: str, namespace: str) -> Names:
    """The names of every object of deployment ``name`` in ``namespace``."""
    return Names(
        base=name,
        namespace=namespace,
        config_map=f"{name}-config",
        wrapper=f"{name}-wrapper",
        claim=f"{name}-model",
        volume=f"{namespace}-{name}-model",
        secrets=f"{name}-secrets",
    )


ENGINE_LABEL = "mlcc-constructs/engine"
NAME_LABEL = "app.kubernetes.io/name"


def object_labels(names: Names, engine: str) -> dict[str, str]:
    """The labels of every object of the deployment (its pods included)."""
    return {
        NAME_LABEL: names.base,
        "app.kubernetes.io/component": "inference-server",
        **MANAGED_BY,
        ENGINE_LABEL: engine,
    }


def pod_selector(names: Names) -> dict[str, str]:
    """The labels that select the deployment's pods (Deployment, Service, NetworkPolicy...)."""
    return {NAME_LABEL: names.base}
