"""A :class:`DeploymentSpec` prepared once: every input checked, every fact computed once, the
objects rendered from those facts.

:func:`prepare` loads the target, fits the LoRA rank, resolves the engine config (parsing the
model source), checks the memory cap, admits the CacheBackend, picks the image, names the
objects, describes the engine container, lays out the pod template with the CacheBackend wired
in (:mod:`.prepare.pod`), and renders every kind the target lists
(:func:`~mlcc_constructs.core.serving.kinds.registry.render_objects`). Every problem is raised
at once. The kind modules only lay out what the :class:`DeploymentFacts` carry; they decide
nothing.

It stands above :mod:`.prepare` (the facts) and :mod:`.kinds` (the objects laid out from them),
which it both drives: no arrow of ``core/serving`` runs back up.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.platform.buckets import bucket_environment, bucket_name
from mlcc_constructs.core.platform.image_cache import cached_image, direct_pull_warning
from mlcc_constructs.core.platform.load_balancing import load_balancer_cidrs
from mlcc_constructs.core.platform.targets import TargetDescriptor, load_target, target_names
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.kinds.inference_endpoint_config import prefetch_enabled
from mlcc_constructs.core.serving.kinds.registry import (
    RenderedObject,
    check_facts,
    render_objects,
)
from mlcc_constructs.core.serving.prepare.cache_routing import cache_routing_problems
from mlcc_constructs.core.serving.prepare.cold_start import cold_start, load_path
from mlcc_constructs.core.serving.prepare.container import describe_container
from mlcc_constructs.core.serving.prepare.disruption import (
    ignored_field_warnings,
    min_replicas,
    rollout_problems,
    single_replica_warning,
)
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.instances import fallback_instances
from mlcc_constructs.core.serving.prepare.names import (
    name_problems,
    namespace_problems,
    object_names,
)
from mlcc_constructs.core.serving.prepare.pod import pod_template
from mlcc_constructs.core.serving.prepare.ready_timeout import (
    ready_timeout,
    ready_timeout_warning,
)
from mlcc_constructs.core.serving.prepare.secrets import plan_secrets
from mlcc_constructs.core.serving.resolve.engine_config import resolve_deployment
from mlcc_constructs.core.serving.resolve.model_load import stream_env
from mlcc_constructs.core.serving.resolve.model_size import model_size
from mlcc_constructs.core.serving.spec.autoscaling import autoscaling_problems
from mlcc_constructs.core.serving.spec.checks import spec_problems
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.serving.spec.endpoint import endpoint_problems, endpoint_warnings
from mlcc_constructs.core.serving.spec.model_bucket import place_model
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any
from mlcc_constructs.core.support.tokens import has_token

if TYPE_CHECKING:
    from mlcc_constructs.core.cache.admission import Admission


@dataclass(frozen=True, kw_only=True)
class PreparedDeployment(DeploymentFacts):
    """A deployment's facts (:class:`DeploymentFacts`, each field documented there) and its
    objects, rendered from them."""

    objects: tuple[RenderedObject, ...]
    """The target's objects in apply order, each with its construct id: what ``mlcc render``,
    ``dist/``, the cdk8s constructs and the CDK serving stacks emit."""


def infer_environment(bucket: str) -> dict[str, str]:
    """Account/region/profile encoded in a bucket named by ``stacks/buckets.json`` (or ``{}``)."""
    found = bucket_environment(bucket)
    return found[1] if found else {}


def prepare(
    spec: DeploymentSpec,
    *,
    context: RenderContext | None = None,
    registry: EngineRegistry | None = None,
    index_bytes: int | None = None,
) -> PreparedDeployment:
    """Check ``spec`` and compute every fact its objects need; all problems raised at once.

    ``registry`` defaults to the built-in engines (pass ``EngineRegistry.load(...)`` for
    plugins); ``context`` names the environment (TLS bucket, region fallback);
    ``index_bytes``: the staged model's safetensors index ``total_size``, when the caller read
    it (the model's size after the spec's ``model_bytes``:
    :func:`~mlcc_constructs.core.serving.resolve.model_size.model_size`).
    """
    context = context or RenderContext()
    registry = registry or EngineRegistry.load(use_env=False)
    spec, problems = place_model(spec, context)
    target: TargetDescriptor | None = None
    try:
        target = load_target(spec.target)
        target.require_kubernetes()
    except MlccError as error:
        problems.extend(error.problems)
    problems += name_problems(spec.name)
    problems += namespace_problems(spec.namespace)
    problems += spec_problems(spec)
    try:
        spec, resolution, fit_warnings = resolve_deployment(spec, target=target, registry=registry)
    except MlccError as error:
        raise MlccError([*problems, *error.problems]) from None
    manifest = resolution.manifest
    warnings = [str(s) for s in resolution.skipped] + list(resolution.warnings) + fit_warnings
    if spec.scaling.autoscaling is not None:
        problems += autoscaling_problems(
            spec.scaling.autoscaling,
            replicas=spec.scaling.replicas,
            engine=manifest.engine,
            metrics=manifest.metrics,
        )
    feature_problems, feature_warnings = cache_routing_problems(spec, target, manifest, registry)
    problems += feature_problems
    warnings += feature_warnings

    image = spec.engine.image or pinned().engine_images.get(manifest.engine)
    if image is not None:
        pull_warning = direct_pull_warning(image, registry=context.image_registry)
        warnings += [pull_warning] if pull_warning else []
        image = cached_image(image, registry=context.image_registry)
    if image is None:
        problems.append(
            Problem(
                message=f"engine {manifest.engine!r} has no pinned default image",
                pointer="/engine/image",
                fix="pass --image (DeploymentSpec.image) with the engine's container image",
            )
        )
    if spec.engine.config_delivery == "args" and manifest.entrypoint != "wrapper":
        problems.append(
            Problem(
                message=f"engine {manifest.engine!r} has entrypoint 'image': its image owns the "
                "command line, so there is no argv to deliver",
                pointer="/engine/config_delivery",
                value="args",
                allowed="env",
                fix="use --config-delivery env (the image reads "
                f"{manifest.env_var_prefix}* itself)",
            )
        )
    cache: Admission | None = None
    if spec.cache.backend is not None and target is not None:
        from mlcc_constructs.core.serving.resolve.cache_fit import admit_for_deployment

        cache_problems, cache = admit_for_deployment(spec.cache.backend, resolution, target)
        problems += cache_problems
    for key in [
        *spec.engine.secret_env,
        *([manifest.api_key_env] if spec.endpoint.api_key_secret else []),
    ]:
        if key in resolution.env:
            problems.append(
                Problem(
                    message="set both as plain env and as a Secret reference",
                    pointer=f"/engine/secret_env/{key}",
                    value=key,
                    fix="keep only the Secret reference",
                )
            )

    source = resolution.source
    inferred = infer_environment(source.bucket) if source.bucket else {}
    model_region = spec.region or inferred.get("region") or context.region
    if source.kind == "s3" and model_region is None:
        problems.append(
            Problem(
                message="the region of the model bucket is unknown",
                pointer="/region",
                value=None,
                fix="pass --region (DeploymentSpec.region); Mountpoint and the HyperPod "
                "operator need it",
            )
        )
    if resolution.stream is not None:  # the engine reads S3 itself: the region it needs
        # (the user's env cannot hold these: resolve/model_load.py refuses them)
        needed = stream_env(resolution.stream, model_region=model_region)
        resolution = dataclasses.replace(resolution, plain=needed + resolution.plain)
    tls_uri = None
    if target is not None and target.tls_bucket:
        tls_uri = _tls_uri(spec, context, inferred, model_region, problems)
    if target is not None and not target.service_account and spec.service_account_role_arn:
        warnings.append(
            f"service_account_role_arn is ignored on {target.name}: "
            + target.notes.get("service_account_role_arn", "it renders no ServiceAccount")
        )
    # The load balancer's region: the cluster's (context), else the spec's.
    region = context.region or spec.region
    problems += endpoint_problems(
        spec.endpoint, api_key=spec.endpoint.api_key_secret is not None, region=region
    )
    warnings += endpoint_warnings(spec.endpoint, api_key=spec.endpoint.api_key_secret is not None)
    if target is not None:
        problems += gateway_target_problems(spec, target)
    for index, namespace in enumerate(spec.endpoint.allow_from):
        problems += namespace_problems(namespace, pointer=f"/endpoint/allow_from/{index}")
    names = object_names(spec.name or "", spec.namespace)
    minimum = min_replicas(spec)
    if target is not None and target.pod_volumes:  # the pods are the library's own
        problems += rollout_problems(spec, minimum)
    elif target is not None:
        warnings += ignored_field_warnings(spec, target)
    instances, instance_problems = fallback_instances(
        resolution.instance,
        spec.compute.instance_types,
        tensor_parallel_degree=resolution.gpus_per_pod,
    )
    problems += instance_problems
    secrets = None
    if target is not None:
        secrets, secret_problems = plan_secrets(
            spec, manifest, target, names, region=region, account=context.account
        )
        problems += secret_problems
    if problems:
        raise MlccError(problems)
    assert image is not None and target is not None and secrets is not None  # checked above
    container = describe_container(spec, target, resolution, image, secrets, instances)
    if cache is not None:
        from mlcc_constructs.core.serving.resolve.cache_fit import node_memory_problems

        raise_if_any(node_memory_problems(cache, container.requests, instances))
    # The cold start, once: the probes, the do-not-disrupt window and the ready timeout.
    cold = cold_start(
        size=model_size(
            model_bytes=spec.model.bytes, model_config=spec.model.config, index_bytes=index_bytes
        ),
        instances=instances,
        path=load_path(
            source_kind=source.kind,
            # Where the platform mounts the model (no pod volumes of ours: the HyperPod
            # operator), it prefetches it unless the IEC turns that off.
            platform_mounts=not target.pod_volumes,
            prefetch=prefetch_enabled(source, spec.lora.enabled),
            model_load=resolution.model_load,
        ),
        launches_nodes=target.cluster_gpu_nodes,
        nodes=resolution.nodes,
    )
    # The target scrapes the engine's /metrics, and the engine serves some.
    scraped = target.metrics_scraped and manifest.metrics is not None
    facts = DeploymentFacts(
        spec=spec,
        target=target,
        resolution=resolution,
        names=names,
        container=container,
        pod_template=pod_template(
            target=target,
            resolution=resolution,
            container=container,
            names=names,
            secrets=secrets,
            cache=cache,
            max_request_seconds=spec.endpoint.max_request_seconds,
            cold_start=cold,
            instances=instances,
        ),
        model_region=model_region,
        tls_uri=tls_uri,
        load_balancer_cidrs=(
            ()
            if spec.endpoint.scheme == "none"
            else load_balancer_cidrs(context.load_balancer_cidrs, spec.endpoint.scheme)
        ),
        secrets=secrets,
        cache=cache,
        warnings=tuple(warnings),
        ready_timeout=ready_timeout(
            cold, replicas=spec.scaling.replicas, override=spec.rollout.ready_timeout_seconds
        ),
        min_replicas=minimum,
        instance_types=instances,
        prometheus_query_url=query_base(context.prometheus_query_url),
        cluster_region=region,
        metrics_scraper_cidrs=(
            tuple(
                context.metrics_scraper_cidrs
                if context.metrics_scraper_cidrs is not None
                else load_balancer_cidrs(context.load_balancer_cidrs, "internal")
            )
            if scraped
            else ()
        ),
        service_monitor_namespace=context.prometheus_operator_namespace if scraped else None,
    )
    late_note = ready_timeout_warning(names.base, facts.ready_timeout)
    if late_note is not None:
        facts = dataclasses.replace(facts, warnings=(*facts.warnings, late_note))
    if target.cluster_gpu_nodes:  # Auto Mode's nodes expire; a HyperPod instance group's do not
        note = single_replica_warning(
            name=names.base,
            minimum=minimum,
            profile=context.profile,
            cold_start_s=facts.ready_timeout.seconds,
            nodes=resolution.nodes,
        )
        if note is not None:
            facts = dataclasses.replace(facts, warnings=(*facts.warnings, note))
    kind_problems, kind_warnings = check_facts(facts)
    raise_if_any(kind_problems)
    facts = dataclasses.replace(facts, warnings=(*facts.warnings, *kind_warnings))
    shared = {f.name: getattr(facts, f.name) for f in fields(DeploymentFacts)}
    return PreparedDeployment(**shared, objects=render_objects(facts))


def query_base(url: str | None) -> str | None:
    """The workspace URL KEDA and the IEC take: KEDA appends ``/api/v1/query`` and the IEC's
    ``serverAddress`` pattern ends at the workspace id, while the workspace's own
    ``prometheusEndpoint`` (DescribeWorkspace, ``AWS::APS::Workspace``) ends in ``/api/v1/``; a
    CDK token is kept as given (the cluster side builds the base from the workspace id)."""
    if url is None or has_token(url):
        return url
    return url.rstrip("/").removesuffix("/api/v1").rstrip("/")


def gateway_target_problems(spec: DeploymentSpec, target: TargetDescriptor) -> list[Problem]:
    """``endpoint.gateway`` on a target whose manifest renders no Inference Gateway."""
    if spec.endpoint.gateway is None or target.inference_gateway:
        return []
    allowed = [name for name in target_names() if load_target(name).inference_gateway]
    return [
        Problem(
            message=f"target {target.name} renders no Inference Gateway (the HyperPod inference "
            "add-on runs it)",
            pointer="/endpoint/gateway",
            value=target.name,
            allowed="targets " + ", ".join(allowed),
            fix="drop endpoint.gateway"
            + (f" ({target.notes['gateway']})" if "gateway" in target.notes else "")
            + f", or deploy to {' or '.join(allowed)}",
        )
    ]


def _tls_uri(
    spec: DeploymentSpec,
    context: RenderContext,
    inferred: dict[str, str],
    model_region: str | None,
    problems: list[Problem],
) -> str | None:
    """``s3://<tls bucket>/<namespace>/<name>``: the context's TLS bucket, else the ``tls``
    bucket of ``stacks/buckets.json``, for which a missing account/region/profile is a problem."""
    if context.tls_bucket is not None:
        return f"s3://{context.tls_bucket}/{spec.namespace}/{spec.name}"
    values = {
        "account": context.account or inferred.get("account"),
        "region": context.region or model_region,
        "profile": context.profile or inferred.get("profile"),
    }
    missing = [name for name, value in values.items() if not value]
    if missing:
        problems.append(
            Problem(
                message="the IEC's TLS bucket (stacks/buckets.json 'tls') needs "
                + ", ".join(missing),
                pointer=f"/{missing[0]}",
                fix="pass " + " ".join(f"--{m}" for m in missing) + " (or set them in "
                "cdk.json context / RenderContext)",
            )
        )
        return None
    try:
        tls = bucket_name(
            "tls",
            account=str(values["account"]),
            region=str(values["region"]),
            profile=str(values["profile"]),
        )
    except MlccError as error:
        problems.extend(error.problems)
        return None
    return f"s3://{tls}/{spec.namespace}/{spec.name}"
