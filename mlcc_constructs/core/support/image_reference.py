"""A container image reference split into its parts, the way containerd reads it: the engine
version its tag names (:mod:`mlcc_constructs.core.engines.image_version`) and the registry a
pull through cache serves (:mod:`mlcc_constructs.core.platform.image_cache`) both read it."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_HOST = "docker.io"
"""The registry of an image reference that names none (what containerd assumes)."""


@dataclass(frozen=True, kw_only=True)
class ImageReference:
    """An image reference split: ``host`` (``docker.io`` when it names none), ``repository``,
    ``tag`` and ``digest`` (each ``None`` when absent)."""

    host: str
    repository: str
    tag: str | None
    digest: str | None


def parse_image(image: str) -> ImageReference:
    """Split ``image`` the way containerd reads it: the first component is a registry host when
    it holds a ``.`` or ``:`` or is ``localhost``; otherwise the image is on Docker Hub (a
    registry's ``host:port/`` is never a tag)."""
    name, _, digest = image.partition("@")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = DEFAULT_HOST, name
    repository, tag = path, None
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = path.rsplit(":", 1)
    return ImageReference(host=host, repository=repository, tag=tag, digest=digest or None)
