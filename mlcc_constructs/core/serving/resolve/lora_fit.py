"""The LoRA rules applied to one deployment at synth (seed lora-delivery §3): the max LoRA rank
fitted to its recorded adapters, and the LoRA buffer checked against the memory cap. Both read
the user's settings as parsed once (:mod:`.settings`), at the pointer the user set them."""

from __future__ import annotations

from dataclasses import dataclass

from mlcc_constructs.core.adapters.lora_rank import fit_max_rank
from mlcc_constructs.core.engines.manifests import EngineManifest
from mlcc_constructs.core.engines.values import COMPANION_DEFAULTS, companion_default
from mlcc_constructs.core.serving.resolve.resolution import Resolution
from mlcc_constructs.core.serving.resolve.settings import EngineSettings
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, EngineSpec
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

DEFAULT_MAX_LORAS = 1
"""Adapters per batch assumed by the memory cap when the engine declares no default."""


@dataclass(frozen=True, kw_only=True)
class LoraFit:
    """The rank fit of one deployment.

    Fields:

    ``computed``: The library-computed Tier-1 values (``{"lora_max_rank": "64"}``); a user's
        explicit rank wins over them in resolution.
    ``warnings``: Notes for the user.
    ``problems``: What stops the fit, reported with every other problem of the spec.
    """

    computed: dict[str, str]
    warnings: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()


def lora_fit(spec: DeploymentSpec, settings: EngineSettings) -> LoraFit:
    """With LoRA on and recorded adapters or tune ranks, the max LoRA rank they need; a user's
    explicit rank wins (it must be one the engine allows)."""
    if not spec.lora.enabled or not (spec.lora.adapters or spec.lora.tune_ranks):
        return LoraFit(computed={})
    manifest = settings.manifest
    capability = manifest.capability("lora_max_rank")
    default = companion_default(manifest, "lora_max_rank")
    if capability is None or default is None:
        return LoraFit(
            computed={},
            warnings=(
                f"{manifest.engine} declares no lora_max_rank capability: the max LoRA rank is "
                "not fitted to the recorded adapters",
            ),
        )
    given = settings.capability("lora_max_rank")
    # A value that is not a number is the resolver's to refuse (the capability's value check).
    explicit = int(given.value) if given and given.value.isdigit() else None
    allowed = list(allowed_ranks(manifest))
    if not allowed:  # the engine takes any rank: the need itself (or the user's value) is allowed
        needs = [int(default), *spec.lora.tune_ranks, *(a.need for a in spec.lora.adapters)]
        allowed = sorted({max(needs), *([explicit] if explicit else [])})
    try:
        fit = fit_max_rank(
            spec.lora.adapters,
            spec.lora.tune_ranks,
            int(default),
            allowed,
            explicit=explicit,
            explicit_pointer=given.pointer if given else "/lora_max_rank",
        )
    except MlccError as error:
        return LoraFit(computed={}, problems=error.problems)
    return LoraFit(computed={"lora_max_rank": str(fit.rank)}, warnings=fit.warnings)


def lora_memory_cap(
    spec: DeploymentSpec,
    resolution: Resolution,
    settings: EngineSettings,
    *,
    pipeline_parallel_degree: int = 1,
) -> None:
    """Refuse a LoRA buffer above the memory cap when the model's config.json is given;
    ``pipeline_parallel_degree``: each GPU holds 1/(TP x PP) of the weights and its stage's
    adapter layers."""
    if not spec.lora.enabled or spec.model.config is None:
        return
    manifest, values = resolution.manifest, resolution.capability_values

    def value_of(name: str, fallback: int) -> int:
        text = values.get(name) or companion_default(manifest, name)
        return int(text) if text and text.isdigit() else fallback

    from mlcc_constructs.core.adapters.lora import check_memory_cap, model_geometry

    check_memory_cap(
        model_geometry(spec.model.config),
        gpu_memory_gib=resolution.instance.gpu_memory_gib,
        tp=resolution.tensor_parallel_degree,
        max_loras=value_of("lora_max", DEFAULT_MAX_LORAS),
        rank=value_of("lora_max_rank", int(COMPANION_DEFAULTS["lora_max_rank"])),
        utilization=gpu_memory_utilization(spec, settings),
        adapters=[a.name for a in spec.lora.adapters],
        pp=pipeline_parallel_degree,
        allowed=allowed_ranks(manifest),
    )


def allowed_ranks(manifest: EngineManifest) -> tuple[int, ...]:
    """The max LoRA ranks the engine allows (its ``lora_max_rank`` capability); none declared
    (or any rank taken) is empty."""
    capability = manifest.capability("lora_max_rank")
    if capability is None or capability.allowed is None:
        return ()
    return tuple(int(a) for a in capability.allowed)


def gpu_memory_utilization(spec: DeploymentSpec, settings: EngineSettings) -> float:
    """The GPU memory share the engine runs with: its own setting (the manifest's
    ``gpu_memory_utilization`` dimension) when the user set it, else
    ``spec.engine.gpu_memory_utilization``; both set and different is an error."""
    given = settings.dimension("gpu_memory_utilization")
    if given is None:
        return spec.engine.gpu_memory_utilization
    try:
        value = float(given.value)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise fail(
            "not a share of GPU memory",
            pointer=given.pointer,
            value=given.value,
            allowed="a number in (0, 1]",
        )
    key = given.pointer.removeprefix("/engine/env/")
    default = EngineSpec.__dataclass_fields__["gpu_memory_utilization"].default
    if spec.engine.gpu_memory_utilization not in (default, value):
        raise fail(
            f"the GPU memory share is set twice: engine.gpu_memory_utilization="
            f"{spec.engine.gpu_memory_utilization} and {key}={given.value}",
            pointer="/engine/gpu_memory_utilization",
            value=spec.engine.gpu_memory_utilization,
            fix=f"set only {key} (what the engine uses)",
        )
    return value
