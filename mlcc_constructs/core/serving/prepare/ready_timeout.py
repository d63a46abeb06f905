"""How long a deploy waits for a deployment to be ready: its **ready timeout**, from the
deployment's cold start (:mod:`.cold_start`: the model's size, how its weights reach the GPUs,
the instance's network).

The serving stacks' readiness resource (:class:`~mlcc_constructs.aws.readiness.WorkloadReadiness`)
fails the deploy when the workload is not ready by then; the workload's own deadline is the same
number (the Deployment's ``progressDeadlineSeconds``, the IEC's ``maxDeployTimeInSeconds``), so
the platform reports a stuck rollout in its own words by the time the deploy gives up.

Formula::

    ready_timeout = clamp(launch_s * replicas, MIN_S, MAX_S)

* ``launch_s``: one pod's cold-start budget (:attr:`.cold_start.ColdStart.launch_s`: node start,
  image pull and the startup probe's allowance), the same number the startup probe and the
  ``karpenter.sh/do-not-disrupt`` window are sized from, computed once.
* ``replicas``: rolling updates replace one pod at a time (``rollout`` ``surge``: ``maxSurge: 1,
  maxUnavailable: 0``; ``replace``: ``maxSurge: 0, maxUnavailable: 1``), so an update of N
  replicas takes N pod starts.
* Clamped to ``MIN_S``..``MAX_S``; ``MAX_S`` leaves room under CloudFormation's one-hour limit
  on a custom resource (``ServiceTimeout`` is 1..3600 s, default 3600: AWS::CloudFormation::
  CustomResource; the CDK Provider's waiter fails after an hour in practice, aws/aws-cdk#24974)
  for the handler's grace and the framework's response: :func:`waiter_timing`. A pod whose own
  budget is past ``MAX_S`` cannot be waited for: :func:`ready_timeout_warning` says so.

``DeploymentSpec.ready_timeout_seconds`` replaces the formula (``MIN_OVERRIDE_S``..``MAX_S``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mlcc_constructs.core.serving.prepare.cold_start import ColdStart, LoadPath

MIN_S = 600
MAX_S = 3300
MIN_OVERRIDE_S = 60

# The readiness waiter around the timeout (every number under CloudFormation's 3600 s).
QUERY_INTERVAL_S = 30
"""How often the waiter reads the workload (Step Functions retries of the isComplete handler)."""
HANDLER_GRACE_S = 2 * QUERY_INTERVAL_S
"""The handler's deadline is the ready timeout plus this: the platform's own verdict at its
deadline (ProgressDeadlineExceeded, DeploymentFailed) is read before the handler gives up."""
RESPONSE_MARGIN_S = 120
"""Between the handler's deadline and the resource's ServiceTimeout: the framework's answer."""
PROVIDER_TOTAL_TIMEOUT_S = MAX_S + HANDLER_GRACE_S + QUERY_INTERVAL_S
"""The provider's ``total_timeout``: past every handler deadline, so a handler's own message
(the pod's reason) wins over the framework's "Operation timed out"."""
SERVICE_TIMEOUT_MAX_S = 3600


@dataclass(frozen=True, kw_only=True)
class ReadyTimeout:
    """A deployment's ready timeout and what it was computed from.

    Fields:

    ``seconds``: the timeout.
    ``source``: ``formula`` or ``spec`` (``ready_timeout_seconds``).
    ``cold_start``: the deployment's cold start (the formula's input, also the probes').
    """

    seconds: int
    source: Literal["formula", "spec"]
    cold_start: ColdStart

    @property
    def load_path(self) -> LoadPath:
        """How the weights reach the GPUs."""
        return self.cold_start.load_path


@dataclass(frozen=True, kw_only=True)
class WaiterTiming:
    """The readiness resource's numbers for one ready timeout (:func:`waiter_timing`).

    ``deadline_s``: how long the handler waits from its first call.
    ``service_timeout_s``: the custom resource's ``ServiceTimeout``.
    """

    deadline_s: int
    service_timeout_s: int


def ready_timeout(
    cold_start: ColdStart, *, replicas: int, override: int | None = None
) -> ReadyTimeout:
    """The deployment's ready timeout (module doc); ``override`` (the spec's
    ``ready_timeout_seconds``, range-checked by the spec checks) wins."""
    if override is not None:
        return ReadyTimeout(seconds=override, source="spec", cold_start=cold_start)
    seconds = min(MAX_S, max(MIN_S, cold_start.launch_s * max(1, replicas)))
    return ReadyTimeout(seconds=seconds, source="formula", cold_start=cold_start)


def ready_timeout_warning(name: str, timeout: ReadyTimeout) -> str | None:
    """A note when one pod's cold-start budget is past what the deploy waits (``None``
    otherwise, and for a timeout the spec sets)."""
    cold = timeout.cold_start
    if timeout.source == "spec" or cold.size.bytes is None or cold.launch_s <= timeout.seconds:
        return None
    return (
        f"{name}: one pod's cold start may take up to {cold.launch_s} s "
        f"({cold.size.bytes:,} bytes over the {cold.load_path} load path), past the "
        f"{timeout.seconds} s the deploy waits (at most {MAX_S} s under CloudFormation's hour): "
        "cdk deploy may fail while the pod still loads; see mlcc plan for where the time goes"
    )


def waiter_timing(seconds: int) -> WaiterTiming:
    """The handler's deadline and the resource's ServiceTimeout for a ready timeout."""
    deadline = seconds + HANDLER_GRACE_S
    service = min(SERVICE_TIMEOUT_MAX_S, deadline + RESPONSE_MARGIN_S)
    return WaiterTiming(deadline_s=deadline, service_timeout_s=service)
