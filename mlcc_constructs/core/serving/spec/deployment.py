"""The user's declarative input: one :class:`DeploymentSpec` per served model."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from mlcc_constructs.core.adapters.lora_rank import AdapterRank
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.cache_routing import KvCache, Routing
from mlcc_constructs.core.serving.spec.endpoint import Endpoint, SecretsManagerSecret
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.typecheck import check_fields

if TYPE_CHECKING:
    from mlcc_constructs.core.cache.spec import CacheBackendSpec

ConfigDelivery = Literal["env", "args"]
Rollout = Literal["surge", "replace"]
ModelLoad = Literal["mount", "stream"]

MAX_REQUEST_SECONDS = 600
"""The default of ``max_request_seconds``: the load balancer's idle timeout
(:data:`~mlcc_constructs.core.platform.load_balancing.IDLE_TIMEOUT_SECONDS`), the longest a
non-streaming request can take through the ALB, which sends nothing back until it is done."""

MODEL_BYTES_FIX = (
    "give the weights' bytes, e.g. the staged model.safetensors.index.json "
    "metadata.total_size (16060522496 for an 8B model in bfloat16), or leave model_bytes unset"
)
"""The fix of a bad ``model_bytes`` (the schema's and the checks' alike)."""

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?)/(?P<prefix>.*)$")
_HF_ID = re.compile(r"^(?P<org>[A-Za-z0-9][A-Za-z0-9._-]*)/(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)$")


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """A key of a Kubernetes Secret; secrets never travel as plain env or ConfigMap data.

    Fields:

    ``name``: the Secret's name (in the deployment's namespace).
    ``key``: the key within the Secret.
    """

    name: str
    key: str


@dataclass(frozen=True, kw_only=True)
class ModelSource:
    """Where the weights come from: ``s3`` (bucket + prefix) or ``huggingface`` (org/name)."""

    kind: Literal["s3", "huggingface"]
    uri: str
    bucket: str | None = None
    prefix: str | None = None
    hf_id: str | None = None

    @property
    def location(self) -> str:
        """The S3 prefix without its trailing slash (HyperPod ``modelLocation``)."""
        return (self.prefix or "").rstrip("/")


def parse_model_source(model: str, *, pointer: str = "/model") -> ModelSource:
    """``s3://bucket/prefix/`` or a Hugging Face ``org/name``; anything else is refused."""
    s3 = _S3_URI.match(model)
    if s3:
        prefix = s3.group("prefix")
        if (
            not prefix.strip("/")
            or "//" in prefix
            or any(part in (".", "..") for part in prefix.split("/"))
        ):
            raise fail(
                "the S3 model URI needs a key prefix (the folder holding config.json)",
                pointer=pointer,
                value=model,
                allowed="s3://<bucket>/<prefix>/",
                fix="point at the staged model folder, e.g. s3://my-bucket/models/org/name/",
            )
        return ModelSource(
            kind="s3", uri=model, bucket=s3.group("bucket"), prefix=prefix.rstrip("/") + "/"
        )
    if _HF_ID.match(model):
        return ModelSource(kind="huggingface", uri=model, hf_id=model)
    raise fail(
        "not a model source",
        pointer=pointer,
        value=model,
        allowed="s3://<bucket>/<prefix>/ or a Hugging Face id <org>/<name>",
        fix="stage the model to S3 or name its Hugging Face repository",
    )


@dataclass(frozen=True, kw_only=True)
class DeploymentSpec:
    """One served model. Only ``engine``, ``model`` and ``instance_type`` are required.

    The resolver reads the engine facts (engine, model, instance type, TP, quantization,
    LoRA, env, engine version); the kinds render the rest.

    Fields:

    ``engine``: Engine name from the registry, e.g. ``vllm`` or a plugin's name.
    ``model``: ``s3://bucket/prefix/`` (mounted at the target's model mount path) or a
        Hugging Face ``org/name``.
    ``instance_type``: ``ml.g5.12xlarge`` or the EKS node name ``g5.12xlarge``.
    ``name``: DNS-1123 name of the Kubernetes objects. Default: none (required to render).
    ``served_model_name``: The name the engine serves the model under: what clients send as the
        OpenAI API's ``model`` and what ``/v1/models`` lists (LoRA adapters keep their own
        names). Passed through the engine's own setting (its manifest's ``served_model_name``
        capability). Default: the deployment's ``name``.
    ``namespace``: Kubernetes namespace. Default: ``default``.
    ``target``: ``eks`` or ``hyperpod-eks``. Default: ``eks``.
    ``image``: Container image. Default: the engine's pinned image from versions.json.
    ``replicas``: Pod replicas. Default: 1.
    ``tensor_parallel_degree``: Default: the instance's GPU count (per node); a value above it
        is refused on one node.
    ``nodes``: Nodes one model copy spans (an int of at least 1, or ``"auto"``: from
        ``model_bytes`` and the instance's GPU memory). Above 1 the eks target renders a
        LeaderWorkerSet of that size and the engine starts with its manifest's ``multi_node``
        launch; ``tensor_parallel_degree`` x ``pipeline_parallel_degree`` must equal the GPUs
        per node x ``nodes``. Default: 1.
    ``pipeline_parallel_degree``: Pipeline stages (the engine's ``pipeline_parallel_degree``
        capability, emitted only above 1). Default: 1.
    ``quantization``: Quantization method passed to the engine. Default: none (the flag is
        omitted).
    ``lora``: Serve LoRA adapters (the engine's LoRA companion contract). Default: off.
    ``env``: User env: ``<PREFIX>*`` keys (Tier 2, or the user value of a capability the
        library does not compute, e.g. the max LoRA rank) and plain env; a key that sets what
        the library computes is refused, naming the field to use (Tier 1 is closed:
        :mod:`~mlcc_constructs.core.serving.resolve.computed_keys`). Default: none.
    ``secret_env``: Env values from secrets: a Kubernetes Secret's key
        (``{"HF_TOKEN": SecretRef(...)}``) or an AWS Secrets Manager secret
        (``SecretsManagerSecret(secret="team/hf-token")``, synced into the deployment's own
        Secret: nobody makes one by hand). Default: none.
    ``engine_version``: Engine version for version gates. Default: unknown (gates fail open, with a
        warning).
    ``config_delivery``: ``env``: the image runs the wrapper; ``args``: argv computed at synth.
        Default: env.
    ``region``: AWS region of the model bucket. Default: none (required for an s3:// model).
    ``service_account_role_arn``: IRSA role for the pod's ServiceAccount (eks). Default: none.
    ``lora_adapters``: Recorded adapters this deployment must serve (``r`` / ``rank_pattern``, e.g.
        from ``adapters.recorded_adapters``): with LoRA on, the max LoRA rank is fitted to them.
        Default: none (the engine's own default rank applies).
    ``lora_tune_ranks``: Ranks recorded at tune submit, also fitted. Default: none.
    ``model_config``: The staged model's ``config.json``: with LoRA on, the LoRA buffer is checked
        against the memory cap at synth. Default: none (no check).
    ``model_bytes``: The weights' size in bytes (a positive integer: the staged model's
        ``model.safetensors.index.json`` ``metadata.total_size``). It sizes the cold start: the
        startup probe's allowance, the do-not-disrupt window and the ready timeout
        (:mod:`mlcc_constructs.core.serving.prepare.cold_start`); it wins over every other
        source of the size. Default: none (the staged index where a command reads it, else
        ``model_config``'s parameters x dtype bytes, else unknown: a 30-minute startup probe).
    ``gpu_memory_utilization``: Share of GPU memory the engine may use, for the memory cap.
        Default: 0.9.
    ``cache_backend``: LMCache wiring injected into the eks Deployment (an inferencecache.io
        CacheBackend ``spec``, admission-checked). Its runtime must be the engine manifest's
        ``cache_runtime``. Default: none.
    ``endpoint``: How clients reach the engine (:class:`Endpoint`: an Ingress on eks). Default:
        an ``internal`` load balancer, HTTP, a host of its own.
    ``api_key_secret``: The name or ARN of a Secrets Manager secret holding the API key clients
        send (``Authorization: Bearer <key>``); the engine reads it through its own setting
        (engine manifest ``api_key``), never from a template, ConfigMap or plain env value.
        Default: none (no key: reachable only inside the VPC and the allowed namespaces).
    ``allow_from``: Namespaces whose pods may call the engine port directly (the NetworkPolicy
        admits only these and the load balancer). Default: none.
    ``ready_timeout_seconds``: How long ``cdk deploy`` waits for the deployment to be ready
        (replicas available, or the IEC's ``DeploymentComplete``) before it fails and rolls
        back; also the workload's own deadline (``progressDeadlineSeconds``,
        ``maxDeployTimeInSeconds``). 60..3300. Default: computed from the model's size and load
        path (:mod:`mlcc_constructs.core.serving.prepare.ready_timeout`).
    ``instance_types``: Fallback instance types, in order of preference after ``instance_type``
        (capacity shortages): each has at least the tensor-parallel degree's GPUs and as much GPU
        memory per GPU as ``instance_type``. The pod may run on any of them (preferred in
        order), asks for what the smallest offers, and the GPU NodePool offers their families.
        Default: none.
    ``max_request_seconds``: The longest request the engine serves (a long stream included): a
        pod that stops drains this long before the engine gets SIGTERM, and its termination
        grace period covers the drain. 1..3600. Default: 600, the load balancer's idle timeout.
    ``rollout``: How an update replaces pods: ``surge`` starts the new pod first (needs a spare
        GPU node for one pod; serving capacity never drops), ``replace`` stops an old pod first
        (for a cluster with no spare GPUs; one replica fewer during each pod's start, and a
        full outage with one replica). Default: surge.
    ``accept_downtime``: Acknowledges that ``rollout: replace`` with one replica stops serving
        for the whole cold start of every update; refused without it. Default: false.
    ``model_load``: How the engine reads an ``s3://`` model: ``mount`` (the target's mount at
        its model mount path) or ``stream`` (the engine reads the ``s3://`` URI itself with its
        manifest's ``model_load.stream`` load format, as the pod's own role; LoRA adapters still
        come through the mount, which then stays). Default: ``stream`` where the engine, its
        version and the target support it and the model is ``s3://``, else ``mount``
        (:mod:`mlcc_constructs.core.serving.resolve.model_load`).
    ``autoscaling``: Replicas driven by an engine metric (:class:`Autoscaling`: ``min_replicas``,
        ``max_replicas``, ``metric``, ``target``, ``scale_to_zero``, ``cooldown_seconds``,
        ``polling_seconds``); eks renders a KEDA ScaledObject, hyperpod-eks the IEC's
        ``autoScalingSpec``. ``replicas`` must then stay 1. Default: none (``replicas`` fixed).
    ``routing``: The inference operator's intelligent routing (:class:`Routing`: ``strategy``),
        the IEC's ``intelligentRoutingSpec``; hyperpod-eks with a vLLM-based engine only.
        Turning it on, changing or dropping it replaces the endpoint (README). Default: none
        (the operator's load balancer spreads requests).
    ``kv_cache``: The inference operator's managed tiered KV cache (:class:`KvCache`: ``l1``,
        ``l2``, ``l2_url``, ``config_file``), the IEC's ``kvCacheSpec``; hyperpod-eks with a
        vLLM-based engine only. Default: none (the IEC names no kvCacheSpec).
    """

    engine: str
    model: str
    instance_type: str
    name: str | None = None
    served_model_name: str | None = None
    namespace: str = "default"
    target: str = "eks"
    image: str | None = None
    replicas: int = 1
    tensor_parallel_degree: int | None = None
    nodes: int | Literal["auto"] = 1
    pipeline_parallel_degree: int = 1
    quantization: str | None = None
    lora: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    secret_env: Mapping[str, SecretRef | SecretsManagerSecret] = field(default_factory=dict)
    engine_version: str | None = None
    config_delivery: ConfigDelivery = "env"
    region: str | None = None
    service_account_role_arn: str | None = None
    lora_adapters: tuple[AdapterRank, ...] = ()
    lora_tune_ranks: tuple[int, ...] = ()
    model_config: Mapping[str, Any] | None = None
    model_bytes: int | None = None
    gpu_memory_utilization: float = 0.9
    cache_backend: CacheBackendSpec | None = None
    endpoint: Endpoint = field(default_factory=Endpoint)
    api_key_secret: str | None = None
    allow_from: tuple[str, ...] = ()
    ready_timeout_seconds: int | None = None
    instance_types: tuple[str, ...] = ()
    max_request_seconds: int = MAX_REQUEST_SECONDS
    rollout: Rollout = "surge"
    accept_downtime: bool = False
    model_load: ModelLoad | None = None
    autoscaling: Autoscaling | None = None
    routing: Routing | None = None
    kv_cache: KvCache | None = None

    def __post_init__(self) -> None:
        # Freeze what callers may pass as plain dicts and lists; anything else is left for
        # the type check to report.
        for name in ("env", "secret_env", "model_config"):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, MappingProxyType(dict(value)))
        for name in ("lora_adapters", "lora_tune_ranks", "allow_from", "instance_types"):
            value = getattr(self, name)
            if isinstance(value, list | tuple):
                object.__setattr__(self, name, tuple(value))
        check_fields(self)


def _cache_backend_spec() -> type[CacheBackendSpec]:
    from mlcc_constructs.core.cache.spec import CacheBackendSpec

    return CacheBackendSpec


# The CacheBackend model costs about 15 ms of dataclass creation to import, and most deployments
# (and every pure `mlcc` command) have none: its annotation resolves on first use instead, so
# typing.get_type_hints(DeploymentSpec) still returns the real type.
DeploymentSpec.__annotations__["cache_backend"] = "_cache_backend_spec() | None"
