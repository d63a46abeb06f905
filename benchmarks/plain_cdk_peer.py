"""The plain-CDK peer of the fleet synth: the app a team would write by hand to apply the same
Kubernetes objects with ``aws_cdk.aws_eks_v2.KubernetesManifest`` directly.

One Stack per deployment, each importing the cluster (``eks.Cluster.from_cluster_attributes``
with its kubectl provider from ``eks.KubectlProvider.from_kubectl_provider_attributes``, the
aws-cdk-lib 2.275.0 API) and applying the deployment's objects one ``KubernetesManifest`` each,
in apply order (each depends on the one before it, as ``kubectl apply -f`` would apply them),
``prune`` off and ``overwrite`` on, as the app's ``KubernetesObjects`` does. No render, no
gates, no readiness waiter, no pod role: the objects come pre-rendered from a JSON file (what
the app's deployments render, written before timing), so the peer pays only for CDK applying
them. :func:`manifests_of` reads the objects back from a cdk.out folder, so the benchmark
proves both apps apply the same objects before it times anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
CLUSTER_NAME = "mlcc-dev"
KUBECTL_SERVICE_TOKEN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:mlcc-dev-kubectl-provider"
KUBECTL_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/mlcc-dev-kubectl"


def write_objects(
    path: Path, deployments: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]
) -> None:
    """The peer's input: ``(stack name, objects in apply order)`` per deployment, as JSON."""
    path.write_text(
        json.dumps([{"stack": stack, "objects": list(objects)} for stack, objects in deployments])
    )


def synth_peer(objects_file: Path, outdir: Path) -> None:
    """Synthesise the peer app for the deployments of ``objects_file`` into ``outdir``."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks, aws_iam as iam

    deployments = json.loads(objects_file.read_text())
    app = cdk.App(outdir=str(outdir))
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    for deployment in deployments:
        stack = cdk.Stack(app, deployment["stack"], env=env)
        provider = eks.KubectlProvider.from_kubectl_provider_attributes(
            stack,
            "KubectlProvider",
            service_token=KUBECTL_SERVICE_TOKEN,
            role=iam.Role.from_role_arn(stack, "KubectlRole", KUBECTL_ROLE_ARN),
        )
        cluster = eks.Cluster.from_cluster_attributes(
            stack, "Cluster", cluster_name=CLUSTER_NAME, kubectl_provider=provider
        )
        previous: eks.KubernetesManifest | None = None
        for index, obj in enumerate(deployment["objects"]):
            manifest = eks.KubernetesManifest(
                stack, f"Object{index}", cluster=cluster, manifest=[obj], prune=False,
                overwrite=True,
            )  # fmt: skip
            if previous is not None:
                manifest.node.add_dependency(previous)
            previous = manifest
    app.synth()


def manifests_of(template_path: Path) -> list[Any]:
    """The objects a template's ``Custom::AWSCDK-EKS-KubernetesResource`` resources apply, in
    apply order (a resource after every one it depends on; ties by the object's kind, namespace
    and name), each as the kubectl provider gets it (the ``Manifest`` JSON text parsed)."""
    template = json.loads(template_path.read_text())
    resources = {
        logical_id: resource
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == "Custom::AWSCDK-EKS-KubernetesResource"
    }
    order: list[str] = []
    placed: set[str] = set()
    while len(order) < len(resources):
        ready = [
            logical_id
            for logical_id, resource in resources.items()
            if logical_id not in placed
            and all(d in placed or d not in resources for d in _depends_on(resource))
        ]
        if not ready:
            raise ValueError(f"{template_path}: the manifests' dependencies form a cycle")
        first = min(ready, key=lambda i: _object_key(resources[i]))
        order.append(first)
        placed.add(first)
    return [_manifest(resources[i]) for i in order]


def _depends_on(resource: Mapping[str, Any]) -> list[str]:
    depends = resource.get("DependsOn", [])
    return [depends] if isinstance(depends, str) else list(depends)


def _manifest(resource: Mapping[str, Any]) -> Any:
    text = resource["Properties"]["Manifest"]
    if not isinstance(text, str):
        raise ValueError(f"a Manifest with CloudFormation functions is not comparable: {text!r}")
    return json.loads(text)


def _object_key(resource: Mapping[str, Any]) -> tuple[str, str, str]:
    (obj,) = _manifest(resource)
    metadata = obj.get("metadata", {})
    return (obj.get("kind", ""), metadata.get("namespace", ""), metadata.get("name", ""))


def check_same_objects(ours: Path, peer: Path, stacks: Sequence[str]) -> list[str]:
    """Refuse to time anything unless each of ``stacks`` applies, in both cdk.out folders
    (``ours``: the app's, ``peer``: :func:`synth_peer`'s), the deployment's objects, equal and
    in the same order. Returns the objects only the app applies (``kind name`` of the first
    stack's: its readiness waiter's RBAC), which the peer has no counterpart for."""
    extras: list[str] = []
    for stack in stacks:
        mine = manifests_of(ours / f"{stack}.template.json")
        theirs = manifests_of(peer / f"{stack}.template.json")
        if not theirs or [m for m in mine if m in theirs] != theirs:
            raise SystemExit(f"bench: {stack}: the peer applies other objects than the app")
        if not extras:
            extras = [f"{o['kind']} {o['metadata']['name']}" for (o,) in mine if [o] not in theirs]
    return extras
