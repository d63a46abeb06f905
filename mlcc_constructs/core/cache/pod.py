"""What injection adds to the pod besides the engine's wire: the ``lmcache-mp-server``
native sidecar, the shared ``/dev/shm``, and the checks that their names and ports are free.

Pointers name the Deployment's pod template (``/spec/template/spec/...``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from mlcc_constructs.core.cache.adapters import mp_server, substitute
from mlcc_constructs.core.cache.admission import Admission, split_endpoint
from mlcc_constructs.core.support.errors import MlccError, Problem
from mlcc_constructs.core.support.quantity import format_quantity, parse_quantity


def pod_template(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod template of a workload (``spec.template``), or ``obj`` when it is one."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        template: dict[str, Any] = spec["template"]
        return template
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        return obj
    raise MlccError(
        Problem(
            message="not a workload or pod template: no spec.template or spec.containers",
            pointer="/spec",
            fix="pass a Deployment (or any object with spec.template) or a pod template",
        )
    )


def check_free(
    pod: Mapping[str, Any], engine: Mapping[str, Any], admission: Admission
) -> list[Problem]:
    """Problems with injecting into ``pod``: names, ports or paths the injection needs are
    taken, or the spec needs the operator."""
    mp = mp_server()
    problems: list[Problem] = []
    spec, adapter = admission.spec, admission.adapter
    all_containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
    if any(c.get("name") == mp.container for c in all_containers):
        problems.append(
            Problem(
                message=f"the pod already has a container named {mp.container}",
                pointer="/spec/template/spec",
                fix="rename that container: the name is reserved for the LMCache MP sidecar",
            )
        )
    names = {v.get("name") for v in pod.get("volumes", [])}
    wanted = [mp.shm_volume] + ([adapter.client_config.volume] if adapter.client_config else [])
    for volume in wanted:
        if volume in names:
            problems.append(
                Problem(
                    message=f"the pod already has a volume named {volume}",
                    pointer="/spec/template/spec/volumes",
                    fix="rename that volume: the name is reserved for the LMCache MP wire",
                )
            )
    ports = {
        p.get("containerPort"): c.get("name") for c in all_containers for p in c.get("ports", [])
    }
    for port in (admission.server.port, mp.http_port):
        if port in ports:
            problems.append(
                Problem(
                    message=f"port {port} is already used by container {ports[port]}",
                    pointer="/spec/template/spec",
                    fix="the LMCache MP server listens there: change one of the two ports",
                )
            )
    if adapter.client_config is not None:
        for mount in engine.get("volumeMounts", []):
            if mount.get("mountPath") == adapter.client_config.mount_path:
                problems.append(
                    Problem(
                        message=(
                            f"the engine already mounts {adapter.client_config.mount_path}: "
                            "the path is reserved for the LMCache client config"
                        ),
                        pointer="/spec/template/spec/containers",
                    )
                )
    if spec.remote_storage is not None and spec.remote_storage.ownership == "Managed":
        problems.append(
            Problem(
                message="Managed remote storage needs the operator (it observes the endpoint)",
                pointer="/spec/remoteStorage/ownership",
                value="Managed",
                fix="use ownership External with endpoint host:port, or emit the CacheBackend CR",
            )
        )
    return problems


def shm(
    pod: dict[str, Any], engine: dict[str, Any], budget: Fraction
) -> tuple[dict[str, Any], list[Problem]]:
    """Mount a memory ``/dev/shm`` of ``budget`` into the engine; reuse one it already has.

    An existing writable memory emptyDir grows by ``budget`` (the engine still needs its
    own share, e.g. for NCCL); anything else mounted there cannot hold the cache.
    """
    mp = mp_server()
    volumes: list[dict[str, Any]] = pod.setdefault("volumes", [])
    mounts: list[dict[str, Any]] = engine.setdefault("volumeMounts", [])
    existing = next((m for m in mounts if m.get("mountPath") == mp.shm_mount_path), None)
    if existing is None:
        volumes.append(
            {
                "name": mp.shm_volume,
                "emptyDir": {"medium": "Memory", "sizeLimit": format_quantity(budget)},
            }
        )
        mount = {"name": mp.shm_volume, "mountPath": mp.shm_mount_path}
        mounts.append(dict(mount))
        return mount, []
    volume = next((v for v in volumes if v.get("name") == existing.get("name")), None)
    empty_dir = volume.get("emptyDir") if volume else None
    if (
        existing.get("readOnly")
        or existing.get("subPathExpr")
        or not isinstance(empty_dir, dict)
        or empty_dir.get("medium") != "Memory"
    ):
        return {}, [
            Problem(
                message=(
                    f"the engine mounts {mp.shm_mount_path} from volume {existing.get('name')}, "
                    "which is not a writable memory emptyDir"
                ),
                pointer="/spec/template/spec/volumes",
                fix="mount /dev/shm from an emptyDir with medium Memory, or drop that mount",
            )
        ]
    if "sizeLimit" in empty_dir:
        empty_dir["sizeLimit"] = format_quantity(parse_quantity(empty_dir["sizeLimit"]) + budget)
    mount = {"name": existing["name"], "mountPath": mp.shm_mount_path}
    if existing.get("subPath"):
        mount["subPath"] = existing["subPath"]
    return mount, []


def sidecar(
    admission: Admission, shm_mount: Mapping[str, Any], engine: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``lmcache-mp-server`` native sidecar (an init container with restartPolicy Always)."""
    mp = mp_server()
    spec, values, server = admission.spec, admission.values, admission.server
    args = [substitute(a, values) for a in mp.args]
    env: list[dict[str, Any]] = [
        {"name": name, "value": substitute(value, values)} for name, value in mp.env
    ]
    env.append({"name": mp.managed_env[0], "value": mp.managed_env[1]})
    remote = spec.remote_storage
    if remote is not None and remote.endpoint is not None:
        host_port = split_endpoint(remote.endpoint)
        assert host_port is not None
        l2 = {"type": "resp", "host": host_port[0], "port": host_port[1]}
        args += [mp.l2_adapter_flag, json.dumps(l2, separators=(",", ":"))]
        redis = remote.redis
        for role, secret in (
            ("username", redis.username if redis else None),
            ("password", redis.password if redis else None),
        ):
            if secret is not None:
                env.append(
                    {
                        "name": mp.resp_auth_env[role],
                        "valueFrom": {"secretKeyRef": secret.to_dict()},
                    }
                )
    security: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # Same identity as the engine: the two processes share /dev/shm segments.
    for key in ("runAsNonRoot", "runAsUser", "runAsGroup"):
        if key in engine.get("securityContext", {}):
            security[key] = engine["securityContext"][key]

    def probe(name: str) -> dict[str, Any]:
        return {
            "httpGet": {"path": mp.health_path, "port": mp.http_port_name, "scheme": "HTTP"},
            "timeoutSeconds": 2,
            **mp.probes[name],
        }

    return {
        "name": mp.container,
        "image": server.image.strip(),
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "command": list(mp.command),
        "args": args,
        "env": env,
        "ports": [
            {"name": mp.port_name, "containerPort": server.port, "protocol": "TCP"},
            {"name": mp.http_port_name, "containerPort": mp.http_port, "protocol": "TCP"},
        ],
        "resources": {kind: dict(v) for kind, v in server.resources.items()},
        "volumeMounts": [dict(shm_mount)],
        "startupProbe": probe("startupProbe"),
        "readinessProbe": probe("readinessProbe"),
        "livenessProbe": probe("livenessProbe"),
        "securityContext": security,
    }


__all__ = ("check_free", "pod_template", "shm", "sidecar")
