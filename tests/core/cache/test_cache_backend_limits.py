"""CacheBackend bad input, round two (issue 25): a sidecar request above its limit, a sidecar
plus engine above the node's memory, an MP server port equal to the engine's port and a
metadata.name that is not DNS-1123 are refused, each naming the field and the numbers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.core.cache import CacheBackendSpec, parse_cache_backend, parse_spec
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.core.cache.test_cache_admission import seed_safe_spec

SERVER = "/spec/lmCache/podLocal/server"
MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")


def spec_with(runtime: str = "VLLM", **server: Any) -> dict[str, Any]:
    spec = copy.deepcopy(seed_safe_spec(runtime))
    spec["lmCache"]["podLocal"]["server"].update(server)
    return spec


def lines(spec: dict[str, Any]) -> list[str]:
    with pytest.raises(MlccError) as raised:
        parse_spec(spec)
    return [str(p) for p in raised.value.problems]


@pytest.mark.parametrize(
    ("requests", "limits", "refused"),
    [
        ({"cpu": "3", "memory": "5Gi"}, {"cpu": "2", "memory": "6Gi"}, ["cpu"]),
        ({"cpu": "1", "memory": "7Gi"}, {"cpu": "2", "memory": "6Gi"}, ["memory"]),
        ({"cpu": "3", "memory": "7Gi"}, {"cpu": "2", "memory": "6Gi"}, ["cpu", "memory"]),
        ({"cpu": "2001m", "memory": "6Gi"}, {"cpu": "2", "memory": "6Gi"}, ["cpu"]),
        ({"cpu": "2", "memory": "6Gi"}, {"cpu": "2", "memory": "6Gi"}, []),
        ({"cpu": "500m", "memory": "5Gi"}, {"cpu": "2", "memory": "6144Mi"}, []),
        ({"cpu": "4", "memory": "5Gi"}, {"memory": "6Gi"}, []),  # no cpu limit
    ],
)
def test_a_sidecar_request_above_its_limit_is_refused(
    requests: dict[str, str], limits: dict[str, str], refused: list[str]
) -> None:
    spec = spec_with(resources={"requests": requests, "limits": limits})
    if not refused:
        parse_spec(spec)
        return
    assert lines(spec) == [
        f"{SERVER}/resources/requests/{name}: requests.{name} is above limits.{name} "
        f"({limits[name]}): Kubernetes refuses a container whose request exceeds its limit "
        f"(got {requests[name]!r}; allowed: at most limits.{name}, {limits[name]}; fix: lower "
        f"requests.{name} or raise limits.{name})"
        for name in refused
    ]


def backend(name: object) -> dict[str, Any]:
    return {
        "apiVersion": "inferencecache.io/v1alpha1",
        "kind": "CacheBackend",
        "metadata": {"name": name},
        "spec": seed_safe_spec(),
    }


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("SGLang-LMCache", "sglang-lmcache"),
        ("cache_backend", "cache-backend"),
        ("-cache", "cache"),
        ("cache.", "cache"),
        ("a" * 254, "a" * 253),
        ("", "lmcache"),
    ],
)
def test_a_name_that_is_not_dns_1123_is_refused(name: str, fix: str) -> None:
    with pytest.raises(MlccError) as raised:
        parse_cache_backend(backend(name), where="x.yaml")
    (problem,) = raised.value.problems
    assert (problem.pointer, problem.value) == ("/metadata/name", name)
    assert problem.message == "not a Kubernetes object name (DNS-1123 subdomain)"
    assert problem.fix == f"e.g. {fix}"


@pytest.mark.parametrize("name", ["sglang-lmcache", "a", "cache.v1", "0cache", "a" * 253])
def test_a_dns_1123_name_is_admitted(name: str) -> None:
    assert parse_cache_backend(backend(name)).name == name


@pytest.mark.parametrize(
    ("runtime", "port", "engine"),
    [
        ("VLLM", 8000, "vllm"),
        ("SGLang", 30000, "sglang"),
        ("VLLM", 5560, None),
        ("SGLang", 8000, None),  # vLLM's port, but SGLang serves on 30000
    ],
)
def test_cache_check_refuses_the_engine_port(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    runtime: str,
    port: int,
    engine: str | None,
) -> None:
    document = backend("cache")
    document["spec"] = spec_with(runtime, port=port)
    path = tmp_path / "cache.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    capsys.readouterr()
    code = cli.main(["cache", "check", str(path)])
    err = capsys.readouterr().err
    if engine is None:
        assert code == 0
        assert err == ""
        return
    assert code == 1
    assert err == (
        f"mlcc: error: {path}:{SERVER}/port: is engine {engine!r}'s port: the MP server shares "
        f"the engine's pod network, so one of them could not listen (got {port}; allowed: any "
        f"port but {port}; fix: pick another port, e.g. 5555)\n"
    )


def test_render_refuses_the_engine_port() -> None:
    spec = flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type="ml.g5.12xlarge",
        name="cached",
        engine_version="0.31.0",
        cache_backend=CacheBackendSpec.from_dict(spec_with(port=8000)),
    )
    with pytest.raises(MlccError) as raised:
        render(spec, context=CONTEXT)
    assert [p.pointer for p in raised.value.problems] == [
        "/cache/backend/lmCache/podLocal/server/port"
    ]


def cached(instance_type: str, l1: str, memory: str, **extra: Any) -> DeploymentSpec:
    server = {
        "l1Capacity": l1,
        "resources": {"requests": {"cpu": "1", "memory": memory}, "limits": {"memory": memory}},
    }
    return flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type=instance_type,
        name="cached",
        engine_version="0.31.0",
        cache_backend=CacheBackendSpec.from_dict(spec_with(**server)),
        **extra,
    )


@pytest.mark.parametrize(
    ("instance_type", "l1", "memory", "message"),
    [
        # g5.12xlarge: 192 GiB; the engine asks 172Gi of it (module doc of prepare/container)
        ("ml.g5.12xlarge", "4Gi", "5Gi", None),
        ("ml.g5.12xlarge", "19Gi", "20Gi", None),
        (
            "ml.g5.12xlarge",
            "20Gi",
            "21Gi",
            "the engine's memory (172Gi) plus the MP server's (21Gi) is 193Gi, above "
            "ml.g5.12xlarge's 192Gi",
        ),
        (
            "ml.g5.12xlarge",
            "100Gi",
            "101Gi",
            "the engine's memory (172Gi) plus the MP server's (101Gi) is 273Gi, above "
            "ml.g5.12xlarge's 192Gi",
        ),
    ],
)
def test_sidecar_plus_engine_above_the_node_memory_is_refused(
    instance_type: str, l1: str, memory: str, message: str | None
) -> None:
    spec = cached(instance_type, l1, memory)
    if message is None:
        render(spec, context=CONTEXT)
        return
    with pytest.raises(MlccError) as raised:
        render(spec, context=CONTEXT)
    (problem,) = raised.value.problems
    assert problem.message == message
    assert problem.pointer == "/cache/backend/lmCache/podLocal/server/resources"
