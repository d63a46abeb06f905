"""``HyperPodInferenceOperator``: the SageMaker HyperPod inference operator as the EKS add-on
``amazon-sagemaker-hyperpod-inference``, its roles and the add-ons it depends on.

Children:

* ``ExecutionRole`` (named ``SageMakerHyperPodInference-...``): trusted by the operator's
  service account ``hyperpod-inference-system:hyperpod-inference-controller-manager`` (IRSA,
  ``sub`` and ``aud`` pinned) and by ``sagemaker.amazonaws.com``, as the setup page documents;
  permissions of :func:`mlcc_constructs.core.platform.hyperpod_iam.inference_operator_statements`
  (on the real TLS bucket, ``tls_bucket``: the app's is its ``tls`` bucket of
  ``stacks/buckets.json``).
* ``AlbControllerRole`` and ``KedaRole``: the add-on's AWS Load Balancer Controller and KEDA,
  each trusted by exactly its service account. ``KedaRole`` only with ``install_keda``: on a
  cluster that has KEDA already (a ``ServingCluster`` installs it) the add-on's KEDA is off and
  the cluster's serves the operator's ScaledObjects.
* ``GatewayControllerRole`` (only with ``inference_gateway``): the Inference Gateway
  controller's, trusted by ``hyperpod-inference-system:inference-gateway-controller`` (IRSA),
  with AWS's managed policy ``AmazonSageMakerHyperPodInferenceGatewayAccess`` (the ACM import of
  the certificates the gateway issues), as the gateway page sets it up; created before the
  add-on, whose controller reads it when it starts:
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-inference-gateway.html
* ``Namespace``: ``hyperpod-inference-system`` (the setup page creates it before the add-on),
  applied by the cluster's kubectl provider and retained.
* ``FsxCsiDriverAddon``, ``MetricsServerAddon``, ``CertManagerAddon``: the dependency add-ons
  the operator add-on refuses to install without (the Mountpoint S3 CSI driver is the
  eks-cluster stack's). No FSx file system is provisioned, so the FSx driver has no role.
* ``Resource``: the operator add-on (version pinned in ``versions.json``), created after all
  of the above. Its CRDs (``InferenceEndpointConfig``...) exist once it is.

Pages: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html
and :mod:`mlcc_constructs.core.platform.inference_operator`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks, aws_iam as iam, aws_s3 as s3
from constructs import Construct

from mlcc_constructs.aws._iam import grant, irsa_principal
from mlcc_constructs.aws.buckets import bucket_problem, concrete_environment
from mlcc_constructs.aws.hyperpod_cluster import HyperPodCluster, ImportedHyperPodCluster
from mlcc_constructs.aws.kubernetes_objects import KubernetesObjects, KubernetesObjectsProps
from mlcc_constructs.core.platform.alb_controller_iam import alb_controller_statements
from mlcc_constructs.core.platform.hyperpod_iam import (
    inference_operator_statements,
    keda_statements,
)
from mlcc_constructs.core.platform.iam_statement import Arns
from mlcc_constructs.core.platform.inference_operator import (
    ADDON_NAME,
    ALB_SERVICE_ACCOUNT,
    CONTROLLER_SERVICE_ACCOUNT,
    DEPENDENCY_ADDONS,
    GATEWAY_POLICY,
    GATEWAY_SERVICE_ACCOUNT,
    KEDA_SERVICE_ACCOUNT,
    NAMESPACE,
    addon_configuration,
    service_account_subject,
)
from mlcc_constructs.core.platform.labels import MANAGED_BY
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import fail, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields

DEPENDENCY_IDS: Mapping[str, str] = {
    "aws-fsx-csi-driver": "FsxCsiDriverAddon",
    "metrics-server": "MetricsServerAddon",
    "cert-manager": "CertManagerAddon",
}


@dataclass(frozen=True, kw_only=True)
class HyperPodInferenceOperatorProps:
    """Props of :class:`HyperPodInferenceOperator`."""

    cluster: eks.ICluster | eks.Cluster
    """The EKS cluster (add-ons; its kubectl provider applies the namespace)."""
    oidc_provider: iam.IOpenIdConnectProvider
    """The cluster's IAM OIDC provider (IRSA trust)."""
    hyperpod_cluster_arn: str | None = None
    """The ARN of the HyperPod cluster the operator serves on; default ``None``:
    ``hyperpod_cluster``'s (give one of the two)."""
    role_name: str
    """The execution role's name (it must start with ``SageMakerHyperPodInference-`` for AWS's
    managed policy to pass it; this construct grants passing exactly this role)."""
    tls_bucket: s3.IBucket
    """The bucket the operator writes TLS certificates to (``s3.IBucket``: ``ModelBuckets.bucket(
    "tls")``, or ``s3.Bucket.from_bucket_name(scope, id, name)``). Required."""
    addon_version: str | None = None
    """Default: the version pinned in ``versions.json``."""
    eks_cluster_name: str | None = None
    """The EKS cluster's name as text, for the IAM ARNs (so cdk-nag's finding ids are known when the
    roles are built); default: the cluster's name attribute."""
    inference_gateway: bool = False
    """Turn the add-on's Inference Gateway on (with its controller's role), for deployments with
    ``endpoint.gateway``; default ``False`` (off: no role, no gateway)."""
    install_keda: bool = True
    """Default ``True``: the add-on installs KEDA (with ``KedaRole``); ``False`` on a cluster that
    has KEDA already (a ``ServingCluster`` with ``scaling_metrics``): one KEDA per cluster."""
    hyperpod_cluster: HyperPodCluster | ImportedHyperPodCluster | None = None
    """The HyperPod cluster the operator serves on, as a construct; default ``None``:
    ``hyperpod_cluster_arn``'s. Given, a ``ServedModel`` of this operator is checked against the
    cluster's instance groups (:meth:`HyperPodCluster.host`)."""

    def __post_init__(self) -> None:
        check_fields(self)
        if (self.hyperpod_cluster is None) == (self.hyperpod_cluster_arn is None):
            raise fail(
                "give the HyperPod cluster the operator serves on once",
                where="HyperPodInferenceOperatorProps",
                pointer="/hyperpod_cluster",
                value="both" if self.hyperpod_cluster is not None else "neither",
                allowed="hyperpod_cluster (a HyperPodCluster or ImportedHyperPodCluster), or "
                "hyperpod_cluster_arn",
                fix="pass hyperpod_cluster=<the cluster construct>: the deployments its "
                "ServedModels serve are then checked against its instance groups",
            )
        problems = [
            bucket_problem(
                self.tls_bucket, where="HyperPodInferenceOperatorProps", pointer="/tls_bucket"
            ),
        ]
        raise_if_any(problem for problem in problems if problem is not None)


class HyperPodInferenceOperator(Construct):
    """The operator add-on (``addon``) with its roles and dependencies; ``tls_bucket`` (and
    ``tls_bucket_name``) is the bucket its certificates go to."""

    def __init__(self, scope: Construct, id: str, *, props: HyperPodInferenceOperatorProps) -> None:
        super().__init__(scope, id)
        self.hyperpod_cluster = props.hyperpod_cluster
        """The HyperPod cluster as a construct, when given (its ServedModels are checked)."""
        self.hyperpod_cluster_arn: str = (
            props.hyperpod_cluster.cluster_arn
            if props.hyperpod_cluster is not None
            else str(props.hyperpod_cluster_arn)
        )
        account, region = concrete_environment(self)
        arns = Arns(partition=cdk.Aws.PARTITION, region=region, account=account)
        provider = props.oidc_provider
        self.tls_bucket: s3.IBucket = props.tls_bucket
        self.tls_bucket_name: str = self.tls_bucket.bucket_name
        self.execution_role = iam.Role(
            self,
            "ExecutionRole",
            role_name=props.role_name,
            assumed_by=iam.CompositePrincipal(
                irsa_principal(
                    self,
                    "ExecutionRoleTrust",
                    provider,
                    service_account_subject(CONTROLLER_SERVICE_ACCOUNT),
                ),
                # The operator registers SageMaker endpoints with this role (setup page).
                iam.ServicePrincipal("sagemaker.amazonaws.com"),
            ),
            description="HyperPod inference operator: execution role",
        )
        grant(
            self.execution_role,
            inference_operator_statements(
                arns,
                tls_bucket=self.tls_bucket_name,
                eks_cluster_name=props.eks_cluster_name or props.cluster.cluster_name,
                role_name=props.role_name,
            ),
        )
        self.alb_role = self._service_role(
            "AlbControllerRole", ALB_SERVICE_ACCOUNT, "AWS Load Balancer Controller", provider
        )
        grant(self.alb_role, alb_controller_statements(arns))
        self.keda_role: iam.Role | None = None
        if props.install_keda:
            self.keda_role = self._service_role("KedaRole", KEDA_SERVICE_ACCOUNT, "KEDA", provider)
            grant(self.keda_role, keda_statements(arns))
        self.gateway_role: iam.Role | None = None
        if props.inference_gateway:
            self.gateway_role = self._service_role(
                "GatewayControllerRole", GATEWAY_SERVICE_ACCOUNT, "Inference Gateway", provider
            )
            self.gateway_role.add_managed_policy(
                iam.ManagedPolicy.from_aws_managed_policy_name(GATEWAY_POLICY)
            )
            cdk.Validations.of(self.gateway_role).acknowledge(
                cdk.Acknowledgment(
                    id=f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                    f"{GATEWAY_POLICY}]",
                    reason="AWS's documented setup of the Inference Gateway attaches this "
                    "managed policy (the ACM import, tagging and removal of the certificates "
                    "the gateway issues); it is maintained with the add-on",
                )
            )
        self.namespace = KubernetesObjects(
            self,
            "Namespace",
            props=KubernetesObjectsProps(
                cluster=props.cluster,
                objects=[
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": NAMESPACE, "labels": dict(MANAGED_BY)},
                    }
                ],
                retain=True,
            ),
        )
        self.dependencies = [
            eks.CfnAddon(
                self,
                DEPENDENCY_IDS[addon],
                addon_name=addon,
                cluster_name=props.cluster.cluster_name,
                resolve_conflicts="OVERWRITE",
            )
            for addon in DEPENDENCY_ADDONS
        ]
        configuration = addon_configuration(
            execution_role_arn=self.execution_role.role_arn,
            tls_bucket=self.tls_bucket_name,
            hyperpod_cluster_arn=self.hyperpod_cluster_arn,
            alb_role_arn=self.alb_role.role_arn,
            keda_role_arn=self.keda_role.role_arn if self.keda_role is not None else None,
            gateway_role_arn=self.gateway_role.role_arn if self.gateway_role else None,
        )
        self.addon = eks.CfnAddon(
            self,
            "Resource",
            addon_name=ADDON_NAME,
            addon_version=props.addon_version or pinned().addon(ADDON_NAME),
            cluster_name=props.cluster.cluster_name,
            configuration_values=cdk.Stack.of(self).to_json_string(_sorted(configuration)),
            resolve_conflicts="OVERWRITE",
        )
        for dependency in (
            self.execution_role,
            self.alb_role,
            *([self.keda_role] if self.keda_role is not None else []),
            *([self.gateway_role] if self.gateway_role else []),
            self.namespace,
            *self.dependencies,
        ):
            self.addon.node.add_dependency(dependency)

    def _service_role(
        self, id: str, service_account: str, what: str, provider: iam.IOpenIdConnectProvider
    ) -> iam.Role:
        return iam.Role(
            self,
            id,
            assumed_by=irsa_principal(
                self, f"{id}Trust", provider, service_account_subject(service_account)
            ),
            description=f"HyperPod inference operator add-on: {what}",
        )


def _sorted(value: Any) -> Any:
    """``value`` with every mapping's keys sorted (byte-stable configuration)."""
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value)}
    return value
