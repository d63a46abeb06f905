"""Which of a deployment's pods act as an IAM role of their own, and which call AWS themselves.

A deployment's pods get a role (``ServedModel``'s ``PodRole`` with an EKS Pod Identity
association of their ServiceAccount) for each of :func:`pod_role_uses`: the engine streams its
``s3://`` model (``model_load: stream``), or the deployment syncs Secrets Manager values. Only
the first makes the pods call AWS themselves (:func:`pods_call_aws`), and so reach the Pod
Identity agent: synced secrets are read by the Secrets Store CSI driver's AWS provider, which
asks the agent for the pod's credentials from its own pod (aws/secrets-store-csi-driver-
provider-aws ``credential_provider/pod_identity_credential_provider.go``: it requests a token
for the pod's ServiceAccount from the Kubernetes API and calls the agent itself). The engine
pod's NetworkPolicy therefore admits the agent only for :func:`pods_call_aws`.
"""

from __future__ import annotations

from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts

STREAM_USE = "stream their model from S3"
SECRETS_USE = "read their Secrets Manager values"


def pods_call_aws(facts: DeploymentFacts) -> bool:
    """The engine itself calls AWS with the pod's credentials: it streams its ``s3://`` model
    (the streamer's S3 clients find them through their default chains)."""
    return facts.resolution.model_load == "stream"


def pod_role_uses(facts: DeploymentFacts) -> tuple[str, ...]:
    """What the pods' own role is for, in the words of its description (empty: no role)."""
    return (
        *((STREAM_USE,) if pods_call_aws(facts) else ()),
        *((SECRETS_USE,) if facts.secrets.synced else ()),
    )
