"""How a deployment survives disruption: the rules behind its PodDisruptionBudget, its rollout
strategy, its drain on termination and its protection while it starts. Plain functions of the
spec's values; the kinds only lay out what they return.

Decisions (for reviewers; sources in docs/guides/scaling-and-disruption.md):

* **Minimum replicas** (:func:`min_replicas`): the fewest pods the deployment runs, computed
  here only. Today a fixed ``replicas``; an autoscaled deployment's minimum plugs in here.
* **PodDisruptionBudget** (:func:`needs_disruption_budget`, :func:`disruption_budget`) for two
  replicas or more: ``maxUnavailable: 1`` (a drain evicts one pod at a time, the others keep
  serving) and ``unhealthyPodEvictionPolicy: AlwaysAllow`` (a pod that is not Ready serves
  nothing, so evicting it costs no capacity, and a crash-looping pod cannot block a node's
  drain; GA in Kubernetes 1.31, KEP-3017; the Kubernetes task *Specifying a Disruption Budget*
  recommends it). With one replica a budget could only say "never evict" (``maxUnavailable:
  0``), which blocks every drain until Karpenter's node ``terminationGracePeriod`` forces it,
  or nothing: no budget is rendered, and :func:`single_replica_warning` says what that costs.
* **A multi-node group is one unit** (a LeaderWorkerSet: ``replicas`` counts groups). The budget
  is the same, over every pod of every group: LWS recreates a whole group when any of its pods
  goes (``RecreateGroupOnPodRestart``), so one eviction costs one group, and after it the
  group's pods are not Ready until it is back, which holds every further eviction of a Ready
  pod: ``maxUnavailable: 1`` is one group at a time. A budget quantized to groups instead
  (``minAvailable: (groups - 1) x size``, pdb-operator/pdb-operator#81) allows ``size``
  evictions at once before the disruption controller sees the first group go, and they may
  hit ``size`` different groups. The pods are owned by built-in StatefulSets (LWS makes a leader
  StatefulSet and one worker StatefulSet per group), whose scale the budget's ``maxUnavailable``
  needs. One group gets no budget, for the reason one replica gets none.
* **Expiry is not negotiable**: EKS Auto Mode replaces every node within 21 days (a maximum
  node lifetime it enforces; EKS User Guide ``automode.adoc``), and Karpenter's expiration
  honours neither budgets nor ``karpenter.sh/do-not-disrupt`` (Karpenter *Well-Known
  Annotations*: "It does not block expiration"). A budget only makes the eviction wait for
  the other replicas, so only two replicas or more survive a node's expiry without an outage.
* **Starting pods** (:func:`do_not_disrupt`): ``karpenter.sh/do-not-disrupt`` with a duration
  value protects a pod for that long after its start time (status.startTime) and lapses by
  itself (Karpenter 1.12, kubernetes-sigs/karpenter#2874; *Well-Known Annotations*: "the value
  may also be a duration (e.g. 5m) after the Pod's start time at which the protection ends").
  A pod cannot remove its own annotation without API access, and ``"true"`` would block
  consolidation and drift for the pod's whole life; the duration covers exactly the start:
  the image pull and the startup probe's allowance. A Karpenter older than 1.12 reads a
  duration as not ``"true"``, so the pod is simply unprotected there (fails open).
* **Drain** (:func:`drain`): Kubernetes removes a terminating pod from the Service's endpoints
  when termination starts, while the kubelet runs the ``preStop`` hook; the load balancer stops
  sending new requests and lets open ones finish. The hook holds SIGTERM back until in-flight
  requests are done: it waits :data:`DRAIN_SETTLE_S` for the load balancer to deregister the
  pod, then until the engine port has no open connection for :data:`DRAIN_QUIET_S`, at most
  ``max_request_seconds``. ``terminationGracePeriodSeconds`` is the hook's longest run plus
  :data:`SHUTDOWN_MARGIN_S` for the engine's own exit (the countdown includes the hook).
* **Rollout** (:func:`rollout_strategy`): ``surge`` is ``maxSurge: 1, maxUnavailable: 0``
  (never less capacity, one spare GPU node for the update); ``replace`` is ``maxSurge: 0,
  maxUnavailable: 1`` (KServe's ``rolloutStrategy`` for GPU-full clusters): an old pod stops
  first, so one replica fewer serves during each pod's start, and one replica is an outage for
  its drain plus cold start: refused without ``accept_downtime`` (:func:`rollout_problems`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.platform.vpc_network import DEV_PROFILES as DEV_PROFILES
from mlcc_constructs.core.serving.spec.deployment import (
    MAX_REQUEST_SECONDS,
    DeploymentSpec,
    RolloutStrategy,
)
from mlcc_constructs.core.support.errors import Problem

BUDGET_MIN_REPLICAS = 2
"""A PodDisruptionBudget is rendered from this many (minimum) replicas up."""
AUTO_MODE_MAX_NODE_LIFETIME_DAYS = 21
"""EKS Auto Mode's enforced maximum node lifetime (EKS User Guide ``automode.adoc``: "EKS Auto
Mode enforces a 21-day maximum node lifetime")."""
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DRAIN_SETTLE_S = 15
"""How long the drain waits before it looks at connections: the endpoint removal reaches the
load balancer's target deregistration (the ALB stops routing new requests to a draining target)
in seconds, not instantly."""
DRAIN_QUIET_S = 2
"""The engine port must be without an open connection this long (two polls a second apart):
a request's connection and the load balancer's idle keep-alive connections close within
seconds once nothing is in flight."""
SHUTDOWN_MARGIN_S = 30
"""After the drain, the engine's own exit on SIGTERM (freeing GPU memory, closing workers)."""
MAX_REQUEST_SECONDS_LIMIT = 3600
"""The longest ``max_request_seconds``: an hour of drain already holds a GPU node that long
on every pod stop."""


def min_replicas(spec: DeploymentSpec) -> int:
    """The fewest pods the deployment runs while serving traffic (module doc):
    ``autoscaling.min_replicas``, else its fixed ``replicas`` (with ``autoscaling.scale_to_zero``
    it also runs none while idle, when no pod is left to protect)."""
    return (
        spec.scaling.autoscaling.min_replicas
        if spec.scaling.autoscaling is not None
        else spec.scaling.replicas
    )


def needs_disruption_budget(minimum: int) -> bool:
    """A PodDisruptionBudget is rendered for ``minimum`` replicas (module doc)."""
    return minimum >= BUDGET_MIN_REPLICAS


def disruption_budget(selector: Mapping[str, str]) -> dict[str, Any]:
    """The PodDisruptionBudget ``spec`` for pods matching ``selector`` (module doc)."""
    return {
        "maxUnavailable": 1,
        "selector": {"matchLabels": dict(selector)},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }


def single_replica_warning(
    *, name: str, minimum: int, profile: str | None, cold_start_s: int, nodes: int = 1
) -> str | None:
    """What a deployment of one replica (one group of ``nodes`` when > 1) loses on an Auto Mode
    cluster, outside a dev profile (``None`` when it has two or more, or the profile is a dev
    one or unknown)."""
    if needs_disruption_budget(minimum) or profile is None or profile in DEV_PROFILES:
        return None
    one = "one replica" if nodes == 1 else f"one group of {nodes} nodes"
    each = (
        "each replacement"
        if nodes == 1
        else f"the replacement of any of its {nodes} nodes restarts the whole group and"
    )
    return (
        f"{name}: {one} and no PodDisruptionBudget in profile {profile!r}: EKS Auto Mode "
        f"replaces every node within {AUTO_MODE_MAX_NODE_LIFETIME_DAYS} days (and on AMI drift), "
        f"expiry waits for no budget, and {each} stops serving for the drain and the "
        f"cold start on a new node (up to the ready timeout, {cold_start_s} s); set "
        "scaling.replicas: 2 or more to keep serving through it"
    )


def rollout_strategy(rollout: RolloutStrategy) -> dict[str, Any]:
    """The Deployment's ``strategy`` for ``rollout`` (module doc)."""
    surge, unavailable = (1, 0) if rollout == "surge" else (0, 1)
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }


def rollout_problems(spec: DeploymentSpec, minimum: int) -> list[Problem]:
    """``rollout: replace`` with one replica without ``accept_downtime``."""
    problems: list[Problem] = []
    if spec.rollout.strategy == "replace" and minimum < 2 and not spec.rollout.accept_downtime:
        problems.append(
            Problem(
                message="rollout replace with one replica stops serving for every update: the "
                "old pod drains and exits before the new one starts its cold start",
                pointer="/rollout/strategy",
                value=spec.rollout.strategy,
                allowed="surge, or replace with scaling.replicas >= 2 or rollout.accept_downtime: "
                "true",
                fix="keep rollout.strategy: surge (needs one spare GPU node), run 2 replicas, or "
                "set rollout.accept_downtime: true to accept the outage",
            )
        )
    return problems


def ignored_field_warnings(spec: DeploymentSpec, target: TargetDescriptor) -> list[str]:
    """``rollout`` and ``max_request_seconds`` set on a target whose platform makes the pods
    (no ``pod_volumes``): ignored there, with the target's note saying why."""
    given = {
        "rollout": spec.rollout.strategy != "surge",
        "max_request_seconds": spec.endpoint.max_request_seconds != MAX_REQUEST_SECONDS,
    }
    return [
        f"{field} is ignored on {target.name}: "
        + target.notes.get(field, "its platform makes the pods")
        for field, set_ in given.items()
        if set_
    ]


def termination_grace_seconds(max_request_seconds: int) -> int:
    """``terminationGracePeriodSeconds``: the drain's longest run and the engine's exit."""
    return DRAIN_SETTLE_S + max_request_seconds + SHUTDOWN_MARGIN_S


def do_not_disrupt(startup_seconds: int) -> dict[str, str]:
    """The pod annotation that protects a starting pod for ``startup_seconds`` (module doc), as
    a Go duration."""
    return {DO_NOT_DISRUPT: f"{startup_seconds}s"}


# The preStop drain, run by python3 in the engine container (stdlib only, every wrapper image
# has python3): argv port, settle, quiet, max. /proc/net/tcp{,6} list the pod's sockets (one
# network namespace per pod); state 01 is ESTABLISHED; the local port is hex after the colon.
DRAIN_SCRIPT = """\
import sys, time
port, settle, quiet, limit = (int(a) for a in sys.argv[1:5])
def busy():
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(name).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if f[3] == "01" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False
time.sleep(settle)
end, calm = time.monotonic() + limit, 0
while time.monotonic() < end and calm < quiet:
    calm = 0 if busy() else calm + 1
    time.sleep(1)
"""


def drain(*, port: int, max_request_seconds: int, python: bool) -> dict[str, Any]:
    """The ``preStop`` handler (module doc): the connection-watching drain where the image has
    python3 (``python``: the engine runs the wrapper), else a ``sleep`` action of the whole
    ``max_request_seconds`` (Kubernetes lifecycle sleep action, stable in 1.34, KEP-3960)."""
    if not python:
        return {"sleep": {"seconds": DRAIN_SETTLE_S + max_request_seconds}}
    argv = [str(port), str(DRAIN_SETTLE_S), str(DRAIN_QUIET_S), str(max_request_seconds)]
    return {"exec": {"command": ["python3", "-c", DRAIN_SCRIPT, *argv]}}
