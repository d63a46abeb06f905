"""The SageMaker HyperPod inference operator as an EKS add-on: its name, service accounts,
configuration and dependencies, and which Kubernetes objects need it.

Facts from AWS's documentation (checked 2026-11-30):

* Installing the operator with the AWS CLI, the add-on's configuration and the service account
  its execution role trusts (``hyperpod-inference-system:hyperpod-inference-controller-manager``,
  with ``sagemaker.amazonaws.com`` as a second principal), the ALB controller's and KEDA's
  service accounts (``hyperpod-inference-system:aws-load-balancer-controller`` and
  ``:keda-operator``), and the dependency add-ons with their minimum versions
  (``aws-mountpoint-s3-csi-driver`` v1.14.1, ``aws-fsx-csi-driver`` v1.6.0, ``metrics-server``
  v0.7.2, ``cert-manager`` v1.18.2: "The inference operator will fail to install if any of
  these dependencies are missing"):
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html
* The configuration of add-on v2.0.0-eksbuild.2 (``inferenceOperator``, ``inferenceGateway``,
  ``keda.auth.aws.irsa``, ``alb.serviceAccount``): "Install the add-on" in
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-inference-gateway.html
  The Inference Gateway is off unless a deployment asks for it (``endpoint.gateway``); then
  ``inferenceGateway`` is ``{enabled: true, serviceAccount: {roleArn}}`` with the role of the
  gateway controller (``hyperpod-inference-system:inference-gateway-controller`` through IRSA,
  AWS's managed policy ``AmazonSageMakerHyperPodInferenceGatewayAccess``: the ACM import of the
  certificates it issues). The page: "TLS auto-issue is enabled by default, and the gateway
  controller reads this role when it starts. Create the role before you install the add-on."
* ``hyperpodClusterArn`` belongs in the configuration since operator v3.1.2 (add-on
  v1.2.0-eksbuild.1):
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-inference-release-notes.html
* The operator reconciles ``InferenceEndpointConfig`` and ``JumpStartModel`` of the API group
  ``inference.sagemaker.aws.amazon.com``: its CRDs come with the add-on, so such an object can
  be applied only once the add-on is installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ADDON_NAME = "amazon-sagemaker-hyperpod-inference"
NAMESPACE = "hyperpod-inference-system"
CONTROLLER_SERVICE_ACCOUNT = "hyperpod-inference-controller-manager"
ALB_SERVICE_ACCOUNT = "aws-load-balancer-controller"
KEDA_SERVICE_ACCOUNT = "keda-operator"
GATEWAY_SERVICE_ACCOUNT = "inference-gateway-controller"
GATEWAY_POLICY = "AmazonSageMakerHyperPodInferenceGatewayAccess"
"""The AWS managed policy the gateway page attaches to the controller's role."""
# The EKS add-ons the operator add-on refuses to install without (besides the Mountpoint S3
# CSI driver, which the eks-cluster stack installs), with the minimum versions the setup page
# names. EKS installs its default version of each for the cluster's Kubernetes version.
DEPENDENCY_ADDONS: Mapping[str, str] = {
    "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
    "metrics-server": "v0.7.2-eksbuild.4",
    "cert-manager": "v1.18.2-eksbuild.2",
}


def service_account_subject(service_account: str, namespace: str = NAMESPACE) -> str:
    """``system:serviceaccount:<namespace>:<name>``: the OIDC ``sub`` of a service account."""
    return f"system:serviceaccount:{namespace}:{service_account}"


def addon_configuration(
    *,
    execution_role_arn: str,
    tls_bucket: str,
    hyperpod_cluster_arn: str,
    alb_role_arn: str,
    keda_role_arn: str | None,
    gateway_role_arn: str | None = None,
) -> dict[str, Any]:
    """The add-on's ``ConfigurationValues`` (values may be CloudFormation tokens). With
    ``keda_role_arn`` ``None`` the add-on installs no KEDA: the cluster has one already (two
    KEDA installations fight over the same CRDs, HPAs and the one external metrics API,
    :mod:`mlcc_constructs.core.platform.keda`), and the operator's ScaledObjects are served by
    it. ``gateway_role_arn``: the gateway controller's role, which turns the Inference Gateway on
    (default none: off)."""
    gateway: dict[str, Any] = {"enabled": gateway_role_arn is not None}
    if gateway_role_arn is not None:
        gateway["serviceAccount"] = {"roleArn": gateway_role_arn}
    return {
        "executionRoleArn": execution_role_arn,
        # The bucket name without s3:// (the add-on form; the Helm chart took an s3:// URI).
        "tlsCertificateS3Bucket": tls_bucket,
        "hyperpodClusterArn": hyperpod_cluster_arn,
        "inferenceOperator": {"enabled": True},
        "inferenceGateway": gateway,
        "alb": {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb_role_arn}},
        "keda": {"enabled": False}
        if keda_role_arn is None
        else {
            "enabled": True,
            "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda_role_arn}}},
        },
    }
