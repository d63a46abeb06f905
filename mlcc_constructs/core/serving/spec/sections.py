"""The sections of a :class:`~mlcc_constructs.core.serving.spec.deployment.DeploymentSpec`: one
frozen dataclass per thing a user decides (the engine, the model, the machines, LoRA, scaling,
rollouts, caches). Each field's attribute docstring is its documentation everywhere (the JSON
schema, the CLI's help, the reference); its metadata (:func:`~.field_meta.meta`) holds its
bounds and its flag. A section given as a plain mapping is read by the spec loader
(:mod:`~mlcc_constructs.core.serving.spec.section_build`), with the errors of a file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from mlcc_constructs.core.adapters.lora_rank import AdapterRank
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.cache_routing import KvCache, Routing
from mlcc_constructs.core.serving.spec.endpoint import SecretsManagerSecret
from mlcc_constructs.core.serving.spec.secret_ref import SECRET_ENV_SCHEMA, SecretRef
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields

if TYPE_CHECKING:
    from mlcc_constructs.core.cache.spec import CacheBackendSpec

ConfigDelivery = Literal["env", "args"]
RolloutStrategy = Literal["surge", "replace"]
ModelLoad = Literal["mount", "stream"]

MODEL_BYTES_FIX = (
    "give the weights' bytes, e.g. the staged model.safetensors.index.json "
    "metadata.total_size (16060522496 for an 8B model in bfloat16), or leave model.bytes unset"
)
"""The fix of a bad ``model.bytes`` (the schema's and the checks' alike)."""


def _freeze(instance: Any, mappings: tuple[str, ...] = (), tuples: tuple[str, ...] = ()) -> None:
    """Freeze what callers may pass as plain dicts and lists; anything else is left for the
    type check to report."""
    for name in mappings:
        value = getattr(instance, name)
        if isinstance(value, Mapping):
            object.__setattr__(instance, name, MappingProxyType(dict(value)))
    for name in tuples:
        value = getattr(instance, name)
        if isinstance(value, list | tuple):
            object.__setattr__(instance, name, tuple(value))


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """The inference engine and its container: which engine, which image, and its settings."""

    name: str = field(metadata=meta(cli="--engine", minLength=1))
    """Engine name from the registry, e.g. ``vllm``, ``sglang`` or a plugin's name. Required."""
    version: str | None = field(default=None, metadata=meta(cli="--engine-version", minLength=1))
    """The engine version the image runs, for an image whose tag names none (untagged, digest
    only, ``latest``); one that contradicts the image's tag is refused. Default: the version
    the image's tag names, else the pinned image's."""
    image: str | None = field(default=None, metadata=meta(cli="--image", minLength=1))
    """Container image. Default: the engine's pinned image from versions.json."""
    config_delivery: ConfigDelivery = field(default="env", metadata=meta(cli="--config-delivery"))
    """``env``: the image runs the wrapper, which turns the engine env into flags; ``args``: the
    engine's argv is computed at synth. Default: ``env``."""
    quantization: str | None = field(default=None, metadata=meta(cli="--quantization", minLength=1))
    """Quantization method passed to the engine, e.g. ``awq``. Default: none (the flag is
    omitted)."""
    gpu_memory_utilization: float = field(default=0.9, metadata=meta(exclusiveMinimum=0, maximum=1))
    """Share of GPU memory the engine may use, for the LoRA memory cap. More than 0, at most 1.
    Default: 0.9."""
    env: Mapping[str, str] = field(
        default_factory=dict,
        metadata=meta(cli="--set", additionalProperties={"type": "string"}),
    )
    """Engine env: ``<PREFIX>*`` keys (Tier 2, or the user value of a capability the library
    does not compute, e.g. the max LoRA rank) and plain env; values are strings (quote them in
    YAML). A key that sets what the library computes is refused, naming the field to use.
    Default: none."""
    secret_env: Mapping[str, SecretRef | SecretsManagerSecret] = field(
        default_factory=dict,
        metadata=meta(
            cli=("--secret-env", "--secrets-manager-env"), replace=True, **SECRET_ENV_SCHEMA
        ),
    )
    """Env values from secrets: a Kubernetes Secret's key (``HF_TOKEN: {name: hf, key:
    token}``) or an AWS Secrets Manager secret (``HF_TOKEN: {secrets_manager: team/hf-token}``,
    optionally ``json_key``: the key of a JSON secret), synced into the deployment's own Secret:
    nobody makes one by hand. Never a ConfigMap or plain env value. Default: none."""

    def __post_init__(self) -> None:
        _freeze(self, mappings=("env", "secret_env"))
        check_fields(self, pointer="/engine")


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """The model: where its weights are, what it is, and how the engine reads it."""

    uri: str = field(metadata=meta(cli="--model", minLength=1))
    """``s3://bucket/prefix/``, ``s3://${model_bucket}/prefix/`` (the model bucket of the
    deployment's account, region and profile: stacks/buckets.json ``core``) or a Hugging Face
    ``org/name``. An s3:// URI of a bucket stacks/buckets.json names for another account,
    region or profile is refused; any other bucket is yours and used as written. Required."""
    bytes: int | None = field(default=None, metadata=meta(cli="--model-bytes", minimum=1))
    """The weights' size in bytes, a positive integer (the staged
    ``model.safetensors.index.json`` ``metadata.total_size``). It sizes the cold start: the
    startup probe's allowance, the do-not-disrupt window and the ready timeout, and wins over
    every other source of the size. Default: none (the staged index where a command reads it,
    else ``config``'s parameters x dtype bytes, else unknown: a 30-minute startup probe)."""
    config: Mapping[str, Any] | None = field(default=None, metadata=meta(type="object"))
    """The staged model's ``config.json``: with LoRA on, the LoRA buffer is checked against the
    memory cap at synth. Default: none (no check)."""
    load: ModelLoad | None = field(default=None, metadata=meta(cli="--model-load"))
    """How the engine reads an ``s3://`` model: ``mount`` (the target's mount at its model mount
    path) or ``stream`` (the engine reads the URI itself with its manifest's
    ``model_load.stream`` load format, as the pod's own role; LoRA adapters still come through
    the mount, which then stays). Default: ``stream`` where the engine, its version and the
    target support it and the model is ``s3://``, else ``mount``."""

    def __post_init__(self) -> None:
        _freeze(self, mappings=("config",))
        check_fields(self, pointer="/model")


@dataclass(frozen=True, kw_only=True)
class ComputeSpec:
    """The machines one model copy runs on and how the model is split across their GPUs."""

    instance_type: str = field(metadata=meta(cli="--instance-type", minLength=1))
    """``ml.g5.12xlarge`` or the EKS node name ``g5.12xlarge``. Required."""
    instance_types: tuple[str, ...] = field(
        default=(), metadata=meta(cli="--instance-types", items={"type": "string", "minLength": 1})
    )
    """Fallback instance types, in order of preference after ``instance_type`` (capacity
    shortages): each has at least the tensor-parallel degree's GPUs and as much GPU memory per
    GPU as ``instance_type``. The pod may run on any of them (preferred in order), asks for what
    the smallest offers, and the GPU NodePool offers their families. Default: none."""
    tensor_parallel_degree: int | None = field(default=None, metadata=meta(cli="--tp", minimum=1))
    """Tensor-parallel degree. At least 1. Default: the instance's GPU count (per node); a value
    above it is refused on one node."""
    pipeline_parallel_degree: int = field(default=1, metadata=meta(cli="--pp", minimum=1))
    """Pipeline stages (the engine's ``pipeline_parallel_degree`` capability, emitted only above
    1); ``tensor_parallel_degree`` x ``pipeline_parallel_degree`` must equal the GPUs per node x
    ``nodes``. At least 1. Default: 1."""
    nodes: int | Literal["auto"] = field(
        default=1, metadata=meta(cli="--nodes", minimum=1, pattern="^auto$")
    )
    """Nodes one model copy spans: an integer of at least 1, or ``auto`` (from ``model.bytes``
    and the instance's GPU memory). Above 1 the eks target renders a LeaderWorkerSet of that
    size and the engine starts with its manifest's ``multi_node`` launch. Default: 1."""

    def __post_init__(self) -> None:
        _freeze(self, tuples=("instance_types",))
        check_fields(self, pointer="/compute")


@dataclass(frozen=True, kw_only=True)
class LoraSpec:
    """Serving LoRA adapters on the model."""

    enabled: bool = field(default=False, metadata=meta(cli="--lora"))
    """Serve LoRA adapters (the engine's LoRA companion contract). Default: false."""
    adapters: tuple[AdapterRank, ...] = field(default=(), metadata=meta())
    """Recorded adapters this deployment must serve (``r`` / ``rank_pattern``, e.g. from
    ``adapters.recorded_adapters``): with LoRA on, the max LoRA rank is fitted to them. Default:
    none (the engine's own default rank applies)."""
    tune_ranks: tuple[int, ...] = field(
        default=(), metadata=meta(items={"type": "integer", "minimum": 1})
    )
    """Ranks recorded at tune submit, also fitted. Each at least 1. Default: none."""

    def __post_init__(self) -> None:
        _freeze(self, tuples=("adapters", "tune_ranks"))
        check_fields(self, pointer="/lora")


@dataclass(frozen=True, kw_only=True)
class ScalingSpec:
    """How many replicas serve the model: a fixed count, or driven by an engine metric."""

    replicas: int = field(default=1, metadata=meta(cli="--replicas", minimum=1))
    """Pod replicas (one model copy each). At least 1. Default: 1."""
    autoscaling: Autoscaling | None = field(default=None, metadata=meta())
    """Replicas driven by an engine metric (eks: a KEDA ScaledObject; hyperpod-eks: the IEC's
    ``autoScalingSpec``); ``replicas`` must then stay 1. Default: none (``replicas`` fixed)."""

    def __post_init__(self) -> None:
        check_fields(self, pointer="/scaling")


@dataclass(frozen=True, kw_only=True)
class RolloutSpec:
    """How an update replaces pods, and how long a deploy waits for them."""

    strategy: RolloutStrategy = field(default="surge", metadata=meta(cli="--rollout"))
    """``surge`` starts the new pod first (needs a spare GPU node for one pod; serving capacity
    never drops), ``replace`` stops an old pod first (for a cluster with no spare GPUs; one
    replica fewer during each pod's start, and a full outage with one replica). Default:
    ``surge``."""
    accept_downtime: bool = field(default=False, metadata=meta(cli="--accept-downtime"))
    """Acknowledges that ``strategy: replace`` with one replica stops serving for the whole cold
    start of every update; refused without it. Default: false."""
    ready_timeout_seconds: int | None = field(default=None, metadata=meta(minimum=60, maximum=3300))
    """How long ``cdk deploy`` waits for the deployment to be ready (replicas available, or the
    IEC's ``DeploymentComplete``) before it fails and rolls back; also the workload's own
    deadline (``progressDeadlineSeconds``, ``maxDeployTimeInSeconds``). 60..3300. Default:
    computed from the model's size and load path."""

    def __post_init__(self) -> None:
        check_fields(self, pointer="/rollout")


@dataclass(frozen=True, kw_only=True)
class CacheSpec:
    """KV caches and cache-aware routing."""

    backend: CacheBackendSpec | None = field(
        default=None,
        metadata=meta(replace=True, type="object"),
    )
    """LMCache wiring injected into the eks Deployment: an inferencecache.io CacheBackend
    ``spec`` (runtime, type, lmCache, remoteStorage, integration), admission-checked. Its
    runtime must be the engine manifest's ``cache_runtime``. Default: none."""
    kv_cache: KvCache | None = field(default=None, metadata=meta())
    """The inference operator's managed tiered KV cache (the IEC's ``kvCacheSpec``);
    hyperpod-eks with a vLLM-based engine only. Default: none (the IEC names no
    kvCacheSpec)."""
    routing: Routing | None = field(default=None, metadata=meta())
    """The inference operator's intelligent routing (the IEC's ``intelligentRoutingSpec``);
    hyperpod-eks with a vLLM-based engine only. Adding, changing or dropping it replaces the
    endpoint. Default: none (the operator's load balancer spreads requests)."""

    def __post_init__(self) -> None:
        check_fields(self, pointer="/cache")


def _cache_backend_spec() -> type[CacheBackendSpec]:
    from mlcc_constructs.core.cache.spec import CacheBackendSpec

    return CacheBackendSpec


# The CacheBackend model costs about 15 ms of dataclass creation to import, and most deployments
# (and every pure `mlcc` command) have none: its annotation resolves on first use instead, so
# typing.get_type_hints(CacheSpec) still returns the real type.
CacheSpec.__annotations__["backend"] = "_cache_backend_spec() | None"
