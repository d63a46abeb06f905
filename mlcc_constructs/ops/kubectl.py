"""The live state of a deployment, from ``kubectl`` (the current kube context).

:func:`discover` finds the Running serving pods (URL = pod IP + the engine's port), the env
of the first one (container env + envFrom ConfigMaps) for the live rank limit, whether it
mounts the model prefix, and, for a target that renders an ``InferenceEndpointConfig``, the
live one. :func:`cluster_model_mounts` lists the S3 model prefixes the whole cluster mounts
(for ``mlcc adapter clean``).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from mlcc_constructs.core.adapters.clean import ModelMount, model_mounts
from mlcc_constructs.core.adapters.deployment import LiveState
from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.serving.kinds.registry import kind_named
from mlcc_constructs.core.support.errors import MlccError, fail


def kubectl(
    *argv: str,
    stdin: str | None = None,
    fix: str = "check the kube context, --namespace and --deployment-name",
) -> Any:
    """``kubectl ARGV -o json``, parsed (``None`` for no output, e.g. ``--ignore-not-found`` on
    a missing object); ``stdin`` is fed to it (``apply -f -``); a missing kubectl or a failed
    call is an error whose fix is ``fix``."""
    try:
        done = subprocess.run(
            ["kubectl", *argv, "-o", "json"],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError as error:
        raise fail("kubectl is not on PATH", fix="install kubectl or pass --pod-url") from error
    if done.returncode != 0:
        raise fail(f"kubectl {' '.join(argv)} failed: {done.stderr.strip()}", fix=fix)
    return json.loads(done.stdout) if done.stdout.strip() else None


def discover(
    *,
    target: str,
    namespace: str,
    selector: str,
    port: object,
    iec_name: str | None,
) -> tuple[list[str], LiveState]:
    """Running pods' URLs (sorted by pod name) and the live state.

    ``selector`` picks the serving pods, ``port`` is the engine's; the live
    object named ``iec_name`` of the target's workload kind is read when an operator makes the
    pods from it (an ``InferenceEndpointConfig``).
    """
    pods = kubectl("get", "pods", "-n", namespace, "-l", selector)["items"]
    running = sorted(
        (p for p in pods if p.get("status", {}).get("phase") == "Running"),
        key=lambda p: p["metadata"]["name"],
    )
    urls = [f"http://{p['status']['podIP']}:{port}" for p in running if p["status"].get("podIP")]
    descriptor = load_target(target)
    pod_env: dict[str, str] | None = None
    s3_mount: bool | None = None
    if running:
        containers = running[0]["spec"].get("containers", [])
        pod_env = {}
        mount_path = descriptor.adapter_delivery.mount_path
        s3_mount = False
        for container in containers:
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef", {}).get("name")
                if ref:
                    data = kubectl("get", "configmap", ref, "-n", namespace).get("data", {})
                    pod_env.update({str(k): str(v) for k, v in data.items()})
            pod_env.update(
                {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}
            )
            if any(m.get("mountPath") == mount_path for m in container.get("volumeMounts", [])):
                s3_mount = True
    iec = None
    workload = kind_named(descriptor.workload) if descriptor.workload else None
    if workload is not None and workload.requires and iec_name:
        # The pods come from an operator's custom resource (the IEC): read it, live.
        iec = kubectl("get", workload.plural, iec_name, "-n", namespace)
    return urls, LiveState(pod_env=pod_env, iec=iec, s3_mount=s3_mount)


def cluster_model_mounts() -> list[ModelMount]:
    """Every S3 model prefix the current cluster mounts (Mountpoint PersistentVolumes), serves
    through an InferenceEndpointConfig (none when that CRD is not installed) or streams (the
    Deployments' streamed-model annotation)."""
    fix = "check the kube context (the clean reads PersistentVolumes cluster-wide), or --force"
    volumes = kubectl("get", "persistentvolumes", fix=fix) or {}
    try:
        configs = kubectl("get", "inferenceendpointconfigs", "--all-namespaces", fix=fix)
    except MlccError as error:
        if "the server doesn't have a resource type" not in str(error):
            raise
        configs = None  # no HyperPod inference operator in this cluster
    deployments = kubectl("get", "deployments", "--all-namespaces", fix=fix) or {}
    return model_mounts(volumes, configs, deployments)
