"""How long a deploy waits for a deployment to be ready: its **ready timeout**, from the model's
size and how its weights reach the GPUs.

The serving stacks' readiness resource (:class:`~mlcc_constructs.aws.readiness.WorkloadReadiness`)
fails the deploy when the workload is not ready by then; the workload's own deadline is the same
number (the Deployment's ``progressDeadlineSeconds``, the IEC's ``maxDeployTimeInSeconds``), so
the platform reports a stuck rollout in its own words by the time the deploy gives up.

Formula (every input a documented constant or a fact of the spec)::

    per_pod = node + image_pull + engine_start + ceil(weights_bytes / throughput[load_path])
    ready_timeout = clamp(ceil(SAFETY * per_pod * replicas), MIN_S, MAX_S)

* ``node``: ``NODE_S`` where the cluster launches a GPU node for the pod (the target's
  ``cluster_gpu_nodes``: Auto Mode's NodePool), 0 where the nodes exist (HyperPod's instance
  groups).
* ``image_pull``: ``IMAGE_PULL_S`` (engine images are several GB).
* ``engine_start``: ``ENGINE_START_S`` (CUDA context, kernels and graph capture, after the
  weights load).
* ``weights_bytes``: ``spec.model_config``'s parameter count x its dtype's bytes
  (:func:`~mlcc_constructs.core.adapters.lora.model_geometry`); without a usable config, the
  instance's total GPU memory: the weights must fit there, so it bounds them from above.
* ``throughput[load_path]`` (bytes/s, conservative assumptions, not measurements):
  ``s3-stream`` (Mountpoint for Amazon S3 reading the prefix, on eks or an IEC without prefetch),
  ``s3-prefetch`` (the HyperPod operator copies the prefix before the engine starts), and
  ``huggingface`` (a download from the Hugging Face Hub through the VPC's NAT gateway).
* ``replicas``: rolling updates replace one pod at a time (``rollout`` ``surge``: ``maxSurge: 1,
  maxUnavailable: 0``; ``replace``: ``maxSurge: 0, maxUnavailable: 1``), so an update of N
  replicas takes N pod starts.
* ``SAFETY``: 1.5 for what the constants do not know (a slow node, a cold registry).
* Clamped to ``MIN_S``..``MAX_S``; ``MAX_S`` leaves room under CloudFormation's one-hour limit
  on a custom resource (``ServiceTimeout`` is 1..3600 s, default 3600: AWS::CloudFormation::
  CustomResource; the CDK Provider's waiter fails after an hour in practice, aws/aws-cdk#24974)
  for the handler's grace and the framework's response: :func:`waiter_timing`.

``DeploymentSpec.ready_timeout_seconds`` replaces the formula (``MIN_OVERRIDE_S``..``MAX_S``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from mlcc_constructs.core.adapters.lora import model_geometry
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.support.errors import MlccError

LoadPath = Literal["s3-stream", "s3-prefetch", "huggingface"]

MIB = 1 << 20
GIB = 1 << 30
NODE_S = 300
IMAGE_PULL_S = 300
ENGINE_START_S = 300
SAFETY = 1.5
THROUGHPUT: Mapping[LoadPath, int] = MappingProxyType(
    {"s3-stream": 200 * MIB, "s3-prefetch": 200 * MIB, "huggingface": 50 * MIB}
)
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
    ``load_path``: how the weights reach the GPUs.
    ``weights_bytes``: the weights' size the formula used.
    ``weights_basis``: ``model_config`` or ``gpu-memory`` (the instance's total GPU memory).
    """

    seconds: int
    source: Literal["formula", "spec"]
    load_path: LoadPath
    weights_bytes: int
    weights_basis: Literal["model_config", "gpu-memory"]


@dataclass(frozen=True, kw_only=True)
class WaiterTiming:
    """The readiness resource's numbers for one ready timeout (:func:`waiter_timing`).

    ``deadline_s``: how long the handler waits from its first call.
    ``service_timeout_s``: the custom resource's ``ServiceTimeout``.
    """

    deadline_s: int
    service_timeout_s: int


def load_path(*, source_kind: str, platform_mounts: bool, prefetch: bool) -> LoadPath:
    """How the weights reach the GPUs: from the Hub, or from S3 streamed (Mountpoint) or
    prefetched by the platform (``platform_mounts``: the HyperPod operator mounts the model)."""
    if source_kind == "huggingface":
        return "huggingface"
    return "s3-prefetch" if platform_mounts and prefetch else "s3-stream"


def weights_bytes(
    model_config: Mapping[str, Any] | None, instance: InstanceType
) -> tuple[int, Literal["model_config", "gpu-memory"]]:
    """The weights' size: parameters x dtype bytes from ``config.json``, else the instance's
    total GPU memory (an upper bound: the weights must fit)."""
    if model_config is not None:
        try:
            geometry = model_geometry(model_config)
        except MlccError:
            pass  # not a decoder config the geometry reads: fall back to the bound
        else:
            return geometry.parameters * geometry.dtype_bytes, "model_config"
    return instance.gpus * instance.gpu_memory_gib * GIB, "gpu-memory"


def ready_timeout(
    *,
    model_config: Mapping[str, Any] | None,
    instance: InstanceType,
    path: LoadPath,
    launches_nodes: bool,
    replicas: int,
    override: int | None = None,
) -> ReadyTimeout:
    """The deployment's ready timeout (module doc); ``override`` (the spec's
    ``ready_timeout_seconds``, range-checked by the spec checks) wins."""
    size, basis = weights_bytes(model_config, instance)
    if override is not None:
        return ReadyTimeout(
            seconds=override,
            source="spec",
            load_path=path,
            weights_bytes=size,
            weights_basis=basis,
        )
    per_pod = (
        (NODE_S if launches_nodes else 0)
        + IMAGE_PULL_S
        + ENGINE_START_S
        + math.ceil(size / THROUGHPUT[path])
    )
    seconds = min(MAX_S, max(MIN_S, math.ceil(SAFETY * per_pod * max(1, replicas))))
    return ReadyTimeout(
        seconds=seconds, source="formula", load_path=path, weights_bytes=size, weights_basis=basis
    )


def waiter_timing(seconds: int) -> WaiterTiming:
    """The handler's deadline and the resource's ServiceTimeout for a ready timeout."""
    deadline = seconds + HANDLER_GRACE_S
    service = min(SERVICE_TIMEOUT_MAX_S, deadline + RESPONSE_MARGIN_S)
    return WaiterTiming(deadline_s=deadline, service_timeout_s=service)
