"""Stacks ``mlcc-<profile>-hyperpod-cluster`` (the HyperPod cluster, created or imported) and
``mlcc-<profile>-inference-operator`` (the HyperPod inference operator add-on), deployed in
that order after ``mlcc-<profile>-eks-cluster`` and before the serving stacks whose objects
need the operator.

Context: ``hyperpod_instance_groups`` (create) or ``hyperpod_cluster_name`` (import); see
:mod:`mlcc_constructs.core.platform.hyperpod`. A created cluster comes after HyperPod's required
components on the EKS cluster (``HyperPodCluster``'s ``Dependencies``); an imported one has its
own and gets none.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

from mlcc_constructs.aws.hyperpod_cluster import (
    HyperPodCluster,
    HyperPodClusterProps,
    ImportedHyperPodCluster,
    ImportedHyperPodClusterProps,
)
from mlcc_constructs.aws.inference_operator import (
    HyperPodInferenceOperator,
    HyperPodInferenceOperatorProps,
)
from mlcc_constructs.core.platform.app_settings import AppEnvironment
from mlcc_constructs.core.platform.hyperpod import HyperPodSettings, operator_role_name
from stacks.app_context import app_bucket, stack_env
from stacks.eks_cluster_stack import EksClusterStack

HYPERPOD_CLUSTER = "hyperpod-cluster"
INFERENCE_OPERATOR = "inference-operator"


class HyperPodClusterStack(cdk.Stack):
    """The HyperPod cluster on the app's EKS cluster (``hyperpod``: its construct)."""

    def __init__(
        self,
        scope: cdk.App,
        *,
        environment: AppEnvironment,
        cluster_stack: EksClusterStack,
        settings: HyperPodSettings,
    ) -> None:
        mode = "imported" if settings.imported else "created"
        super().__init__(
            scope,
            environment.stack_name(HYPERPOD_CLUSTER),
            env=stack_env(environment),
            description=f"mlcc SageMaker HyperPod cluster {settings.cluster_name} ({mode})",
        )
        self.hyperpod: HyperPodCluster | ImportedHyperPodCluster
        if settings.imported:
            self.hyperpod = ImportedHyperPodCluster(
                self,
                "HyperPodCluster",
                props=ImportedHyperPodClusterProps(cluster_name=settings.cluster_name),
            )
            return
        serving = cluster_stack.serving_cluster
        cluster = serving.cluster
        private = serving.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        self.hyperpod = HyperPodCluster(
            self,
            "HyperPodCluster",
            props=HyperPodClusterProps(
                cluster=cluster,
                eks_cluster_arn=cluster.cluster_arn,
                cluster_name=settings.cluster_name,
                groups=settings.groups,
                subnet_ids=private.subnet_ids,
                # The cluster security group EKS creates: its members (the control plane's
                # network interfaces and the Auto Mode nodes) reach each other.
                security_group_ids=[cluster.cluster_security_group_id],
                artifacts_bucket=app_bucket(self, environment, "artifacts"),
                eks_cluster_name=serving.cluster_name,
                # Problems of a group name the context value it came from.
                groups_where=settings.where,
                groups_pointer=settings.pointer,
            ),
        )


class InferenceOperatorStack(cdk.Stack):
    """The HyperPod inference operator add-on (``operator``: its construct); with
    ``inference_gateway`` (a deployment's ``endpoint.gateway``), its Inference Gateway is on."""

    def __init__(
        self,
        scope: cdk.App,
        *,
        environment: AppEnvironment,
        cluster_stack: EksClusterStack,
        hyperpod_stack: HyperPodClusterStack,
        inference_gateway: bool = False,
    ) -> None:
        super().__init__(
            scope,
            environment.stack_name(INFERENCE_OPERATOR),
            env=stack_env(environment),
            description="mlcc SageMaker HyperPod inference operator (EKS add-on)",
        )
        serving = cluster_stack.serving_cluster
        self.operator = HyperPodInferenceOperator(
            self,
            "InferenceOperator",
            props=HyperPodInferenceOperatorProps(
                cluster=serving.cluster,
                oidc_provider=serving.oidc_provider,
                hyperpod_cluster=hyperpod_stack.hyperpod,
                role_name=operator_role_name(environment.profile, environment.region),
                tls_bucket=app_bucket(self, environment, "tls"),
                eks_cluster_name=serving.cluster_name,
                inference_gateway=inference_gateway,
                # The eks-cluster stack installs KEDA: one KEDA per cluster.
                install_keda=serving.metrics is None,
            ),
        )
        # The operator serves on the HyperPod cluster: deployed after it, removed before it.
        self.add_stack_dependency(hyperpod_stack, "the operator serves on the HyperPod cluster")
