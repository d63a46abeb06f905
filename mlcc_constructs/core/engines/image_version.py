"""Which engine release a deployment runs: the one its image holds (issue 39).

The flags, their values and the version gates are checked against one release, and that
release must be the one the pod runs. So the version follows the image:

* an image whose tag names a version (``vllm/vllm-openai:v0.33.0``,
  ``djl-inference:0.33.0-lmi15.0.0-cu128``: the tag's leading ``[v]X.Y[.Z]``) runs that version;
  without an image, the engine's pinned default image (``data/versions.json``) does;
* an ``engine.version`` that contradicts that tag is refused (checked against one release
  while the pod runs another);
* an image whose tag names no version (untagged, digest only, ``latest``) needs
  ``engine.version``, for an engine with recorded parser facts (which facts apply depends on
  it); for another engine the version only gates ``min_version``/``since``, and the resolver
  warns that they go unchecked;
* the version must be one whose parser facts are recorded (``data/engine_parsers``), for an
  engine that has any: a release without them is refused, listing the recorded ones.

Plain functions over the spec's strings and the pinned data the caller passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlcc_constructs.core.engines.manifests import parse_version
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.support.image_reference import parse_image

FACTS_TOOL = "tools/engine_parser_facts.py"


def image_tag(image: str) -> str | None:
    """The tag of an image reference (``repo:tag[@sha256:...]``), or ``None`` when it has none
    (a registry's ``host:port/`` is not a tag)."""
    return parse_image(image).tag


def tag_version(image: str) -> str | None:
    """The engine version an image's tag names (``v0.33.0`` -> ``0.33.0``), or ``None``."""
    tag = image_tag(image)
    return _normal(tag)


def _normal(version: str | None) -> str | None:
    parsed = parse_version(version) if version else None
    return ".".join(str(part) for part in parsed) if parsed else None


@dataclass(frozen=True, kw_only=True)
class EngineRelease:
    """The release a deployment's engine runs, and why its spec cannot say (module doc).

    ``version``: ``X.Y.Z``, or ``None`` when unknown (or the given one is refused).
    ``problems``: a contradiction, a missing version, a release without recorded facts."""

    version: str | None
    problems: tuple[Problem, ...] = ()


def engine_release(
    *,
    engine: str,
    given: str | None,
    image: str | None,
    pinned_image: str | None,
    pinned_version: str | None,
    recorded: Sequence[str],
) -> EngineRelease:
    """The release ``engine`` runs in ``image`` (``None``: ``pinned_image``, which holds
    ``pinned_version``), given ``engine.version`` ``given``; ``recorded``: the versions with
    parser facts (module doc). A ``given`` that is not a version number is left to the reader
    that refuses it."""
    runs = image or pinned_image
    from_tag = tag_version(image) if image else _normal(pinned_version)
    named = _normal(given)
    if given is not None and named is None:
        return EngineRelease(version=None)
    which = f"the image {runs}" if image else f"the pinned image {runs}"
    if named is not None and from_tag is not None and named != from_tag:
        return EngineRelease(
            version=None,
            problems=(
                Problem(
                    message=f"engine.version {given} contradicts {which}, which runs {engine} "
                    f"{from_tag} (its tag): the flags would be checked against one release "
                    "while the pod runs another",
                    pointer="/engine/version",
                    value=given,
                    allowed=f"{from_tag} (the image's tag)",
                    fix="drop engine.version (it follows the image), or set engine.image to an "
                    f"image of {engine} {named}",
                ),
            ),
        )
    version = named or from_tag
    listed = ", ".join(recorded)
    if version is None:
        if not recorded or image is None:
            return EngineRelease(version=None)
        return EngineRelease(
            version=None,
            problems=(
                Problem(
                    message=f"the image's tag names no {engine} version (untagged, digest only "
                    "or a moving tag), so the release whose flags to check is unknown",
                    pointer="/engine/image",
                    value=image,
                    allowed=f"a tag with the version (e.g. :v{recorded[-1]}), or engine.version "
                    f"set (recorded: {listed})",
                    fix=f"set engine.version (--engine-version) to the {engine} version the "
                    "image holds",
                ),
            ),
        )
    if recorded and version not in recorded:
        pointer, value = ("/engine/version", given) if named else ("/engine/image", runs)
        return EngineRelease(
            version=version,
            problems=(
                Problem(
                    message=f"{engine} {version} has no recorded parser facts: its flags and "
                    "values cannot be checked",
                    pointer=pointer,
                    value=value,
                    allowed=f"a {engine} release with recorded facts: {listed}",
                    fix=f"use an image of {engine} {' or '.join(recorded)}, or record the "
                    f"release's parser ({FACTS_TOOL} writes mlcc_constructs/data/engine_parsers/"
                    f"{engine}/{version}.json)",
                ),
            ),
        )
    return EngineRelease(version=version)
