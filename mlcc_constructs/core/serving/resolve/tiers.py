"""Tier-1 resolution and Tier-2 pass-through (ADR-010).

``resolve(spec)`` turns a :class:`DeploymentSpec` and the active engine's manifest into the
exact env the engine receives:

* Tier 1 — values the library computes and must place: the model, the tensor-parallel degree
  (from the instance catalog), the LoRA companion contract, the load format while it streams
  and the runtime adapter switch while adapters are loaded at runtime. Names come only from
  the manifest; this module never branches on an engine name, only on capability names. Tier 1
  is closed: an env key setting a computed value is refused (:mod:`.computed_keys`).
* Tier 2 — every other ``<PREFIX>*`` key the user sets, forwarded verbatim, in the user's order.
* Plain env — keys with no engine prefix (``NCCL_DEBUG``...), forwarded after Tier 2.

A capability is emitted only with a concrete value: a boolean as ``true`` when enabled (as
``false`` only where the engine has an off form, else omitted with a warning), a valued one
never empty or sentinel (value checks: ``core/engines/values.py``). A capability with
companions is emitted only when one of its companion groups fully resolves; otherwise it is
omitted and the reason reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlcc_constructs.core.engines.loader_config import loader_config_problems
from mlcc_constructs.core.engines.manifests import (
    Capability,
    EngineRegistry,
    parse_version,
)
from mlcc_constructs.core.engines.values import (
    FALSE,
    TRUE,
    ValueChecks,
    companion_default,
    requirement_text,
)
from mlcc_constructs.core.platform import catalog
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.platform.efa import (
    multi_node_network_problems,
    multi_node_network_warnings,
)
from mlcc_constructs.core.platform.targets import TargetDescriptor, load_target
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.resolve.computed_keys import env_problems, runtime_adapter_keys
from mlcc_constructs.core.serving.resolve.model_load import LoadDecision, decide
from mlcc_constructs.core.serving.resolve.multi_node import multi_node_engines, multi_node_problems
from mlcc_constructs.core.serving.resolve.node_sizing import (
    NodeSizing,
    auto_sizing,
    context_length,
    explicit_nodes_problem,
)
from mlcc_constructs.core.serving.resolve.resolution import Resolution, Skipped
from mlcc_constructs.core.serving.resolve.settings import EngineSettings, UserValue, read_settings
from mlcc_constructs.core.serving.spec.deployment import (
    DeploymentSpec,
    ModelSource,
    parse_model_source,
)
from mlcc_constructs.core.support.errors import MlccError, Problem


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


class _Resolver:
    def __init__(
        self,
        spec: DeploymentSpec,
        settings: EngineSettings,
        computed: Mapping[str, str],
        target: TargetDescriptor | None,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.manifest = settings.manifest
        self.computed = computed
        self.target = target
        self.user = settings.capabilities
        self.version = settings.version
        self.problems: list[Problem] = list(settings.problems)
        self.warnings: list[str] = list(settings.warnings)
        self.skipped: list[Skipped] = []
        self.load = LoadDecision(mode="mount")
        self.sizing: tuple[NodeSizing | None, tuple[Problem, ...]] = (None, ())
        """``nodes: auto`` resolved (:meth:`size_nodes`), or why it cannot be; ``(None, ())``
        for a number, and until the instance is known."""
        self.checks = ValueChecks(
            manifest=self.manifest,
            version=self.version,
            given_version=settings.given_version,
            problems=self.problems,
            warnings=self.warnings,
            pinned_release=pinned().engine_versions.get(self.manifest.engine),
        )

    # -- Tier 1 -------------------------------------------------------------------------

    def tier1(
        self, instance: InstanceType, source: ModelSource
    ) -> tuple[list[tuple[str, str]], dict[str, str], int]:
        manifest = self.manifest
        requested: dict[str, str] = {}
        hub_model: list[tuple[str, str]] = []
        self.load = decide(
            self.spec, manifest=manifest, version=self.version, target=self.target, source=source
        )
        self.problems.extend(self.load.problems)
        runtime = self._runtime_adapters()
        model = manifest.capability("model")
        if model is not None:
            requested["model"] = self._model_path(source)
        elif self.target is not None and not self._mounted(source):
            # An image engine reads its model from the mount path or its own settings: a Hub
            # model goes to the variable it downloads from, else it would reach nothing.
            if manifest.hub_model_env is not None:
                hub_model = [(manifest.hub_model_env, source.uri)]
            else:
                self.warnings.append(
                    f"{manifest.engine} receives no model from the library: the image reads it "
                    f"from {self.target.model_mount_path} (where an s3:// model is mounted) or "
                    f"from its own {manifest.env_var_prefix}* settings, and {source.uri!r} is "
                    "neither; stage the model in S3, or name it with --set "
                    f"{manifest.env_var_prefix}<the image's model setting>=..."
                )
        tp = self._tensor_parallel(instance)
        if manifest.capability("tensor_parallel_degree") is not None:
            requested["tensor_parallel_degree"] = str(tp)
        if (
            self.pipeline_parallel > 1
            and manifest.capability("pipeline_parallel_degree") is not None
        ):
            requested["pipeline_parallel_degree"] = str(self.pipeline_parallel)
        for name, value in self.computed.items():
            if manifest.capability(name) is not None:
                requested.setdefault(name, value)
        # The target scrapes /metrics (eks: the managed scraper; hyperpod-eks: the IEC's
        # metrics config), so an engine that serves them only when asked is asked (its
        # manifest's metrics.enable_capability): unasked, its /metrics answers 404.
        metrics = manifest.metrics
        if metrics is not None and metrics.enable_capability and self._scraped():
            requested.setdefault(metrics.enable_capability, TRUE)
        for name, user in self.user.items():
            requested[name] = user.value

        values: dict[str, str] = {}
        for name, value in requested.items():
            capability = manifest.capability(name)
            assert capability is not None  # requested names come from the manifest
            self._emit(capability, value, values)
        emitted = [
            (manifest.key(c), values[c.name]) for c in manifest.capabilities if c.name in values
        ]
        return emitted + list(self.load.tier1) + hub_model + runtime, values, tp

    def _runtime_adapters(self) -> list[tuple[str, str]]:
        """The engine's runtime adapter env (manifest ``adapter_api.runtime_env``: an engine
        may serve its load route only with it) where adapters are loaded at runtime: ``lora`` on
        a target whose pods load them through the engine's API. An env key setting one of them
        is then refused (Tier 1 closed)."""
        target = self.target
        if (
            not self.spec.lora.enabled
            or target is None
            or not target.adapter_delivery.loads_at_runtime
        ):
            return []
        self.problems.extend(
            env_problems(self.spec.engine.env, runtime_adapter_keys(self.manifest))
        )
        return list(self.manifest.adapter_runtime_env.items())

    def _model_path(self, source: ModelSource) -> str:
        """What the engine is told to load: the target's mount path for an ``s3://`` model or
        a Hugging Face model the target stages itself, else the Hugging Face id."""
        target = self.target
        if target is None or self.load.mode == "stream":  # streamed: the engine reads the URI
            return source.uri
        return target.model_mount_path if self._mounted(source) else source.uri

    def _scraped(self) -> bool:
        """Whether the target scrapes the engine's metrics (``metrics_scraped``)."""
        return self.target is not None and self.target.metrics_scraped

    def _mounted(self, source: ModelSource) -> bool:
        """Whether the target's pods see the model at its mount path."""
        target = self.target
        return target is not None and (source.kind == "s3" or target.huggingface_model == "mounted")

    def _tensor_parallel(self, instance: InstanceType) -> int:
        user = self.user.get("tensor_parallel_degree")
        if self.nodes > 1 or self.pipeline_parallel > 1:
            return self._group_parallel(instance, user)
        if user is None:
            return instance.gpus
        try:
            tp = int(user.value)
        except ValueError:
            tp = 0
        # The pod asks for TP GPUs of one node: a degree that does not divide the node's GPUs
        # strands the rest (no second pod fits them), and heads split evenly only so.
        divisors = [d for d in range(1, instance.gpus + 1) if instance.gpus % d == 0]
        if tp not in divisors:
            self.problems.append(
                Problem(
                    message=f"tensor-parallel degree must divide the {instance.gpus} GPU(s) of "
                    f"{instance.name}",
                    pointer=user.pointer,
                    value=user.value,
                    allowed=", ".join(map(str, divisors)),
                    fix="use one of the allowed degrees, or pick an instance type with more GPUs",
                )
            )
            return instance.gpus
        return tp

    def _group_parallel(self, instance: InstanceType, user: UserValue | None) -> int:
        """TP with pipeline stages or several nodes: TP x PP must be every GPU of the group
        (GPUs per node x nodes), as each node's pod takes its whole node."""
        pp, nodes = self.pipeline_parallel, self.nodes
        tp = instance.gpus if user is None else _int(user.value)
        if tp * pp != instance.gpus * nodes:
            want = instance.gpus * nodes
            self.problems.append(
                Problem(
                    message=f"tensor_parallel_degree x pipeline_parallel_degree ({tp} x {pp} = "
                    f"{tp * pp}) must equal the GPUs per node x nodes ({instance.gpus} GPU(s) of "
                    f"{instance.name} x {nodes} = {want})",
                    pointer=user.pointer
                    if user is not None
                    else "/compute/pipeline_parallel_degree",
                    value=f"{tp} x {pp}",
                    allowed=f"a product of {want}",
                    fix=f"set tensor_parallel_degree: {instance.gpus} and "
                    f"pipeline_parallel_degree: {want // instance.gpus} (the GPUs per node and "
                    "the nodes), or change nodes",
                )
            )
        elif self.manifest.capability("pipeline_parallel_degree") is None and pp > 1:
            self.problems.append(
                Problem(
                    message=f"{self.manifest.engine} declares no pipeline_parallel_degree "
                    "capability (its manifest's capability_map)",
                    pointer="/compute/pipeline_parallel_degree",
                    value=pp,
                    allowed="1",
                    fix="leave pipeline_parallel_degree out, or use an engine that declares it",
                )
            )
        return tp

    def size_nodes(self, instance: InstanceType) -> None:
        """Resolve ``nodes: auto`` once, on ``instance`` (:func:`auto_sizing`, with the user's
        context length when set), into :attr:`sizing`."""
        if self.spec.compute.nodes != "auto":
            return
        given = context_length(self.settings)
        try:
            self.sizing = auto_sizing(self.spec, instance, context_length=given), ()
        except MlccError as error:
            self.sizing = None, error.problems

    @property
    def nodes(self) -> int:
        """The spec's ``nodes`` (``auto`` resolved once, :attr:`sizing`; 1 where it cannot be,
        which :func:`multi_node_problems` reports)."""
        if isinstance(self.spec.compute.nodes, int):
            return self.spec.compute.nodes
        resolved, _ = self.sizing
        return resolved.nodes if resolved is not None else 1

    @property
    def release(self) -> str | None:
        """The engine release whose recorded facts apply: the spec's version, else the pinned
        one (``None``: a version that is not one, refused where it is read)."""
        if self.version is not None:
            return ".".join(str(part) for part in self.version)
        if self.settings.given_version is not None:
            return None
        return pinned().engine_versions.get(self.manifest.engine)

    @property
    def pipeline_parallel(self) -> int:
        """The pipeline stages: the spec's; with ``nodes: auto`` one stage per node (TP the
        GPUs per node, PP the nodes: the layout the engines' parallelism guides recommend)."""
        if self.spec.compute.nodes == "auto":
            return self.nodes
        return self.spec.compute.pipeline_parallel_degree

    def _gate(self, capability: Capability) -> str | None:
        """Why ``capability`` cannot be used with this engine version, if it cannot."""
        if capability.since and self.version is not None:
            since = parse_version(capability.since)
            if since and self.version < since:
                return (
                    f"needs {self.manifest.engine} >= {capability.since} "
                    f"(engine version {self.settings.given_version})"
                )
        return None

    def _source(self, name: str) -> str:
        user = self.user.get(name)
        return user.pointer if user else ""

    def _emit(self, capability: Capability, value: str, values: dict[str, str]) -> None:
        """Emit ``capability`` and the companions of its first resolvable group into ``values``."""
        key = self.manifest.key(capability)
        if not self.checks.capability_ok(capability, value, self._source(capability.name)):
            return
        off = capability.value_type == "boolean" and value.lower() == FALSE
        # Off: the engine's off form where it has one (no companions), else nothing.
        if off and not self.checks.has_off_form(key):
            return
        gated = self._gate(capability)
        if gated:
            self.skipped.append(Skipped(capability.name, key, gated))
            return
        if off:
            values[capability.name] = FALSE
            return
        group_values = self._companions(capability)
        if group_values is None:
            return
        values[capability.name] = TRUE if capability.value_type == "boolean" else value
        values.update(group_values)

    def _companion_value(self, name: str) -> str | None:
        if name in self.user:
            return self.user[name].value
        if name in self.computed:
            return self.computed[name]
        return companion_default(self.manifest, name)

    def _companions(self, capability: Capability) -> dict[str, str] | None:
        """Values of the first fully resolvable companion group; ``{}`` when none is needed."""
        if not capability.groups:
            return {}
        missing_by_group = []
        for group in capability.groups:
            resolved: dict[str, str] = {}
            missing: list[str] = []
            for name in group:
                companion = self.manifest.capability(name)
                assert companion is not None  # the loader checks companions exist
                value = self._companion_value(name)
                gated = self._gate(companion)
                if value is None or gated:
                    missing.append(
                        f"{name} ({gated or 'no value: set ' + self.manifest.key(companion)})"
                    )
                    continue
                if not self.checks.capability_ok(companion, value, self._source(name)):
                    return None
                resolved[name] = value
            if not missing:
                return resolved
            missing_by_group.append(missing)
        groups = requirement_text(capability.groups)
        detail = "; ".join(", ".join(m) for m in missing_by_group)
        self.skipped.append(
            Skipped(
                capability.name,
                self.manifest.key(capability),
                f"requires {groups} — missing {detail}",
            )
        )
        return None


def resolve(
    spec: DeploymentSpec,
    *,
    registry: EngineRegistry | None = None,
    computed: Mapping[str, str] | None = None,
) -> Resolution:
    """Resolve ``spec`` against its engine's manifest. Raises :class:`MlccError` with every problem.

    ``registry`` defaults to the built-in engines only (library calls do not depend on the
    process environment); pass ``EngineRegistry.load(...)`` for plugins, which also reads
    ``$MLCC_ENGINE_PATH`` as the CLI does.

    ``computed`` holds library-computed capability values (e.g. ``lora_max_rank`` from the rank
    fit): they lose to user values and win over defaults.
    """
    registry = registry or EngineRegistry.load(use_env=False)
    settings = read_settings(spec, registry)
    try:
        target = load_target(spec.target)
    except MlccError as error:
        problems = list(error.problems)
        try:
            resolve_for_target(spec, settings=settings, target=None, computed=computed)
        except MlccError as more:
            problems.extend(more.problems)
        raise MlccError(problems) from None
    return resolve_for_target(spec, settings=settings, target=target, computed=computed)


def resolve_for_target(
    spec: DeploymentSpec,
    *,
    settings: EngineSettings,
    target: TargetDescriptor | None,
    computed: Mapping[str, str] | None = None,
    problems: list[Problem] | None = None,
) -> Resolution:
    """Tier 1 of ``spec`` from its parsed ``settings`` on ``target`` (``None``: unknown,
    reported elsewhere; the model is then passed as given). ``problems`` found before (the
    LoRA rank fit's) are raised together with every other."""
    resolver = _Resolver(spec, settings, computed or {}, target)
    found = resolver.problems  # the settings' problems; Tier 1 adds its own
    lookups: list[Problem] = []
    instance: InstanceType | None = None
    source: ModelSource | None = None
    try:
        instance = catalog.lookup(spec.compute.instance_type)
    except MlccError as error:
        lookups.extend(error.problems)
    try:
        source = parse_model_source(spec.model.uri)
    except MlccError as error:
        lookups.extend(error.problems)
    # Reported in the order of the spec's fields: instance and model, then the env.
    found[:0] = lookups
    found.extend(problems or ())
    if found or instance is None or source is None:
        raise MlccError(found)
    resolver.size_nodes(instance)
    found.extend(
        multi_node_problems(
            spec,
            resolver.manifest.raw,
            resolver.manifest.engine,
            target,
            resolver.sizing,
            multi_node_engines(),
        )
    )
    resolved, _ = resolver.sizing
    if resolved is not None:  # say how nodes: auto was sized
        resolver.warnings.append(resolved.explanation)
    if resolver.nodes > 1:  # the instance's network between the group's nodes (EFA)
        found.extend(
            multi_node_network_problems(
                instance,
                requires_efa=bool(
                    (resolver.manifest.raw.get("multi_node") or {}).get("requires_efa", False)
                ),
                where="",
                pointer="/compute/instance_type",
            )
        )
        resolver.warnings.extend(multi_node_network_warnings(instance, nodes=resolver.nodes))
    tier1, values, tp = resolver.tier1(instance, source)
    pp = resolver.pipeline_parallel
    if resolved is None and (resolver.nodes == 1 or tp * pp == instance.gpus * resolver.nodes):
        fit = explicit_nodes_problem(  # a count given as a number, held to auto's fit rule
            spec,
            instance,
            tp=tp,
            pp=pp,
            context_length=context_length(settings),
        )
        found.extend([fit] if fit is not None else [])
    found.extend(  # the loader's extra config, against the loader of the load format
        loader_config_problems(resolver.manifest, resolver.release, [*tier1, *settings.tier2])
    )
    if found:
        raise MlccError(found)
    return Resolution(
        manifest=resolver.manifest,
        instance=instance,
        source=source,
        tensor_parallel_degree=tp,
        nodes=resolver.nodes,
        pipeline_parallel_degree=resolver.pipeline_parallel,
        tier1=tuple(tier1),
        tier2=settings.tier2,
        plain=settings.plain,
        skipped=tuple(resolver.skipped),
        warnings=tuple(resolver.warnings),
        capability_values=values,
        model_load=resolver.load.mode,
        stream=resolver.load.stream,
        # The mount carries the weights (mount), or only the LoRA adapters under the model prefix.
        mounts_model=source.kind == "s3" and (resolver.load.mode == "mount" or spec.lora.enabled),
    )
