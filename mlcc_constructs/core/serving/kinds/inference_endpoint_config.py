"""``InferenceEndpointConfig`` (``inference.sagemaker.aws.amazon.com/v1``): a deployment on
HyperPod, served by the inference operator, whose EKS add-on installs the CRD. The operator
mounts the model (S3, or a Hugging Face model its init container stages with the token), so the
worker takes no volumes; the engine config travels in the worker's env and command
(:mod:`mlcc_constructs.core.serving.prepare.container`).

Decisions (for reviewers):

* **Probes**: the worker gets the same startup (the deployment's cold-start budget,
  :mod:`~mlcc_constructs.core.serving.prepare.cold_start`), readiness and liveness probes as
  the eks Deployment, on the engine manifest's ``health_path`` and the invocation port (by
  number: the v1 CRD's ``worker.probes`` take Kubernetes probes, and the operator's defaults
  would not know the engine's health path).
* **Endpoint name**: ``endpointName`` names a SageMaker endpoint, whose names are unique per
  account and region, not per namespace, so it cannot be the bare name (two namespaces
  deploying ``llama`` would claim the same endpoint). It is ``<namespace>-<name>-<hash8>``
  (:func:`endpoint_name`): readable, and distinct for every (namespace, name) pair even where
  the joined text is ambiguous (``a-b``/``c`` and ``a``/``b-c``). ``metadata.name`` and
  ``modelName`` stay the deployment's name.

* **Endpoint**: the operator makes one Application Load Balancer per IEC and terminates TLS
  with its own self-signed certificate (written to the TLS bucket) unless
  ``tlsConfig.customCertificateConfig`` names an ACM certificate and the domain it is for:
  ``endpoint.certificate_arn`` and ``endpoint.hostname`` (the v1 CRD; add-on
  v2.0.0-eksbuild.2, newer than operator 3.1, where the field appeared in the CRD history of
  aws/sagemaker-hyperpod-cli). The IEC names neither a scheme nor a shared group, so
  ``internet-facing``, ``none`` and ``group`` are refused (:func:`check`).

* **Readiness**: the operator's ``status.state`` (an enum of the v1 CRD) is
  ``DeploymentComplete`` for the current generation; ``DeploymentFailed`` fails
  (:func:`~mlcc_constructs.core.serving.kinds._readiness.iec_readiness`, the rule the serving
  stacks' readiness Lambda also judges with).
* **Autoscaling**: ``autoScalingSpec`` (v1 CRD): ``minReplicaCount``/``maxReplicaCount`` from
  ``autoscaling``, ``pollingInterval``, ``cooldownPeriod`` and ``scaleDownStabilizationTime``
  (both the cooldown: the CRD's KEDA-style cooldown applies only to the step to zero), and one
  ``prometheusTrigger``: ``sum(<metric>{<model label>="<served name>"})`` with ``metricType``
  Average (the target per pod) against ``RenderContext.prometheus_query_url`` (the CRD's
  ``serverAddress``: an Amazon Managed Service for Prometheus workspace), else the operator's
  default with a warning. Scale to zero is refused here (:func:`check`): the queue metric goes
  with the last pod, and the operator's load balancer has no name a CloudWatch trigger could
  use at synth.
* **Routing and KV cache**: ``routing`` becomes ``intelligentRoutingSpec`` (``enabled`` and the
  ``routingStrategy``) and ``kv_cache`` becomes ``kvCacheSpec`` (``enableL1Cache``,
  ``enableL2Cache``, ``l2CacheSpec.l2CacheBackend``/``l2CacheLocalUrl``, ``cacheConfigFile``), as
  AWS's "KV caching and intelligent routing" page and the v1 CRD name them; which targets and
  engines take them is checked at prepare
  (:mod:`mlcc_constructs.core.serving.prepare.cache_routing`). The CRD rejects
  ``intelligentRoutingSpec`` added to an existing IEC (and its ``enabled`` cannot change), so
  the diff guard reports such an update (:mod:`mlcc_constructs.core.platform.replacement_rules`).
* **Deadline**: ``maxDeployTimeInSeconds`` (v1 CRD, default 3600) is the deployment's ready
  timeout (:mod:`mlcc_constructs.core.serving.prepare.ready_timeout`), so the operator reports
  ``DeploymentFailed`` when the deploy that waits for it gives up, not an hour later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds._readiness import (
    FAILED_STATE as FAILED_STATE,
    READY_STATE as READY_STATE,
    iec_readiness,
)
from mlcc_constructs.core.serving.kinds.registry import (
    EngineView,
    Kind,
    RenderedObject,
    env_value,
)
from mlcc_constructs.core.serving.kinds.scaled_object import prometheus_query
from mlcc_constructs.core.serving.prepare.container import health_probes, plain_env, secret_env
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import MAX_NAME
from mlcc_constructs.core.serving.spec.cache_routing import KvCache, Routing
from mlcc_constructs.core.serving.spec.deployment import ModelSource
from mlcc_constructs.core.support.errors import Problem

API_VERSION = "inference.sagemaker.aws.amazon.com/v1"
RULES = CrdRules(file="inferenceendpointconfigs.inference.sagemaker.aws.amazon.com.v1.json")
INVOCATION_ENDPOINT = "v1/chat/completions"
"""The OpenAI-compatible route every built-in engine serves (HyperPod ``invocationEndpoint``)."""
MODEL_VOLUME = "model-weights"
HF_TOKEN = "HF_TOKEN"
"""The Secret-backed env that the operator takes as ``huggingFaceModel.tokenSecretRef``."""
ENDPOINT_HASH_CHARS = 8


def endpoint_name(namespace: str, name: str) -> str:
    """``<namespace>-<name>-<hash8>``, at most 63 characters (the v1 CRD's ``endpointName``
    limit; its pattern allows letters, digits and inner dashes, which DNS labels satisfy).

    The hash is the first 8 hex digits of the SHA-256 of ``namespace/name``, so the name is
    stable across renders and distinct per (namespace, name); a long namespace-name is cut (at
    a character, trailing dashes dropped) to leave room for it.
    """
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:ENDPOINT_HASH_CHARS]
    readable = f"{namespace}-{name}"[: MAX_NAME - ENDPOINT_HASH_CHARS - 1].rstrip("-")
    return f"{readable}-{digest}"


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's one object."""
    return [RenderedObject("InferenceEndpointConfig", inference_endpoint_config(facts))]


def prefetch_enabled(source: ModelSource, lora: bool) -> bool:
    """Prefetch copies the model once at start, so adapters added later to the S3 prefix would
    never be seen: it is off for LoRA with an S3 source (seed lora-delivery §2), on otherwise."""
    return not (lora and source.kind == "s3")


def inference_endpoint_config(facts: DeploymentFacts) -> dict[str, Any]:
    """The HyperPod ``InferenceEndpointConfig`` (v1) of the deployment."""
    spec, source, box = facts.spec, facts.source, facts.container
    model_source: dict[str, Any] = {"modelSourceType": source.kind}
    if source.kind == "s3":
        model_source["s3Storage"] = {"bucketName": source.bucket, "region": facts.model_region}
        model_source["modelLocation"] = source.location
    else:
        hf: dict[str, Any] = {"modelId": source.hf_id}
        token = box.secret_env.get(HF_TOKEN)
        if token is not None:
            hf["tokenSecretRef"] = {"name": token.name, "key": token.key}
        model_source["huggingFaceModel"] = hf
    model_source["prefetchEnabled"] = prefetch_enabled(source, spec.lora.enabled)

    env = plain_env(tuple(box.engine_env.items()))
    env += plain_env(box.wrapper_env)
    env += plain_env(box.plain_env)
    secrets = {
        key: ref
        for key, ref in box.secret_env.items()
        if not (source.kind == "huggingface" and key == HF_TOKEN)  # it is tokenSecretRef
    }
    env += secret_env(secrets)
    worker: dict[str, Any] = {"image": box.image}
    if box.command is not None:
        worker["command"] = list(box.command)
        if box.args:
            worker["args"] = list(box.args)
    worker["modelInvocationPort"] = {"containerPort": box.port, "name": "http"}
    worker["modelVolumeMount"] = {
        "name": MODEL_VOLUME,
        "mountPath": facts.target.model_mount_path,
    }
    worker["resources"] = {"requests": dict(box.requests), "limits": box.limits}
    if env:
        worker["environmentVariables"] = env
    worker["probes"] = health_probes(
        box.health_path, box.port, startup_failures=facts.cold_start.startup_failures
    )
    metrics: dict[str, Any] = {"enabled": box.metrics_path is not None}
    if box.metrics_path is not None:
        metrics["modelMetrics"] = {"port": box.port, "path": box.metrics_path}
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceEndpointConfig",
        "metadata": metadata(facts, facts.names.base),
        "spec": {
            "modelName": facts.names.base,
            "endpointName": endpoint_name(facts.names.namespace, facts.names.base),
            **instance_fields(facts),
            "invocationEndpoint": INVOCATION_ENDPOINT,
            # With autoscaling the operator's autoscaler owns the count; the IEC starts at the
            # floor (what the deploy waits for).
            "replicas": facts.min_replicas,
            **({"autoScalingSpec": auto_scaling_spec(facts)} if spec.scaling.autoscaling else {}),
            **(
                {"intelligentRoutingSpec": intelligent_routing_spec(spec.cache.routing)}
                if spec.cache.routing is not None
                else {}
            ),
            **(
                {"kvCacheSpec": kv_cache_spec(spec.cache.kv_cache)}
                if spec.cache.kv_cache is not None
                else {}
            ),
            "modelSourceConfig": model_source,
            "tlsConfig": tls_config(facts),
            "metrics": metrics,
            "loadBalancer": {"healthCheckPath": box.health_path},
            "worker": worker,
            # The operator's own deadline is the deploy's (its default is 3600 s, past the
            # one-hour limit of the deploy that waits for it).
            "maxDeployTimeInSeconds": facts.ready_timeout.seconds,
        },
    }


def auto_scaling_spec(facts: DeploymentFacts) -> dict[str, Any]:
    """The v1 CRD's ``autoScalingSpec`` (module doc: *Autoscaling*)."""
    autoscaling, metric = facts.spec.scaling.autoscaling, facts.scaling_metric
    assert autoscaling is not None and metric is not None  # checked at prepare
    trigger: dict[str, Any] = {
        "name": metric.role.replace("_", "-"),
        "query": prometheus_query(facts, namespace_label=False),
        "targetValue": metric.target,
        "metricType": "Average",
    }
    if facts.prometheus_query_url is not None:
        trigger["serverAddress"] = facts.prometheus_query_url
    return {
        "minReplicaCount": autoscaling.min_replicas,
        "maxReplicaCount": autoscaling.max_replicas,
        "pollingInterval": autoscaling.polling_seconds,
        "cooldownPeriod": autoscaling.cooldown_seconds,
        "scaleDownStabilizationTime": autoscaling.cooldown_seconds,
        "prometheusTrigger": trigger,
    }


def intelligent_routing_spec(routing: Routing) -> dict[str, Any]:
    """The v1 CRD's ``intelligentRoutingSpec`` (module doc: *Routing and KV cache*)."""
    return {"enabled": True, "routingStrategy": routing.strategy}


def kv_cache_spec(kv_cache: KvCache) -> dict[str, Any]:
    """The v1 CRD's ``kvCacheSpec`` (module doc: *Routing and KV cache*): both tiers' switches
    always, the L2 backend and its URL when there is one."""
    spec: dict[str, Any] = {
        "enableL1Cache": kv_cache.l1,
        "enableL2Cache": kv_cache.l2 is not None,
    }
    if kv_cache.l2 is not None:
        l2: dict[str, Any] = {"l2CacheBackend": kv_cache.l2}
        if kv_cache.l2_url is not None:
            l2["l2CacheLocalUrl"] = kv_cache.l2_url
        spec["l2CacheSpec"] = l2
    if kv_cache.config_file is not None:
        spec["cacheConfigFile"] = kv_cache.config_file
    return spec


def instance_fields(facts: DeploymentFacts) -> dict[str, Any]:
    """``instanceType``, or with fallbacks ``instanceTypes`` (v1 CRD: "List of instance types to
    deploy the model on, in order of preference ... selecting the first available type",
    mutually exclusive with ``instanceType``)."""
    names = [instance.name for instance in facts.instance_types]
    return {"instanceType": names[0]} if len(names) == 1 else {"instanceTypes": names}


def tls_config(facts: DeploymentFacts) -> dict[str, Any]:
    """Where the operator writes its certificate, and the team's own certificate if given."""
    config: dict[str, Any] = {"tlsCertificateOutputS3Uri": facts.tls_uri}
    endpoint = facts.spec.endpoint
    if endpoint.certificate_arn is not None and endpoint.hostname is not None:
        config["customCertificateConfig"] = {
            "acmArn": endpoint.certificate_arn,
            "domainName": endpoint.hostname,
        }
    return config


def check(facts: DeploymentFacts) -> tuple[list[Problem], list[str]]:
    """What an IEC's endpoint can be (module doc: *Endpoint*)."""
    endpoint, problems = facts.spec.endpoint, []
    fix = "use target eks for this endpoint (an Ingress the library makes)"
    if endpoint.scheme != "internal":
        problems.append(
            Problem(
                message="the inference operator always makes its own load balancer, and the "
                "InferenceEndpointConfig v1 names no scheme for it",
                pointer="/endpoint/scheme",
                value=endpoint.scheme,
                allowed="internal",
                fix=fix,
            )
        )
    if endpoint.group is not None:
        problems.append(
            Problem(
                message="the inference operator makes one load balancer per "
                "InferenceEndpointConfig: it shares none",
                pointer="/endpoint/group",
                value=endpoint.group,
                fix="drop endpoint.group, or " + fix,
            )
        )
    if endpoint.hosted_zone_id is not None:
        problems.append(
            Problem(
                message="the inference operator makes the load balancer, and no readiness read "
                "of the stack sees its address to point a record at",
                pointer="/endpoint/hosted_zone_id",
                value=endpoint.hosted_zone_id,
                fix="drop endpoint.hosted_zone_id and point endpoint.hostname at the operator's "
                "load balancer yourself, or " + fix,
            )
        )
    if endpoint.certificate_arn is not None and (
        endpoint.hostname is None or endpoint.hostname.startswith("*.")
    ):
        problems.append(
            Problem(
                message="the operator attaches a custom certificate for one domain name "
                "(tlsConfig.customCertificateConfig.domainName: not a wildcard)",
                pointer="/endpoint/hostname",
                value=endpoint.hostname,
                allowed="the DNS name clients call, covered by the certificate",
                fix="set endpoint.hostname, e.g. llm.example.com",
            )
        )
    if facts.scales_to_zero:
        problems.append(
            Problem(
                message="scale to zero needs a wake-up signal that exists while no pod runs, and "
                "the queue-depth metric disappears with the last pod; the operator's load "
                "balancer has no name the IEC could give a CloudWatch trigger at synth",
                pointer="/scaling/autoscaling/scale_to_zero",
                value=True,
                allowed="false on hyperpod-eks",
                fix="keep min_replicas 1 on hyperpod-eks, or use target eks (KEDA wakes it on "
                "its load balancer's requests)",
            )
        )
    warnings = []
    if spec_autoscaling_without_url(facts):
        warnings.append(
            "autoscaling on hyperpod-eks without RenderContext.prometheus_query_url: the IEC's "
            "prometheusTrigger names no serverAddress, so the inference operator's own default "
            "applies (not verified)"
        )
    if endpoint.hostname is not None and endpoint.certificate_arn is None:
        warnings.append(
            "endpoint.hostname is used on hyperpod-eks only with endpoint.certificate_arn (the "
            "operator's custom certificate); without one the operator's self-signed "
            "certificate is for its own names"
        )
    return problems, warnings


def spec_autoscaling_without_url(facts: DeploymentFacts) -> bool:
    """An autoscaled IEC whose trigger names no Prometheus server."""
    return facts.spec.scaling.autoscaling is not None and facts.prometheus_query_url is None


def engine(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> EngineView:
    """The worker's command, args and env (the operator runs them in the engine container)."""
    worker = obj["spec"]["worker"]
    return EngineView(
        command=tuple(worker["command"]) if "command" in worker else None,
        args=tuple(worker.get("args", ())),
        env=tuple((str(e["name"]), env_value(e)) for e in worker.get("environmentVariables") or []),
    )


KIND = Kind(
    kind="InferenceEndpointConfig",
    api_version=API_VERSION,
    plural="inferenceendpointconfigs",
    namespaced=True,
    apply_phase=50,
    validate=RULES.problems,
    readiness=iec_readiness,
    render=render,
    requires=ADDON_NAME,
    check=check,
    engine=engine,
)
