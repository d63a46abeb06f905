"""The pod template of a target whose pods are the library's own (``pod_volumes``: eks), laid
out once from the container description, with the CacheBackend wired in before any object is
rendered: the adapter's flags and env, the ``lmcache-mp-server`` native sidecar, the shared
``/dev/shm`` and the client config volume (:func:`~mlcc_constructs.core.cache.inject_cache_backend`,
the one injection rule, applied to this template). The Deployment only wraps it.

Decisions (for reviewers; delivery and resources: :mod:`.container`):

* **Security.** Pod and container run as UID/GID 1000, non-root, no privilege escalation, all
  capabilities dropped, seccomp ``RuntimeDefault``, read-only root filesystem. ``$HOME`` and
  ``/tmp`` are writable ``emptyDir`` volumes and ``HOME=/home/mlcc``; the caches the engine
  manifest declares (torch.compile, Triton, FlashInfer, Hugging Face) are moved by their
  variables onto one more ``emptyDir``, the cache volume (:mod:`.engine_cache`: kept across
  container restarts on the node); ``/dev/shm`` is a memory ``emptyDir``
  (NCCL needs more than the 64 MiB default; a CacheBackend's L1 adds its own budget to it).
* **Probes**: a startup probe allows the deployment's cold-start budget (``startup_s`` of
  :mod:`.cold_start`: from the model's size, the load path and the instance's network; 30
  minutes without a model size), then readiness and liveness probes, all on the manifest's
  ``health_path``.
* **Secrets Manager values** arrive through the Secrets Store CSI volume ``secrets``
  (read-only at ``/mnt/secrets-store``): the driver syncs the deployment's Secret only while a
  pod mounts it, and the container env references that Secret by key
  (:mod:`.secrets`; the SecretProviderClass kind).
* **Disruption** (:mod:`.disruption`): the engine container's ``preStop`` drains in-flight
  requests (up to the spec's ``max_request_seconds``) before SIGTERM, the termination grace
  period covers that drain, and ``karpenter.sh/do-not-disrupt`` protects the pod while it
  starts (the image pull and the startup probe's allowance: ``pod_start_s`` of the same cold
  start), then lapses.
* **Instance types** (:mod:`.instances`): one type is a ``nodeSelector``; with fallbacks a
  node affinity allows every type and prefers them in order.
* **Service links off** (``enableServiceLinks: false``): Kubernetes would otherwise inject
  ``<SERVICE>_PORT=tcp://...`` variables, and one whose service name starts with the engine's
  prefix (a Service ``vllm-x`` gives ``VLLM_X_PORT``) would reach the wrapper as a flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.gpu_capacity import gpu_toleration
from mlcc_constructs.core.platform.prometheus import scrape_annotations
from mlcc_constructs.core.platform.secrets_store import CSI_DRIVER
from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.serving.prepare.cold_start import ColdStart
from mlcc_constructs.core.serving.prepare.container import (
    ENGINE_CONTAINER,
    WRAPPER_MOUNT,
    Container,
    health_probes,
    plain_env,
    secret_env,
)
from mlcc_constructs.core.serving.prepare.disruption import (
    do_not_disrupt,
    drain,
    termination_grace_seconds,
)
from mlcc_constructs.core.serving.prepare.engine_cache import cache_mount, cache_volume
from mlcc_constructs.core.serving.prepare.instances import INSTANCE_TYPE_LABEL, node_affinity
from mlcc_constructs.core.serving.prepare.names import Names, object_labels
from mlcc_constructs.core.serving.prepare.secrets import (
    MOUNT_PATH as SECRETS_MOUNT,
    VOLUME as SECRETS_VOLUME,
    SecretsPlan,
)
from mlcc_constructs.core.serving.resolve.resolution import Resolution
from mlcc_constructs.core.support.container_env import HOME, POD_ENV

if TYPE_CHECKING:
    from mlcc_constructs.core.cache.admission import Admission

CONFIG_HASH_ANNOTATION = "mlcc-constructs/config-hash"
RUN_AS = 1000
MODEL_VOLUME = "model-weights"
WRAPPER_VOLUME = "mlcc-wrapper"
SHM_MAX_GIB = 16


def pod_template(
    *,
    target: TargetDescriptor,
    resolution: Resolution,
    container: Container,
    names: Names,
    secrets: SecretsPlan,
    cache: Admission | None,
    max_request_seconds: int,
    cold_start: ColdStart,
    instances: tuple[InstanceType, ...] = (),
) -> dict[str, Any] | None:
    """The pod template (module doc), or ``None`` where the platform makes the pods;
    ``max_request_seconds``: the drain's longest wait; ``cold_start``: the deployment's cold
    start (the startup probe's allowance and the do-not-disrupt window); ``instances``: every
    type the pod may run on, preferred first (default: the resolved instance only)."""
    if not target.pod_volumes:
        return None
    template = _template(
        target,
        resolution,
        container,
        names,
        secrets,
        max_request_seconds=max_request_seconds,
        cold_start=cold_start,
        instances=instances or (resolution.instance,),
    )
    if cache is None:
        return template
    from mlcc_constructs.core.cache.inject import cache_config_map_name, inject_cache_backend

    return inject_cache_backend(
        template,
        cache,
        engine_container=ENGINE_CONTAINER,
        config_map_name=cache_config_map_name(names.base),
    )


def engine_container(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The engine container of a pod template."""
    containers: list[Mapping[str, Any]] = template["spec"]["containers"]
    return next(c for c in containers if c["name"] == ENGINE_CONTAINER)


def _template(
    target: TargetDescriptor,
    resolution: Resolution,
    box: Container,
    names: Names,
    secrets: SecretsPlan,
    *,
    max_request_seconds: int,
    cold_start: ColdStart,
    instances: tuple[InstanceType, ...],
) -> dict[str, Any]:
    memory_gib = int(box.requests["memory"].removesuffix("Gi"))
    env = plain_env(box.wrapper_env)
    if not box.delivers_env:  # args delivery: the engine's own variables (flags carry the rest)
        env += plain_env(tuple(box.engine_env.items()))
    env += plain_env(POD_ENV)
    env += plain_env(box.cache_env)
    env += plain_env(box.plain_env)
    env += secret_env(box.secret_env)
    container: dict[str, Any] = {"name": ENGINE_CONTAINER, "image": box.image}
    if box.command is not None:
        container["command"] = list(box.command)
        if box.args:
            container["args"] = list(box.args)
    container["ports"] = [{"name": "http", "containerPort": box.port, "protocol": "TCP"}]
    if box.delivers_env:
        container["envFrom"] = [{"configMapRef": {"name": names.config_map}}]
    container["env"] = env
    container["resources"] = {"requests": dict(box.requests), "limits": box.limits}
    container.update(
        health_probes(box.health_path, "http", startup_failures=cold_start.startup_failures)
    )
    container["lifecycle"] = {
        "preStop": drain(
            port=box.port,
            max_request_seconds=max_request_seconds,
            # Every image that runs the wrapper has python3 for the drain script.
            python=resolution.manifest.entrypoint == "wrapper",
        )
    }
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    mounts: list[dict[str, Any]] = [
        {"name": "shm", "mountPath": "/dev/shm"},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "home", "mountPath": HOME},
    ]
    volumes: list[dict[str, Any]] = [
        {
            "name": "shm",
            "emptyDir": {
                "medium": "Memory",
                "sizeLimit": f"{min(SHM_MAX_GIB, max(1, memory_gib // 4))}Gi",
            },
        },
        {"name": "tmp", "emptyDir": {}},
        {"name": "home", "emptyDir": {}},
    ]
    if box.cache_env:  # the engine's declared caches, on the node (engine_cache module doc)
        mounts.append(cache_mount())
        volumes.append(cache_volume())
    if box.wrapper_files is not None:
        mounts.append({"name": WRAPPER_VOLUME, "mountPath": WRAPPER_MOUNT, "readOnly": True})
        volumes.append({"name": WRAPPER_VOLUME, "configMap": {"name": names.wrapper}})
    if resolution.mounts_model:  # the weights, or with a streamed model its LoRA adapters
        mount_path = target.model_mount_path
        mounts.append({"name": MODEL_VOLUME, "mountPath": mount_path, "readOnly": True})
        volumes.append(
            {
                "name": MODEL_VOLUME,
                "persistentVolumeClaim": {"claimName": names.claim, "readOnly": True},
            }
        )
    if secrets.syncs:  # the driver syncs the Secret the env reads only while a pod mounts it
        mounts.append({"name": SECRETS_VOLUME, "mountPath": SECRETS_MOUNT, "readOnly": True})
        volumes.append(
            {
                "name": SECRETS_VOLUME,
                "csi": {
                    "driver": CSI_DRIVER,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": secrets.name},
                },
            }
        )
    container["volumeMounts"] = mounts
    spec: dict[str, Any] = {}
    if target.service_account:
        spec["serviceAccountName"] = names.base
    spec["automountServiceAccountToken"] = False
    spec["enableServiceLinks"] = False
    spec["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "fsGroup": RUN_AS,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if len(instances) == 1:
        spec["nodeSelector"] = {INSTANCE_TYPE_LABEL: instances[0].node_name}
    else:
        spec["affinity"] = node_affinity(instances)
    if target.cluster_gpu_nodes:  # the app's GPU NodePool taints its nodes (gpu_capacity)
        spec["tolerations"] = [gpu_toleration()]
    spec["terminationGracePeriodSeconds"] = termination_grace_seconds(max_request_seconds)
    spec["containers"] = [container]
    spec["volumes"] = volumes
    metrics = resolution.manifest.metrics if target.metrics_scraped else None
    return {
        "metadata": {
            "labels": object_labels(names, resolution.manifest.engine),
            "annotations": {
                CONFIG_HASH_ANNOTATION: box.config_hash,
                **do_not_disrupt(cold_start.pod_start_s),
                **(scrape_annotations(box.port, metrics.path) if metrics is not None else {}),
            },
        },
        "spec": spec,
    }
