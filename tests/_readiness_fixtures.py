"""Live objects as the Kubernetes API returns them (trimmed to what readiness reads): a
Deployment, its pods and events, and HyperPod InferenceEndpointConfigs, for the readiness
rules and the loopback test of the readiness Lambda."""

from __future__ import annotations

from typing import Any

NAMESPACE, NAME = "inference", "llama-vllm"
CREATED = "2026-12-01T10:00:00Z"
SELECTOR = {"app.kubernetes.io/instance": NAME, "app.kubernetes.io/name": NAME}


def deployment(*, generation: int = 1, observed: int | None = 1, **status: Any) -> dict[str, Any]:
    """A Deployment of 1 replica; ``status`` fields as the controller writes them."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "generation": generation},
        "spec": {"replicas": 1, "selector": {"matchLabels": dict(SELECTOR)}},
        "status": dict(status),
    }
    if observed is not None:
        obj["status"]["observedGeneration"] = observed
    return obj


READY_DEPLOYMENT = deployment(
    replicas=1,
    updatedReplicas=1,
    readyReplicas=1,
    availableReplicas=1,
    conditions=[
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
    ],
)
PROGRESSING_DEPLOYMENT = deployment(
    replicas=1,
    updatedReplicas=1,
    unavailableReplicas=1,
    conditions=[
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
    ],
)
DEADLINE_DEPLOYMENT = deployment(
    replicas=1,
    updatedReplicas=1,
    unavailableReplicas=1,
    conditions=[
        {
            "type": "Progressing",
            "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": f'ReplicaSet "{NAME}-5d9c7b8f4" has timed out progressing.',
        }
    ],
)


def pod(
    name: str = f"{NAME}-5d9c7b8f4-x2k7q",
    *,
    ready: bool = False,
    waiting: tuple[str, str] | None = None,
    restarts: int = 0,
    created: str = CREATED,
    scheduled: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """One pod of the Deployment: ``waiting`` is its engine container's (reason, message)."""
    container: dict[str, Any] = {
        "name": "engine",
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": created}} if waiting is None else {},
    }
    if waiting is not None:
        container["state"] = {"waiting": {"reason": waiting[0], "message": waiting[1]}}
    if restarts:
        container["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    if scheduled is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "False", "reason": scheduled[0],
             "message": scheduled[1]}
        )  # fmt: skip
        container = {}
    status: dict[str, Any] = {"phase": "Running" if ready else "Pending", "conditions": conditions}
    if container:
        status["containerStatuses"] = [container]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": dict(SELECTOR),
            "creationTimestamp": created,
        },
        "status": status,
    }


IMAGE_PULL = (
    "ImagePullBackOff",
    'Back-off pulling image "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:0.0.0-missing"',
)
CRASH_LOOP = ("CrashLoopBackOff", "back-off 2m40s restarting failed container=engine")
CONFIG_ERROR = ("CreateContainerConfigError", 'secret "hf-token" not found')
UNSCHEDULABLE = (
    "Unschedulable",
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
)


def event(kind: str, name: str, reason: str, message: str, at: str, type_: str = "Warning") -> dict:
    """A core/v1 Event about ``kind/name``."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{abs(hash((reason, at))) % 10**8:x}", "namespace": NAMESPACE},
        "involvedObject": {"kind": kind, "name": name, "namespace": NAMESPACE},
        "reason": reason,
        "message": message,
        "type": type_,
        "lastTimestamp": at,
    }


def iec(state: str | None, *, generation: int = 1, observed: int = 1, **status: Any) -> dict:
    """A v1 InferenceEndpointConfig with the operator's ``status``."""
    body: dict[str, Any] = {"observedGeneration": observed, **status}
    if state is not None:
        body["state"] = state
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "generation": generation},
        "spec": {"modelName": NAME},
        "status": body,
    }


IEC_FAILED = iec(
    "DeploymentFailed",
    selector=f"app={NAME}",
    conditions=[
        {
            "type": "DeploymentReady",
            "status": "False",
            "reason": "DeploymentFailed",
            "message": "Deployment did not become ready within maxDeployTimeInSeconds (1638)",
            "lastTransitionTime": "2026-12-01T10:27:00Z",
        },
        {
            "type": "TLSCertificateReady",
            "status": "True",
            "reason": "Issued",
            "message": "certificate written",
            "lastTransitionTime": "2026-12-01T10:01:00Z",
        },
    ],
)
