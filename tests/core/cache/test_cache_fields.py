"""The generic camelCase mapping of the CacheBackend dataclasses: declared paths exist in the
upstream CRD, field order is key order, refused fields are data, pointers are RFC 6901."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.cache import CacheBackendSpec, RedisSpec, SecretKeySelector, parse_spec
from mlcc_constructs.core.cache.fields import crd_paths
from mlcc_constructs.core.support.errors import MlccError
from tests.core.cache.test_cache_admission import problems_of, seed_safe_spec


def _crd_paths(node: dict[str, Any], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every property path of an openAPIV3Schema (array items share their list's path)."""
    found: set[tuple[str, ...]] = set()
    for key, child in node.get("properties", {}).items():
        path = (*prefix, key)
        found.add(path)
        found |= _crd_paths(child, path)
        found |= _crd_paths(child.get("items", {}), path)
    return found


def test_every_declared_path_is_in_the_upstream_crd(shared_dir: Path) -> None:
    crd = yaml.safe_load((shared_dir / "crds" / "inferencecache.io_cachebackends.yaml").read_text())
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    upstream = _crd_paths(spec_schema)
    declared = set(crd_paths(CacheBackendSpec))
    assert declared - upstream == set()
    assert ("lmCache", "podLocal", "server", "l1Capacity") in declared
    assert ("remoteStorage", "redis", "authentication", "password", "key") in declared
    assert ("observation", "modelID") in declared


def full_spec() -> dict[str, Any]:
    """Every field mlcc admits, written in the upstream sample's key order."""
    spec = seed_safe_spec()
    spec["integration"] = {
        "role": "ReadOnly",
        "failOpen": False,
        "mode": "Offload",
        "engineOverrides": {
            "args": ["--max-model-len", "32768"],
            "env": [
                {"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}},
            ],
            "suppressArgs": ["--nothing"],
            "suppressEnv": ["NOTHING"],
        },
    }
    return {
        "runtime": "VLLM",
        "type": "LMCache",
        "integration": spec["integration"],
        "engineSelector": {"matchLabels": {"inferencecache.io/cache-domain": "d"}},
        "lmCache": spec["lmCache"],
        "remoteStorage": {
            "provider": "Redis",
            "ownership": "External",
            "endpoint": "redis.cache.svc:6379",
            "redis": {
                "image": "redis:7",
                "authentication": {
                    "password": {"key": "password", "name": "redis", "optional": False},
                    "username": {"key": "user", "name": "redis"},
                },
                "resources": {"requests": {"memory": "1Gi"}},
            },
        },
        "observation": {"modelID": "meta-llama/Llama-3.1-8B", "firstEventTimeout": "5m"},
        "allowCrossNamespace": True,
    }


def test_field_order_is_key_order() -> None:
    written = full_spec()
    parsed = CacheBackendSpec.from_dict(written)
    assert json.dumps(parsed.to_dict()) == json.dumps(written)
    assert parsed.remote_storage is not None and parsed.remote_storage.redis is not None
    assert parsed.remote_storage.redis.username == SecretKeySelector(key="user", name="redis")


def test_a_group_is_written_only_with_its_required_member() -> None:
    # The CRD requires authentication.password and tls.caCertificate.
    secret = SecretKeySelector(key="k")
    assert RedisSpec(username=secret, tls_server_name="r").to_dict() == {}
    assert RedisSpec(password=secret, tls_ca_certificate=secret).to_dict() == {
        "authentication": {"password": {"key": "k", "name": ""}},
        "tls": {"caCertificate": {"key": "k", "name": ""}},
    }


def test_an_empty_engine_selector_stays_an_empty_selector() -> None:
    raw = seed_safe_spec()
    raw["engineSelector"] = {}
    spec = CacheBackendSpec.from_dict(raw)
    assert spec.engine_selector == {}
    assert spec.to_dict()["engineSelector"] == {"matchLabels": {}}


REFUSED = [
    pytest.param(
        ("hiCache",),
        {"sizeGB": 1},
        "/spec/hiCache: hiCache is not supported by mlcc: use type LMCache",
        id="hiCache",
    ),
    pytest.param(
        ("lmCache", "nodeLocal"),
        {},
        "/spec/lmCache/nodeLocal: the NodeLocal topology is not supported by mlcc: use podLocal",
        id="nodeLocal",
    ),
    pytest.param(
        ("integration", "mode"),
        "EventsOnly",
        "/spec/integration/mode: EventsOnly is not supported by mlcc: it injects the Offload "
        "connector (got 'EventsOnly'; allowed: Offload)",
        id="EventsOnly",
    ),
    pytest.param(
        ("lmCache", "podLocal", "server", "resources", "claims"),
        [],
        "/spec/lmCache/podLocal/server/resources/claims: resource claims are not supported",
        id="claims",
    ),
]


@pytest.mark.parametrize(("path", "value", "expected"), REFUSED)
def test_refused_fields_name_why(path: tuple[str, ...], value: Any, expected: str) -> None:
    raw = seed_safe_spec()
    node = raw
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    assert problems_of(raw) == [expected]


def test_managed_redis_workload_is_refused() -> None:
    raw = seed_safe_spec()
    raw["remoteStorage"] = {"provider": "Redis", "ownership": "Managed", "workload": {}}
    assert problems_of(raw) == [
        "/spec/remoteStorage/workload: managed Redis scheduling (workload) is not supported by mlcc"
    ]


def test_pointers_escape_slashes_and_missing_fields_say_where() -> None:
    raw = seed_safe_spec()
    server = raw["lmCache"]["podLocal"]["server"]
    server["resources"]["limits"]["nvidia.com/gpu"] = "one"
    del server["maxWorkers"]
    assert problems_of(raw) == [
        "/spec/lmCache/podLocal/server/maxWorkers: required field is missing "
        "(fix: set /spec/lmCache/podLocal/server/maxWorkers (at least 1))",
        "/spec/lmCache/podLocal/server/resources/limits/nvidia.com~1gpu: not a Kubernetes "
        "quantity (got 'one'; allowed: e.g. 4Gi, 4096Mi, 4G)",
    ]


def test_a_spec_file_names_problems_under_its_own_pointer() -> None:
    raw = seed_safe_spec()
    raw["lmCache"]["chunkSizeTokens"] = "128"
    raw["integration"]["engineOverrides"]["env"] = [{"name": "PYTHONHASHSEED", "value": "1"}]
    with pytest.raises(MlccError) as caught:
        parse_spec(raw, where="spec.yaml", path="/cache/backend")
    assert [f"{p.where}:{p.pointer}" for p in caught.value.problems] == [
        "spec.yaml:/cache/backend/lmCache/chunkSizeTokens",
        "spec.yaml:/cache/backend/integration/engineOverrides/env/0",
    ]
