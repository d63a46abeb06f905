"""Hypothesis properties of the resolver over every built-in engine (ADR-010 invariants)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from mlcc_constructs.core.engines.manifests import EngineRegistry, builtin_engines
from mlcc_constructs.core.engines.values import SENTINELS
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

REGISTRY = EngineRegistry.load(use_env=False)
ENGINES = {m.engine: m for m in builtin_engines()}
PREFIXES = {m.env_var_prefix for m in builtin_engines()}


@st.composite
def specs(draw: st.DrawFn) -> DeploymentSpec:
    engine = draw(st.sampled_from(sorted(ENGINES)))
    manifest = ENGINES[engine]
    has = {c.name for c in manifest.capabilities}
    suffix = st.from_regex(r"[A-Z][A-Z0-9_]{1,10}", fullmatch=True)
    value = st.one_of(
        st.sampled_from(["true", "false", "1", "all", "awq", "64", '["a", "b"]', "[1]", "[]"]),
        st.from_regex(r"[a-z0-9./=-]{1,10}", fullmatch=True),
    )
    tier2 = draw(st.dictionaries(suffix, value, max_size=5))
    env = {manifest.env_var_prefix + k: v for k, v in tier2.items()}
    return flat_spec(
        engine=engine,
        model=draw(st.sampled_from(["s3://bucket/models/org/name/", "org/name"])),
        instance_type=draw(st.sampled_from(["ml.g5.12xlarge", "g6e.xlarge", "ml.p5.48xlarge"])),
        lora=draw(st.booleans()) and "lora_enable" in has,
        quantization=draw(st.sampled_from([None, "awq", "fp8"])) if "quantization" in has else None,
        env=env,
        # the version follows the image: the pinned one's, or none given
        engine_version=draw(st.sampled_from([None, pinned().engine_versions.get(engine)])),
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(specs())
def test_resolver_invariants(spec: DeploymentSpec) -> None:
    try:
        resolution = resolve(spec, registry=REGISTRY)
    except MlccError as error:
        # Only user-value problems may refuse a generated spec; never an internal rule.
        assert all(p.pointer.startswith("/engine/env/") for p in error.problems), str(error)
        return
    manifest = ENGINES[spec.engine.name]
    if manifest.entrypoint == "wrapper":
        resolution.argv()  # what the resolver accepts, the wrapper translates (no WrapperError)
    by_key = {manifest.key(c): c for c in manifest.capabilities}
    foreign = PREFIXES - {manifest.env_var_prefix}
    for key, value in resolution.env.items():
        # no foreign prefix
        assert not any(key.startswith(p) for p in foreign), key
        capability = by_key.get(key)
        if capability is None:
            continue
        if capability.value_type == "boolean":
            # booleans as true, or as false only where the engine has an off form
            off = value == "false" and manifest.off_form_blocker(capability.suffix, None) is None
            assert value == "true" or off, (key, value)
            if off:
                continue
        else:
            assert value.strip().lower() not in SENTINELS, (key, value)  # never empty/sentinel
        if capability.groups:
            # every emitted capability has at least one fully emitted companion group
            assert any(
                all(manifest.key(manifest.capability(n)) in resolution.env for n in group)  # type: ignore[arg-type]
                for group in capability.groups
            ), (key, resolution.env)
