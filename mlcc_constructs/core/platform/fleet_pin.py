"""The model version a fleet serves, pinned once: the weights (a promoted full model and its
content hash), the engine image (tag and digest) and engine version, the adapter versions.

Every stage serves the fleet's pin. A stage that declares another version is refused, naming
the stage and each field that differs, unless it is the fleet's rollout stage (the one stage
that may serve the next version first)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from mlcc_constructs.core.platform.fleet import WHERE, mismatch
from mlcc_constructs.core.support.errors import Problem

_IMAGE = re.compile(
    r"^[a-z0-9][a-z0-9._/:-]*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[0-9a-f]{64}$"
)
_HASH = re.compile(r"^[0-9a-f]{64}$")
_COMPONENT = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_VERSION = re.compile(r"^v[0-9a-f]{12}$")


@dataclass(frozen=True, kw_only=True)
class ModelPin:
    """One model version, everywhere the fleet serves it."""

    project: str
    """The project the model was promoted under (``mlcc model promote --project``)."""
    name: str
    """Its name (``mlcc model promote NAME``): every stage serves it from its layout home in the
    stage's own models bucket (``s3_layout.full_finetune``)."""
    home: str
    """Where the pipeline promotes it from into each stage's bucket: ``s3://bucket/prefix/``
    (its promoted home, e.g. the first stage's bucket)."""
    content_hash: str
    """The content hash ``mlcc model promote`` records (sha256, 64 hex digits): what every
    stage's copy must hash to."""
    engine_image: str
    """The engine image with its tag and digest: ``<repository>:<tag>@sha256:<digest>``."""
    engine_version: str
    """The engine version the image holds (the engine manifest's parser facts and
    ``min_version`` are checked against it)."""
    adapters: Mapping[str, str] = field(default_factory=dict)
    """LoRA adapter name -> version (``v<hash12>``). Default: none."""


def pin_problems(pin: ModelPin, *, pointer: str) -> list[Problem]:
    """The pin's own fields: a tag and a digest on the image, a full content hash, adapter
    versions as ``mlcc adapter`` names them."""
    problems = [
        *mismatch(
            _IMAGE,
            pin.engine_image,
            message="the engine image is pinned by tag and digest",
            pointer=f"{pointer}/engine_image",
            allowed="<repository>:<tag>@sha256:<64 hex digits>",
        ),
        *mismatch(
            _HASH,
            pin.content_hash,
            message="not a content hash",
            pointer=f"{pointer}/content_hash",
            allowed="64 lowercase hex digits (mlcc model promote's record)",
        ),
    ]
    for key in ("project", "name"):
        problems += mismatch(
            _COMPONENT,
            getattr(pin, key),
            message=f"not a {key} name",
            pointer=f"{pointer}/{key}",
            allowed="lowercase letters, digits and '-'",
        )
    if not pin.home.startswith("s3://") or not pin.home.endswith("/"):
        problems.append(
            Problem(
                message="the model's home is an S3 prefix",
                where=WHERE,
                pointer=f"{pointer}/home",
                value=pin.home,
                allowed="s3://bucket/prefix/",
            )
        )
    if not pin.engine_version:
        problems.append(
            Problem(
                message="missing engine version", where=WHERE, pointer=f"{pointer}/engine_version"
            )
        )
    for name, version in sorted(pin.adapters.items()):
        problems += mismatch(
            _VERSION,
            version,
            message=f"not an adapter version for adapter {name!r}",
            pointer=f"{pointer}/adapters/{name}",
            allowed="v<12 hex digits>",
        )
    return problems


def stage_pin_problems(
    fleet_pin: ModelPin,
    stage_pin: ModelPin | None,
    *,
    stage: str,
    rollout_stage: str | None,
    deployment: str,
) -> list[Problem]:
    """A stage serves the fleet's pin for ``deployment``: a stage pin (``stage_pin``) that
    differs is refused, one problem per field, unless ``stage`` is the rollout stage."""
    if stage_pin is None or stage_pin == fleet_pin:
        return []
    pointer = f"/stages/{stage}/models/{deployment}"
    if stage == rollout_stage:
        return pin_problems(stage_pin, pointer=pointer)
    problems = []
    for item in fields(ModelPin):
        pinned, served = getattr(fleet_pin, item.name), getattr(stage_pin, item.name)
        if pinned != served:
            problems.append(
                Problem(
                    message=f"stage {stage!r} would serve deployment {deployment!r} with "
                    f"another {item.name} than the fleet pins ({pinned!r})",
                    where=WHERE,
                    pointer=f"{pointer}/{item.name}",
                    value=served,
                    allowed=repr(pinned),
                    fix="serve the fleet's pinned version, or declare this stage the fleet's "
                    f"rollout stage (rollout_stage={stage!r})"
                    + (f"; the rollout stage is {rollout_stage!r}" if rollout_stage else ""),
                )
            )
    return problems
