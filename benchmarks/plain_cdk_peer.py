"""The plain-CDK peer of the fleet synth: the app a team would write by hand to apply the same
Kubernetes objects with ``aws_cdk.aws_eks_v2.KubernetesManifest`` directly.

One Stack per deployment, each importing the cluster (``eks.Cluster.from_cluster_attributes``
with its kubectl provider from ``eks.KubectlProvider.from_kubectl_provider_attributes``, the
aws-cdk-lib 2.275.0 API) and applying the deployment's objects one ``KubernetesManifest`` each,
in apply order (each depends on the one before it, as ``kubectl apply -f`` would apply them),
``prune`` off and ``overwrite`` on, as the app's ``KubernetesObjects`` does.

It does the same AWS work per deployment as the app's serving stack, written by hand: the
pods' IAM role (trusting ``pods.eks.amazonaws.com`` for the deployment's ServiceAccount, with
read access to the model's S3 prefix) and its ``AWS::EKS::PodIdentityAssociation``, applied
before the objects; and one readiness wait after them (a custom resource of the cluster's
waiter, with the ``Role`` and ``RoleBinding`` that let the waiter read the workload). No
render, no gates: the objects and the facts come pre-rendered from a JSON file (what the app's
deployments render, written before timing), so the peer pays only for CDK building them.
:func:`manifests_of` reads the objects back from a cdk.out folder, so the benchmark proves
both apps apply the same objects before it times anything.
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
READINESS_SERVICE_TOKEN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:mlcc-dev-readiness"
CLUSTER_ENDPOINT = "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com"
CLUSTER_CA = "LS0tLS1CRUdJTi1DRVJUSUZJQ0FURS0tLS0t"


def write_objects(path: Path, deployments: Sequence[Mapping[str, Any]]) -> None:
    """The peer's input, one entry per deployment: ``stack`` (its name), ``objects`` (in apply
    order), ``pod_role`` (``namespace``, ``service_account``, ``description``, the model's
    ``bucket`` and ``prefix``; ``None``: the pods act as no role) and ``readiness`` (``access``:
    the waiter's ``Role`` and ``RoleBinding``; ``service_timeout_s``; ``properties``: the wait's;
    ``None``: no wait), as JSON."""
    path.write_text(json.dumps(list(deployments)))


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
        association = _pod_identity(stack, deployment["pod_role"])
        manifests: list[eks.KubernetesManifest] = []
        for index, obj in enumerate(deployment["objects"]):
            manifest = eks.KubernetesManifest(
                stack,
                f"Object{index}",
                cluster=cluster,
                manifest=[obj],
                prune=False,
                overwrite=True,
            )
            if manifests:
                manifest.node.add_dependency(manifests[-1])
            if association is not None:  # the first pods already get the role
                manifest.node.add_dependency(association)
            manifests.append(manifest)
        if deployment["readiness"] is not None:
            _readiness_wait(stack, cluster, deployment["readiness"], manifests)
    app.synth()


def _pod_identity(stack: Any, role: Mapping[str, Any] | None) -> Any:
    """The pods' role, read access to the model's prefix, and its Pod Identity association."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks, aws_iam as iam

    if role is None:
        return None
    trust = iam.ServicePrincipal("pods.eks.amazonaws.com").with_conditions(
        {
            "StringEquals": {
                "aws:RequestTag/eks-cluster-name": CLUSTER_NAME,
                "aws:RequestTag/kubernetes-namespace": role["namespace"],
                "aws:RequestTag/kubernetes-service-account": role["service_account"],
            }
        }
    )
    pod_role = iam.Role(
        stack,
        "PodRole",
        assumed_by=iam.SessionTagsPrincipal(trust),
        description=role["description"],
    )
    bucket = f"arn:{cdk.Aws.PARTITION}:s3:::{role['bucket']}"
    pod_role.add_to_policy(
        iam.PolicyStatement(
            sid="ReadModelObjects",
            actions=["s3:GetObject"],
            resources=[f"{bucket}/{role['prefix']}*"],
        )
    )
    pod_role.add_to_policy(
        iam.PolicyStatement(
            sid="ListModelPrefix",
            actions=["s3:ListBucket"],
            resources=[bucket],
            conditions={"StringLike": {"s3:prefix": [f"{role['prefix']}*"]}},
        )
    )
    return eks.CfnPodIdentityAssociation(
        stack,
        "PodIdentity",
        cluster_name=CLUSTER_NAME,
        namespace=role["namespace"],
        service_account=role["service_account"],
        role_arn=pod_role.role_arn,
    )


def _readiness_wait(
    stack: Any, cluster: Any, readiness: Mapping[str, Any], objects: Sequence[Any]
) -> None:
    """The waiter's access (``Role``, ``RoleBinding``) and one wait, after every object."""
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks

    access = []
    for index, obj in enumerate(readiness["access"]):
        manifest = eks.KubernetesManifest(
            stack,
            f"Access{index}",
            cluster=cluster,
            manifest=[obj],
            prune=False,
            overwrite=True,
        )
        manifest.node.add_dependency(*objects, *access)
        access.append(manifest)
    wait = cdk.CustomResource(
        stack,
        "Wait",
        service_token=READINESS_SERVICE_TOKEN,
        resource_type="Custom::MlccWorkloadReadiness",
        service_timeout=cdk.Duration.seconds(readiness["service_timeout_s"]),
        properties={
            "ClusterName": CLUSTER_NAME,
            "Endpoint": CLUSTER_ENDPOINT,
            "CertificateAuthority": CLUSTER_CA,
            **readiness["properties"],
        },
    )
    wait.node.add_dependency(*objects, *access)


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


def resource_types(template_path: Path) -> dict[str, int]:
    """How many resources of each CloudFormation type a template holds."""
    counts: dict[str, int] = {}
    for resource in json.loads(template_path.read_text()).get("Resources", {}).values():
        counts[resource["Type"]] = counts.get(resource["Type"], 0) + 1
    return dict(sorted(counts.items()))


def check_same_work(ours: Path, peer: Path, stacks: Sequence[str]) -> dict[str, int]:
    """Refuse to time anything unless each of ``stacks`` applies, in both cdk.out folders
    (``ours``: the app's, ``peer``: :func:`synth_peer`'s), the same objects in the same order
    and holds as many resources of each type (the pod role and its policy, the Pod Identity
    association, the readiness wait and its ``Role`` and ``RoleBinding``). Returns the
    resource types of the first stack: the work per deployment both do."""
    work: dict[str, int] = {}
    for stack in stacks:
        mine = manifests_of(ours / f"{stack}.template.json")
        theirs = manifests_of(peer / f"{stack}.template.json")
        if not theirs or mine != theirs:
            raise SystemExit(f"bench: {stack}: the peer applies other objects than the app")
        types = resource_types(ours / f"{stack}.template.json")
        if types != resource_types(peer / f"{stack}.template.json"):
            raise SystemExit(
                f"bench: {stack}: the peer makes other resources than the app: {types} against "
                f"{resource_types(peer / f'{stack}.template.json')}"
            )
        work = work or types
    return work
