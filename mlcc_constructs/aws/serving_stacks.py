"""Serving stacks: ``mlcc-<profile>-serving`` (the namespaces) and one
``mlcc-<profile>-serving-<target>-<namespace>-<name>`` stack per deployment, a
:class:`ServedModel` whose objects the cluster's kubectl provider applies, each as its own
resource (core/serving/plan.py says why the split is per deployment)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from mlcc_constructs.aws.imported_cluster import IServingCluster
from mlcc_constructs.aws.inference_operator import HyperPodInferenceOperator
from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.aws.served_model import ServedModel, ServedModelProps
from mlcc_constructs.aws.stack_environment import stack_env
from mlcc_constructs.core.platform.app_settings import AppEnvironment
from mlcc_constructs.core.serving.plan import SERVING, ServingPlan, ServingUnit
from mlcc_constructs.core.serving.spec.app_deployments import AppDeployment


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
            # The app's stack name in a fleet stage too (a stage would prefix it).
            stack_name=environment.stack_name(SERVING),
            env=stack_env(environment),
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
    """Every object of one deployment, in apply order (the render pipeline's list): its
    :class:`ServedModel` (``model``), which checks the deployment against the cluster. Its
    namespace is the namespaces stack's; an object whose CRD the HyperPod inference operator
    add-on installs (an ``InferenceEndpointConfig``) depends on that add-on (``operator``), so
    the stack deploys after ``mlcc-<profile>-inference-operator``."""

    def __init__(
        self,
        scope: Construct,
        *,
        environment: AppEnvironment,
        cluster: IServingCluster,
        unit: ServingUnit,
        deployment: AppDeployment,
        namespaces: ServingNamespacesStack,
        operator: HyperPodInferenceOperator | None = None,
    ) -> None:
        """``unit``: the deployment's place in the serving plan (stack name); ``deployment``:
        the app's deployment it applies."""
        super().__init__(
            scope,
            environment.stack_name(unit.suffix),
            # The app's stack name in a fleet stage too (a stage would prefix it).
            stack_name=environment.stack_name(unit.suffix),
            env=stack_env(environment),
            # Only what identifies the deployment: its place in cdk.json may change.
            description=f"mlcc serving: the objects of deployment {unit.suffix}",
        )
        self.add_stack_dependency(namespaces, "its namespace exists first")
        self.model = ServedModel(
            self,
            "Model",
            props=ServedModelProps(
                deployment=deployment.prepared,
                cluster=cluster,
                operator=operator,
                create_namespace=False,  # the namespaces stack applies it
                declared_at=deployment.where,
            ),
        )
        self.objects = self.model.objects
        self.model.add_outputs(prefix="")  # EndpointUrl, CheckCommand...: where it is, how to call
