"""Tier 1 closed: the env keys whose values the library computes, read from the engine
manifest's data, and the refusal of each in a deployment's ``env`` (issue 35, item 7).

A key is computed when the manifest says the library sets what it sets:

* a ``capability_map`` entry the library computes (:data:`TIER1_CAPABILITIES`, keyed by
  capability name like the companion defaults: the model, the tensor- and pipeline-parallel
  degrees, the served model name), and an image engine's ``hub_model_env``;
* a flag of the ``multi_node`` leader or worker arguments (``--nnodes``, ``--node-rank``,
  ``--master-addr``, ``--master-port``, ``--headless``...), which every pod of a multi-node
  group gets from the wrapper, and which on one node would wait for peers or never serve;
* the ``api_key`` section: its variable, or its config file's flag and key;
* while the library streams the model: the ``model_load.stream`` flag and the plain variables
  of its ``env``;
* while adapters are loaded at runtime: ``adapter_api.runtime_env``.

Each flag counts with every long alias the engine's recorded parsers give it
(:func:`~mlcc_constructs.core.engines.parser_facts.spellings`: an alias such as
``--tensor-parallel-size`` sets the same flag as ``--tp-size``). A refusal names the spec
field that sets the value instead. Nothing here knows an engine by name: a plugin's manifest
gets the same rule from its own data. The ``launch`` section's port and host flags are refused
by the settings reader
(:attr:`~mlcc_constructs.core.engines.manifests.EngineManifest.reserved_keys`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from mlcc_constructs.core.engines.manifests import EngineManifest, StreamLoad
from mlcc_constructs.core.engines.parser_facts import spellings
from mlcc_constructs.core.support.errors import Problem
from mlcc_constructs.core.wrapper import flag_for

SPEC_FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "model.uri": "--model",
        "compute.tensor_parallel_degree": "--tp",
        "compute.pipeline_parallel_degree": "--pp",
        "served_model_name": "--served-model-name",
        "compute.nodes": "--nodes",
        "endpoint.api_key_secret": "--api-key-secret",
        "model.load": "--model-load",
        "region": "--region",
        "lora.enabled": "--lora",
    }
)
"""The spec fields a refusal points to, each with its ``mlcc render``/``env``/``argv`` flag."""


@dataclass(frozen=True)
class Tier1Capability:
    """What a computed capability sets and how the library computes it (a refusal's words)."""

    sets: str
    computed: str
    field: str


TIER1_CAPABILITIES: Mapping[str, Tier1Capability] = MappingProxyType(
    {
        "model": Tier1Capability(
            "the model", "the library computes it from the model source", "model.uri"
        ),
        "tensor_parallel_degree": Tier1Capability(
            "the tensor-parallel degree",
            "the library computes it from the instance's GPUs and checks it against them",
            "compute.tensor_parallel_degree",
        ),
        "pipeline_parallel_degree": Tier1Capability(
            "the pipeline-parallel degree",
            "the library passes pipeline_parallel_degree (one stage per node with nodes: auto) "
            "and checks it with the tensor-parallel degree against the GPUs of every node",
            "compute.pipeline_parallel_degree",
        ),
        "served_model_name": Tier1Capability(
            "the served model name",
            "the library passes the deployment's name (or served_model_name), the model name "
            "clients and mlcc endpoint check send",
            "served_model_name",
        ),
    }
)
"""The capabilities the library computes, by capability name (any manifest declaring one of
these names gets the rule)."""

STREAM_FACTS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {"model_region": ("the model bucket's region", "region")}
)
"""A ``model_load.stream.env`` fact -> what it is and the spec field that sets it."""


def field_text(field: str) -> str:
    """``compute.tensor_parallel_degree (--tp; DeploymentSpec.compute.tensor_parallel_degree)``."""
    return f"{field} ({SPEC_FLAGS[field]}; DeploymentSpec.{field})"


@dataclass(frozen=True, kw_only=True)
class ComputedKey:
    """One env key the library computes.

    Fields:

    ``key``: The env key (``VLLM_HEADLESS``).
    ``sets``: What it sets (``the tensor-parallel degree``, ``--headless``).
    ``alias``: How an alias key gets there (``--tensor-parallel-size, an alias of --tp-size``),
        or empty.
    ``why``: Who sets it instead, and from what.
    ``field``: The spec field to use (a key of :data:`SPEC_FLAGS`).
    ``fix``: The refusal's fix.
    ``secret``: Its value is a credential: a refusal names the key, never the value.
    """

    key: str
    sets: str
    why: str
    field: str
    fix: str
    alias: str = ""
    secret: bool = False

    def problem(self, value: str, pointer: str) -> Problem:
        """The refusal of ``value`` set at ``pointer`` (``/engine/env/<key>``)."""
        via = f" ({self.alias})" if self.alias else ""
        return Problem(
            message=f"{self.key}{via} sets {self.sets}, which is Tier 1: {self.why}",
            pointer=pointer,
            value=self.key if self.secret else value,
            fix=self.fix,
        )


def flag_key(manifest: EngineManifest, flag: str) -> str | None:
    """The env key the wrapper turns into ``flag`` (``--node-rank`` -> ``VLLM_NODE_RANK``), or
    ``None`` when no key gives it in the manifest's flag style."""
    if not flag.startswith("--"):
        return None
    suffix = flag[2:].upper().replace("-", "_")
    style = manifest.launch.get("flag_style", "kebab")
    if not suffix or flag_for(suffix, style) != flag:
        return None
    return manifest.env_var_prefix + suffix


def _flag_keys(
    manifest: EngineManifest,
    flag: str,
    *,
    sets: str,
    why: str,
    field: str,
    fix: str,
    secret: bool = False,
) -> list[ComputedKey]:
    """The keys of ``flag`` and of each recorded alias of it."""
    keys = []
    for spelling in spellings(manifest.engine, flag):
        key = flag_key(manifest, spelling)
        if key is None:
            continue
        alias = "" if spelling == flag else f"{spelling}, an alias of {flag}"
        keys.append(
            ComputedKey(
                key=key, sets=sets, alias=alias, why=why, field=field, fix=fix, secret=secret
            )
        )
    return keys


def _add(found: dict[str, ComputedKey], keys: Iterable[ComputedKey]) -> None:
    for key in keys:
        found.setdefault(key.key, key)


def _capability_keys(manifest: EngineManifest) -> list[ComputedKey]:
    style = manifest.launch.get("flag_style", "kebab")
    keys: list[ComputedKey] = []
    for capability in manifest.capabilities:
        tier1 = TIER1_CAPABILITIES.get(capability.name)
        if tier1 is None:
            continue
        # the capability's own key (its flag's first spelling), then its flag's aliases
        keys += _flag_keys(
            manifest,
            flag_for(capability.suffix, style),
            sets=tier1.sets,
            why=tier1.computed,
            field=tier1.field,
            fix=f"set {field_text(tier1.field)} instead",
        )
    hub = manifest.hub_model_env
    if hub is not None:
        model = TIER1_CAPABILITIES["model"]
        fix = f"set {field_text(model.field)} instead"
        keys.append(
            ComputedKey(key=hub, sets=model.sets, why=model.computed, field=model.field, fix=fix)
        )
    return keys


def _multi_node_keys(manifest: EngineManifest) -> list[ComputedKey]:
    block = manifest.raw.get("multi_node") or {}
    flags = dict.fromkeys(
        arg
        for arg in [*block.get("leader_args", ()), *block.get("worker_args", ())]
        if str(arg).startswith("--")
    )
    why = (
        "a multi-node launch flag the library passes to each pod of a multi-node group itself "
        "(manifest multi_node)"
    )
    fix = (
        f"remove it; set {field_text('compute.nodes')} for a model copy over several nodes: "
        "each pod then gets its own"
    )
    keys: list[ComputedKey] = []
    for flag in flags:
        keys += _flag_keys(manifest, flag, sets=flag, why=why, field="compute.nodes", fix=fix)
    return keys


def _api_key_keys(manifest: EngineManifest) -> list[ComputedKey]:
    section = manifest.raw.get("api_key") or {}
    env = manifest.api_key_env
    why = "the library delivers it from a secret, never from env (manifest api_key)"
    fix = f"remove it; set {field_text('endpoint.api_key_secret')}" + (
        f", or give {env} from a Kubernetes Secret in engine.secret_env" if env else ""
    )
    keys: list[ComputedKey] = []
    if env is not None:
        keys.append(
            ComputedKey(
                key=env,
                sets="the API key",
                why=why,
                field="endpoint.api_key_secret",
                fix=fix,
                secret=True,
            )
        )
    config = section.get("config_file")
    if config:
        keys += _flag_keys(
            manifest,
            "--" + str(config["key"]),
            sets="the API key",
            why=why,
            field="endpoint.api_key_secret",
            fix=fix,
            secret=True,
        )
        keys += _flag_keys(
            manifest,
            str(config["flag"]),
            sets=f"{config['flag']}, the file the wrapper writes the API key to",
            why=why,
            field="endpoint.api_key_secret",
            fix=fix,
        )
    return keys


def computed_keys(manifest: EngineManifest) -> Mapping[str, ComputedKey]:
    """The keys ``manifest``'s engine gets from the library whatever the deployment (module
    doc: capabilities, the model variable, multi-node flags, the API key), by key."""
    found: dict[str, ComputedKey] = {}
    _add(found, _capability_keys(manifest))
    _add(found, _multi_node_keys(manifest))
    _add(found, _api_key_keys(manifest))
    return MappingProxyType(found)


def load_format_keys(manifest: EngineManifest, stream: StreamLoad) -> Mapping[str, ComputedKey]:
    """The keys of ``stream``'s load-format flag and its aliases (``VLLM_LOAD_FORMAT``)."""
    why = (
        f"the library passes {stream.flag} {stream.value} while it streams the model "
        "(model.load stream; manifest model_load.stream)"
    )
    fix = (
        f"remove it, or set {field_text('model.load')} to mount to choose the load format yourself"
    )
    found: dict[str, ComputedKey] = {}
    _add(
        found,
        _flag_keys(manifest, stream.flag, sets=stream.flag, why=why, field="model.load", fix=fix),
    )
    return MappingProxyType(found)


def stream_keys(manifest: EngineManifest, stream: StreamLoad) -> Mapping[str, ComputedKey]:
    """The keys the library sets while it streams the model with ``stream``: the load-format
    flag (and its aliases, :func:`load_format_keys`) and the plain variables of
    ``stream.env``."""
    found = dict(load_format_keys(manifest, stream))
    for variable, fact in stream.env.items():
        sets, field = STREAM_FACTS.get(fact, (fact, "region"))
        _add(
            found,
            [
                ComputedKey(
                    key=variable,
                    sets=sets,
                    why="the library sets it while it streams the model (manifest "
                    f"model_load.stream.env: {fact})",
                    field=field,
                    fix=f"remove it; set {field_text(field)}, or model.load: mount",
                )
            ],
        )
    return MappingProxyType(found)


def runtime_adapter_keys(manifest: EngineManifest) -> Mapping[str, ComputedKey]:
    """The keys the library sets where adapters are loaded at runtime: the manifest's
    ``adapter_api.runtime_env`` (an engine's switch for its load and unload routes)."""
    why_text = (
        "the library sets it to {value} where adapters are loaded at runtime (lora.enabled on a "
        "target that loads them through the engine's API; manifest adapter_api.runtime_env)"
    )
    return MappingProxyType(
        {
            key: ComputedKey(
                key=key,
                sets="runtime adapter loading",
                why=why_text.format(value=value),
                field="lora.enabled",
                fix=f"remove it: {field_text('lora.enabled')} sets it",
            )
            for key, value in manifest.adapter_runtime_env.items()
        }
    )


def env_problems(env: Mapping[str, object], keys: Mapping[str, ComputedKey]) -> list[Problem]:
    """The refusal of each key of ``env`` (a deployment's ``env``) that ``keys`` computes, at
    ``/env/<key>``, in the order of ``env``."""
    return [
        keys[key].problem(str(value), f"/engine/env/{key}")
        for key, value in env.items()
        if key in keys
    ]
