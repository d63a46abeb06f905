"""How a live workload reports that it is ready, and why it is not: the one set of rules that
``mlcc endpoint check`` (through the kinds registry) and the serving stacks' readiness Lambda
(:mod:`mlcc_constructs.aws._readiness_lambda`) both judge with.

**Standard library only, importing nothing else of the package**: the CDK shell copies this file
verbatim into the readiness Lambda's asset (``mlcc_constructs/core/serving/kinds/_readiness.py``
there too, a namespace package without ``__init__`` files), so the Lambda imports it by the same
name the tests do. A test keeps it stdlib-only.

Rules:

* **Deployment** (as ``kubectl rollout status`` reads it): the controller observed the current
  ``metadata.generation`` and every replica is updated and available; the ``Progressing``
  condition's ``ProgressDeadlineExceeded`` fails it.
* **InferenceEndpointConfig** (the HyperPod inference operator's v1 ``status``): ``state`` is
  ``DeploymentComplete`` for the current generation (``status.observedGeneration``);
  ``DeploymentFailed`` fails it, with the operator's condition message.
* An older generation's ready state never counts: an update is judged on its own generation.
* **Why a workload is stuck** (:func:`blocker`): the first not-ready pod's waiting container
  (``reason: message``: ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError...), its
  last termination, its ``PodScheduled=False`` message, else the newest Warning event of the
  workload or its pods. :func:`fatal` says which of these fail a deploy before its deadline: a
  reason that does not heal by waiting, once the pod has shown it for ``FAIL_FAST_AFTER_S``
  (a CrashLoopBackOff once it has restarted ``CRASH_RESTARTS`` times).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, NamedTuple

ReadinessState = Literal["ready", "progressing", "failed", "absent"]

READY_STATE, FAILED_STATE = "DeploymentComplete", "DeploymentFailed"
"""The v1 IEC ``status.state`` values that end a deployment (an enum of the CRD)."""

# Waiting reasons that do not heal by waiting longer: a wrong image, a missing Secret or
# ConfigMap key, a container that exits. Pull and config errors are given FAIL_FAST_AFTER_S
# first (an image pushed late, a Secret that a sync controller writes a moment after the pod).
STUCK_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
    }
)
FAIL_FAST_AFTER_S = 300
CRASH_RESTARTS = 3
_STARTING = ("ContainerCreating", "PodInitializing")
"""Waiting reasons of a container on its way up: nothing to report."""
"""A CrashLoopBackOff fails the deploy once the container has restarted this often."""


class Readiness(NamedTuple):
    """What a live object says about itself."""

    state: ReadinessState
    detail: str
    """Why, in a few words (``2/2 replicas available``, ``DeploymentInProgress``...)."""


class Blocker(NamedTuple):
    """Why a workload is not ready yet (:func:`blocker`)."""

    reason: str
    """``Kind/name: Reason: message``, e.g. ``Pod/m-5d9-x2: ImagePullBackOff: Back-off...``."""
    waiting: str | None
    """The container's waiting reason, if that is what blocks it."""
    restarts: int
    since: str | None
    """When the pod was created (RFC 3339), for :func:`fatal`."""


def _generation_pending(obj: Mapping[str, Any], status: Mapping[str, Any]) -> int | None:
    """The object's generation when its controller has not observed it yet, else ``None``."""
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is not None and status.get("observedGeneration", -1) < generation:
        return int(generation)
    return None


def deployment_readiness(obj: Mapping[str, Any]) -> Readiness:
    """Ready when every replica of the current generation is updated and available."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    pending = _generation_pending(obj, status)
    if pending is not None:
        return Readiness("progressing", f"generation {pending} not observed yet")
    for entry in status.get("conditions") or []:
        if entry.get("type") == "Progressing" and entry.get("reason") == "ProgressDeadlineExceeded":
            return Readiness("failed", str(entry.get("message") or "progress deadline exceeded"))
    wanted = int(spec.get("replicas", 1))
    updated = int(status.get("updatedReplicas", 0))
    available = int(status.get("availableReplicas", 0))
    detail = f"{available}/{wanted} replicas available, {updated} updated"
    if updated >= wanted and available >= wanted and status.get("replicas", 0) <= wanted:
        return Readiness("ready", detail)
    return Readiness("progressing", detail)


def lws_readiness(obj: Mapping[str, Any]) -> Readiness:
    """A LeaderWorkerSet: ready when the controller observed the current generation and every
    group is ready and updated (``status.readyReplicas``, ``updatedReplicas``: groups whose
    leader and workers are all ready; kubernetes-sigs/lws v0.10.0 leaderworkerset_types.go
    LeaderWorkerSetStatus), or its ``Available`` condition is ``True`` with no update left."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    pending = _generation_pending(obj, status)
    if pending is not None:
        return Readiness("progressing", f"generation {pending} not observed yet")
    wanted = int(spec.get("replicas", 1))
    ready = int(status.get("readyReplicas", 0))
    updated = int(status.get("updatedReplicas", 0))
    detail = f"{ready}/{wanted} groups ready, {updated} updated"
    if ready >= wanted and updated >= wanted:
        return Readiness("ready", detail)
    return Readiness("progressing", detail)


def lws_pod_selector(obj: Mapping[str, Any]) -> str | None:
    """A LeaderWorkerSet's pods: the LWS name label every pod of its groups carries
    (``leaderworkerset.sigs.k8s.io/name``, lws v0.10.0 SetNameLabelKey)."""
    name = (obj.get("metadata") or {}).get("name")
    return f"leaderworkerset.sigs.k8s.io/name={name}" if name else None


def iec_readiness(obj: Mapping[str, Any]) -> Readiness:
    """Ready when the operator reports ``DeploymentComplete`` for the current generation."""
    status = obj.get("status") or {}
    state = str(status.get("state") or "no state yet")
    pending = _generation_pending(obj, status)
    if pending is not None:
        return Readiness("progressing", f"generation {pending} not observed yet ({state})")
    if state == READY_STATE:
        return Readiness("ready", state)
    return Readiness("failed" if state == FAILED_STATE else "progressing", state)


def iec_failure_detail(obj: Mapping[str, Any]) -> str:
    """The operator's own words for a failed IEC: the newest condition message that is not
    ``True``, else the underlying Deployment's reason and message, else the state."""
    status = obj.get("status") or {}
    conditions = [
        c for c in status.get("conditions") or [] if c.get("status") != "True" and c.get("message")
    ]
    conditions.sort(key=lambda c: str(c.get("lastTransitionTime") or ""))
    if conditions:
        last = conditions[-1]
        return f"{last.get('type')}: {last.get('reason')}: {last.get('message')}"
    deployment = status.get("deploymentStatus") or {}
    if deployment.get("message") or deployment.get("reason"):
        return f"{deployment.get('reason') or 'Deployment'}: {deployment.get('message') or ''}"
    return str(status.get("state") or "no state")


def deployment_pod_selector(obj: Mapping[str, Any]) -> str | None:
    """The Deployment's pods: its ``spec.selector.matchLabels`` as a label selector."""
    labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items())) or None


def iec_pod_selector(obj: Mapping[str, Any]) -> str | None:
    """The IEC's pods: the operator's ``status.selector`` (a label selector string)."""
    selector = (obj.get("status") or {}).get("selector")
    return str(selector) if selector else None


def _identity(detail: Mapping[str, Any]) -> tuple[str, int]:
    return str(detail.get("reason") or ""), int(detail.get("restartCount") or 0)


def pod_blocker(pod: Mapping[str, Any]) -> Blocker | None:
    """Why one pod is not ready (``None``: it is ready, or says nothing yet)."""
    status = pod.get("status") or {}
    name = f"Pod/{(pod.get('metadata') or {}).get('name')}"
    since = (pod.get("metadata") or {}).get("creationTimestamp")
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    if (conditions.get("Ready") or {}).get("status") == "True":
        return None
    containers = [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]
    for container in containers:
        state = container.get("state") or {}
        waiting = state.get("waiting") or {}
        restarts = int(container.get("restartCount") or 0)
        if waiting.get("reason") and waiting["reason"] not in _STARTING:
            last = (container.get("lastState") or {}).get("terminated") or {}
            text = f"{name}: container {container.get('name')}: {waiting['reason']}"
            if waiting.get("message"):
                text += f": {waiting['message']}"
            elif last:
                text += f" (last exit {last.get('exitCode')}: {last.get('reason') or ''})"
            return Blocker(text, str(waiting["reason"]), restarts, since)
        terminated = state.get("terminated") or {}
        if terminated.get("exitCode"):
            text = (
                f"{name}: container {container.get('name')}: exited {terminated['exitCode']}: "
                f"{terminated.get('reason') or ''} {terminated.get('message') or ''}".rstrip()
            )
            return Blocker(text, None, restarts, since)
    scheduled = conditions.get("PodScheduled") or {}
    if scheduled.get("status") == "False":
        text = f"{name}: {scheduled.get('reason') or 'Unschedulable'}: {scheduled.get('message')}"
        return Blocker(text, None, 0, since)
    return None


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def _subject(event: Mapping[str, Any]) -> str:
    involved = event.get("involvedObject") or {}
    return f"{involved.get('kind')}/{involved.get('name')}"


def last_warning(
    events: Iterable[Mapping[str, Any]], subjects: Callable[[str], bool]
) -> str | None:
    """The newest Warning event whose subject (``Kind/name``) ``subjects`` accepts."""
    found = [e for e in events if e.get("type") == "Warning" and subjects(_subject(e))]
    if not found:
        return None
    event = max(found, key=_event_time)
    return f"{_subject(event)}: {event.get('reason')}: {event.get('message')}"


def blocker(
    pods: Sequence[Mapping[str, Any]], events: Iterable[Mapping[str, Any]], workload: str
) -> Blocker | None:
    """Why the workload ``workload`` (``Kind/name``) is not ready: the first (by name) pod whose
    container waits on a reason, else the newest Warning event about the workload, its
    ReplicaSets (``ReplicaSet/<name>-<hash>``: FailedCreate on quota or admission) or its pods,
    else the first pod that exited or is not scheduled."""
    ordered = sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name")))
    found = [b for b in (pod_blocker(p) for p in ordered) if b is not None]
    waiting = [b for b in found if b.waiting]
    if waiting:
        return waiting[0]
    name = workload.partition("/")[2]
    pod_names = {f"Pod/{(p.get('metadata') or {}).get('name')}" for p in pods}

    def about(subject: str) -> bool:
        return (
            subject == workload or subject in pod_names or subject.startswith(f"ReplicaSet/{name}-")
        )

    warning = last_warning(events, about)
    if warning is not None:
        return Blocker(warning, None, 0, None)
    return found[0] if found else None


def _seconds_since(stamp: str | None, now: float) -> float:
    if not stamp:
        return 0.0
    try:
        return now - datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def fatal(found: Blocker | None, *, now: float) -> bool:
    """Whether ``found`` fails the deploy now rather than at its deadline (module doc)."""
    if found is None or found.waiting not in STUCK_REASONS:
        return False
    if found.waiting == "CrashLoopBackOff":
        return found.restarts >= CRASH_RESTARTS
    return _seconds_since(found.since, now) >= FAIL_FAST_AFTER_S


class WorkloadRules(NamedTuple):
    """How one workload kind reports readiness: its reader, its pods, its failure words."""

    readiness: Callable[[Mapping[str, Any]], Readiness]
    pod_selector: Callable[[Mapping[str, Any]], str | None]
    failure_detail: Callable[[Mapping[str, Any]], str] | None


RULES: Mapping[str, WorkloadRules] = {
    "Deployment": WorkloadRules(deployment_readiness, deployment_pod_selector, None),
    "InferenceEndpointConfig": WorkloadRules(iec_readiness, iec_pod_selector, iec_failure_detail),
    "LeaderWorkerSet": WorkloadRules(lws_readiness, lws_pod_selector, None),
}
"""The workload kinds a target names (``targets/<t>/manifest.json`` ``workload``), by kind."""


def ingress_address(obj: Mapping[str, Any]) -> str | None:
    """The address an Ingress's load balancer answers on, once its controller has made it
    (``status.loadBalancer.ingress[0]``: a DNS name for an ALB, else an IP); ``None`` until
    then."""
    status = obj.get("status") or {}
    entries = (status.get("loadBalancer") or {}).get("ingress") or []
    first = entries[0] if entries else {}
    address = first.get("hostname") or first.get("ip")
    return str(address) if address else None


ADDRESS_RULES: Mapping[str, Callable[[Mapping[str, Any]], str | None]] = {
    "Ingress": ingress_address,
}
"""The kinds whose status says where a deployment's endpoint answers, by kind: the readiness
Lambda reads it once the workload is ready and returns it to the stack (``Address``)."""
