"""The Secrets Store CSI driver with the AWS provider (ASCP), as the cluster side installs it
(the EKS add-on) and the deployments use it (a SecretProviderClass, a CSI volume).

Facts: the add-on is ``aws-secrets-store-csi-driver-provider`` (Secrets Manager User Guide,
https://docs.aws.amazon.com/secretsmanager/latest/userguide/ascp-eks-installation.html); its
chart installs the driver, whose CSIDriver is ``secrets-store.csi.k8s.io`` and whose CRD serves
``SecretProviderClass`` (kubernetes-sigs/secrets-store-csi-driver).
"""

from __future__ import annotations

ADDON_NAME = "aws-secrets-store-csi-driver-provider"
CSI_DRIVER = "secrets-store.csi.k8s.io"
