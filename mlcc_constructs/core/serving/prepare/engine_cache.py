"""The engine's compile and download caches in the pod: the manifest's ``cache_dirs`` become
env (each variable → ``<CACHE_MOUNT>/<dir>``) and one ``emptyDir`` volume mounted at
:data:`CACHE_MOUNT`, where the target's pods take volumes (``pod_volumes``: eks).

Decisions (for reviewers):

* **Storage.** An ``emptyDir`` on the node's ephemeral storage. Its data is kept while the pod
  stays on its node, so a container restart (a crash, an OOM kill, a failed startup or liveness
  probe) finds the torch.compile, Triton and FlashInfer caches and a Hub download in place; a
  new pod (a rollout, an eviction, a scale-up, a replaced node) starts empty
  (https://kubernetes.io/docs/concepts/storage/volumes/#emptydir). On an Auto Mode instance
  with NVMe instance store larger than the NodeClass's ``ephemeralStorage``, that storage is
  the NVMe (RAID 0 over several drives, formatted by Auto Mode; automode-learn-instances,
  "Considerations", https://docs.aws.amazon.com/eks/latest/userguide/automode-learn-instances.html),
  else the NodeClass's EBS data volume.
* **Why not a cache that outlives the pod.** A ``hostPath`` directory would, but the Baseline
  and Restricted Pod Security Standards forbid ``hostPath`` volumes
  (https://kubernetes.io/docs/concepts/security/pod-security-standards/; the namespaces warn
  and audit at ``restricted``), and a node-wide directory shared by every deployment on the
  node lets one pod plant compiled kernels another loads and runs. A ``local``
  PersistentVolume needs a directory prepared on each node (Auto Mode nodes take no user
  software) and pins its claim to one node that Karpenter replaces. So only container restarts
  are covered, and docs/guides/cold-start.md says so.
* **No size limit.** Going over an ``emptyDir`` ``sizeLimit`` evicts the pod, which is exactly
  what loses the cache; the node's ephemeral storage is sized for it instead
  (:data:`~mlcc_constructs.core.platform.gpu_capacity.EPHEMERAL_STORAGE`).
* **The user's value wins.** A variable the deployment sets itself (spec env, engine env,
  a secret) is not overridden: that cache stays where the user put it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from mlcc_constructs.core.engines.manifests import EngineManifest

CACHE_VOLUME = "engine-cache"
"""The cache volume's name in the pod."""
CACHE_MOUNT = "/var/cache/mlcc"
"""Where the engine container mounts it."""


def cache_env(manifest: EngineManifest, taken: Collection[str] = ()) -> tuple[tuple[str, str], ...]:
    """``(variable, directory)`` for each of the engine's cache directories whose variable the
    deployment does not set itself (``taken``), in manifest order."""
    return tuple(
        (entry.env, f"{CACHE_MOUNT}/{entry.dir}")
        for entry in manifest.cache_dirs
        if entry.env not in taken
    )


def cache_mount() -> dict[str, Any]:
    """The engine container's mount of the cache volume."""
    return {"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT}


def cache_volume() -> dict[str, Any]:
    """The cache volume (module doc: an ``emptyDir`` on the node's ephemeral storage)."""
    return {"name": CACHE_VOLUME, "emptyDir": {}}
