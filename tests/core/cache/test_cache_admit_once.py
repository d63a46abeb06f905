"""Admission runs once per spec object and is carried: an ``Admission`` injects exactly as
its spec does."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from mlcc_constructs.core.cache import (
    Admission,
    CacheBackendSpec,
    EngineOverrides,
    EnvOverride,
    Integration,
    admission as admission_module,
    admit,
    inject_cache_backend,
    parse_spec,
    render_cache_config_maps,
)
from mlcc_constructs.core.support.errors import MlccError, Problem
from tests.core.cache.test_cache_admission import seed_safe_spec, with_overrides
from tests.core.cache.test_cache_injection import sglang_deployment, vllm_deployment


@pytest.fixture
def rule_calls(monkeypatch: pytest.MonkeyPatch) -> list[CacheBackendSpec]:
    """Every run of the admission rules, recorded."""
    calls: list[CacheBackendSpec] = []
    rules = admission_module.admission_problems

    def counted(spec: CacheBackendSpec, *, where: str = "", path: str = "/spec") -> list[Problem]:
        calls.append(spec)
        return rules(spec, where=where, path=path)

    monkeypatch.setattr(admission_module, "admission_problems", counted)
    return calls


def unadmitted(runtime: str = "VLLM") -> CacheBackendSpec:
    """A spec built in Python (a copy of a parsed one): nothing has admitted it yet."""
    return dataclasses.replace(CacheBackendSpec.from_dict(seed_safe_spec(runtime)))


def test_the_rules_run_once_for_repeated_admits(rule_calls: list[CacheBackendSpec]) -> None:
    spec = unadmitted()
    first = admit(spec)
    assert admit(spec) is first
    assert admit(spec, where="elsewhere") is first
    assert rule_calls == [spec]
    assert isinstance(first, Admission)
    assert first.spec is spec
    assert first.adapter.name == "vllm-lmcache-mp"
    assert first.values["mp_port"] == "5555"
    assert first.values["chunk_size"] == "128"


def test_parse_spec_admits_once_for_everything_after_it(
    rule_calls: list[CacheBackendSpec],
) -> None:
    spec = parse_spec(seed_safe_spec("SGLang"))
    admit(spec)
    inject_cache_backend(sglang_deployment(), spec, engine_container="sglang")
    inject_cache_backend(sglang_deployment(), spec, engine_container="sglang")
    render_cache_config_maps(spec, workload_name="llm")
    assert rule_calls == []  # parse_spec ran them before the counter was needed


def test_injection_admits_a_spec_once(rule_calls: list[CacheBackendSpec]) -> None:
    spec = unadmitted()
    inject_cache_backend(vllm_deployment(), spec, engine_container="vllm")
    inject_cache_backend(vllm_deployment(), spec, engine_container="vllm")
    assert render_cache_config_maps(spec, workload_name="llm") == []
    assert rule_calls == [spec]


def test_a_refused_spec_is_not_remembered(rule_calls: list[CacheBackendSpec]) -> None:
    lm_cache = CacheBackendSpec.from_dict(seed_safe_spec()).lm_cache
    overrides = EngineOverrides(env=(EnvOverride(name="PYTHONHASHSEED", value="1"),))
    spec = CacheBackendSpec(
        runtime="VLLM", lm_cache=lm_cache, integration=Integration(engine_overrides=overrides)
    )
    for _ in range(2):
        with pytest.raises(MlccError, match="replaces reserved env PYTHONHASHSEED"):
            admit(spec, where="bad.yaml")
    assert rule_calls == [spec, spec]


def test_the_memo_is_invisible_to_equality_copies_and_replace() -> None:
    parsed = CacheBackendSpec.from_dict(seed_safe_spec())
    fresh = dataclasses.replace(parsed)
    assert parsed == fresh and repr(parsed) == repr(fresh)
    assert admit(copy.deepcopy(parsed)) == admit(parsed)


def _sglang_admission() -> tuple[CacheBackendSpec, Admission]:
    raw = with_overrides("SGLang", args=["--context-length", "32768"], suppressEnv=[])
    raw["integration"]["failOpen"] = False
    spec = CacheBackendSpec.from_dict(raw)
    return spec, admit(spec)


@pytest.mark.parametrize("runtime", ["VLLM", "SGLang"])
def test_injection_with_an_admission_equals_injection_with_the_spec(runtime: str) -> None:
    spec = unadmitted(runtime)
    admission = admit(dataclasses.replace(spec))
    target, engine = (
        (vllm_deployment(), "vllm") if runtime == "VLLM" else (sglang_deployment(), "sglang")
    )
    with_spec = inject_cache_backend(target, spec, engine_container=engine)
    with_admission = inject_cache_backend(target, admission, engine_container=engine)
    assert json.dumps(with_admission) == json.dumps(with_spec)


def test_config_maps_with_an_admission_equal_those_with_the_spec() -> None:
    spec, admission = _sglang_admission()
    kwargs: dict[str, Any] = {"workload_name": "llm", "namespace": "serving"}
    maps = render_cache_config_maps(admission, **kwargs)
    assert maps == render_cache_config_maps(dataclasses.replace(spec), **kwargs)
    assert [m["metadata"]["name"] for m in maps] == ["llm-lmcache-mp"]
    assert maps[0]["data"] == {
        "client.yaml": 'chunk_size: 128\nmp_host: "127.0.0.1"\nmp_port: 5555\n'
    }


def test_skip_inject_does_not_admit(rule_calls: list[CacheBackendSpec]) -> None:
    before = vllm_deployment()
    before["spec"]["template"]["metadata"]["annotations"] = {
        "inferencecache.io/skip-inject": "true"
    }
    assert inject_cache_backend(before, unadmitted(), engine_container="vllm") == before
    assert rule_calls == []


def test_from_dict_reads_and_leaves_admission_to_its_first_use(
    rule_calls: list[CacheBackendSpec],
) -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    assert rule_calls == []
    inject_cache_backend(vllm_deployment(), spec, engine_container="vllm")
    admit(spec)
    assert rule_calls == [spec]
