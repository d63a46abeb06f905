"""What a deploy that waits needs to know of a prepared deployment: which object is its
workload, where the Kubernetes API serves it, how long to wait, and the least access that
reads it.

The CDK shell (:class:`~mlcc_constructs.aws.readiness.WorkloadReadiness`) turns this into a
custom resource that completes when the workload is ready; the judgement itself is
:mod:`mlcc_constructs.core.serving.kinds._readiness`.

**Access.** The Lambda's IAM role has an EKS access entry with no access policy, only the
Kubernetes group :data:`WAITER_GROUP`; a ``Role`` in each waited-for deployment's namespace
(``mlcc-readiness-<kind plural>-<name>``) grants that group ``get`` on the one workload object
(by name) and ``list`` on pods and events (to say why it is stuck). One group for every
deployment, not one each: the waiter is one per cluster (its access entry lives in the
cluster's stack), and a group per deployment would make every new deployment change the
cluster's stack. The group can read nothing no ``Role`` grants.
Not ``AmazonEKSViewPolicy``: it reads every Deployment, ConfigMap and Service of the namespace,
yet no custom resource (its rules list only core and built-in API groups: EKS user guide,
access-policy-permissions), so an IEC would be unreadable with it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.platform.iam_statement import Statement
from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.serving.kinds._readiness import ADDRESS_RULES
from mlcc_constructs.core.serving.kinds.registry import RenderedObject, kind_named, of_kind
from mlcc_constructs.core.serving.prepare.ready_timeout import WaiterTiming, waiter_timing
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.tokens import UNRESOLVED_TOKEN

RBAC_API = "rbac.authorization.k8s.io"
WAITER_GROUP = "mlcc-readiness"
"""The Kubernetes group of the readiness waiter's access entry (EKS reserves only the
``system:``, ``eks:``, ``aws:``, ``amazon:`` and ``iam:`` prefixes)."""


@dataclass(frozen=True, kw_only=True)
class ReadinessTarget:
    """The workload a deploy waits for.

    Fields:

    ``kind``, ``namespace``, ``name``: the workload object (the target's ``workload`` kind).
    ``path``: its Kubernetes API path (``/apis/apps/v1/namespaces/<ns>/deployments/<name>``).
    ``group``: the Kubernetes group the ``Role`` is bound to: the waiter's (:data:`WAITER_GROUP`).
    ``access``: the ``Role`` and ``RoleBinding`` that let that group read it (module doc).
    ``timeout_s``: the ready timeout (the deployment's ``ready_timeout``).
    ``timing``: the waiter's deadline and the resource's ServiceTimeout for it.
    ``digest``: a SHA-256 of every object of the deployment: the waiter's resource changes
        (and so waits again) whenever one of them does.
    ``address``: the object whose status says where the endpoint answers (its kind and API
        path: the Ingress), read once the workload is ready; ``None``: none (no load balancer
        of the cluster's, or the operator makes it).
    """

    kind: str
    namespace: str
    name: str
    path: str
    group: str
    access: tuple[RenderedObject, ...]
    timeout_s: int
    timing: WaiterTiming
    digest: str
    address: AddressSource | None = None


@dataclass(frozen=True, kw_only=True)
class AddressSource:
    """Where a deployment's endpoint address is read: ``kind``, ``name`` and API ``path`` of the
    object (:data:`~mlcc_constructs.core.serving.kinds._readiness.ADDRESS_RULES`)."""

    kind: str
    name: str
    path: str


def api_path(api_version: str, plural: str, namespace: str, name: str) -> str:
    """The API path of a namespaced object (``/api/v1/...`` for the core group)."""
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{root}/namespaces/{namespace}/{plural}/{name}"


def access_objects(
    *, kind_name: str, namespace: str, name: str, group: str, address: AddressSource | None = None
) -> tuple[RenderedObject, ...]:
    """The ``Role`` (get the workload by name, and the ``address`` object; list pods and
    events) and its ``RoleBinding``."""
    kind = kind_named(kind_name)
    reads = [(kind, name)]
    if address is not None:
        reads.append((kind_named(address.kind), address.name))
    # The kind is in the name: deployments of one name and namespace on two targets (an eks
    # Deployment and a hyperpod-eks IEC) each have their own Role, which neither stack's
    # removal deletes under the other.
    role_name = f"{WAITER_GROUP}-{kind.plural}-{name}"
    metadata: dict[str, Any] = {"name": role_name, "namespace": namespace, "labels": MANAGED_BY}
    role = {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "Role",
        "metadata": dict(metadata, labels=dict(MANAGED_BY)),
        "rules": [
            *(
                {
                    "apiGroups": [read.api_version.rpartition("/")[0]],
                    "resources": [read.plural],
                    "resourceNames": [read_name],
                    "verbs": ["get"],
                }
                for read, read_name in reads
            ),
            {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["list"]},
        ],
    }
    binding = {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "RoleBinding",
        "metadata": dict(metadata, labels=dict(MANAGED_BY)),
        "roleRef": {"apiGroup": RBAC_API, "kind": "Role", "name": role_name},
        "subjects": [{"apiGroup": RBAC_API, "kind": "Group", "name": group}],
    }
    return (RenderedObject("ReadinessRole", role), RenderedObject("ReadinessRoleBinding", binding))


def digest(objects: Sequence[RenderedObject]) -> str:
    """SHA-256 of the objects' canonical JSON, in order. An unresolved CDK token counts as one
    fixed text: its number changes when unrelated code creates tokens first, and a digest that
    moved with it would make every such change an update that waits again."""
    text = json.dumps([entry.object for entry in objects], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(UNRESOLVED_TOKEN.sub("${Token}", text).encode()).hexdigest()


def readiness_target(prepared: PreparedDeployment) -> ReadinessTarget | None:
    """What the deploy waits for (``None``: the target names no workload kind)."""
    kind_name = prepared.target.workload_for(prepared.resolution.nodes)
    if kind_name is None:
        return None
    objects = [entry.object for entry in prepared.objects]
    (workload,) = of_kind(objects, kind_name)
    kind = kind_named(kind_name)
    namespace = str(workload["metadata"]["namespace"])
    name = str(workload["metadata"]["name"])
    group = WAITER_GROUP
    seconds = prepared.ready_timeout.seconds
    address = _address(objects, namespace)
    return ReadinessTarget(
        kind=kind_name,
        namespace=namespace,
        name=name,
        path=api_path(kind.api_version, kind.plural, namespace, name),
        group=group,
        access=access_objects(
            kind_name=kind_name, namespace=namespace, name=name, group=group, address=address
        ),
        timeout_s=seconds,
        timing=waiter_timing(seconds),
        digest=digest(prepared.objects),
        address=address,
    )


def _address(objects: Sequence[dict[str, Any]], namespace: str) -> AddressSource | None:
    """The deployment's object whose status holds its endpoint address (one of
    :data:`ADDRESS_RULES`' kinds), if it has one."""
    for kind_name in ADDRESS_RULES:
        found = of_kind(objects, kind_name)
        if found:
            kind = kind_named(kind_name)
            name = str(found[0]["metadata"]["name"])
            path = api_path(kind.api_version, kind.plural, namespace, name)
            return AddressSource(kind=kind_name, name=name, path=path)
    return None


def waiter_statements(log_group_arn: str) -> list[Statement]:
    """The waiter Lambda role's IAM: its own log group, and the network interfaces of a Lambda
    in a VPC. Nothing reads AWS: the EKS token is signed locally, and STS checks it for EKS."""
    return [
        Statement(
            sid="WriteOwnLogs",
            actions=("logs:CreateLogStream", "logs:PutLogEvents"),
            resources=(f"{log_group_arn}:*",),
            why="the readiness handlers write only their own log group's streams, whose names "
            "Lambda makes per execution environment",
        ),
        Statement(
            sid="VpcNetworkInterfaces",
            actions=(
                "ec2:CreateNetworkInterface",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSubnets",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ),
            resources=("*",),
            why="Lambda in a VPC creates and removes its network interfaces (the actions of the "
            "AWS-managed AWSLambdaVPCAccessExecutionRole); they take no resource-level scope",
        ),
    ]
