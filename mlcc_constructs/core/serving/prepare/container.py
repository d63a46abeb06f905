"""The engine container, described once for every target: image, command and args, the env
in its parts, the port and health path, the resources. Each target renderer lays it out in
its own object (a Deployment's container, an IEC worker).

Decisions (for reviewers):

* **Config delivery** ``env`` (default): a Model-A engine runs the wrapper, which turns the
  delivered ``<PREFIX>*`` env into flags. Where pods take volumes (target ``pod_volumes``) the
  wrapper (a stdlib-only script) and the engine manifest are mounted from a ConfigMap at
  :data:`WRAPPER_MOUNT`, so a stock upstream image works and a plugin engine needs nothing
  baked in; their content is part of the pod's config hash, so a wrapper upgrade rolls the
  pods. Where pods take no volumes (an IEC worker) the script travels in the command
  (``python3 -c <wrapper>``) and the manifest in ``MLCC_ENGINE_MANIFEST_JSON``. Either way
  ``MLCC_ENGINE_KEYS`` lists the keys the wrapper translates, so a ``<PREFIX>*`` variable an
  image sets for itself never becomes a flag; the wrapper execs the engine without those keys
  and without its own ``MLCC_*`` variables. ``args``: the command and args are the wrapper's
  argv computed now, so a stock image works; the only engine env delivered is the engine's
  own variables (manifest ``engine_env``, e.g. vLLM's ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``),
  because the flags carry every other value. Either way the engine sees exactly its flags
  and its own variables. Model-B engines (``entrypoint: image``) keep the image's entrypoint
  and receive the env.
* **Resources** (:func:`pod_resources`): ``tensor_parallel_degree`` GPUs and that share of
  the node's vCPUs and memory after a node reserve for the kubelet, the OS and the daemon-set
  pods (CNI, kube-proxy, CSI node, device plugin): 10% of the vCPUs (at least 1) and 10% of
  the memory (at least 3 GiB), rounded down. CPU has no limit (throttling a tokenizer hurts
  latency); memory and GPUs are limited to the request. With fallback instance types the
  pod asks for the least any of them gives (:func:`fitting_resources`), so it fits on each.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE, InstanceType
from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.serving.prepare.cold_start import (
    STARTUP_PERIOD_S,
    UNKNOWN_SIZE_STARTUP_S,
)
from mlcc_constructs.core.serving.prepare.engine_cache import cache_env
from mlcc_constructs.core.serving.prepare.secrets import SecretsPlan
from mlcc_constructs.core.serving.resolve.resolution import Resolution
from mlcc_constructs.core.serving.spec.deployment import ConfigDelivery, DeploymentSpec, SecretRef
from mlcc_constructs.core.wrapper import ENGINE_ENV, KEYS_ENV, MANIFEST_ENV, MANIFEST_JSON_ENV

ENGINE_CONTAINER = "engine"
"""Name of the engine container: stable, for functions that post-process the objects."""
WRAPPER_MOUNT = "/opt/mlcc"
"""Where pods mount the wrapper ConfigMap (``wrapper.py``, ``manifest.json``)."""
MOUNTED_WRAPPER_COMMAND = ("python3", f"{WRAPPER_MOUNT}/wrapper.py")
"""The command in ``env`` delivery where pods take volumes: any image with python3 runs it."""
CPU_RESERVE_FRACTION, CPU_RESERVE_MIN = 0.10, 1
MEMORY_RESERVE_FRACTION, MEMORY_RESERVE_MIN_GIB = 0.10, 3


@dataclass(frozen=True, kw_only=True)
class Container:
    """The engine container of one deployment, whatever object carries it."""

    image: str
    config_delivery: ConfigDelivery
    """``env`` or ``args`` (module doc)."""
    command: tuple[str, ...] | None
    """The container command; ``None`` keeps the image's entrypoint (Model-B)."""
    args: tuple[str, ...]
    engine_env: Mapping[str, str]
    """The engine env the target delivers: Tier 1 then Tier 2 for ``env`` (ConfigMap data or
    worker env); for ``args`` only the engine's own variables (``Resolution.own_env``)."""
    wrapper_env: tuple[tuple[str, str], ...]
    """What the wrapper reads besides the engine env (engine, manifest, keys)."""
    wrapper_files: Mapping[str, str] | None
    """``manifest.json`` and ``wrapper.py`` to mount at :data:`WRAPPER_MOUNT`, or ``None``."""
    plain_env: tuple[tuple[str, str], ...]
    """The user's env without an engine prefix (``NCCL_DEBUG``...)."""
    secret_env: Mapping[str, SecretRef]
    cache_env: tuple[tuple[str, str], ...] = ()
    """The engine's cache directories on the pod's cache volume (:mod:`.engine_cache`), only
    where pods take volumes; empty: no cache volume."""
    port: int
    health_path: str
    metrics_path: str | None
    requests: Mapping[str, str]
    """``cpu``, ``memory``, ``nvidia.com/gpu``."""
    config_hash: str
    """``sha256:<hex>`` of everything the pod reads from ConfigMaps (rolls pods on change)."""

    @property
    def limits(self) -> dict[str, str]:
        """Memory and GPUs limited to the request; CPU unlimited (module doc)."""
        return {"memory": self.requests["memory"], GPU_RESOURCE: self.requests[GPU_RESOURCE]}

    @property
    def delivers_env(self) -> bool:
        """The engine config travels as env (``config_delivery="env"``)."""
        return self.config_delivery == "env"


def describe_container(
    spec: DeploymentSpec,
    target: TargetDescriptor,
    resolution: Resolution,
    image: str,
    secrets: SecretsPlan,
    instances: Sequence[InstanceType] = (),
) -> Container:
    """The engine container of ``spec`` on ``target`` (module doc: delivery, resources);
    ``secrets``: where its Secret-backed variables and the API key's flag come from;
    ``instances``: every type the pod may run on (default: the resolved instance only), the
    resources fitting the smallest."""
    manifest = resolution.manifest
    launch = manifest.launch
    by_env = spec.engine.config_delivery == "env"
    runs_wrapper = by_env and manifest.entrypoint == "wrapper"
    engine_env = dict(resolution.tier1 + resolution.tier2 if by_env else resolution.own_env)
    mounted = runs_wrapper and target.pod_volumes

    command: tuple[str, ...] | None = None
    args: tuple[str, ...] = ()
    if manifest.entrypoint == "wrapper":
        if not by_env:
            argv = resolution.argv()
            split = len(launch["command"])
            command, args = tuple(argv[:split]), tuple(argv[split:])
        elif mounted:
            command = MOUNTED_WRAPPER_COMMAND
        else:  # no volumes: the wrapper script travels in the command itself
            command = ("python3", "-c", wrapper_script())

    wrapper_env: tuple[tuple[str, str], ...] = ()
    if runs_wrapper:
        manifest_env = (
            (MANIFEST_ENV, f"{WRAPPER_MOUNT}/manifest.json")
            if mounted
            else (MANIFEST_JSON_ENV, manifest.pod_json_text)
        )
        wrapper_env = (
            (ENGINE_ENV, manifest.engine),
            manifest_env,
            (KEYS_ENV, ",".join(resolution.flag_keys)),
        )
    wrapper_files = wrapper_files_for(manifest.pod_json_text) if mounted else None
    hashed = hashed_config(resolution, mounted=wrapper_files is not None)
    # The caches go on a volume only where pods take one; a variable the deployment sets
    # itself is left alone (engine_cache module doc).
    taken = {*resolution.env, *secrets.env}
    return Container(
        image=image,
        config_delivery=spec.engine.config_delivery,
        command=command,
        args=args,
        engine_env=MappingProxyType(engine_env),
        wrapper_env=wrapper_env,
        wrapper_files=wrapper_files,
        plain_env=resolution.plain,
        secret_env=secrets.env,
        cache_env=cache_env(manifest, taken) if target.pod_volumes else (),
        port=int(launch["port"]),
        health_path=str(launch["health_path"]),
        metrics_path=launch.get("metrics_path"),
        requests=MappingProxyType(
            fitting_resources(instances or (resolution.instance,), resolution.gpus_per_pod)
        ),
        config_hash=config_hash(hashed),
    )


def pod_resources(instance: InstanceType, gpus: int) -> dict[str, str]:
    """CPU, memory and GPU requests of a pod using ``gpus`` GPUs of ``instance`` (module doc)."""
    share = gpus / instance.gpus
    cpu_reserve = max(CPU_RESERVE_MIN, instance.vcpus * CPU_RESERVE_FRACTION)
    memory_reserve = max(MEMORY_RESERVE_MIN_GIB, instance.memory_gib * MEMORY_RESERVE_FRACTION)
    cpu = max(1, math.floor((instance.vcpus - cpu_reserve) * share))
    memory = max(1, math.floor((instance.memory_gib - memory_reserve) * share))
    return {"cpu": str(cpu), "memory": f"{memory}Gi", GPU_RESOURCE: str(gpus)}


def fitting_resources(instances: Sequence[InstanceType], gpus: int) -> dict[str, str]:
    """The requests of a pod using ``gpus`` GPUs that fits on every one of ``instances`` (its
    fallback types): the least CPU and memory :func:`pod_resources` gives on any of them."""
    each = [pod_resources(instance, gpus) for instance in instances]
    cpu = min(int(r["cpu"]) for r in each)
    memory = min(int(r["memory"].removesuffix("Gi")) for r in each)
    return {"cpu": str(cpu), "memory": f"{memory}Gi", GPU_RESOURCE: str(gpus)}


def hashed_config(resolution: Resolution, *, mounted: bool) -> dict[str, str]:
    """What a container's :attr:`Container.config_hash` hashes: the engine config (Tier 1 and
    2, whatever the delivery) and, when the wrapper files are ``mounted``, their own hash."""
    hashed = dict(resolution.tier1 + resolution.tier2)
    if mounted:
        hashed[WRAPPER_MOUNT] = _wrapper_files_hash(resolution.manifest.pod_json_text)
    return hashed


def config_hash(data: Mapping[str, str]) -> str:
    """``sha256:<hex>`` of the engine config; a pod-template annotation, so a change rolls pods."""
    text = json.dumps(dict(data), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def wrapper_script() -> str:
    """The wrapper's source (stdlib-only), as pods run it."""
    from mlcc_constructs.core import wrapper

    with open(wrapper.__file__, encoding="utf-8") as source:
        return source.read()


@cache
def wrapper_files_for(manifest_json: str) -> Mapping[str, str]:
    """The files mounted at :data:`WRAPPER_MOUNT`, keyed by the manifest's text (computed once
    per manifest)."""
    return MappingProxyType({"manifest.json": manifest_json, "wrapper.py": wrapper_script()})


@cache
def _wrapper_files_hash(manifest_json: str) -> str:
    return config_hash(wrapper_files_for(manifest_json))


# -- the container's Kubernetes forms, shared by every object that carries it ----------------

STARTUP_FAILURES = UNKNOWN_SIZE_STARTUP_S // STARTUP_PERIOD_S
"""The startup probe's ``failureThreshold`` without a model size: 30 minutes (a cold start
without prefetch measured ~15 minutes: model load ~513 s, pod ready ~15 min; seed lora-delivery
§4). With a size, the deployment's cold start sizes it (:mod:`.cold_start`)."""
READINESS_PERIOD_S, LIVENESS_PERIOD_S, PROBE_FAILURES, PROBE_TIMEOUT_S = 10, 20, 3, 5


def secret_env(refs: Mapping[str, SecretRef]) -> list[dict[str, Any]]:
    """``valueFrom.secretKeyRef`` entries: secrets never travel as plain values."""
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
        for key, ref in refs.items()
    ]


def plain_env(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """``name``/``value`` env entries, in order."""
    return [{"name": key, "value": value} for key, value in pairs]


def probe(path: str, port: int | str, period: int, failures: int) -> dict[str, Any]:
    """An HTTP GET probe on the engine's ``path`` and ``port`` (a number or a port name)."""
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "timeoutSeconds": PROBE_TIMEOUT_S,
        "failureThreshold": failures,
    }


def health_probes(
    path: str, port: int | str, *, startup_failures: int
) -> dict[str, dict[str, Any]]:
    """Startup, readiness and liveness probes, all on the engine's health path: a pod takes
    traffic only once the engine answers, and a wedged engine is restarted. The startup probe
    allows ``startup_failures`` periods of :data:`STARTUP_PERIOD_S` (the deployment's
    :attr:`~.cold_start.ColdStart.startup_failures`)."""
    return {
        "startupProbe": probe(path, port, STARTUP_PERIOD_S, startup_failures),
        "readinessProbe": probe(path, port, READINESS_PERIOD_S, PROBE_FAILURES),
        "livenessProbe": probe(path, port, LIVENESS_PERIOD_S, PROBE_FAILURES),
    }
