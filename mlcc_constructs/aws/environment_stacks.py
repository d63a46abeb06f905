"""One environment's stacks, composed once: the buckets, the EKS cluster sized by the
environment's deployments, the serving namespaces and one serving stack per deployment.

The single-environment app (``app.py``) and every stage of a fleet
(:class:`~mlcc_constructs.aws.serving_stage.ServingStage`) call these two functions, so a
stage holds exactly the stacks, construct paths and logical ids the app has for the same
context. The app adds its HyperPod stacks between the two calls (the serving stacks take the
inference operator)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from constructs import Construct

from mlcc_constructs.aws.buckets_stack import BucketsStack
from mlcc_constructs.aws.eks_cluster_stack import EksClusterStack
from mlcc_constructs.aws.inference_operator import HyperPodInferenceOperator
from mlcc_constructs.aws.late_value import LateString
from mlcc_constructs.aws.serving_stacks import DeploymentServingStack, ServingNamespacesStack
from mlcc_constructs.core.platform.app_settings import (
    AppEnvironment,
    EgressSettings,
    GpuPoolSettings,
)
from mlcc_constructs.core.platform.gpu_capacity import instance_families
from mlcc_constructs.core.serving.plan import ServingPlan
from mlcc_constructs.core.serving.spec.app_deployments import (
    AppDeployment,
    gpu_instance_types,
    prepare_app_deployments,
    served_load_balancers,
)
from mlcc_constructs.core.support.errors import fail

QUERY_URL_KEY = "prometheus_query_url"
"""cdk.json / ``-c`` key: a Prometheus workspace URL in place of the app's cluster's."""


def prepare_deployments(
    get: Callable[[str], object], *, environment: AppEnvironment
) -> tuple[tuple[AppDeployment, ...], LateString]:
    """The deployments an environment's context lists (``get``: a key -> its value), prepared
    once, and the cluster's Prometheus query URL they take (a :class:`LateString` filled in
    once the cluster is made, unless the context gives :data:`QUERY_URL_KEY`)."""
    late = LateString(
        fail(
            "an autoscaled deployment needs the cluster's Prometheus workspace, and the "
            "app's cluster has none",
            where="cdk.json:/context",
            pointer=f"/{QUERY_URL_KEY}",
            fix=f"keep the cluster's scaling metrics on, or set {QUERY_URL_KEY}",
        )
    )
    prepared = prepare_app_deployments(
        get, environment=environment, prometheus_query_url=str(get(QUERY_URL_KEY) or late.token)
    )
    return prepared, late


def add_cluster_stacks(
    scope: Construct,
    *,
    environment: AppEnvironment,
    deployments: Sequence[AppDeployment],
    gpu_pool: GpuPoolSettings,
    egress: EgressSettings,
) -> tuple[BucketsStack, EksClusterStack]:
    """``mlcc-<profile>-buckets`` and ``mlcc-<profile>-eks-cluster`` on ``scope`` (an app or a
    stage): the cluster's GPU pool offers the deployments' instance families, its
    IngressClasses their load balancer groups, and LeaderWorkerSet is installed where a
    deployment runs over several nodes."""
    buckets = BucketsStack(scope, environment=environment)
    cluster = EksClusterStack(
        scope,
        environment=environment,
        gpu_families=instance_families(gpu_instance_types(deployments)),
        load_balancer_groups=served_load_balancers(deployments),
        gpu_pool=gpu_pool,
        egress=egress,
        leader_worker_set=any(d.prepared.resolution.nodes > 1 for d in deployments),
    )
    return buckets, cluster


def add_serving_stacks(
    scope: Construct,
    *,
    environment: AppEnvironment,
    cluster_stack: EksClusterStack,
    plan: ServingPlan,
    deployments: Sequence[AppDeployment],
    selection: Sequence[bool] | None = None,
    operator: HyperPodInferenceOperator | None = None,
) -> tuple[ServingNamespacesStack, tuple[DeploymentServingStack | None, ...]]:
    """``mlcc-<profile>-serving`` (the namespaces) and one serving stack per deployment
    (``plan``: their serving plan, one unit per deployment in order); ``selection``: which
    deployments get their stack (default: all; ``None`` in the result for one left out)."""
    namespaces = ServingNamespacesStack(
        scope, environment=environment, cluster=cluster_stack.serving_cluster.cluster, plan=plan
    )
    chosen = [True] * len(deployments) if selection is None else list(selection)
    stacks = tuple(
        DeploymentServingStack(
            scope,
            environment=environment,
            cluster=cluster_stack.serving_cluster,
            unit=unit,
            deployment=deployment,
            namespaces=namespaces,
            operator=operator,
        )
        if built
        else None
        for unit, deployment, built in zip(plan.units, deployments, chosen, strict=True)
    )
    return namespaces, stacks
