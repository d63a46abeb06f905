"""The serving side of an adapter delivery: the deployment, its live state, the refusals.

Pure: :class:`LiveState` holds what the caller read from the cluster (pod env, the live
``InferenceEndpointConfig``, whether the pods mount the model prefix); nothing here reads it.

- :class:`Deployment` is what the engine accepts (max LoRA rank key and default, the dynamic
  LoRA API) and where its model is.
- :func:`live_rank_limit` is the max LoRA rank the pods run with: pod env, then IEC env, then
  the engine default.
- :func:`check_delivery` raises every refusal at once, before anything is read: a target
  without pods, a Hugging Face or model-package model source, a prefetching IEC, pods that
  should mount the model themselves (``pod_volumes``: eks) without the S3 mount, a full
  fine-tune (not a base) as the model. It returns
  what the deployment serves (:class:`Serving`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mlcc_constructs.core.adapters import path_names, s3_layout as layout
from mlcc_constructs.core.adapters.record_fields import dig
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.engines.manifests import EngineManifest
from mlcc_constructs.core.engines.values import companion_default
from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

# The OpenAI-compatible model list, where both dynamic-LoRA engines report each loaded adapter
# as {"id": lora_name, "root": lora_path, "parent": base}: vLLM's OpenAIServingModels.
# show_available_models (vllm/entrypoints/openai/serving_models.py) and SGLang's
# available_models (python/sglang/srt/entrypoints/http_server.py, LoRA cards since its
# lora_registry). An engine manifest may name another path as adapter_api.list.
MODEL_LIST_PATH = "/v1/models"
_MODEL_PACKAGE = re.compile(r"^arn:aws[a-z-]*:sagemaker:[^:]*:[0-9]*:model-package/")


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """The serving side of a delivery: where the model is and what the engine accepts.

    Build it with :meth:`for_engine` from an engine manifest.
    """

    target: str
    """Target name (``eks``, ``hyperpod-eks``, ``realtime-inference``)."""
    model: str
    """The deployment's model source: ``s3://bucket/prefix/``, a Hugging Face id, or a
    model-package ARN."""
    project: str
    rank_env_key: str | None
    """Env key of the engine's max LoRA rank (``VLLM_MAX_LORA_RANK``); None if it has none."""
    default_rank: int | None
    """The max LoRA rank the engine runs with when none is set (``lora_max_rank``'s companion
    default); None if it has no such capability."""
    adapter_api: Mapping[str, str] = field(default_factory=dict)
    """``{"load": path, "unload": path, "list": path}`` from the engine manifest (``list``
    defaults to the OpenAI-compatible model list, :data:`MODEL_LIST_PATH`)."""
    runtime_env: Mapping[str, str] = field(default_factory=dict)
    """What the engine needs to serve ``adapter_api`` (the manifest's
    ``adapter_api.runtime_env``), named when a pod answers a load with 404."""
    base_model: str | None = None
    """Base id served. Default: read from a canonical ``models/<org>/<base>/`` model prefix."""
    base_revision: str | None = None

    @classmethod
    def for_engine(
        cls,
        manifest: EngineManifest,
        *,
        target: str,
        model: str,
        project: str,
        base_model: str | None = None,
        base_revision: str | None = None,
    ) -> Deployment:
        """From an engine manifest. The default max LoRA rank is the one the resolver emits
        for the companion (the manifest's default, else the library's), so an engine that
        declares ``lora_max_rank`` without a default runs with, and is checked against, 16."""
        capability = manifest.capability("lora_max_rank")
        # the library default applies only to an engine that has the capability at all
        default = companion_default(manifest, "lora_max_rank") if capability is not None else None
        return cls(
            target=target,
            model=model,
            project=project,
            rank_env_key=manifest.key(capability) if capability is not None else None,
            default_rank=int(default) if default is not None else None,
            adapter_api=(
                {"list": MODEL_LIST_PATH, **manifest.adapter_api} if manifest.adapter_api else {}
            ),
            runtime_env=dict(manifest.adapter_runtime_env),
            base_model=base_model,
            base_revision=base_revision,
        )


@dataclass(frozen=True, kw_only=True)
class LiveState:
    """What the cluster says right now. ``None`` = not known (not looked up)."""

    pod_env: Mapping[str, str] | None = None
    """Env of a Running serving pod (container env + envFrom ConfigMaps)."""
    iec: Mapping[str, Any] | None = None
    """The live ``InferenceEndpointConfig`` (hyperpod-eks)."""
    s3_mount: bool | None = None
    """Whether the serving pods mount the model prefix through the S3 CSI driver (checked for
    a target whose pods mount the model themselves, ``pod_volumes``: eks)."""


def iec_env(iec: Mapping[str, Any] | None) -> dict[str, str]:
    """``spec.worker.environmentVariables`` of an IEC as a dict."""
    items = dig(iec, "spec", "worker", "environmentVariables") or []
    return {
        str(i["name"]): str(i.get("value", ""))
        for i in items
        if isinstance(i, Mapping) and "name" in i
    }


def live_rank_limit(deployment: Deployment, live: LiveState) -> tuple[int | None, str]:
    """The max LoRA rank the pods run with, and where it came from: pod env → IEC env →
    engine default."""
    key = deployment.rank_env_key
    if key is not None:
        for origin, env in (("pod env", live.pod_env), ("IEC env", iec_env(live.iec))):
            value = (env or {}).get(key)
            if value is not None:
                try:
                    return int(value), f"{origin} {key}"
                except ValueError as error:
                    raise fail(
                        f"the live {key} is not an integer", where=origin, value=value
                    ) from error
    if deployment.default_rank is not None:
        return deployment.default_rank, "engine default"
    return None, "none (the engine has no max LoRA rank)"


def deployment_refusals(deployment: Deployment, live: LiveState) -> list[Problem]:
    """Why adapters cannot be delivered to this deployment, from its config and live state."""
    target = load_target(deployment.target)
    problems = []
    if target.adapter_delivery.strategy != "model-prefix":
        problems.append(
            Problem(
                message=f"target {target.name} does not load adapters into pods; each adapter is "
                "its own inference component",
                pointer="/target",
                value=target.name,
                fix="declare the adapter in the AdapterInferenceComponents construct and deploy",
            )
        )
        return problems
    if _MODEL_PACKAGE.match(deployment.model) or not deployment.model.startswith("s3://"):
        problems.append(
            Problem(
                message="adapters are delivered through the model's S3 mount, and this "
                "deployment's model is not on S3",
                pointer="/model",
                value=deployment.model,
                fix="stage the model to S3 and redeploy with model=s3://<core>/models/<org>/<base>/",
            )
        )
    elif (finetune := _full_finetune_of(deployment.model)) is not None:
        problems.append(
            Problem(
                message=f"this deployment serves full fine-tune {finetune[1]} of project "
                f"{finetune[0]}: a full fine-tune is not a base model, and adapters are "
                "delivered only to a deployment of the base they were trained on",
                pointer="/model",
                value=deployment.model,
                fix="deliver the adapter to a deployment of its Hugging Face base "
                "(s3://<core>/models/<org>/<base>/)",
            )
        )
    source_type = dig(live.iec, "spec", "modelSourceConfig", "modelSourceType")
    if source_type not in (None, "s3"):
        problems.append(
            Problem(
                message="the live InferenceEndpointConfig does not mount an S3 model",
                pointer="/spec/modelSourceConfig/modelSourceType",
                value=source_type,
                fix="stage the model to S3 and redeploy",
            )
        )
    if dig(live.iec, "spec", "modelSourceConfig", "prefetchEnabled") is True:
        problems.append(
            Problem(
                message="the live InferenceEndpointConfig prefetches the model, so adapters "
                "written after start are not visible in the pods",
                pointer="/spec/modelSourceConfig/prefetchEnabled",
                value=True,
                fix="redeploy with LoRA enabled (it renders prefetchEnabled: false)",
            )
        )
    # a target whose own pods mount the s3:// model (not the platform) must show that mount
    if target.pod_volumes and live.s3_mount is False:
        problems.append(
            Problem(
                message="the serving pods do not mount the model through the S3 CSI driver",
                pointer="/volumes",
                value=False,
                fix="redeploy with an s3:// model so the Deployment mounts it read-only",
            )
        )
    return problems


def _full_finetune_of(model: str) -> tuple[str, str] | None:
    match = layout.parse_s3_uri(model, pointer="/model") if model.startswith("s3://") else None
    return layout.parse_full_finetune(match) if match is not None else None


def serving_model(deployment: Deployment) -> S3Location:
    """The model prefix the deployment's pods mount."""
    location = layout.parse_s3_uri(deployment.model, pointer="/model")
    return layout.model_location(location.bucket, location.key)


def deployment_base(deployment: Deployment) -> str:
    """The Hugging Face id of the base the deployment serves."""
    if deployment.base_model:
        return layout.base_model(deployment.base_model).hf_id
    base = layout.base_of_model_location(serving_model(deployment))
    if base is None:
        raise fail(
            "cannot tell which base model this deployment serves",
            pointer="/model",
            value=deployment.model,
            fix="pass --base-model <org>/<name> for a model staged outside models/<org>/<base>/",
        )
    return layout.base_model(base.hf_id).hf_id


@dataclass(frozen=True, kw_only=True)
class Serving:
    """A deployment that passed :func:`check_delivery`: its model prefix and served base."""

    model: S3Location
    base: str


def check_delivery(deployment: Deployment, live: LiveState, name: str) -> Serving:
    """Refusals first (all at once), before anything is read; then what the deployment serves."""
    path_names.check_components(project=deployment.project, name=name)
    problems = deployment_refusals(deployment, live)
    if problems:
        raise MlccError(problems)
    return Serving(model=serving_model(deployment), base=deployment_base(deployment))
