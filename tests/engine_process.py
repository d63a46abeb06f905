"""What the engine process of a rendered deployment starts with: its argv and environment.

Args delivery: the container's command and args, and its env. Env delivery: the delivered
wrapper run as the pod runs it (``python3 -I -S``: nothing of this package importable) on the
pod's env (the ConfigMap through ``envFrom``, then the container's ``env``) and the container's
args, asked for the argv (``--print``) and the environment it would exec the engine with
(``--print-env``). Secret-backed env entries are left out (no Secret here).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mlcc_constructs.core.serving.kinds.leader_worker_set import group_env
from mlcc_constructs.core.serving.prepare.container import MOUNTED_WRAPPER_COMMAND, WRAPPER_MOUNT
from mlcc_constructs.core.wrapper import MANIFEST_ENV


def _plain(entries: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in entries if "value" in e}


def _kubelet_expand(arg: str, env: Mapping[str, str]) -> str:
    """``$(VAR)`` in a container's args, expanded from its env as the kubelet does."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), arg)


def engine_process(
    objects: Sequence[Mapping[str, Any]], tmp_path: Path, *, role: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment the engine starts with (module doc); ``role`` (``leader`` or
    ``worker``): of a LeaderWorkerSet's group 0, with the ``LWS_*`` env its controller adds."""
    deployment = next((o for o in objects if o["kind"] == "Deployment"), None)
    script: list[str] | None = None
    pod_env: dict[str, str] = {}
    lws = next((o for o in objects if o["kind"] == "LeaderWorkerSet"), None)
    if lws is not None:
        assert role is not None, "a LeaderWorkerSet: pass role"
        group = lws["spec"]["leaderWorkerTemplate"]
        template = group["leaderTemplate" if role == "leader" else "workerTemplate"]
        deployment = {"spec": {"template": template}}
        meta = lws["metadata"]
        pod_env = group_env(meta["name"], meta["namespace"], group["size"], role)
    if deployment is not None:
        config_maps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            env.update(config_maps[source["configMapRef"]["name"]]["data"])
        env.update(_plain(container.get("env", [])))
        env.update(pod_env)
        command = container["command"]
        args = [_kubelet_expand(a, env) for a in container.get("args", [])]
        if tuple(command) == MOUNTED_WRAPPER_COMMAND:
            mount = next(
                v["configMap"]["name"]
                for v in deployment["spec"]["template"]["spec"]["volumes"]
                for m in container["volumeMounts"]
                if m["mountPath"] == WRAPPER_MOUNT and m["name"] == v["name"]
            )
            for name, text in config_maps[mount]["data"].items():
                (tmp_path / name).write_text(text)
            env[MANIFEST_ENV] = str(tmp_path / "manifest.json")
            script = [str(tmp_path / "wrapper.py")]
    else:
        (iec,) = objects
        worker = iec["spec"]["worker"]
        env = _plain(worker.get("environmentVariables", []))
        command, args = worker["command"], worker.get("args", [])
        if command[:2] == ["python3", "-c"]:
            script = ["-c", command[2]]
    if script is None:
        return [*command, *args], env

    def run(mode: str) -> Any:
        out = subprocess.run(
            [sys.executable, "-I", "-S", *script, mode, *args],
            env={"LC_ALL": "C.UTF-8", **env},  # no locale coercion adding LC_CTYPE
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)

    exec_env = {k: v for k, v in run("--print-env").items() if k != "LC_ALL"}
    return run("--print"), exec_env
