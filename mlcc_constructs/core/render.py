"""Render one :class:`DeploymentSpec` into the Kubernetes objects of its target (plain dicts).

Target ``eks``: ServiceAccount, ConfigMap (engine env), PersistentVolume + PersistentVolumeClaim
(static Mountpoint S3 CSI volume, ``s3://`` models only), Deployment, Service.
Target ``hyperpod-eks``: one ``InferenceEndpointConfig``
(``inference.sagemaker.aws.amazon.com/v1``).

Every engine fact comes from the resolver and the engine manifest; nothing here branches on
an engine name. The cdk8s constructs in ``mlcc_constructs.k8s`` only wrap these dicts.

Decisions (documented for reviewers):

* **Config delivery.** ``env`` (default): a Model-A engine's container runs the wrapper,
  which turns the ConfigMap's ``<PREFIX>*`` env into flags. On eks the wrapper (a stdlib-only
  script) and the engine manifest are mounted from a second ConfigMap ``<name>-wrapper`` at
  ``/opt/mlcc`` (``python3 /opt/mlcc/wrapper.py``), so a stock upstream image works and a
  plugin engine needs nothing baked in; its content is part of the pod's config hash, so a
  wrapper upgrade rolls the pods. An IEC worker has no volumes, so on hyperpod-eks the script
  travels in the worker's command (``python3 -c <wrapper>``) and the manifest in
  ``MLCC_ENGINE_MANIFEST_JSON``. Either way ``MLCC_ENGINE_KEYS`` lists the keys the wrapper
  may translate, so a ``<PREFIX>*`` variable an image sets for itself never becomes a flag.
  ``args``: the container's ``command``/``args`` are the wrapper's argv computed now, so a stock
  upstream image works; no ConfigMap is rendered and no engine env is set, because engines
  read their own prefix as internal settings (``VLLM_*`` is vLLM's own env namespace) and the
  flags already carry every value. Model-B engines (``entrypoint: image``) keep the image's
  entrypoint and receive the env; ``args`` delivery is refused for them.
* **Resources** (:func:`pod_resources`): the pod asks for ``tensor_parallel_degree`` GPUs and
  that share of the node's vCPUs and memory after a node reserve for the kubelet, the OS and
  the daemon-set pods (CNI, kube-proxy, CSI node, device plugin): 10% of the vCPUs (at least
  1) and 10% of the memory (at least 3 GiB), rounded down. CPU has no limit (throttling a
  tokenizer hurts latency); memory and GPUs are limited to the request.
* **Security.** Pod and container run as UID/GID 1000, non-root, no privilege escalation, all
  capabilities dropped, seccomp ``RuntimeDefault``, read-only root filesystem. Engines write
  caches (Hugging Face, Triton, torch.compile) under ``$HOME`` and ``/tmp``, so both are
  writable ``emptyDir`` volumes and ``HOME=/home/mlcc``; ``/dev/shm`` is a memory ``emptyDir``
  (NCCL needs more than the 64 MiB default).
* **Probes**: a startup probe allows 30 minutes (a cold start without prefetch measured ~15
  minutes), then readiness and liveness probes, all on the manifest's ``health_path``.
* **Rollout**: ``maxSurge: 1, maxUnavailable: 0`` never drops serving capacity.
* **Service links off** (``enableServiceLinks: false``): Kubernetes would otherwise inject
  ``<SERVICE>_PORT=tcp://...`` variables, and one whose service name starts with the engine's
  prefix (a Service ``vllm-x`` gives ``VLLM_X_PORT``) would reach the wrapper as a flag.
* **Engine version**: with the pinned default image, the version gates use that image's
  version (``versions.json`` ``engine_versions``); with your own image, pass it.
* **Names**: the base name (RFC 1035 label) names the Deployment, Service, ServiceAccount and
  the IEC; the ConfigMap is ``<name>-config``, the claim ``<name>-model`` and the cluster-scoped
  PersistentVolume ``<namespace>-<name>-model``. The engine container is always named
  :data:`ENGINE_CONTAINER` (a contract for functions that post-process the Deployment).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import yaml

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.buckets import bucket_name, bucket_patterns
from mlcc_constructs.core.catalog import InstanceType
from mlcc_constructs.core.errors import MlccError, Problem, fail
from mlcc_constructs.core.k8s_validation import (
    IEC_API_VERSION,
    IEC_KIND,
    name_problems,
    namespace_problems,
    validate_objects,
)
from mlcc_constructs.core.manifests import EngineManifest, EngineRegistry
from mlcc_constructs.core.resolve import (
    COMPANION_DEFAULTS,
    MODEL_MOUNT_PATH,
    Resolution,
    resolve,
)
from mlcc_constructs.core.spec import DeploymentSpec, ModelSource, parse_model_source
from mlcc_constructs.core.targets import load_target

TARGETS = ("eks", "hyperpod-eks")
"""Targets this module renders (``realtime-inference`` is a CDK surface)."""
ENGINE_CONTAINER = "engine"
"""Name of the engine container in the Deployment: stable, for post-processing functions."""
WRAPPER_MOUNT = "/opt/mlcc"
"""Where the eks Deployment mounts the wrapper ConfigMap (``wrapper.py``, ``manifest.json``)."""
MOUNTED_WRAPPER_COMMAND = ("python3", f"{WRAPPER_MOUNT}/wrapper.py")
"""The container command in ``env`` delivery on eks: any image with python3 runs it."""
WRAPPER_VOLUME = "mlcc-wrapper"
ENGINE_ENV = "MLCC_ENGINE"
MANIFEST_ENV = "MLCC_ENGINE_MANIFEST"
MANIFEST_JSON_ENV = "MLCC_ENGINE_MANIFEST_JSON"
KEYS_ENV = "MLCC_ENGINE_KEYS"
"""The env keys the wrapper translates: only what the library delivered, never an image's own."""
USER = "mlcc"
"""``USER`` for UID 1000: images have no passwd entry for it, and getpass.getuser() (torch
inductor, triton caches) fails without one."""
CONFIG_HASH_ANNOTATION = "mlcc-constructs/config-hash"
ENGINE_LABEL = "mlcc-constructs/engine"
MODEL_VOLUME = "model-weights"
INVOCATION_ENDPOINT = "v1/chat/completions"
"""The OpenAI-compatible route every built-in engine serves (HyperPod ``invocationEndpoint``)."""
RUN_AS = 1000
HOME = "/home/mlcc"
S3_CSI_DRIVER = "s3.csi.aws.com"
PV_CAPACITY = "1200Gi"  # required by Kubernetes, ignored by Mountpoint
CPU_RESERVE_FRACTION, CPU_RESERVE_MIN = 0.10, 1
MEMORY_RESERVE_FRACTION, MEMORY_RESERVE_MIN_GIB = 0.10, 3
SHM_MAX_GIB = 16
STARTUP_PERIOD_S, STARTUP_FAILURES = 10, 180  # 30 minutes


@dataclass(frozen=True, kw_only=True)
class RenderContext:
    """The environment a render targets. Every field defaults to ``None``.

    ``account``/``region``/``profile`` name the TLS bucket of an IEC (``stacks/buckets.json``
    ``tls``); ``region`` is also the model bucket's region when the spec gives none. Missing
    account and region are inferred from a model bucket named by ``stacks/buckets.json``.
    """

    account: str | None = None
    region: str | None = None
    profile: str | None = None


@dataclass(frozen=True, kw_only=True)
class Names:
    """Explicit Kubernetes names of one deployment's objects."""

    base: str
    namespace: str
    config_map: str
    wrapper: str
    claim: str
    volume: str


@dataclass(frozen=True, kw_only=True)
class RenderInputs:
    """Everything the per-kind renderers read: checked once by :func:`prepare`."""

    spec: DeploymentSpec
    resolution: Resolution
    names: Names
    image: str
    source: ModelSource
    model_region: str | None
    tls_uri: str | None
    warnings: tuple[str, ...]

    @property
    def engine_env(self) -> dict[str, str]:
        """Tier 1 then Tier 2: the ConfigMap data (and the IEC's engine env)."""
        return dict(self.resolution.tier1 + self.resolution.tier2)


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """The objects of one deployment, in apply order, and the notes for the user."""

    objects: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]
    inputs: RenderInputs


# -- inputs -------------------------------------------------------------------------------


@cache
def default_engine_versions() -> Mapping[str, str]:
    """Engine → the version of its pinned default image (``versions.json`` ``engine_versions``)."""
    document = json.loads(data_path("versions.json").read_text(encoding="utf-8"))
    return dict(document["engine_versions"])


@cache
def default_images() -> Mapping[str, str]:
    """Engine → pinned default image (``data/versions.json`` ``engine_images``)."""
    document = json.loads(data_path("versions.json").read_text(encoding="utf-8"))
    return dict(document["engine_images"])


def infer_environment(bucket: str) -> dict[str, str]:
    """Account/region/profile encoded in a bucket named by ``stacks/buckets.json`` (or ``{}``)."""
    parts = {
        "account": r"(?P<account>[0-9]{12})",
        "region": r"(?P<region>[a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-[0-9])",
        "profile": r"(?P<profile>[a-z][a-z0-9-]{0,19})",
    }
    for pattern in bucket_patterns().values():
        pieces = re.split(r"\$\{([a-z]+)\}", pattern)
        regex = "".join(
            parts[piece] if index % 2 else re.escape(piece) for index, piece in enumerate(pieces)
        )
        match = re.fullmatch(regex, bucket)
        if match:
            return {k: v for k, v in match.groupdict().items() if v}
    return {}


def object_names(name: str, namespace: str) -> Names:
    """The names of every object of deployment ``name`` in ``namespace``."""
    return Names(
        base=name,
        namespace=namespace,
        config_map=f"{name}-config",
        wrapper=f"{name}-wrapper",
        claim=f"{name}-model",
        volume=f"{namespace}-{name}-model",
    )


def prepare(
    spec: DeploymentSpec,
    *,
    context: RenderContext | None = None,
    registry: EngineRegistry | None = None,
) -> RenderInputs:
    """Resolve ``spec`` and check every render input; all problems are raised at once."""
    context = context or RenderContext()
    problems: list[Problem] = []
    if spec.target not in TARGETS:
        problems.append(
            Problem(
                message="not a Kubernetes target",
                pointer="target",
                value=spec.target,
                allowed=", ".join(TARGETS),
                fix="use eks or hyperpod-eks (realtime-inference is rendered by the CDK app)",
            )
        )
    else:
        load_target(spec.target)
    problems += name_problems(spec.name)
    problems += namespace_problems(spec.namespace)
    if spec.replicas < 1:
        problems.append(
            Problem(message="replicas must be at least 1", pointer="replicas", value=spec.replicas)
        )
    if spec.config_delivery not in ("env", "args"):
        problems.append(
            Problem(
                message="unknown config delivery",
                pointer="config_delivery",
                value=spec.config_delivery,
                allowed="env, args",
            )
        )
    if spec.engine_version is None and spec.image is None:
        # The pinned default image's version is known: version gates are checked against it.
        pinned = default_engine_versions().get(spec.engine)
        spec = replace(spec, engine_version=pinned) if pinned else spec
    try:
        fit_warnings, computed = lora_fit(spec, registry)
        resolution = resolve(spec, registry=registry, computed=computed)
        lora_memory_cap(spec, resolution)
    except MlccError as error:
        problems.extend(error.problems)
        raise MlccError(problems) from None
    manifest = resolution.manifest
    warnings = [str(s) for s in resolution.skipped] + list(resolution.warnings) + fit_warnings

    image = spec.image or default_images().get(manifest.engine)
    if image is None:
        problems.append(
            Problem(
                message=f"engine {manifest.engine!r} has no pinned default image",
                pointer="image",
                fix="pass --image (DeploymentSpec.image) with the engine's container image",
            )
        )
    if spec.config_delivery == "args" and manifest.entrypoint != "wrapper":
        problems.append(
            Problem(
                message=f"engine {manifest.engine!r} has entrypoint 'image': its image owns the "
                "command line, so there is no argv to deliver",
                pointer="config_delivery",
                value="args",
                allowed="env",
                fix="use --config-delivery env (the image reads "
                f"{manifest.env_var_prefix}* itself)",
            )
        )
    problems += _cache_problems(spec, resolution)
    for key in spec.secret_env:
        if key in resolution.env:
            problems.append(
                Problem(
                    message="set both as plain env and as a Secret reference",
                    pointer=f"secret_env/{key}",
                    value=key,
                    fix="keep only the Secret reference",
                )
            )

    source = parse_model_source(spec.model)
    inferred = infer_environment(source.bucket) if source.bucket else {}
    model_region = spec.region or inferred.get("region") or context.region
    if source.kind == "s3" and model_region is None:
        problems.append(
            Problem(
                message="the region of the model bucket is unknown",
                pointer="region",
                value=None,
                fix="pass --region (DeploymentSpec.region); Mountpoint and the HyperPod "
                "operator need it",
            )
        )
    tls_uri = None
    if spec.target == "hyperpod-eks":
        account = context.account or inferred.get("account")
        region = context.region or model_region
        profile = context.profile or inferred.get("profile")
        missing = [
            n for n, v in (("account", account), ("region", region), ("profile", profile)) if not v
        ]
        if missing:
            problems.append(
                Problem(
                    message="the IEC's TLS bucket (stacks/buckets.json 'tls') needs "
                    + ", ".join(missing),
                    pointer="/".join(missing),
                    fix="pass " + " ".join(f"--{m}" for m in missing) + " (or set them in "
                    "cdk.json context / RenderContext)",
                )
            )
        else:
            try:
                tls = bucket_name(
                    "tls", account=str(account), region=str(region), profile=str(profile)
                )
                tls_uri = f"s3://{tls}/{spec.namespace}/{spec.name}"
            except MlccError as error:
                problems.extend(error.problems)
        if spec.service_account_role_arn:
            warnings.append(
                "service_account_role_arn is ignored on hyperpod-eks: the inference operator "
                "owns the pod's identity"
            )
    if problems:
        raise MlccError(problems)
    assert spec.name is not None and image is not None  # checked above
    return RenderInputs(
        spec=spec,
        resolution=resolution,
        names=object_names(spec.name, spec.namespace),
        image=image,
        source=source,
        model_region=model_region,
        tls_uri=tls_uri,
        warnings=tuple(warnings),
    )


def lora_fit(
    spec: DeploymentSpec, registry: EngineRegistry | None
) -> tuple[list[str], dict[str, str]]:
    """With LoRA on and recorded adapters or tune ranks, the max LoRA rank they need
    (seed lora-delivery §3), as a computed Tier-1 value; a user's explicit rank wins."""
    if not spec.lora or not (spec.lora_adapters or spec.lora_tune_ranks):
        return [], {}
    from mlcc_constructs.core.lora import fit_max_rank

    manifest = (registry or EngineRegistry.load(use_env=False)).get(spec.engine)
    capability = manifest.capability("lora_max_rank")
    if capability is None:
        return [
            f"{manifest.engine} declares no lora_max_rank capability: the max LoRA rank is not "
            "fitted to the recorded adapters"
        ], {}
    default = int(capability.default or COMPANION_DEFAULTS["lora_max_rank"])
    given = spec.env.get(manifest.key(capability))
    explicit = int(given) if given and given.isdigit() else None
    if capability.allowed is not None:
        allowed = [int(a) for a in capability.allowed]
    else:  # the engine takes any rank: the need itself (or the user's value) is allowed
        needs = [default, *spec.lora_tune_ranks, *(a.need for a in spec.lora_adapters)]
        allowed = sorted({max(needs), *([explicit] if explicit else [])})
    fit = fit_max_rank(
        spec.lora_adapters, spec.lora_tune_ranks, default, allowed, explicit=explicit
    )
    return list(fit.warnings), {"lora_max_rank": str(fit.rank)}


def lora_memory_cap(spec: DeploymentSpec, resolution: Resolution) -> None:
    """Refuse a LoRA buffer above the memory cap when the model's config.json is given."""
    if not spec.lora or spec.model_config is None:
        return
    from mlcc_constructs.core.lora import check_memory_cap, model_geometry

    manifest, values = resolution.manifest, resolution.capability_values

    def value_of(name: str, fallback: int) -> int:
        capability = manifest.capability(name)
        text = values.get(name) or (capability.default if capability else None)
        return int(text) if text and text.isdigit() else fallback

    check_memory_cap(
        model_geometry(spec.model_config),
        gpu_memory_gib=resolution.instance.gpu_memory_gib,
        tp=resolution.tensor_parallel_degree,
        max_loras=value_of("lora_max", 1),
        rank=value_of("lora_max_rank", int(COMPANION_DEFAULTS["lora_max_rank"])),
        utilization=_utilization(spec, manifest),
        adapters=[a.name for a in spec.lora_adapters],
    )


def _utilization(spec: DeploymentSpec, manifest: EngineManifest) -> float:
    """The GPU memory share the engine runs with: its own setting (the manifest's
    ``gpu_memory_utilization`` dimension, e.g. VLLM_GPU_MEMORY_UTILIZATION) when the user set
    it, else ``spec.gpu_memory_utilization``; both set and different is an error."""
    suffix = manifest.dimension_map.get("gpu_memory_utilization")
    key = manifest.env_var_prefix + suffix if suffix else None
    given = spec.env.get(key) if key else None
    if given is None:
        return spec.gpu_memory_utilization
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise fail(
            "not a share of GPU memory",
            pointer=f"env/{key}",
            value=given,
            allowed="a number in (0, 1]",
        )
    default = DeploymentSpec.__dataclass_fields__["gpu_memory_utilization"].default
    if spec.gpu_memory_utilization not in (default, value):
        raise fail(
            f"the GPU memory share is set twice: gpu_memory_utilization="
            f"{spec.gpu_memory_utilization} and {key}={given}",
            pointer="gpu_memory_utilization",
            value=spec.gpu_memory_utilization,
            fix=f"set only {key} (what the engine uses)",
        )
    return value


def _cache_problems(spec: DeploymentSpec, resolution: Resolution) -> list[Problem]:
    """A CacheBackend is injected into an eks Deployment of the engine that serves its runtime,
    and its argument overrides may not touch a flag the engine config or launch section owns."""
    backend = spec.cache_backend
    if backend is None:
        return []
    from mlcc_constructs.core.cache import admission_problems, leading_token

    manifest = resolution.manifest
    problems = admission_problems(backend, path="cache_backend")
    owned = _configured_flags(resolution)
    overrides = backend.overrides
    for field, tokens in (("args", overrides.args), ("suppressArgs", overrides.suppress_args)):
        for index, token in enumerate(tokens):
            flag = leading_token(token)
            if flag in owned:
                problems.append(
                    Problem(
                        message=f"overrides {flag}, which {owned[flag]} sets: an override would "
                        "conflict with it (the probes, Service and GPU requests follow the config)",
                        pointer=f"cache_backend/integration/engineOverrides/{field}/{index}",
                        value=token,
                        fix=f"set it through {owned[flag]} instead, or drop the override",
                    )
                )
    if spec.target != "eks":
        problems.append(
            Problem(
                message="LMCache injection applies to target eks; the HyperPod inference "
                "operator wires its own KV cache (InferenceEndpointConfig kvCacheSpec)",
                pointer="cache_backend",
                value=spec.target,
                allowed="eks",
                fix="drop cache_backend, or render for target eks",
            )
        )
    served = manifest.raw.get("cache_runtime")
    if served != backend.runtime:
        problems.append(
            Problem(
                message=f"engine {manifest.engine!r} serves CacheBackend runtime "
                f"{served or '(none)'}",
                pointer="cache_backend/runtime",
                value=backend.runtime,
                allowed=served or "no runtime: the engine manifest declares no cache_runtime",
                fix="pick the CacheBackend runtime of this engine, or another engine",
            )
        )
    return problems


def _configured_flags(resolution: Resolution) -> dict[str, str]:
    """Engine flags the deployment's own config sets → who sets them (env key or launch)."""
    from mlcc_constructs.core.wrapper import flag_for

    manifest = resolution.manifest
    if manifest.entrypoint != "wrapper":
        return {}
    style = manifest.launch.get("flag_style", "kebab")
    prefix = manifest.env_var_prefix
    owned = {
        flag_for(key[len(prefix) :], style): key
        for key, _ in resolution.tier1 + resolution.tier2
        if key not in manifest.engine_env
    }
    for field in ("port_flag", "host_flag"):
        if field in manifest.launch:
            owned[manifest.launch[field]] = f"the engine manifest's launch.{field}"
    return owned


# -- shared pieces ------------------------------------------------------------------------


def _pod_config_hash(inputs: RenderInputs) -> str:
    """Hash of everything the pod reads from ConfigMaps: the engine env and, when mounted,
    the wrapper files (by their own hash, computed once per manifest)."""
    if not _runs_wrapper(inputs):
        return config_hash(inputs.engine_env)
    mounted = _wrapper_files_hash(inputs.resolution.manifest.json_text)
    return config_hash({**inputs.engine_env, WRAPPER_MOUNT: mounted})


@cache
def _wrapper_files_hash(manifest_json: str) -> str:
    # keyed by the manifest's text (hashable, and what the ConfigMap holds)
    return config_hash(_wrapper_files(manifest_json))


def config_hash(data: Mapping[str, str]) -> str:
    """``sha256:<hex>`` of the engine config; a pod-template annotation, so a change rolls pods."""
    text = json.dumps(dict(data), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def pod_resources(instance: InstanceType, gpus: int) -> dict[str, str]:
    """CPU, memory and GPU requests of a pod using ``gpus`` GPUs of ``instance`` (module doc)."""
    share = gpus / instance.gpus
    cpu_reserve = max(CPU_RESERVE_MIN, instance.vcpus * CPU_RESERVE_FRACTION)
    memory_reserve = max(MEMORY_RESERVE_MIN_GIB, instance.memory_gib * MEMORY_RESERVE_FRACTION)
    cpu = max(1, math.floor((instance.vcpus - cpu_reserve) * share))
    memory = max(1, math.floor((instance.memory_gib - memory_reserve) * share))
    return {"cpu": str(cpu), "memory": f"{memory}Gi", "nvidia.com/gpu": str(gpus)}


def _labels(inputs: RenderInputs) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": inputs.names.base,
        "app.kubernetes.io/component": "inference-server",
        "app.kubernetes.io/managed-by": "mlcc-constructs",
        ENGINE_LABEL: inputs.resolution.manifest.engine,
    }


def _metadata(inputs: RenderInputs, name: str, *, namespaced: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespaced:
        metadata["namespace"] = inputs.names.namespace
    metadata["labels"] = _labels(inputs)
    return metadata


def _selector(inputs: RenderInputs) -> dict[str, str]:
    return {"app.kubernetes.io/name": inputs.names.base}


def _secret_env(spec: DeploymentSpec) -> list[dict[str, Any]]:
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
        for key, ref in spec.secret_env.items()
    ]


def _command(inputs: RenderInputs) -> tuple[list[str], list[str]] | None:
    """(command, args) of the engine container, or ``None`` to keep the image's entrypoint."""
    manifest = inputs.resolution.manifest
    if manifest.entrypoint != "wrapper":
        return None
    if inputs.spec.config_delivery == "args":
        argv = inputs.resolution.argv()
        split = len(manifest.launch["command"])
        return argv[:split], argv[split:]
    if inputs.spec.target == "eks":
        return list(MOUNTED_WRAPPER_COMMAND), []
    # An IEC worker has no volumes: the wrapper script travels in the command itself.
    return ["python3", "-c", _wrapper_script()], []


def _wrapper_env(inputs: RenderInputs) -> list[dict[str, Any]]:
    """What the wrapper reads besides the engine env: the engine, its manifest, and the list
    of keys it may translate. Empty unless a Model-A engine is delivered by env."""
    if not _runs_wrapper(inputs):
        return []
    manifest = inputs.resolution.manifest
    env = [{"name": ENGINE_ENV, "value": manifest.engine}]
    if inputs.spec.target == "eks":
        env.append({"name": MANIFEST_ENV, "value": f"{WRAPPER_MOUNT}/manifest.json"})
    else:
        env.append({"name": MANIFEST_JSON_ENV, "value": manifest.json_text})
    env.append({"name": KEYS_ENV, "value": ",".join(inputs.engine_env)})
    return env


def _delivers_env(inputs: RenderInputs) -> bool:
    return inputs.spec.config_delivery == "env"


# -- eks ----------------------------------------------------------------------------------


def config_map(inputs: RenderInputs) -> dict[str, Any] | None:
    """The engine env (Tier 1, then Tier 2); ``None`` in ``args`` delivery."""
    if not _delivers_env(inputs):
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(inputs, inputs.names.config_map),
        "data": inputs.engine_env,
    }


def _runs_wrapper(inputs: RenderInputs) -> bool:
    return _delivers_env(inputs) and inputs.resolution.manifest.entrypoint == "wrapper"


def wrapper_config_map(inputs: RenderInputs) -> dict[str, Any] | None:
    """The wrapper (stdlib-only Python) and the engine manifest it reads, mounted read-only
    at :data:`WRAPPER_MOUNT`: ``env`` delivery then runs on a stock engine image. ``None``
    unless a Model-A engine is delivered by env."""
    if not _runs_wrapper(inputs) or inputs.spec.target != "eks":
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(inputs, inputs.names.wrapper),
        "data": _wrapper_files(inputs.resolution.manifest.json_text),
    }


def _wrapper_files(manifest_json: str) -> dict[str, str]:
    return {"manifest.json": manifest_json, "wrapper.py": _wrapper_script()}


@cache
def _wrapper_script() -> str:
    from mlcc_constructs.core import wrapper

    with open(wrapper.__file__, encoding="utf-8") as source:
        return source.read()


def service_account(inputs: RenderInputs) -> dict[str, Any]:
    """The pod's identity; the IRSA role annotation when a role ARN is given."""
    metadata = _metadata(inputs, inputs.names.base)
    if inputs.spec.service_account_role_arn:
        metadata["annotations"] = {
            "eks.amazonaws.com/role-arn": inputs.spec.service_account_role_arn
        }
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata,
        "automountServiceAccountToken": False,
    }


def model_volume(inputs: RenderInputs) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Static Mountpoint S3 CSI PersistentVolume + claim for an ``s3://`` model (else ``None``)."""
    source, names = inputs.source, inputs.names
    if source.kind != "s3":
        return None
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _metadata(inputs, names.volume, namespaced=False),
        "spec": {
            "capacity": {"storage": PV_CAPACITY},
            "accessModes": ["ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": names.namespace, "name": names.claim},
            "mountOptions": [
                "read-only",
                "allow-other",
                f"uid={RUN_AS}",
                f"gid={RUN_AS}",
                f"prefix {source.prefix}",
                f"region {inputs.model_region}",
            ],
            "csi": {
                "driver": S3_CSI_DRIVER,
                "volumeHandle": f"s3-csi-{names.volume}",
                "readOnly": True,
                "volumeAttributes": {"bucketName": source.bucket},
            },
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _metadata(inputs, names.claim),
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": "",
            "volumeName": names.volume,
            "resources": {"requests": {"storage": PV_CAPACITY}},
        },
    }
    return volume, claim


def _probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def deployment(inputs: RenderInputs) -> dict[str, Any]:
    """The engine Deployment (module doc: delivery, resources, security, probes), with the
    spec's CacheBackend injected when it has one."""
    plain = _deployment(inputs)
    backend = inputs.spec.cache_backend
    if backend is None:
        return plain
    from mlcc_constructs.core.cache import inject_cache_backend

    return inject_cache_backend(plain, backend, engine_container=ENGINE_CONTAINER)


def _deployment(inputs: RenderInputs) -> dict[str, Any]:
    spec, res, names = inputs.spec, inputs.resolution, inputs.names
    launch = res.manifest.launch
    requests = pod_resources(res.instance, res.tensor_parallel_degree)
    memory_gib = int(requests["memory"].removesuffix("Gi"))
    env: list[dict[str, Any]] = []
    command = _command(inputs)
    env += _wrapper_env(inputs)
    env.append({"name": "HOME", "value": HOME})
    env.append({"name": "USER", "value": USER})
    env += [{"name": k, "value": v} for k, v in res.plain]
    env += _secret_env(spec)
    container: dict[str, Any] = {"name": ENGINE_CONTAINER, "image": inputs.image}
    if command is not None:
        container["command"] = command[0]
        if command[1]:
            container["args"] = command[1]
    container["ports"] = [{"name": "http", "containerPort": launch["port"], "protocol": "TCP"}]
    if _delivers_env(inputs):
        container["envFrom"] = [{"configMapRef": {"name": names.config_map}}]
    container["env"] = env
    container["resources"] = {
        "requests": requests,
        "limits": {"memory": requests["memory"], "nvidia.com/gpu": requests["nvidia.com/gpu"]},
    }
    health = launch["health_path"]
    container["startupProbe"] = _probe(health, STARTUP_PERIOD_S, STARTUP_FAILURES)
    container["readinessProbe"] = _probe(health, 10, 3)
    container["livenessProbe"] = _probe(health, 20, 3)
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    mounts: list[dict[str, Any]] = [
        {"name": "shm", "mountPath": "/dev/shm"},
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "home", "mountPath": HOME},
    ]
    if _runs_wrapper(inputs):
        mounts.append({"name": WRAPPER_VOLUME, "mountPath": WRAPPER_MOUNT, "readOnly": True})
    volumes: list[dict[str, Any]] = [
        {
            "name": "shm",
            "emptyDir": {
                "medium": "Memory",
                "sizeLimit": f"{min(SHM_MAX_GIB, max(1, memory_gib // 4))}Gi",
            },
        },
        {"name": "tmp", "emptyDir": {}},
        {"name": "home", "emptyDir": {}},
    ]
    if _runs_wrapper(inputs):
        volumes.append({"name": WRAPPER_VOLUME, "configMap": {"name": names.wrapper}})
    if inputs.source.kind == "s3":
        mounts.append({"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT_PATH, "readOnly": True})
        volumes.append(
            {
                "name": MODEL_VOLUME,
                "persistentVolumeClaim": {"claimName": names.claim, "readOnly": True},
            }
        )
    container["volumeMounts"] = mounts
    labels = _labels(inputs)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(inputs, names.base),
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": _selector(inputs)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {CONFIG_HASH_ANNOTATION: _pod_config_hash(inputs)},
                },
                "spec": {
                    "serviceAccountName": names.base,
                    "automountServiceAccountToken": False,
                    # Service links inject <SERVICE>_PORT=tcp://... env vars; one whose name
                    # starts with the engine prefix would reach the wrapper as a flag.
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_AS,
                        "runAsGroup": RUN_AS,
                        "fsGroup": RUN_AS,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "nodeSelector": {"node.kubernetes.io/instance-type": res.instance.node_name},
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "terminationGracePeriodSeconds": 60,
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def service(inputs: RenderInputs) -> dict[str, Any]:
    """ClusterIP Service on the engine's port."""
    port = inputs.resolution.manifest.launch["port"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(inputs, inputs.names.base),
        "spec": {
            "type": "ClusterIP",
            "selector": _selector(inputs),
            "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


# -- hyperpod-eks -------------------------------------------------------------------------


def prefetch_enabled(source: ModelSource, lora: bool) -> bool:
    """Prefetch copies the model once at start, so adapters added later to the S3 prefix would
    never be seen: it is off for LoRA with an S3 source (seed lora-delivery §2), on otherwise."""
    return not (lora and source.kind == "s3")


def inference_endpoint_config(inputs: RenderInputs) -> dict[str, Any]:
    """The HyperPod ``InferenceEndpointConfig`` (v1) of the deployment."""
    spec, res, source = inputs.spec, inputs.resolution, inputs.source
    launch = res.manifest.launch
    model_source: dict[str, Any] = {"modelSourceType": source.kind}
    if source.kind == "s3":
        model_source["s3Storage"] = {"bucketName": source.bucket, "region": inputs.model_region}
        model_source["modelLocation"] = source.location
    else:
        hf: dict[str, Any] = {"modelId": source.hf_id}
        token = spec.secret_env.get("HF_TOKEN")
        if token is not None:
            hf["tokenSecretRef"] = {"name": token.name, "key": token.key}
        model_source["huggingFaceModel"] = hf
    model_source["prefetchEnabled"] = prefetch_enabled(source, spec.lora)

    command = _command(inputs)
    env: list[dict[str, Any]] = []
    if _delivers_env(inputs):
        env += [{"name": k, "value": v} for k, v in inputs.engine_env.items()]
        env += _wrapper_env(inputs)
    env += [{"name": k, "value": v} for k, v in res.plain]
    env += [
        e
        for e in _secret_env(spec)
        if not (source.kind == "huggingface" and e["name"] == "HF_TOKEN")
    ]
    requests = pod_resources(res.instance, res.tensor_parallel_degree)
    worker: dict[str, Any] = {"image": inputs.image}
    if command is not None:
        worker["command"] = command[0]
        if command[1]:
            worker["args"] = command[1]
    worker["modelInvocationPort"] = {"containerPort": launch["port"], "name": "http"}
    worker["modelVolumeMount"] = {"name": MODEL_VOLUME, "mountPath": MODEL_MOUNT_PATH}
    worker["resources"] = {
        "requests": requests,
        "limits": {"memory": requests["memory"], "nvidia.com/gpu": requests["nvidia.com/gpu"]},
    }
    if env:
        worker["environmentVariables"] = env
    metrics: dict[str, Any] = {"enabled": "metrics_path" in launch}
    if "metrics_path" in launch:
        metrics["modelMetrics"] = {"port": launch["port"], "path": launch["metrics_path"]}
    return {
        "apiVersion": IEC_API_VERSION,
        "kind": IEC_KIND,
        "metadata": _metadata(inputs, inputs.names.base),
        "spec": {
            "modelName": inputs.names.base,
            "endpointName": inputs.names.base,
            "instanceType": res.instance.name,
            "invocationEndpoint": INVOCATION_ENDPOINT,
            "replicas": spec.replicas,
            "modelSourceConfig": model_source,
            "tlsConfig": {"tlsCertificateOutputS3Uri": inputs.tls_uri},
            "metrics": metrics,
            "loadBalancer": {"healthCheckPath": launch["health_path"]},
            "worker": worker,
        },
    }


# -- whole deployments --------------------------------------------------------------------


def objects_for(inputs: RenderInputs) -> list[dict[str, Any]]:
    """Every object of the deployment's target, in apply order."""
    if inputs.spec.target == "hyperpod-eks":
        return [inference_endpoint_config(inputs)]
    objects = [service_account(inputs)]
    for config in (config_map(inputs), wrapper_config_map(inputs)):
        if config is not None:
            objects.append(config)
    volume = model_volume(inputs)
    if volume is not None:
        objects.extend(volume)
    objects += cache_config_maps(inputs)
    objects += [deployment(inputs), service(inputs)]
    return objects


def cache_config_maps(inputs: RenderInputs) -> list[dict[str, Any]]:
    """The CacheBackend's client-config ConfigMap the injected pod mounts (SGLang), or ``[]``."""
    backend = inputs.spec.cache_backend
    if backend is None:
        return []
    from mlcc_constructs.core.cache import render_cache_config_maps

    return render_cache_config_maps(
        backend, workload_name=inputs.names.base, namespace=inputs.names.namespace
    )


def render(
    spec: DeploymentSpec,
    *,
    context: RenderContext | None = None,
    registry: EngineRegistry | None = None,
    validate: bool = True,
) -> Rendered:
    """Resolve, render and (by default) validate ``spec``; raises :class:`MlccError`."""
    inputs = prepare(spec, context=context, registry=registry)
    objects = objects_for(inputs)
    if validate:
        validate_objects(objects)
    return Rendered(objects=tuple(objects), warnings=inputs.warnings, inputs=inputs)


class _ReviewDumper(yaml.SafeDumper):
    """Multi-line strings (the wrapper script, JSON files) as ``|`` blocks a reviewer can read."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    lines = text.split("\n")
    if len(lines) > 1 and not any(line != line.rstrip() for line in lines):
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", text)


_ReviewDumper.add_representer(str, _represent_str)


def to_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document YAML, keys in render order (byte-stable)."""
    return yaml.dump_all(
        [dict(o) for o in objects],
        Dumper=_ReviewDumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        allow_unicode=True,
    )


def file_name(obj: Mapping[str, Any]) -> str:
    """``<kind>-<name>.yaml`` (lower-case kind), the ``--out`` file of one object."""
    return f"{str(obj['kind']).lower()}-{obj['metadata']['name']}.yaml"
