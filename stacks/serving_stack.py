"""Serving stacks: ``mlcc-<profile>-serving`` (the namespaces) and one
``mlcc-<profile>-serving-<target>-<namespace>-<name>`` stack per deployment, each object
applied by the cluster's kubectl provider as its own resource (core/serving/plan.py says why
the split is per deployment)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IDependable

from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.platform.inference_operator import ADDON_NAME, needs_operator
from mlcc_constructs.core.serving.plan import SERVING, ServingPlan, ServingUnit
from mlcc_constructs.core.support.errors import fail
from stacks.app_context import AppEnvironment


class ServingNamespacesStack(cdk.Stack):
    """The namespaces of the app's deployments. They are retained when they leave the stack:
    a namespace may hold objects the app does not own, and deleting it deletes them."""

    def __init__(
        self,
        scope: Construct,
        *,
        environment: AppEnvironment,
        cluster: eks.Cluster,
        plan: ServingPlan,
    ) -> None:
        super().__init__(
            scope,
            environment.stack_name(SERVING),
            env=environment.env,
            description="mlcc serving: the namespaces of the app's deployments",
        )
        self.objects = KubernetesObjects(
            self,
            "Namespaces",
            props=KubernetesObjectsProps(
                cluster=cluster, objects=plan.namespaces, ordered=False, retain=True
            ),
        )


class DeploymentServingStack(cdk.Stack):
    """Every object of one deployment, in apply order (the render pipeline's list). An object
    whose CRD the HyperPod inference operator add-on installs (an ``InferenceEndpointConfig``)
    depends on that add-on (``operator``), so the CRD exists before it is applied: the stack
    deploys after ``mlcc-<profile>-inference-operator``."""

    def __init__(
        self,
        scope: Construct,
        *,
        environment: AppEnvironment,
        cluster: eks.Cluster,
        unit: ServingUnit,
        namespaces: ServingNamespacesStack,
        operator: IDependable | None = None,
    ) -> None:
        super().__init__(
            scope,
            environment.stack_name(unit.suffix),
            env=environment.env,
            # Only what identifies the deployment: its place in cdk.json may change.
            description=f"mlcc serving: the objects of deployment {unit.suffix}",
        )
        self.add_stack_dependency(namespaces, "its namespace exists first")
        self.objects = KubernetesObjects(
            self, "Objects", props=KubernetesObjectsProps(cluster=cluster, objects=unit.objects)
        )
        for manifest, obj in zip(self.objects.manifests.values(), unit.objects, strict=True):
            if not needs_operator(obj):
                continue
            if operator is None:
                raise fail(
                    f"the deployment's {obj.get('kind')} needs the EKS add-on {ADDON_NAME}, "
                    "and the app installs none",
                    where=unit.where,
                    fix="set hyperpod_instance_groups or hyperpod_cluster_name in cdk.json",
                )
            manifest.node.add_dependency(operator)
