"""CacheBackend injection into plain Deployment dicts: the adapter wire, the four override
primitives exactly as the seed defines them, the native sidecar and /dev/shm."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from mlcc_constructs.core.cache import (
    CacheBackendSpec,
    inject_cache_backend,
    render_cache_config_maps,
)
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.core.cache.test_cache_admission import seed_safe_spec, with_overrides

KV_CONFIG = (
    '{"kv_connector":"LMCacheMPConnector",'
    '"kv_connector_module_path":"lmcache.integration.vllm.lmcache_mp_connector",'
    '"kv_role":"kv_both","kv_connector_extra_config":'
    '{"lmcache.mp.host":"tcp://127.0.0.1","lmcache.mp.port":"5555"}}'
)


def deployment(engine: str, args: list[str], port: int) -> dict[str, Any]:
    """A Deployment shaped like a real engine Deployment (args, env, volumes, securityContext)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm", "namespace": "serving", "labels": {"app": "llm"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "llm"}},
            "template": {
                "metadata": {"labels": {"app": "llm"}},
                "spec": {
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": engine,
                            "image": f"example/{engine}:1.0",
                            "args": args,
                            "env": [
                                {"name": "HF_HOME", "value": "/tmp/hf"},
                                {"name": "LMCACHE_LOG_LEVEL", "value": "INFO"},
                                {
                                    "name": "HF_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}},
                                },
                            ],
                            "ports": [{"name": "http", "containerPort": port}],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "runAsNonRoot": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                        },
                        {"name": "metrics-proxy", "image": "example/proxy:1", "args": ["--x"]},
                    ],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }


def vllm_deployment() -> dict[str, Any]:
    return deployment("vllm", ["--model", "/opt/ml/model", "--port", "8000"], 8000)


def sglang_deployment() -> dict[str, Any]:
    return deployment("sglang", ["--model-path", "/opt/ml/model", "--port", "30000"], 30000)


def sglang_spec() -> dict[str, Any]:
    """The seed's safe example for SGLang, whose context flag is --context-length."""
    return with_overrides(
        "SGLang",
        env=[{"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"}],
        args=["--context-length", "32768"],
    )


def engine(obj: dict[str, Any], name: str) -> dict[str, Any]:
    containers = obj["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == name)  # type: ignore[no-any-return]


def test_seed_safe_example_injects_exactly_baseline_plus_overrides() -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    before = deployment("vllm", ["--model", "/opt/ml/model"], 8000)
    before_engine = engine(before, "vllm")
    before_engine["env"] = [{"name": "HF_HOME", "value": "/tmp/hf"}]
    after = inject_cache_backend(before, spec, engine_container="vllm")
    got = engine(after, "vllm")
    baseline_args = ["--kv-transfer-config", KV_CONFIG, "--disable-hybrid-kv-cache-manager"]
    assert got["args"] == ["--model", "/opt/ml/model", *baseline_args, "--max-model-len", "32768"]
    assert got["env"] == [
        {"name": "HF_HOME", "value": "/tmp/hf"},
        {"name": "PYTHONHASHSEED", "value": "0"},
        {"name": "INFERENCECACHE_FAIL_OPEN", "value": "true"},
        {"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"},
    ]
    # The kv-transfer-config is the seed's JSON, byte for byte.
    assert json.loads(got["args"][3])["kv_connector_extra_config"]["lmcache.mp.port"] == "5555"


def test_input_is_untouched_and_output_is_byte_stable() -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    before = vllm_deployment()
    pristine = copy.deepcopy(before)
    first = inject_cache_backend(before, spec, engine_container="vllm")
    assert before == pristine
    assert json.dumps(first) == json.dumps(
        inject_cache_backend(before, spec, engine_container="vllm")
    )


def test_template_env_the_adapter_does_not_own_is_left_alone() -> None:
    # LMCACHE_LOG_LEVEL=INFO is the template's own: the override is a silent no-op.
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    got = engine(inject_cache_backend(vllm_deployment(), spec, engine_container="vllm"), "vllm")
    levels = [e for e in got["env"] if e["name"] == "LMCACHE_LOG_LEVEL"]
    assert levels == [{"name": "LMCACHE_LOG_LEVEL", "value": "INFO"}]
    assert got["env"][2]["valueFrom"] == {"secretKeyRef": {"name": "hf", "key": "token"}}


def test_template_flag_the_adapter_does_not_own_is_left_alone() -> None:
    spec = CacheBackendSpec.from_dict(with_overrides(args=["--port", "9000", "--seed", "7"]))
    got = engine(inject_cache_backend(vllm_deployment(), spec, engine_container="vllm"), "vllm")
    assert got["args"][:4] == ["--model", "/opt/ml/model", "--port", "8000"]
    assert got["args"][-2:] == ["--seed", "7"]
    assert "9000" not in got["args"]


def test_a_new_flag_is_appended() -> None:
    spec = CacheBackendSpec.from_dict(
        with_overrides("SGLang", args=["--enable-lmcache-cpu-offload=1"], suppressArgs=[])
    )
    assert spec.adapter is not None
    # Not reserved, not in the adapter: appended.
    got = engine(
        inject_cache_backend(sglang_deployment(), spec, engine_container="sglang"), "sglang"
    )
    assert got["args"][-1] == "--enable-lmcache-cpu-offload=1"


def test_overrides_replace_and_suppress_non_reserved_adapter_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The built-in adapters contribute only reserved tokens, so the replace/suppress
    # primitives are exercised on a data-driven adapter with non-reserved ones.
    from mlcc_constructs.core.cache import adapters as cache_adapters

    adapters, server = cache_adapters._load()
    base = adapters[0]
    custom = cache_adapters.RuntimeAdapter(
        name=base.name,
        runtime=base.runtime,
        type=base.type,
        summary=base.summary,
        roles=base.roles,
        args=(
            *base.args,
            cache_adapters.AdapterArg(flag="--tunable", value="1"),
            cache_adapters.AdapterArg(flag="--drop-me"),
        ),
        env=(*base.env, ("LMCACHE_TUNABLE", "a"), ("LMCACHE_DROP", "b")),
        reserved_args=base.reserved_args,
        reserved_env=base.reserved_env,
    )
    monkeypatch.setattr(cache_adapters, "_load", lambda: ((custom, *adapters[1:]), server))
    spec = CacheBackendSpec.from_dict(
        with_overrides(
            env=[{"name": "LMCACHE_TUNABLE", "value": "z"}],
            suppressEnv=["LMCACHE_DROP"],
            args=["--tunable", "2", "3"],
            suppressArgs=["--drop-me"],
        )
    )
    got = engine(inject_cache_backend(vllm_deployment(), spec, engine_container="vllm"), "vllm")
    assert got["args"][4:] == [
        "--kv-transfer-config",
        KV_CONFIG,
        "--disable-hybrid-kv-cache-manager",
        "--tunable",
        "2",
        "3",
    ]
    assert [e["name"] for e in got["env"]][3:] == [
        "PYTHONHASHSEED",
        "INFERENCECACHE_FAIL_OPEN",
        "LMCACHE_TUNABLE",
    ]
    assert got["env"][-1] == {"name": "LMCACHE_TUNABLE", "value": "z"}


def test_skip_inject_leaves_the_pod_untouched() -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    before = vllm_deployment()
    before["spec"]["template"]["metadata"]["annotations"] = {
        "inferencecache.io/skip-inject": "true"
    }
    assert inject_cache_backend(before, spec, engine_container="vllm") == before


def test_skip_inject_wins_even_over_a_bad_spec() -> None:
    before = vllm_deployment()
    before["spec"]["template"]["metadata"]["annotations"] = {
        "inferencecache.io/skip-inject": "true"
    }
    spec = CacheBackendSpec(runtime="VLLM")  # no lmCache: not admissible
    assert inject_cache_backend(before, spec, engine_container="vllm") == before


def test_a_pod_template_works_too() -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    template = vllm_deployment()["spec"]["template"]
    out = inject_cache_backend(template, spec, engine_container="vllm")
    assert out["spec"]["initContainers"][0]["name"] == "lmcache-mp-server"


INJECTION_ERRORS = [
    pytest.param(
        {"engine_container": "engine"},
        "/spec/template/spec/containers: no container named engine (got ['vllm', "
        "'metrics-proxy']; fix: pass engine_container= the engine container's name)",
        id="no-engine",
    ),
    pytest.param(
        {"port": 5555},
        "/spec/template/spec: port 5555 is already used by container vllm (fix: the LMCache MP "
        "server listens there: change one of the two ports)",
        id="port-collision",
    ),
    pytest.param(
        {"remote": {"provider": "Redis", "ownership": "Managed"}},
        "/spec/remoteStorage/ownership: Managed remote storage needs the operator (it observes "
        "the endpoint) (got 'Managed'; fix: use ownership External with endpoint host:port, or "
        "emit the CacheBackend CR)",
        id="managed-redis",
    ),
    pytest.param(
        {"already": True},
        "/spec/template/metadata/annotations/inferencecache.io~1injected-by: already injected by "
        "mlcc/vllm-lmcache-mp (fix: inject into the un-injected template)",
        id="twice",
    ),
]


@pytest.mark.parametrize(("case", "expected"), INJECTION_ERRORS)
def test_injection_errors(case: dict[str, Any], expected: str) -> None:
    raw = seed_safe_spec()
    if "remote" in case:
        raw["remoteStorage"] = case["remote"]
    spec = CacheBackendSpec.from_dict(raw)
    target = deployment("vllm", [], case["port"]) if "port" in case else vllm_deployment()
    if case.get("already"):
        target = inject_cache_backend(target, spec, engine_container="vllm")
    with pytest.raises(MlccError) as caught:
        inject_cache_backend(target, spec, engine_container=case.get("engine_container", "vllm"))
    assert [str(p) for p in caught.value.problems] == [expected]


def test_an_existing_memory_shm_is_shared_and_grown() -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    before = vllm_deployment()
    pod = before["spec"]["template"]["spec"]
    pod["volumes"].append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}})
    engine(before, "vllm")["volumeMounts"].append({"name": "shm", "mountPath": "/dev/shm"})
    after = inject_cache_backend(before, spec, engine_container="vllm")
    volumes = after["spec"]["template"]["spec"]["volumes"]
    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "13Gi"}} in volumes
    assert [v["name"] for v in volumes] == ["tmp", "shm"]
    sidecar = after["spec"]["template"]["spec"]["initContainers"][0]
    assert sidecar["volumeMounts"] == [{"name": "shm", "mountPath": "/dev/shm"}]


def test_sidecar_is_a_hardened_native_sidecar() -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    after = inject_cache_backend(vllm_deployment(), spec, engine_container="vllm")
    sidecar = after["spec"]["template"]["spec"]["initContainers"][0]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
    }
    assert sidecar["args"][:9] == [
        "server", "--host", "127.0.0.1", "--port", "5555",
        "--http-host", "0.0.0.0", "--http-port", "8080",
    ]  # fmt: skip
    assert sidecar["args"][9:] == [
        "--chunk-size", "128", "--l1-size-gb", "4", "--eviction-policy", "LRU",
        "--max-workers", "4",
    ]  # fmt: skip
    shm = after["spec"]["template"]["spec"]["volumes"][-1]
    assert shm == {"name": "lmcache-mp-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "5Gi"}}


def test_external_redis_l3() -> None:
    raw = seed_safe_spec()
    raw["remoteStorage"] = {
        "provider": "Redis",
        "ownership": "External",
        "endpoint": "redis.cache.svc:6379",
        "redis": {"authentication": {"password": {"name": "redis", "key": "password"}}},
    }
    spec = CacheBackendSpec.from_dict(raw)
    sidecar = inject_cache_backend(vllm_deployment(), spec, engine_container="vllm")["spec"][
        "template"
    ]["spec"]["initContainers"][0]
    assert sidecar["args"][-2:] == [
        "--l2-adapter",
        '{"type":"resp","host":"redis.cache.svc","port":6379}',
    ]
    assert sidecar["env"][-1] == {
        "name": "LMCACHE_RESP_PASSWORD",
        "valueFrom": {"secretKeyRef": {"key": "password", "name": "redis"}},
    }


# --------------------------------------------------------------------------- snapshots


def test_snapshot_vllm(yaml_snapshot: SnapshotAssertion) -> None:
    spec = CacheBackendSpec.from_dict(seed_safe_spec())
    assert inject_cache_backend(vllm_deployment(), spec, engine_container="vllm") == yaml_snapshot


def test_snapshot_sglang(yaml_snapshot: SnapshotAssertion) -> None:
    raw = sglang_spec()
    raw["integration"]["failOpen"] = False
    spec = CacheBackendSpec.from_dict(raw)
    objects = [
        *render_cache_config_maps(spec, workload_name="llm", namespace="serving"),
        inject_cache_backend(sglang_deployment(), spec, engine_container="sglang"),
    ]
    assert objects == yaml_snapshot


def _rendered_deployment(engine_name: str) -> dict[str, Any]:
    render = pytest.importorskip("mlcc_constructs.core.serving.render")

    rendered = render.render(
        flat_spec(
            engine=engine_name,
            model="meta-llama/Meta-Llama-3-8B-Instruct",
            instance_type="g5.12xlarge",
            name="llm",
            config_delivery="args",
        )
    )
    return next(o for o in rendered.objects if o["kind"] == "Deployment")


@pytest.mark.parametrize("engine_name", ["vllm", "sglang"])
def test_snapshot_real_rendered_deployment(
    engine_name: str, yaml_snapshot: SnapshotAssertion
) -> None:
    from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
    from mlcc_constructs.core.serving.prepare.container import ENGINE_CONTAINER

    spec = CacheBackendSpec.from_dict(
        sglang_spec() if engine_name == "sglang" else seed_safe_spec()
    )
    injected = inject_cache_backend(
        _rendered_deployment(engine_name),
        spec,
        engine_container=ENGINE_CONTAINER,
        config_map_name="llm-lmcache-mp",
    )
    # Still a valid Deployment for the strict Kubernetes schema.
    assert [str(p) for p in core_object_problems(injected)] == []
    assert injected == yaml_snapshot
