"""The engine config of a deployment, computed one way for every consumer: :func:`prepare`
(``mlcc render``, the charts) and ``mlcc env`` / ``mlcc argv``."""

from __future__ import annotations

from dataclasses import replace

from mlcc_constructs.core.engines.manifests import EngineRegistry, parse_version
from mlcc_constructs.core.platform.targets import TargetDescriptor, load_target
from mlcc_constructs.core.serving.resolve.lora_fit import lora_fit, lora_memory_cap
from mlcc_constructs.core.serving.resolve.resolution import Resolution
from mlcc_constructs.core.serving.resolve.settings import EngineSettings, read_settings, release
from mlcc_constructs.core.serving.resolve.tiers import resolve_for_target
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError


def with_engine_version(spec: DeploymentSpec, registry: EngineRegistry) -> DeploymentSpec:
    """``spec`` with ``engine_version`` set, when it is not, to the version its image runs:
    the one the image's tag names, else the pinned default image's, so the version gates and
    the recorded facts of that release apply. Unchanged when the release cannot be told or is
    refused (:func:`~.settings.release`, or below the engine's ``min_version``: the resolver
    reports why, at the field the user set)."""
    if spec.engine.version is not None:
        return spec
    try:
        manifest = registry.get(spec.engine.name, pointer="/engine/name")
    except MlccError:
        return spec  # an unknown engine: the resolver reports it
    found = release(spec, manifest)
    version, minimum = parse_version(found.version or ""), parse_version(manifest.min_version)
    if version is None or found.problems or (minimum is not None and version < minimum):
        return spec  # refused: the resolver names the field the user set (the image)
    return replace(spec, engine=replace(spec.engine, version=found.version))


def resolve_deployment(
    spec: DeploymentSpec, *, target: TargetDescriptor | None, registry: EngineRegistry
) -> tuple[DeploymentSpec, Resolution, list[str]]:
    """The engine config of ``spec`` exactly as ``prepare`` computes it (``mlcc env`` and
    ``mlcc argv`` call this too): the engine version the image runs, the LoRA rank fit, resolution
    against ``target`` and the LoRA memory cap. Returns the spec with its engine version, the
    resolution and the rank-fit warnings; raises :class:`MlccError` with every problem."""
    spec = with_engine_version(spec, registry)
    settings = read_settings(spec, registry)  # the user's env, parsed once for every reader
    fit = lora_fit(spec, settings)
    computed, notes = dict(fit.computed), list(fit.warnings)
    served, served_notes = served_model_name(spec, settings)
    computed.update(served)
    notes += served_notes
    resolution = resolve_for_target(
        spec, settings=settings, target=target, computed=computed, problems=list(fit.problems)
    )
    lora_memory_cap(
        spec, resolution, settings, pipeline_parallel_degree=resolution.pipeline_parallel_degree
    )
    return spec, resolution, notes


def served_model_name(
    spec: DeploymentSpec, settings: EngineSettings
) -> tuple[dict[str, str], list[str]]:
    """The computed Tier-1 ``served_model_name``: the deployment's name, so clients call it by
    the name they deployed it under (a ``served_model_name`` the user sets wins). An engine
    that declares no such setting serves under its model path, and a note says so."""
    if spec.served_model_name is not None or spec.name is None:
        return {}, []
    manifest = settings.manifest
    if manifest.capability("served_model_name") is not None:
        return {"served_model_name": spec.name}, []
    return {}, [
        f"{manifest.engine} declares no served_model_name setting: it serves the model under "
        "its own default name (often the model path), which clients must send as 'model'"
    ]


def resolve_deployment_for_its_target(
    spec: DeploymentSpec, *, registry: EngineRegistry
) -> tuple[DeploymentSpec, Resolution, list[str]]:
    """:func:`resolve_deployment` with ``spec.target`` loaded; an unknown target is reported
    together with every other problem of the spec."""
    try:
        target = load_target(spec.target)
    except MlccError as error:
        problems = list(error.problems)
        try:
            resolve_deployment(spec, target=None, registry=registry)
        except MlccError as more:
            problems.extend(more.problems)
        raise MlccError(problems) from None
    return resolve_deployment(spec, target=target, registry=registry)
