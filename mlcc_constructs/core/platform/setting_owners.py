"""Who sets each cluster-wide setting of an app, and where two resources disagree.

A cluster-wide setting (a Kubernetes object, a key of a ``kube-system`` ConfigMap, an add-on, a
Helm release, a named AWS resource) must have one owner, or owners that agree: two resources of
one app that set the same thing to different values fight at every deploy, and whichever runs
last wins. The case that motivated this: the eks-cluster stack turns Auto Mode's network policy
enforcement on through ``kube-system/amazon-vpc-cni``, and the hyperpod-cluster stack's
``vpc-cni`` add-on (``ResolveConflicts: OVERWRITE``, no configuration) rendered the same
ConfigMap key ``"false"``, switching every NetworkPolicy of the cluster off.

:func:`template_settings` reads what each resource of a CloudFormation template sets:

* a ``KubernetesManifest`` (``Custom::AWSCDK-EKS-KubernetesResource``): each object it applies
  (owning the object is a setting: deleting the resource deletes the object), and each
  ``data`` key of an object that has them (a ConfigMap);
* an EKS add-on (``AWS::EKS::Addon``): the add-on itself, and the objects its chart renders
  from its configuration (:data:`ADDON_SETTINGS`: the value configured, else the chart's
  default, which ``OVERWRITE`` applies);
* a Helm chart (``Custom::AWSCDK-EKS-HelmChart``): its release;
* a named AWS resource (:data:`NAMED_RESOURCES`): its physical name.

:func:`conflicts` lists every setting two resources set to different values, and every object,
add-on, release or name two resources own (deleting either would delete it under the other).
Owners that set one key to the same value agree, and are not a conflict. The templates are those
of one app, on one EKS cluster (add-ons are keyed by name, not by the cluster, whose name is a
token that differs between stacks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

KUBERNETES_MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
HELM_CHART = "Custom::AWSCDK-EKS-HelmChart"
ADDON = "AWS::EKS::Addon"

# Add-on configuration key -> (the object its chart renders, the data key, the chart's default).
# vpc-cni: charts/aws-vpc-cni/templates/configmap.yaml renders enable-network-policy-controller
# from .Values.enableNetworkPolicy (aws/amazon-vpc-cni-k8s); the add-on leaves it "false"
# unless configured (EKS User Guide cni-network-policy-configure).
ADDON_SETTINGS: Mapping[str, tuple[tuple[str, str, str, str], ...]] = {
    "vpc-cni": (
        (
            "enableNetworkPolicy",
            "v1/ConfigMap kube-system/amazon-vpc-cni",
            "enable-network-policy-controller",
            "false",
        ),
    ),
}
"""Add-on name -> ``(configuration key, object, data key, chart default)`` of each object key
the add-on's chart sets from its configuration."""

NAMED_RESOURCES: Mapping[str, tuple[str, ...]] = {
    "AWS::IAM::Role": ("RoleName",),
    "AWS::S3::Bucket": ("BucketName",),
    "AWS::Logs::LogGroup": ("LogGroupName",),
    "AWS::EKS::AccessEntry": ("PrincipalArn",),
    "AWS::EKS::PodIdentityAssociation": ("Namespace", "ServiceAccount"),
    "AWS::ECR::PullThroughCacheRule": ("EcrRepositoryPrefix",),
    "AWS::SageMaker::Cluster": ("ClusterName",),
    "AWS::APS::Workspace": ("Alias",),
}
"""Resource type -> the properties that name it: two resources of one app with the same names
are one physical resource claimed twice."""

_OWNED = "(applied)"  # the value of "this resource owns the object"
_TOKEN = re.compile(r"<token:[^>]*>")


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One thing a resource sets: ``target`` (what: an object, an object's key, an add-on, a
    release, a physical name), ``value`` (what it sets it to) and ``owner``
    (``<stack>/<logical id>``)."""

    target: str
    value: str
    owner: str


@dataclass(frozen=True, kw_only=True)
class Conflict:
    """A setting with more than one owner: ``settings``, each owner's."""

    target: str
    settings: tuple[Setting, ...]

    def __str__(self) -> str:
        owners = "; ".join(f"{s.owner} sets {s.value!r}" for s in self.settings)
        return f"{self.target}: {owners}"


def _text(value: Any) -> str:
    """A CloudFormation value as text: a token (Ref, GetAtt, ImportValue...) as
    ``<token:...>``, so two templates' tokens compare by what they name."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_text(part) for part in parts)
    return f"<token:{json.dumps(value, sort_keys=True)}>"


def _objects(manifest: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects of a ``Manifest`` property (a JSON array, maybe joined from
    tokens)."""
    text = _text(manifest)
    # A token inside a JSON string is still JSON text once it is a placeholder without quotes.
    loaded = json.loads(_TOKEN.sub(lambda m: m.group(0).replace('"', "'"), text))
    return [o for o in loaded if isinstance(o, dict)] if isinstance(loaded, list) else []


def object_name(obj: Mapping[str, Any]) -> str:
    """``<apiVersion>/<kind> [<namespace>/]<name>``: an object's identity in the cluster."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = f"{namespace}/{metadata.get('name')}" if namespace else str(metadata.get("name"))
    return f"{obj.get('apiVersion')}/{obj.get('kind')} {name}"


def _manifest_settings(owner: str, properties: Mapping[str, Any]) -> list[Setting]:
    settings = []
    for obj in _objects(properties.get("Manifest", "[]")):
        name = object_name(obj)
        settings.append(Setting(target=name, value=_OWNED, owner=owner))
        data = obj.get("data")  # a ConfigMap's keys: each one a setting of its own
        for key, value in sorted(data.items() if isinstance(data, dict) else ()):
            settings.append(Setting(target=f"{name} data.{key}", value=str(value), owner=owner))
    return settings


def _addon_settings(owner: str, properties: Mapping[str, Any]) -> list[Setting]:
    name = str(properties.get("AddonName"))
    settings = [Setting(target=f"EKS add-on {name}", value=_OWNED, owner=owner)]
    configured = properties.get("ConfigurationValues")
    values = json.loads(configured) if isinstance(configured, str) else {}
    for key, obj, data_key, default in ADDON_SETTINGS.get(name, ()):
        value = str(values.get(key, default))
        settings.append(Setting(target=f"{obj} data.{data_key}", value=value, owner=owner))
    return settings


def template_settings(stack: str, template: Mapping[str, Any]) -> list[Setting]:
    """What each resource of ``template`` (the stack ``stack``) sets (module doc)."""
    settings: list[Setting] = []
    for logical_id, resource in sorted((template.get("Resources") or {}).items()):
        kind = resource.get("Type")
        properties = resource.get("Properties") or {}
        owner = f"{stack}/{logical_id}"
        if kind == KUBERNETES_MANIFEST:
            settings += _manifest_settings(owner, properties)
        elif kind == ADDON:
            settings += _addon_settings(owner, properties)
        elif kind == HELM_CHART:
            release = f"{_text(properties.get('Namespace'))}/{_text(properties.get('Release'))}"
            settings.append(Setting(target=f"Helm release {release}", value=_OWNED, owner=owner))
        elif kind in NAMED_RESOURCES:
            names = [properties.get(key) for key in NAMED_RESOURCES[kind]]
            if all(name is not None for name in names):
                name = " ".join(_text(n) for n in names)
                settings.append(Setting(target=f"{kind} {name}", value=_OWNED, owner=owner))
    return settings


def conflicts(settings: Iterable[Setting]) -> list[Conflict]:
    """Every target set to two values, or owned by two resources (module doc), in target
    order."""
    by_target: dict[str, list[Setting]] = {}
    for setting in settings:
        by_target.setdefault(setting.target, []).append(setting)
    return [
        Conflict(target=target, settings=tuple(found))
        for target, found in sorted(by_target.items())
        if len({s.value for s in found}) > 1
        or (len({s.owner for s in found}) > 1 and found[0].value == _OWNED)
    ]


def app_conflicts(templates: Mapping[str, Mapping[str, Any]]) -> list[Conflict]:
    """The conflicts between every resource of an app's templates (stack name -> template)."""
    return conflicts(
        setting
        for stack, template in sorted(templates.items())
        for setting in template_settings(stack, template)
    )
