"""Target ``eks``: ServiceAccount, ConfigMap (engine env), ConfigMap with the wrapper (``env``
delivery), static Mountpoint S3 CSI PersistentVolume + claim (``s3://`` models), the
CacheBackend's client-config ConfigMap, Deployment, Service.

Decisions (for reviewers; delivery and resources: ``core/serving/prepare/container.py``):

* **Security.** Pod and container run as UID/GID 1000, non-root, no privilege escalation, all
  capabilities dropped, seccomp ``RuntimeDefault``, read-only root filesystem. Engines write
  caches (Hugging Face, Triton, torch.compile) under ``$HOME`` and ``/tmp``, so both are
  writable ``emptyDir`` volumes and ``HOME=/home/mlcc``; ``/dev/shm`` is a memory ``emptyDir``
  (NCCL needs more than the 64 MiB default).
* **Probes**: a startup probe allows 30 minutes (a cold start without prefetch measured ~15
  minutes), then readiness and liveness probes, all on the manifest's ``health_path``.
* **Rollout**: ``maxSurge: 1, maxUnavailable: 0`` never drops serving capacity.
* **Service links off** (``enableServiceLinks: false``): Kubernetes would otherwise inject
  ``<SERVICE>_PORT=tcp://...`` variables, and one whose service name starts with the engine's
  prefix (a Service ``vllm-x`` gives ``VLLM_X_PORT``) would reach the wrapper as a flag.
* **Names**: the base name (RFC 1035 label) names the Deployment, Service and ServiceAccount;
  the ConfigMap is ``<name>-config``, the claim ``<name>-model`` and the cluster-scoped
  PersistentVolume ``<namespace>-<name>-model``.
"""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.platform.gpu_capacity import gpu_toleration
from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER, WRAPPER_MOUNT
from mlcc_constructs.core.serving.prepare.deployment import PreparedDeployment
from mlcc_constructs.core.serving.render import RenderedObject
from mlcc_constructs.core.serving.renderers.common import (
    health_probes,
    labels as object_labels,
    metadata,
    plain_env,
    secret_env,
    selector,
)

CONFIG_HASH_ANNOTATION = "mlcc-constructs/config-hash"
USER = "mlcc"
"""``USER`` for UID 1000: images have no passwd entry for it, and getpass.getuser() (torch
inductor, triton caches) fails without one."""
RUN_AS = 1000
HOME = "/home/mlcc"
MODEL_VOLUME = "model-weights"
WRAPPER_VOLUME = "mlcc-wrapper"
S3_CSI_DRIVER = "s3.csi.aws.com"
PV_CAPACITY = "1200Gi"  # required by Kubernetes, ignored by Mountpoint
SHM_MAX_GIB = 16


def render(prepared: PreparedDeployment) -> list[RenderedObject]:
    """Every object of the deployment, in apply order."""
    entries = [RenderedObject("ServiceAccount", service_account(prepared))]
    if prepared.container.delivers_env:
        entries.append(RenderedObject("ConfigMap", config_map(prepared)))
    if prepared.container.wrapper_files is not None:
        entries.append(RenderedObject("WrapperConfigMap", wrapper_config_map(prepared)))
    if prepared.source.kind == "s3":
        volume, claim = model_volume(prepared)
        entries += [RenderedObject("ModelVolume", volume), RenderedObject("ModelClaim", claim)]
    if prepared.cache is not None:
        from mlcc_constructs.core.cache import render_cache_config_maps

        entries += [
            RenderedObject("CacheConfigMap", obj)
            for obj in render_cache_config_maps(
                prepared.cache,
                workload_name=prepared.names.base,
                namespace=prepared.names.namespace,
            )
        ]
    entries += [
        RenderedObject("Deployment", deployment(prepared)),
        RenderedObject("Service", service(prepared)),
    ]
    return entries


def service_account(prepared: PreparedDeployment) -> dict[str, Any]:
    """The pod's identity; the IRSA role annotation when a role ARN is given."""
    meta = metadata(prepared, prepared.names.base)
    role = prepared.spec.service_account_role_arn
    if role:
        meta["annotations"] = {"eks.amazonaws.com/role-arn": role}
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": meta,
        "automountServiceAccountToken": False,
    }


def config_map(prepared: PreparedDeployment) -> dict[str, Any]:
    """The engine env (Tier 1, then Tier 2)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(prepared, prepared.names.config_map),
        "data": dict(prepared.container.engine_env),
    }


def wrapper_config_map(prepared: PreparedDeployment) -> dict[str, Any]:
    """The wrapper (stdlib-only Python) and the engine manifest it reads, mounted read-only at
    :data:`~mlcc_constructs.core.serving.prepare.container.WRAPPER_MOUNT`."""
    assert prepared.container.wrapper_files is not None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(prepared, prepared.names.wrapper),
        "data": dict(prepared.container.wrapper_files),
    }


def model_volume(prepared: PreparedDeployment) -> tuple[dict[str, Any], dict[str, Any]]:
    """Static Mountpoint S3 CSI PersistentVolume + claim for an ``s3://`` model."""
    source, names = prepared.source, prepared.names
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata(prepared, names.volume, namespaced=False),
        "spec": {
            "capacity": {"storage": PV_CAPACITY},
            "accessModes": ["ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": names.namespace, "name": names.claim},
            "mountOptions": [
                "read-only",
                "allow-other",
                f"uid={RUN_AS}",
                f"gid={RUN_AS}",
                f"prefix {source.prefix}",
                f"region {prepared.model_region}",
            ],
            "csi": {
                "driver": S3_CSI_DRIVER,
                "volumeHandle": f"s3-csi-{names.volume}",
                "readOnly": True,
                "volumeAttributes": {"bucketName": source.bucket},
            },
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(prepared, names.claim),
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": "",
            "volumeName": names.volume,
            "resources": {"requests": {"storage": PV_CAPACITY}},
        },
    }
    return volume, claim


def deployment(prepared: PreparedDeployment) -> dict[str, Any]:
    """The engine Deployment (module doc), with the CacheBackend injected when there is one."""
    plain = _deployment(prepared)
    if prepared.cache is None:
        return plain
    from mlcc_constructs.core.cache import inject_cache_backend

    return inject_cache_backend(plain, prepared.cache, engine_container=ENGINE_CONTAINER)


def _deployment(prepared: PreparedDeployment) -> dict[str, Any]:
    spec, names, box = prepared.spec, prepared.names, prepared.container
    memory_gib = int(box.requests["memory"].removesuffix("Gi"))
    env = plain_env(box.wrapper_env)
    if not box.delivers_env:  # args delivery: the engine's own variables (flags carry the rest)
        env += plain_env(tuple(box.engine_env.items()))
    env += plain_env((("HOME", HOME), ("USER", USER)))
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
    container.update(health_probes(box.health_path, "http"))
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
    if box.wrapper_files is not None:
        mounts.append({"name": WRAPPER_VOLUME, "mountPath": WRAPPER_MOUNT, "readOnly": True})
        volumes.append({"name": WRAPPER_VOLUME, "configMap": {"name": names.wrapper}})
    if prepared.source.kind == "s3":
        mount_path = prepared.target.model_mount_path
        mounts.append({"name": MODEL_VOLUME, "mountPath": mount_path, "readOnly": True})
        volumes.append(
            {
                "name": MODEL_VOLUME,
                "persistentVolumeClaim": {"claimName": names.claim, "readOnly": True},
            }
        )
    container["volumeMounts"] = mounts
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(prepared, names.base),
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": selector(prepared)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {
                    "labels": object_labels(prepared),
                    "annotations": {CONFIG_HASH_ANNOTATION: box.config_hash},
                },
                "spec": {
                    "serviceAccountName": names.base,
                    "automountServiceAccountToken": False,
                    # Service links inject <SERVICE>_PORT=tcp://... env vars; one whose name
                    # starts with the engine prefix would reach the wrapper as a flag.
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_AS,
                        "runAsGroup": RUN_AS,
                        "fsGroup": RUN_AS,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "nodeSelector": {
                        "node.kubernetes.io/instance-type": prepared.resolution.instance.node_name
                    },
                    # The app's GPU NodePool taints its nodes (core/platform/gpu_capacity.py).
                    "tolerations": [gpu_toleration()],
                    "terminationGracePeriodSeconds": 60,
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def service(prepared: PreparedDeployment) -> dict[str, Any]:
    """ClusterIP Service on the engine's port."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(prepared, prepared.names.base),
        "spec": {
            "type": "ClusterIP",
            "selector": selector(prepared),
            "ports": [
                {
                    "name": "http",
                    "port": prepared.container.port,
                    "targetPort": "http",
                    "protocol": "TCP",
                }
            ],
        },
    }
