"""How the engine reads the weights: ``model_load`` ``mount`` or ``stream``, decided once.

``stream`` needs every one of: the engine declares a streaming load format (its manifest's
``model_load.stream``), the engine version is at least that format's ``since``, the model source
is one it streams from (``s3://``), the target lets its pods read S3 themselves (its
``model_streaming``), and, for the default, the user did not set the load-format flag through
Tier 2 (then the load format is theirs and the model is mounted). The spec's ``model_load``
defaults to ``stream`` where all of them hold and to ``mount`` otherwise; an explicit ``stream``
where one fails is refused, naming it.

With ``stream`` the engine is told the model's URI instead of the mount path, and the load format
(``<PREFIX><FLAG>``, e.g. ``VLLM_LOAD_FORMAT=runai_streamer``) joins Tier 1; the format's plain
variables (the model bucket's region) join the container's env. Both are then Tier 1 closed: an
env key setting one of them is refused (:mod:`.computed_keys`). The model mount stays only for
LoRA adapters (they are delivered under the model prefix: seed section 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlcc_constructs.core.engines.manifests import EngineManifest, StreamLoad, parse_version
from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.serving.resolve.computed_keys import (
    env_problems,
    load_format_keys,
    stream_keys,
)
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, ModelLoad, ModelSource
from mlcc_constructs.core.support.errors import Problem

POINTER = "/model/load"


@dataclass(frozen=True, kw_only=True)
class LoadDecision:
    """The resolved ``model_load`` and what it adds.

    Fields:

    ``mode``: ``mount`` or ``stream``.
    ``stream``: the engine's streaming load format, with ``stream``; else ``None``.
    ``tier1``: the load-format setting (``(key, value)``), with ``stream``; else empty.
    ``problems``: why an explicit ``stream`` is refused.
    """

    mode: ModelLoad
    stream: StreamLoad | None = None
    tier1: tuple[tuple[str, str], ...] = ()
    problems: tuple[Problem, ...] = ()


def stream_blockers(
    *,
    manifest: EngineManifest,
    version: tuple[int, int, int] | None,
    target: TargetDescriptor | None,
    source: ModelSource,
    user_keys: frozenset[str],
) -> list[str]:
    """Why the deployment cannot stream its weights (empty: it can); ``version`` ``None``
    (unknown) passes the version gate."""
    stream = manifest.stream_load
    if stream is None:
        return [f"{manifest.engine} declares no streaming load format (manifest model_load.stream)"]
    reasons = []
    if source.kind not in stream.sources:
        reasons.append(
            f"the model {source.uri!r} is a {source.kind} model; {manifest.engine} streams from "
            + ", ".join(f"{kind}://" for kind in stream.sources)
            + " only"
        )
    since = parse_version(stream.since or "")
    if since and version is not None and version < since:
        reasons.append(
            f"{manifest.engine} streams ({stream.flag} {stream.value}) from {stream.since}"
        )
    if target is not None and not target.model_streaming:
        why = target.notes.get("model_load", "its pods read the model from the mount only")
        reasons.append(f"target {target.name!r} cannot stream: {why}")
    reasons += [
        f"env sets {key}: the load format is the user's"
        for key in load_format_keys(manifest, stream)
        if key in user_keys
    ]
    return reasons


def decide(
    spec: DeploymentSpec,
    *,
    manifest: EngineManifest,
    version: tuple[int, int, int] | None,
    target: TargetDescriptor | None,
    source: ModelSource,
) -> LoadDecision:
    """The deployment's ``model_load`` (module doc)."""
    if spec.model.load == "mount":
        return LoadDecision(mode="mount")
    explicit = spec.model.load == "stream"
    blockers = stream_blockers(
        manifest=manifest,
        version=version,
        target=target,
        source=source,
        # asked for: the load format is the library's, and a user's key is refused below
        user_keys=frozenset() if explicit else frozenset(spec.engine.env),
    )
    if blockers:
        if spec.model.load != "stream":
            return LoadDecision(mode="mount")
        problem = Problem(
            message="model.load 'stream' is not possible here: " + "; ".join(blockers),
            pointer=POINTER,
            value="stream",
            allowed="mount" + (", or leave it unset" if source.kind == "s3" else ""),
            fix="set model.load: mount (or drop it), or stream an s3:// model with an engine "
            "that declares model_load.stream on a target with model_streaming",
        )
        return LoadDecision(mode="mount", problems=(problem,))
    stream = manifest.stream_load
    assert stream is not None  # no blockers: the engine declares one
    key = manifest.env_var_prefix + stream.suffix()
    return LoadDecision(
        mode="stream",
        stream=stream,
        tier1=((key, stream.value),),
        # Tier 1 closed: what streaming sets (the load format, the bucket's region)
        problems=tuple(env_problems(spec.engine.env, stream_keys(manifest, stream))),
    )


def stream_env(
    stream: StreamLoad | None, *, model_region: str | None
) -> tuple[tuple[str, str], ...]:
    """The plain variables the streaming load format needs (its ``env``, each from the
    deployment fact it names), in the manifest's order; facts not known are left out."""
    if stream is None:
        return ()
    facts = {"model_region": model_region}
    return tuple(
        (name, value) for name, fact in stream.env.items() if (value := facts.get(fact)) is not None
    )
