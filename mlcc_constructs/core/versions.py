"""Every pinned version the library emits, read from ``data/versions.json`` (its one reader).

Kubernetes (the cluster and the schemas objects are validated against), EKS add-on versions,
and each engine's default image with the engine version that image holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.errors import fail

VERSIONS_FILE = "versions.json"


@dataclass(frozen=True, kw_only=True)
class PinnedVersions:
    """The content of ``versions.json``."""

    kubernetes: str
    """Kubernetes minor version, e.g. ``1.33``."""
    eks_addons: Mapping[str, str]
    """EKS add-on name → version (``v1.15.0-eksbuild.1``)."""
    engine_images: Mapping[str, str]
    """Engine → its pinned default image."""
    engine_versions: Mapping[str, str]
    """Engine → the engine version its pinned image holds (for version gates)."""

    def addon(self, name: str) -> str:
        """The pinned version of EKS add-on ``name``."""
        if name not in self.eks_addons:
            raise fail(
                f"no pinned version for EKS add-on {name!r}",
                where=f"mlcc_constructs/data/{VERSIONS_FILE}",
                pointer=f"/eks_addons/{name}",
                allowed=", ".join(sorted(self.eks_addons)),
            )
        return self.eks_addons[name]


@cache
def pinned() -> PinnedVersions:
    """The pinned versions (read once per process)."""
    document = json.loads(data_path(VERSIONS_FILE).read_text(encoding="utf-8"))
    return PinnedVersions(
        kubernetes=str(document["kubernetes"]),
        eks_addons=MappingProxyType(dict(document["eks_addons"])),
        engine_images=MappingProxyType(dict(document["engine_images"])),
        engine_versions=MappingProxyType(dict(document["engine_versions"])),
    )
