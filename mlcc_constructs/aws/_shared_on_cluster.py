"""What the ``ServedModel``s of one cluster share: the deployments already on it (checked
against each newcomer by the rules that span deployments) and, per stack, a namespace's
``Namespace`` object."""

from __future__ import annotations

import weakref

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.serving.kinds.namespace import namespace_object
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.serving.spanning import spanning_problems
from mlcc_constructs.core.support.errors import raise_if_any

# The deployments of each cluster (the object a ServedModel was given), across stacks.
_ON_CLUSTER: weakref.WeakKeyDictionary[object, list[tuple[str, PreparedDeployment]]] = (
    weakref.WeakKeyDictionary()
)

_NAMESPACES: weakref.WeakKeyDictionary[cdk.Stack, dict[tuple[str, str], KubernetesObjects]] = (
    weakref.WeakKeyDictionary()
)


def join_cluster(cluster: object, where: str, prepared: PreparedDeployment) -> None:
    """Adds the deployment declared at ``where`` to ``cluster``'s, or raises naming both
    entries when it collides with one already there
    (:func:`~mlcc_constructs.core.serving.spanning.spanning_problems`)."""
    on_cluster = _ON_CLUSTER.setdefault(cluster, [])
    raise_if_any(spanning_problems([*on_cluster, (where, prepared)]))
    on_cluster.append((where, prepared))


def stack_namespace(
    model: Construct, cluster: eks.ICluster | eks.Cluster, namespace: str
) -> KubernetesObjects:
    """The ``Namespace`` of the stack's ``ServedModel``s on ``cluster``: one per stack and
    namespace (retained), made by the first (its child ``Namespace``) and shared by the others,
    so several deployments of one namespace need no flag and no ordering (its logical id is the
    object's, wherever it sits: two would collide)."""
    made = _NAMESPACES.setdefault(cdk.Stack.of(model), {})
    key = (cluster.node.addr, namespace)
    if key not in made:
        made[key] = KubernetesObjects(
            model,
            "Namespace",
            props=KubernetesObjectsProps(
                cluster=cluster, objects=[namespace_object(namespace)], ordered=False, retain=True
            ),
        )
    return made[key]
