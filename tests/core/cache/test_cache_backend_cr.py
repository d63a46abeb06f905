"""Operator mode: the emitted CacheBackend CR and the upstream sample validate against the
upstream CRD's openAPIV3Schema (made strict: unknown fields are errors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from mlcc_constructs.core.cache import CacheBackendSpec, EngineOverrides, EnvOverride, Integration
from mlcc_constructs.core.support.errors import MlccError
from tests.core.cache.test_cache_admission import seed_safe_spec

CRD = "crds/inferencecache.io_cachebackends.yaml"
SAMPLE = "examples/example-cachebackend-vllm-podlocal.yaml"


def _strict(node: Any) -> Any:
    """``additionalProperties: false`` on every object schema that lists its properties."""
    if isinstance(node, dict):
        out = {key: _strict(value) for key, value in node.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(item) for item in node]
    return node


@pytest.fixture(scope="session")
def validator(shared_dir: Path) -> jsonschema.Draft202012Validator:
    crd = yaml.safe_load((shared_dir / CRD).read_text())
    schema = _strict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Validator, obj: Any) -> list[str]:
    return sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    )


@pytest.fixture(scope="session")
def synthesized() -> list[dict[str, Any]]:
    import cdk8s

    from mlcc_constructs.k8s.cache_backend import CacheBackend, CacheBackendProps

    app = cdk8s.App()
    chart = cdk8s.Chart(app, "cache")
    raw = seed_safe_spec()
    raw["engineSelector"] = {"matchLabels": {"inferencecache.io/cache-domain": "vllm-mp"}}
    raw["remoteStorage"] = {
        "provider": "Redis",
        "ownership": "External",
        "endpoint": "redis.cache.svc:6379",
        "redis": {"authentication": {"password": {"name": "redis", "key": "password"}}},
    }
    CacheBackend(
        chart,
        "Cache",
        props=CacheBackendProps(
            name="vllm-mp", namespace="serving", spec=CacheBackendSpec.from_dict(raw)
        ),
    )
    return [dict(o) for o in chart.to_json()]


def test_upstream_sample_validates(validator: jsonschema.Validator, shared_dir: Path) -> None:
    sample = yaml.safe_load((shared_dir / SAMPLE).read_text())
    assert _errors(validator, sample) == []


def test_the_strict_schema_catches_unknown_fields(
    validator: jsonschema.Validator, shared_dir: Path
) -> None:
    sample = yaml.safe_load((shared_dir / SAMPLE).read_text())
    sample["spec"]["lmCache"]["chunkSize"] = 1
    assert _errors(validator, sample) == [
        "spec/lmCache: Additional properties are not allowed ('chunkSize' was unexpected)"
    ]


def test_emitted_cr_validates(
    validator: jsonschema.Validator, synthesized: list[dict[str, Any]]
) -> None:
    assert len(synthesized) == 1
    assert _errors(validator, synthesized[0]) == []


def test_emitted_cr_snapshot(
    synthesized: list[dict[str, Any]], yaml_snapshot: SnapshotAssertion
) -> None:
    assert synthesized == yaml_snapshot


def test_upstream_sample_round_trips_through_the_typed_spec(
    validator: jsonschema.Validator, shared_dir: Path
) -> None:
    sample = yaml.safe_load((shared_dir / SAMPLE).read_text())
    spec = CacheBackendSpec.from_dict(sample["spec"])
    rebuilt = {**sample, "spec": spec.to_dict()}
    assert rebuilt == sample
    assert _errors(validator, rebuilt) == []


def test_construct_refuses_a_reserved_override() -> None:
    import cdk8s

    from mlcc_constructs.k8s.cache_backend import CacheBackend, CacheBackendProps

    # Built in Python, bypassing from_dict: the construct still admits it.
    lm_cache = CacheBackendSpec.from_dict(seed_safe_spec()).lm_cache
    unchecked = CacheBackendSpec(
        runtime="VLLM",
        lm_cache=lm_cache,
        integration=Integration(
            engine_overrides=EngineOverrides(env=(EnvOverride(name="PYTHONHASHSEED", value="1"),))
        ),
    )
    chart = cdk8s.Chart(cdk8s.App(), "bad")
    with pytest.raises(MlccError) as caught:
        CacheBackend(chart, "Cache", props=CacheBackendProps(name="bad", spec=unchecked))
    assert str(caught.value).startswith(
        "bad/Cache/Resource:/spec/integration/engineOverrides/env/0: replaces reserved env "
        "PYTHONHASHSEED of adapter vllm-lmcache-mp (VLLM + LMCache)"
    )


def test_synth_re_admits_json_patches() -> None:
    import cdk8s

    from mlcc_constructs.k8s.cache_backend import CacheBackend, CacheBackendProps

    app = cdk8s.App()
    chart = cdk8s.Chart(app, "patched")
    cache = CacheBackend(
        chart,
        "Cache",
        props=CacheBackendProps(name="c", spec=CacheBackendSpec.from_dict(seed_safe_spec())),
    )
    cache.resource.add_json_patch(
        cdk8s.JsonPatch.add(
            "/spec/integration/engineOverrides/suppressArgs", ["--kv-transfer-config"]
        )
    )
    with pytest.raises(Exception, match="suppresses reserved argument --kv-transfer-config"):
        app.synth_yaml()
