"""The user's declarative input: one :class:`DeploymentSpec` per served model, in sections
(:mod:`~mlcc_constructs.core.serving.spec.sections`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from mlcc_constructs.core.serving.spec.endpoint import MAX_REQUEST_SECONDS, Endpoint
from mlcc_constructs.core.serving.spec.secret_ref import SecretRef
from mlcc_constructs.core.serving.spec.sections import (
    MODEL_BYTES_FIX,
    CacheSpec,
    ComputeSpec,
    ConfigDelivery,
    EngineSpec,
    LoraSpec,
    ModelLoad,
    ModelSpec,
    RolloutSpec,
    RolloutStrategy,
    ScalingSpec,
)
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields

__all__ = [
    "MAX_REQUEST_SECONDS",
    "MODEL_BYTES_FIX",
    "SECTIONS",
    "CacheSpec",
    "ComputeSpec",
    "ConfigDelivery",
    "DeploymentSpec",
    "EngineSpec",
    "LoraSpec",
    "ModelLoad",
    "ModelSource",
    "ModelSpec",
    "RolloutSpec",
    "RolloutStrategy",
    "ScalingSpec",
    "SecretRef",
    "parse_model_source",
]

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?)/(?P<prefix>.*)$")
_HF_ID = re.compile(r"^(?P<org>[A-Za-z0-9][A-Za-z0-9._-]*)/(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)$")


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


def parse_model_source(model: str, *, pointer: str = "/model/uri") -> ModelSource:
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
    """One served model. Only ``engine.name``, ``model.uri`` and ``compute.instance_type`` are
    required: ``DeploymentSpec(engine=EngineSpec(name="vllm"), model=ModelSpec(uri=...),
    compute=ComputeSpec(instance_type="g5.xlarge"))``. A section may be given as a plain
    mapping (``compute={"instance_type": "g5.xlarge"}``), read as a spec file's section is, with
    the same errors."""

    engine: EngineSpec = field(metadata=meta())
    """The engine and its container (:class:`EngineSpec`). Required."""
    model: ModelSpec = field(metadata=meta())
    """The model's weights and how they are read (:class:`ModelSpec`). Required."""
    compute: ComputeSpec = field(metadata=meta())
    """The instance type(s) and the model's parallelism (:class:`ComputeSpec`). Required."""
    name: str | None = field(default=None, metadata=meta(cli="--name"))
    """RFC 1035 label naming the Kubernetes objects. Default: none (required to render)."""
    served_model_name: str | None = field(
        default=None, metadata=meta(cli="--served-model-name", minLength=1)
    )
    """The name the engine serves the model under: what clients send as the OpenAI API's
    ``model`` and what ``/v1/models`` lists (LoRA adapters keep their own names). Passed
    through the engine's own setting (its manifest's ``served_model_name`` capability).
    Default: the deployment's ``name``."""
    namespace: str = field(default="default", metadata=meta(cli="--namespace"))
    """Kubernetes namespace. Default: ``default``."""
    target: str = field(default="eks", metadata=meta(cli="--target", enum=["eks", "hyperpod-eks"]))
    """Where it runs: ``eks`` or ``hyperpod-eks``. Default: ``eks``."""
    region: str | None = field(default=None, metadata=meta(cli="--region", minLength=1))
    """The deployment's AWS region, also the model bucket's. Default: none (the render
    context's; required for an s3:// model)."""
    service_account_role_arn: str | None = field(
        default=None,
        metadata=meta(cli="--role-arn", pattern="^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$"),
    )
    """IAM role for the pod's ServiceAccount (IRSA, eks). Default: none."""
    lora: LoraSpec = field(default_factory=LoraSpec, metadata=meta())
    """LoRA adapters (:class:`LoraSpec`). Default: off."""
    endpoint: Endpoint = field(default_factory=Endpoint, metadata=meta())
    """How clients reach the engine and who may call it (:class:`Endpoint`: an Ingress on
    eks). Default: an ``internal`` load balancer, HTTP, a host of its own, no API key."""
    scaling: ScalingSpec = field(default_factory=ScalingSpec, metadata=meta())
    """Replicas, fixed or autoscaled (:class:`ScalingSpec`). Default: one replica."""
    rollout: RolloutSpec = field(default_factory=RolloutSpec, metadata=meta())
    """How updates replace pods and how long a deploy waits (:class:`RolloutSpec`). Default:
    surge, a computed ready timeout."""
    cache: CacheSpec = field(default_factory=CacheSpec, metadata=meta())
    """KV caches and cache-aware routing (:class:`CacheSpec`). Default: none."""

    def __post_init__(self) -> None:
        given = {
            name: getattr(self, name)
            for name in SECTIONS
            if isinstance(getattr(self, name), Mapping)
        }
        if given:  # plain mappings: read as a file's sections are, with the same errors
            from mlcc_constructs.core.serving.spec.section_build import build_sections

            for name, section in build_sections(given).items():
                object.__setattr__(self, name, section)
        check_fields(self)


SECTIONS: tuple[str, ...] = (
    "engine",
    "model",
    "compute",
    "lora",
    "endpoint",
    "scaling",
    "rollout",
    "cache",
)
"""The fields of :class:`DeploymentSpec` that are sections (a dataclass, or a plain mapping)."""
