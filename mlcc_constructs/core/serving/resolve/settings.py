"""The user's engine settings, read once: :func:`read_settings` parses a spec's ``env`` and its
engine fields (``tensor_parallel_degree``, ``quantization``, ``lora``) against the active
engine's manifest into typed :class:`EngineSettings`. Every later reader (the LoRA rank fit,
the GPU memory share, Tier-1 resolution) takes values from there, each with the one pointer
the user set it at (``/env/VLLM_MAX_LORA_RANK``, ``/tensor_parallel_degree``), and every
problem of the input is collected, never raised alone.

Each env key is exactly one of: refused because the library computes it (Tier 1 is closed:
:mod:`.computed_keys` names the spec field that sets it), a capability's user value (one the
library does not compute: quantization, the LoRA settings), a Tier-2 key forwarded verbatim
(the engine's own variables among them), or plain env (no engine prefix). Every key and value
first passes the one env rule (:mod:`.env_rules`), whatever layer it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mlcc_constructs.core.engines.image_version import EngineRelease, engine_release
from mlcc_constructs.core.engines.manifests import EngineManifest, EngineRegistry, parse_version
from mlcc_constructs.core.engines.parser_facts import recorded_versions
from mlcc_constructs.core.engines.values import TRUE, ValueChecks
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.resolve.computed_keys import computed_keys
from mlcc_constructs.core.serving.resolve.env_rules import key_problem, value_problem
from mlcc_constructs.core.serving.resolve.resolution import is_secret_name
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import Problem, json_pointer


def label(pointer: str) -> str:
    """A field's pointer as a message names it: ``/engine/env/KEY`` -> ``engine.env.KEY``."""
    return pointer.removeprefix("/").replace("/", ".")


@dataclass(frozen=True)
class UserValue:
    """One value the user set, and where: its JSON pointer (``/env/KEY`` or ``/<field>``)."""

    value: str
    pointer: str


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """A spec's engine settings, parsed once (module doc).

    Fields:

    ``manifest``: The active engine's manifest.
    ``version``: The engine version as a number triple; ``None`` when unknown (gates fail open).
    ``given_version``: The engine version as given: ``engine.version``, else the one the
        image's tag names; ``None`` when neither says (the pinned release's facts apply).
    ``capabilities``: Capability name -> the user's value for it.
    ``tier2``: The other ``<PREFIX>*`` keys, in the user's order.
    ``plain``: Keys without an engine prefix, in the user's order.
    ``problems``: Every problem of the input.
    ``warnings``: Notes for the user (an unchecked version...).
    """

    manifest: EngineManifest
    version: tuple[int, int, int] | None
    given_version: str | None = None
    capabilities: Mapping[str, UserValue] = field(default_factory=dict)
    tier2: tuple[tuple[str, str], ...] = ()
    plain: tuple[tuple[str, str], ...] = ()
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()

    def capability(self, name: str) -> UserValue | None:
        """The user's value of capability ``name``, if set."""
        return self.capabilities.get(name)

    def dimension(self, name: str) -> UserValue | None:
        """The user's value of a benchmark dimension (manifest ``dimension_map``), set as a
        Tier-2 key, with its pointer."""
        suffix = self.manifest.dimension_map.get(name)
        if suffix is None:
            return None
        key = self.manifest.env_var_prefix + suffix
        value = dict(self.tier2).get(key)
        return UserValue(value, f"/engine/env/{key}") if value is not None else None


class _Reader:
    def __init__(self, spec: DeploymentSpec, registry: EngineRegistry) -> None:
        self.spec = spec
        self.registry = registry
        self.manifest = registry.get(spec.engine.name, pointer="/engine/name")
        self.problems: list[Problem] = []
        self.warnings: list[str] = []
        self.user: dict[str, UserValue] = {}
        self.tier2: list[tuple[str, str]] = []
        self.plain: list[tuple[str, str]] = []
        self.release = release(spec, self.manifest)
        self.problems.extend(self.release.problems)
        self.given = spec.engine.version
        if self.given is None and spec.engine.image is not None:
            self.given = self.release.version  # the version the image's tag names
        self.version = self._version()
        self.computed = computed_keys(self.manifest)
        self.checks = ValueChecks(
            manifest=self.manifest,
            version=self.version,
            given_version=self.given,
            problems=self.problems,
            warnings=self.warnings,
            pinned_release=pinned().engine_versions.get(self.manifest.engine),
        )

    def _version(self) -> tuple[int, int, int] | None:
        manifest, given = self.manifest, self.given
        if given is None:
            self.warnings.append(
                f"engine version not given: min_version {manifest.min_version} and 'since' "
                f"gates are not checked (pass --engine-version)"
            )
            return None
        version = parse_version(given)
        if version is None:  # only a given one: a derived version is a parsed one
            self.problems.append(
                Problem(
                    message="engine_version is not a version number",
                    pointer="/engine/version",
                    value=given,
                    allowed="a release number such as 0.31.0 (v0.31.0 and 0.31.0.post1 too)",
                    fix=f"give the {manifest.engine} version the image runs, or leave it out "
                    "for the pinned one",
                )
            )
            return None
        minimum = parse_version(manifest.min_version)
        if minimum and version < minimum:
            named = given == self.spec.engine.version  # else the image's tag names it
            self.problems.append(
                Problem(
                    message=f"{manifest.engine} {given} is below the engine's min_version",
                    pointer="/engine/version" if named else "/engine/image",
                    value=given if named else self.spec.engine.image,
                    allowed=f">= {manifest.min_version}",
                    fix=f"use a {manifest.engine} image of version {manifest.min_version} or later",
                )
            )
        return version

    def _set(self, capability: str, value: str, pointer: str) -> None:
        previous = self.user.get(capability)
        if previous is not None and previous.value != value:
            self.problems.append(
                Problem(
                    message=f"capability {capability!r} is set twice with different values "
                    f"({label(previous.pointer)}={previous.value!r})",
                    pointer=pointer,
                    value=value,
                    fix=f"set it once, either {label(previous.pointer)} or {label(pointer)}",
                )
            )
            return
        self.user[capability] = UserValue(value, pointer)

    def _option(self, capability: str, value: str, pointer: str) -> None:
        if self.manifest.capability(capability) is None:
            declared = ", ".join(c.name for c in self.manifest.capabilities) or "none"
            self.problems.append(
                Problem(
                    message=f"engine {self.manifest.engine!r} declares no {capability!r} "
                    f"capability (declared: {declared})",
                    pointer=pointer,
                    value=value,
                    fix=f"drop {label(pointer)}, or pass the engine's own flag through Tier 2 "
                    f"({self.manifest.env_var_prefix}<FLAG>=<value>)",
                )
            )
            return
        self._set(capability, value, pointer)

    def _key_problem(self, key: str, value: str, pointer: str) -> Problem | None:
        """Why ``key`` cannot be an engine setting at all, if it cannot."""
        manifest = self.manifest
        shape = key_problem(
            key, pointer, manifest=manifest, registry=self.registry, keys=self.spec.engine.env
        )
        if shape is not None:
            return shape
        computed = self.computed.get(key)
        if computed is not None:  # Tier 1 closed: the spec field sets it
            return computed.problem(value, pointer)
        if is_secret_name(key):
            return Problem(
                message="looks like a credential: it would be stored in plain text in a "
                "ConfigMap or the pod spec",
                pointer=pointer,
                value=key,
                fix=f"reference a Kubernetes Secret instead (engine.secret_env={{{key!r}: "
                f"SecretRef(name=..., key=...)}}, or --secret-env {key}=SECRET:KEY)",
            )
        owner = self.registry.owner_of(key)
        if owner is not None and owner.engine != manifest.engine:
            return Problem(
                message=f"key has the prefix {owner.env_var_prefix} of engine {owner.engine!r}, "
                f"but the active engine {manifest.engine!r} reads only "
                f"{manifest.env_var_prefix}*",
                pointer=pointer,
                value=key,
                fix=f"rename it to {manifest.env_var_prefix}"
                f"{key[len(owner.env_var_prefix) :]} or drop it",
            )
        bad_value = value_problem(value, pointer)
        if bad_value is not None:
            return bad_value
        if value == "":
            return Problem(
                message="empty value: an engine would receive a flag with no argument",
                pointer=pointer,
                value=value,
                fix="remove the key to leave the setting unset, or give it a value",
            )
        reserved = manifest.reserved_keys
        if owner is not None and key in reserved:
            return Problem(
                message=f"{key} would set {reserved[key]}, which the manifest's launch section "
                f"owns (port {manifest.launch.get('port')} is what the probes, the Service and "
                "the IEC use)",
                pointer=pointer,
                value=value,
                fix="remove it; change launch.port in the engine manifest instead",
            )
        return None

    def _secret_key(self, key: str) -> None:
        """A ``secret_env`` name takes the env keys' rule (its shape, the reserved names, the
        case of an engine prefix: :func:`key_problem`), and is not also plain ``env``: a
        Secret's value would otherwise replace the wrapper's own ``MLCC_*`` variables or
        reach the engine twice."""
        pointer = json_pointer("engine", "secret_env", key)
        problem = key_problem(
            key,
            pointer,
            manifest=self.manifest,
            registry=self.registry,
            keys=self.spec.engine.secret_env,
        )
        if problem is None and key in self.spec.engine.env:
            problem = Problem(
                message=f"{key} is set twice: in env and in secret_env",
                pointer=pointer,
                value=key,
                fix=f"drop {key} from env: the Secret's value is the one to deliver",
            )
        if problem is not None:
            self.problems.append(problem)

    def read(self) -> EngineSettings:
        spec, manifest = self.spec, self.manifest
        by_suffix = {c.suffix: c for c in manifest.capabilities}
        for key, raw_value in spec.engine.env.items():
            pointer, value = f"/engine/env/{key}", str(raw_value)
            problem = self._key_problem(key, value, pointer)
            if problem is not None:
                self.problems.append(problem)
            elif self.registry.owner_of(key) is None:
                self.plain.append((key, value))
            elif (capability := by_suffix.get(key[len(manifest.env_var_prefix) :])) is not None:
                self._set(capability.name, value, pointer)
            elif (key in manifest.engine_env and self.checks.own_env(key)) or (
                key not in manifest.engine_env and self.checks.tier2_ok(key, value, pointer)
            ):
                self.tier2.append((key, value))
        for key in spec.engine.secret_env:
            self._secret_key(key)
        if spec.compute.tensor_parallel_degree is not None:
            self._option(
                "tensor_parallel_degree",
                str(spec.compute.tensor_parallel_degree),
                "/compute/tensor_parallel_degree",
            )
        if spec.engine.quantization is not None:
            self._option("quantization", spec.engine.quantization, "/engine/quantization")
        if spec.served_model_name is not None:
            self._option("served_model_name", spec.served_model_name, "/served_model_name")
        if spec.lora.enabled:
            self._option("lora_enable", TRUE, "/lora/enabled")
        return EngineSettings(
            manifest=manifest,
            version=self.version,
            given_version=self.given,
            capabilities=MappingProxyType(dict(self.user)),
            tier2=tuple(self.tier2),
            plain=tuple(self.plain),
            problems=tuple(self.problems),
            warnings=tuple(self.warnings),
        )


def release(spec: DeploymentSpec, manifest: EngineManifest) -> EngineRelease:
    """The engine release ``spec`` runs: the one its image's tag names, else its pinned default
    image's, checked against ``engine.version`` and the recorded parser facts
    (:func:`~mlcc_constructs.core.engines.image_version.engine_release`)."""
    return engine_release(
        engine=manifest.engine,
        given=spec.engine.version,
        image=spec.engine.image,
        pinned_image=pinned().engine_images.get(manifest.engine),
        pinned_version=pinned().engine_versions.get(manifest.engine),
        recorded=recorded_versions(manifest.engine),
    )


def read_settings(spec: DeploymentSpec, registry: EngineRegistry) -> EngineSettings:
    """``spec``'s engine settings (module doc); problems are collected in the result. An
    unknown engine raises (the registry's error names the known ones)."""
    return _Reader(spec, registry).read()
