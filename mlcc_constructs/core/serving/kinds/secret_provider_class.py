"""``SecretProviderClass`` (``secrets-store.csi.x-k8s.io/v1``): the Secrets Manager values of a
deployment (:class:`~mlcc_constructs.core.serving.prepare.secrets.SecretsPlan`), read by the
AWS provider of the Secrets Store CSI driver as the pod's own EKS Pod Identity and synced into
the Kubernetes Secret ``<name>-secrets`` the engine container's env references. Rendered only
when something comes from Secrets Manager.

Facts (aws/secrets-store-csi-driver-provider-aws README): ``provider: aws``; ``parameters`` are
strings, ``objects`` a YAML list of ``{objectName, objectType, objectAlias, jmesPath}`` (JSON is
YAML, and the library writes JSON so the text is byte-stable), ``usePodIdentity: "true"``
selects Pod Identity over IRSA. The driver syncs ``secretObjects`` only while a pod mounts the
volume (docs/book/src/topics/sync-as-kubernetes-secret.md), which the engine pod does, and
deletes the Secret with the last such pod.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.secrets_store import ADDON_NAME
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, exists
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.secrets import SecretsPlan

RULES = CrdRules(file="secretproviderclasses.secrets-store.csi.x-k8s.io.v1.json")


def provider_objects(plan: SecretsPlan) -> list[dict[str, Any]]:
    """The AWS provider's ``objects``: one entry per secret, its whole value under the synced
    key's alias, or, for ``json_key`` values, each key through ``jmesPath`` (a secret read for
    several variables is listed once)."""
    by_secret: dict[str, dict[str, Any]] = {}
    for synced in plan.synced:
        source = synced.source
        entry = by_secret.setdefault(
            source.secret, {"objectName": source.secret, "objectType": "secretsmanager"}
        )
        if source.json_key is None:
            entry.setdefault("objectAlias", synced.key)
        else:
            entry.setdefault("jmesPath", []).append(
                {"path": source.json_key, "objectAlias": synced.key}
            )
    for entry in by_secret.values():
        if "objectAlias" not in entry:  # the whole value is mounted too: a file of its own
            entry["objectAlias"] = f"{entry['jmesPath'][0]['objectAlias']}-source"
    return list(by_secret.values())


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's SecretProviderClass, when it has Secrets Manager values."""
    plan = facts.secrets
    if not plan.syncs:
        return []
    parameters = {
        "objects": json.dumps(provider_objects(plan), separators=(",", ":")),
        "usePodIdentity": "true",
    }
    region = facts.spec.region or facts.model_region
    if region:  # else the provider reads the node's topology.kubernetes.io/region label
        parameters["region"] = region
    aliases = sorted({synced.key for synced in plan.synced})
    secret_provider_class = {
        "apiVersion": KIND.api_version,
        "kind": KIND.kind,
        "metadata": metadata(facts, plan.name),
        "spec": {
            "provider": "aws",
            "parameters": parameters,
            "secretObjects": [
                {
                    "secretName": plan.name,
                    "type": "Opaque",
                    "labels": metadata(facts, plan.name)["labels"],
                    "data": [{"key": alias, "objectName": alias} for alias in aliases],
                }
            ],
        },
    }
    return [RenderedObject("SecretProviderClass", secret_provider_class)]


def _problems(obj: Mapping[str, Any]) -> list[Any]:
    return RULES.problems(obj)


KIND = Kind(
    kind="SecretProviderClass",
    api_version="secrets-store.csi.x-k8s.io/v1",
    plural="secretproviderclasses",
    namespaced=True,
    apply_phase=25,
    validate=_problems,
    readiness=exists,
    render=render,
    requires=ADDON_NAME,
)
