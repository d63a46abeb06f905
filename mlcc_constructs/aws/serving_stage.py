"""``ServingStage``: one environment of a serving fleet, a ``cdk.Stage`` holding that
environment's buckets, EKS cluster and served models: the stacks the single-environment app
builds (:mod:`mlcc_constructs.aws.environment_stacks`), composed from the stage's context.

The context is the app's ``cdk.json`` context for that environment (``profile``,
``account``, ``region``, ``availability_zones``, ``reference_deployments``, ...), made by
:func:`~mlcc_constructs.core.rollout.fleet_model.stage_context`; the stage sets it on its own
node, so everything under it reads the stage's values as the app's stacks read the app's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from mlcc_constructs.aws.buckets_stack import BucketsStack
from mlcc_constructs.aws.eks_cluster_stack import EksClusterStack
from mlcc_constructs.aws.environment_stacks import (
    add_cluster_stacks,
    add_serving_stacks,
    prepare_deployments,
)
from mlcc_constructs.aws.serving_stacks import DeploymentServingStack, ServingNamespacesStack
from mlcc_constructs.core.platform.app_settings import (
    AppEnvironment,
    read_egress,
    read_environment,
    read_gpu_pool,
)
from mlcc_constructs.core.platform.bill import PriceReport
from mlcc_constructs.core.platform.fleet import WHERE, FleetStage, stage_pointer
from mlcc_constructs.core.serving.cluster_fit import hyperpod_demand
from mlcc_constructs.core.serving.deployment_bill import environment_bill
from mlcc_constructs.core.serving.plan import plan_serving
from mlcc_constructs.core.serving.spec.app_deployments import AppDeployment, gpu_demand
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any


@dataclass(frozen=True, kw_only=True)
class ServingStageProps:
    """What a :class:`ServingStage` builds."""

    stage: FleetStage
    """The stage: its name (the ``cdk.Stage`` id), account, region and profile."""
    context: Mapping[str, Any]
    """The stage's app context (``cdk.json``'s ``context`` shape, from
    :func:`~mlcc_constructs.core.rollout.fleet_model.stage_context`): its environment keys
    must be the stage's."""


@dataclass(frozen=True, kw_only=True)
class StageEndpoint:
    """One deployment of a stage, as its post step checks it."""

    deployment: AppDeployment
    """The prepared deployment."""
    url: cdk.CfnOutput | None
    """Its serving stack's ``EndpointUrl`` output (``None``: no load balancer)."""


class ServingStage(cdk.Stage):
    """One fleet environment (module doc): ``buckets``, ``cluster``, ``namespaces`` and one
    serving stack per deployment (``serving``), built exactly as the app builds them;
    ``bill``: what the stage runs per hour, from the pinned prices."""

    def __init__(self, scope: Construct, *, props: ServingStageProps) -> None:
        stage = props.stage
        super().__init__(
            scope, stage.name, env=cdk.Environment(account=stage.account, region=stage.region)
        )
        self.context: Mapping[str, Any] = props.context
        for key, value in sorted(props.context.items()):
            self.node.set_context(key, value)
        get = self.node.try_get_context
        try:
            self.environment: AppEnvironment = read_environment(get)
            raise_if_any(_environment_problems(stage, self.environment))
            deployments, late = prepare_deployments(get, environment=self.environment)
        except MlccError as error:
            raise _in_stage(error, stage) from None
        self.deployments: tuple[AppDeployment, ...] = deployments
        # A fleet stage has no HyperPod cluster (the app's HyperPod stacks are not composed).
        raise_if_any(
            Problem(
                message=f"stage {stage.name!r}: deployment {d.prepared.spec.name!r} runs on "
                "SageMaker HyperPod, and a fleet stage has no HyperPod cluster",
                where=WHERE,
                pointer=stage_pointer(stage, f"/deployments/{d.prepared.spec.name}/target"),
                value=d.prepared.spec.target,
                fix="serve it on eks in a fleet, or deploy it with the single-environment app",
            )
            for d in deployments
            if hyperpod_demand(d.prepared, where=d.where) is not None
        )
        plan = plan_serving(
            [(d.where, d.prepared) for d in deployments],
            where=f"{WHERE}:{stage_pointer(stage)}",
        )
        egress = read_egress(get, self.environment)
        buckets, cluster = add_cluster_stacks(
            self,
            environment=self.environment,
            deployments=deployments,
            gpu_pool=read_gpu_pool(get, gpu_demand(deployments)),
            egress=egress,
        )
        # What the stage runs per hour, priced as the app prices itself (app.py's bill).
        self.bill: PriceReport = environment_bill(
            [d.prepared for d in deployments], environment=self.environment, egress=egress
        )
        late.set(cluster.serving_cluster.prometheus_query_url)
        namespaces, serving = add_serving_stacks(
            self,
            environment=self.environment,
            cluster_stack=cluster,
            plan=plan,
            deployments=deployments,
        )
        self.stage = stage
        self.buckets: BucketsStack = buckets
        self.cluster: EksClusterStack = cluster
        self.namespaces: ServingNamespacesStack = namespaces
        self.serving: tuple[DeploymentServingStack, ...] = tuple(s for s in serving if s)

    @property
    def stacks(self) -> tuple[cdk.Stack, ...]:
        """Every stack of the stage, in deploy order."""
        return (self.buckets, self.cluster, self.namespaces, *self.serving)

    def endpoints(self) -> tuple[StageEndpoint, ...]:
        """Each deployment with its ``EndpointUrl`` output, in the deployments' order."""
        found = []
        # One serving stack per deployment, in order (add_serving_stacks builds all).
        for stack, deployment in zip(self.serving, self.deployments, strict=True):
            child = stack.model.node.try_find_child("EndpointUrl")
            found.append(
                StageEndpoint(
                    deployment=deployment,
                    url=child if isinstance(child, cdk.CfnOutput) else None,
                )
            )
        return tuple(found)


def _in_stage(error: MlccError, stage: FleetStage) -> MlccError:
    """``error`` with its places in the app's context (``cdk.json:/context/...``) named as the
    stage's context (``fleet:/stages/<name>/context/...``)."""
    place = f"{WHERE}:{stage_pointer(stage)}/context"
    return MlccError(
        dataclasses.replace(p, where=p.where.replace("cdk.json:/context", place))
        for p in error.problems
    )


def _environment_problems(stage: FleetStage, environment: AppEnvironment) -> list[Problem]:
    """The context's environment is the stage's (a context made for another stage is
    refused)."""
    return [
        Problem(
            message=f"stage {stage.name!r}: its context's {key} is not the stage's",
            where=WHERE,
            pointer=stage_pointer(stage, f"/{key}"),
            value=found,
            allowed=repr(expected),
            fix="build the context with stage_context(...) for this stage",
        )
        for key, expected, found in (
            ("account", stage.account, environment.account),
            ("region", stage.region, environment.region),
            ("profile", stage.profile, environment.profile),
        )
        if expected != found
    ]
