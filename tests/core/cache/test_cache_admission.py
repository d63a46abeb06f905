"""CacheBackend admission: reserved sets per adapter, field-scoped errors, all problems at once."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from mlcc_constructs.core.cache import (
    adapters as cache_adapters,
    format_quantity,
    parse_cache_backend,
    parse_quantity,
    parse_spec,
)
from mlcc_constructs.core.support.errors import MlccError

IMAGE = (
    "docker.io/lmcache/standalone@sha256:"
    "b813bf0bb616d1012b6a6edcbd4a44f1576dbbdaa857962e56d48b9f7c127d13"
)


# The seed's example is written for vLLM; SGLang names the same setting --context-length.
CONTEXT_FLAG = {"VLLM": "--max-model-len", "SGLang": "--context-length"}


def seed_safe_spec(runtime: str = "VLLM") -> dict[str, Any]:
    """The seed's safe example (verbatim for vLLM), with the runtime's own context-length flag."""
    return {
        "runtime": runtime,
        "type": "LMCache",
        "lmCache": {
            "topology": "PodLocal",
            "chunkSizeTokens": 128,
            "podLocal": {
                "server": {
                    "image": IMAGE,
                    "port": 5555,
                    "l1Capacity": "4Gi",
                    "maxWorkers": 4,
                    "resources": {
                        "requests": {"cpu": "1", "memory": "5Gi"},
                        "limits": {"cpu": "2", "memory": "6Gi"},
                    },
                }
            },
        },
        "integration": {
            "engineOverrides": {
                "env": [{"name": "LMCACHE_LOG_LEVEL", "value": "DEBUG"}],
                "args": [CONTEXT_FLAG[runtime], "32768"],
            }
        },
    }


def with_overrides(runtime: str = "VLLM", **overrides: Any) -> dict[str, Any]:
    spec = seed_safe_spec(runtime)
    spec["integration"]["engineOverrides"] = overrides
    return spec


def problems_of(spec: dict[str, Any]) -> list[str]:
    with pytest.raises(MlccError) as caught:
        parse_spec(spec)
    return [str(p) for p in caught.value.problems]


VLLM = "vllm-lmcache-mp (VLLM + LMCache)"
SGLANG = "sglang-lmcache-mp (SGLang + LMCache)"
FIX = (
    "fix: remove the entry: the adapter's wire owns it (tune the cache with spec.lmCache; "
    'annotate a pod template inferencecache.io/skip-inject: "true" to opt it out)'
)
VLLM_ARGS = "allowed: any argument except --kv-transfer-config, --disable-hybrid-kv-cache-manager"
VLLM_ENV = "allowed: any env except PYTHONHASHSEED, INFERENCECACHE_FAIL_OPEN"
SGL_ARGS = "allowed: any argument except --enable-lmcache, --lmcache-config-file, --enable-metrics"
SGL_ENV = "allowed: any env except LMCACHE_USE_EXPERIMENTAL, INFERENCECACHE_FAIL_OPEN"
OV = "/spec/integration/engineOverrides"


def test_seed_safe_example_is_admitted() -> None:
    spec = parse_spec(seed_safe_spec())
    assert spec.adapter is not None and spec.adapter.name == "vllm-lmcache-mp"
    assert spec.overrides.args == ("--max-model-len", "32768")
    assert spec.effective_chunk_size_tokens == 128
    assert spec.to_dict() == seed_safe_spec()


def test_seed_safe_example_is_admitted_for_sglang_too() -> None:
    assert parse_spec(seed_safe_spec("SGLang")).adapter is not None


REJECTED = [
    pytest.param(
        "VLLM",
        {"env": [{"name": "PYTHONHASHSEED", "value": "1"}]},
        [
            f"{OV}/env/0: replaces reserved env PYTHONHASHSEED of adapter {VLLM} "
            f"(got 'PYTHONHASHSEED'; {VLLM_ENV}; {FIX})"
        ],
        id="vllm-replace-PYTHONHASHSEED",
    ),
    pytest.param(
        "VLLM",
        {"suppressArgs": ["--disable-hybrid-kv-cache-manager"]},
        [
            f"{OV}/suppressArgs/0: suppresses reserved argument --disable-hybrid-kv-cache-manager"
            f" of adapter {VLLM} (got '--disable-hybrid-kv-cache-manager'; {VLLM_ARGS}; {FIX})"
        ],
        id="vllm-suppress-disable-hybrid",
    ),
    pytest.param(
        "VLLM",
        {"args": ["--max-model-len", "4096", "--kv-transfer-config", "{}"]},
        [
            f"{OV}/args/2: replaces reserved argument --kv-transfer-config of adapter {VLLM} "
            f"(got '--kv-transfer-config'; {VLLM_ARGS}; {FIX})"
        ],
        id="vllm-replace-kv-transfer-config",
    ),
    pytest.param(
        "VLLM",
        {"args": ["--kv-transfer-config={}"]},
        [
            f"{OV}/args/0: replaces reserved argument --kv-transfer-config of adapter {VLLM} "
            f"(got '--kv-transfer-config={{}}'; {VLLM_ARGS}; {FIX})"
        ],
        id="vllm-replace-kv-transfer-config-equals-form",
    ),
    pytest.param(
        "VLLM",
        {"suppressEnv": ["INFERENCECACHE_FAIL_OPEN"]},
        [
            f"{OV}/suppressEnv/0: suppresses reserved env INFERENCECACHE_FAIL_OPEN of adapter "
            f"{VLLM} (got 'INFERENCECACHE_FAIL_OPEN'; {VLLM_ENV}; {FIX})"
        ],
        id="vllm-suppress-fail-open",
    ),
    pytest.param(
        "SGLang",
        {"args": ["--enable-metrics"], "suppressArgs": ["--lmcache-config-file"]},
        [
            f"{OV}/args/0: replaces reserved argument --enable-metrics of adapter {SGLANG} "
            f"(got '--enable-metrics'; {SGL_ARGS}; {FIX})",
            f"{OV}/suppressArgs/0: suppresses reserved argument --lmcache-config-file of adapter "
            f"{SGLANG} (got '--lmcache-config-file'; {SGL_ARGS}; {FIX})",
        ],
        id="sglang-args",
    ),
    pytest.param(
        "SGLang",
        {
            "env": [{"name": "LMCACHE_USE_EXPERIMENTAL", "value": "False"}],
            "suppressArgs": ["--enable-lmcache"],
        },
        [
            f"{OV}/env/0: replaces reserved env LMCACHE_USE_EXPERIMENTAL of adapter {SGLANG} "
            f"(got 'LMCACHE_USE_EXPERIMENTAL'; {SGL_ENV}; {FIX})",
            f"{OV}/suppressArgs/0: suppresses reserved argument --enable-lmcache of adapter "
            f"{SGLANG} (got '--enable-lmcache'; {SGL_ARGS}; {FIX})",
        ],
        id="sglang-env-and-enable-lmcache",
    ),
]


@pytest.mark.parametrize(("runtime", "overrides", "expected"), REJECTED)
def test_reserved_overrides_are_rejected(
    runtime: str, overrides: dict[str, Any], expected: list[str]
) -> None:
    assert problems_of(with_overrides(runtime, **overrides)) == expected


def test_reserved_sets_are_per_adapter() -> None:
    # vLLM's reserved tokens are ordinary overrides for SGLang, and the other way round.
    parse_spec(
        with_overrides(
            "SGLang",
            env=[{"name": "PYTHONHASHSEED", "value": "1"}],
            args=["--kv-transfer-config", "{}"],
            suppressArgs=["--disable-hybrid-kv-cache-manager"],
        )
    )
    parse_spec(with_overrides("VLLM", args=["--enable-metrics"], suppressArgs=["--enable-lmcache"]))


def test_every_problem_of_a_spec_is_reported_at_once() -> None:
    spec = with_overrides(
        env=[{"name": "PYTHONHASHSEED", "value": "1"}],
        suppressArgs=["--disable-hybrid-kv-cache-manager"],
        args=["--kv-transfer-config", "{}"],
    )
    spec["lmCache"]["chunkSizeTokens"] = 0
    spec["lmCache"]["podLocal"]["server"]["resources"]["limits"]["memory"] = "4Gi"
    spec["lmCache"]["podLocal"]["server"]["image"] = "lmcache/standalone:latest"
    spec["runtim"] = "x"
    found = problems_of(spec)
    assert [line.split(":", 1)[0] for line in found] == [
        "/spec/runtim",
        "/spec/lmCache/chunkSizeTokens",
        f"{OV}/env/0",
        f"{OV}/args/0",
        f"{OV}/suppressArgs/0",
        "/spec/lmCache/podLocal/server/image",
        "/spec/lmCache/podLocal/server/resources/requests/memory",  # 5Gi above the 4Gi limit
        "/spec/lmCache/podLocal/server/resources/limits/memory",
    ]


BAD_INPUT = [
    pytest.param(
        {"runtime": "vllm"},
        "/spec/runtime: not an allowed value (got 'vllm'; allowed: VLLM, SGLang; "
        "fix: values are case-sensitive: use VLLM)",
        id="runtime-case",
    ),
    pytest.param(
        {"lmCache": {"topology": "PodLocal", "chunkSizeTokens": "128", "podLocal": "x"}},
        "/spec/lmCache/chunkSizeTokens: must be an integer (got '128')",
        id="chunk-size-type",
    ),
    pytest.param(
        {"type": "SGLangHiCache"},
        "/spec/runtime: no runtime adapter supports VLLM + SGLangHiCache (got 'VLLM'; "
        "allowed: VLLM + LMCache, SGLang + LMCache)",
        id="no-adapter",
    ),
    pytest.param(
        {"integration": {"role": "ReadOnly"}},
        None,
        id="vllm-read-only-is-fine",
    ),
    pytest.param(
        {"lmCache": {"topology": "NodeLocal"}},
        "/spec/lmCache/topology: NodeLocal is not supported by mlcc: it injects the PodLocal MP "
        "server (got 'NodeLocal'; allowed: PodLocal)",
        id="node-local",
    ),
    pytest.param(
        {"integration": {"engineOverrides": {"args": ["32768", "--max-model-len"]}}},
        f"{OV}/args/0: the first argument must be a flag: a value needs the flag it belongs to "
        "(got '32768'; fix: put the flag first, e.g. [--max-model-len, '32768'])",
        id="args-start-with-value",
    ),
    pytest.param(
        {"integration": {"engineOverrides": {"suppressArgs": ["--foo=1"]}}},
        f"{OV}/suppressArgs/0: must be a bare flag name (got '--foo=1'; "
        "fix: e.g. --some-flag (no value))",
        id="suppress-with-value",
    ),
    pytest.param(
        {"integration": {"engineOverrides": {"supressEnv": []}}},
        f"{OV}/supressEnv: unknown field (allowed: env, suppressEnv, args, suppressArgs; "
        "fix: did you mean suppressEnv?)",
        id="unknown-field",
    ),
    pytest.param(
        {"remoteStorage": {"provider": "Redis", "ownership": "External"}},
        "/spec/remoteStorage/endpoint: required for External ownership "
        "(fix: set endpoint to the Redis host:port)",
        id="external-needs-endpoint",
    ),
]


def _merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "lmCache":
            out[key] = _merged(out[key], value)
        elif key == "lmCache" and "topology" in value and len(value) == 1:
            out[key]["topology"] = value["topology"]
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(("patch", "expected"), BAD_INPUT)
def test_bad_input_names_field_value_and_fix(patch: dict[str, Any], expected: str | None) -> None:
    spec = _merged(seed_safe_spec(), patch)
    if expected is None:
        parse_spec(spec)
        return
    assert expected in problems_of(spec)


def test_memory_must_cover_l1_plus_headroom() -> None:
    spec = seed_safe_spec()
    spec["lmCache"]["podLocal"]["server"]["l1Capacity"] = "5Gi"
    assert problems_of(spec) == [
        "/spec/lmCache/podLocal/server/resources/requests/memory: does not cover l1Capacity + 1Gi "
        "(6Gi): /dev/shm holds the whole L1 (got '5Gi'; fix: set requests.memory to at least 6Gi)"
    ]


def test_upstream_sample_is_admitted(shared_dir: Any) -> None:
    import yaml

    path = shared_dir / "examples" / "example-cachebackend-vllm-podlocal.yaml"
    document = yaml.safe_load(path.read_text())
    parsed = parse_cache_backend(document, where=str(path))
    assert parsed.name == "vllm-podlocal-host-only"
    assert parsed.spec.effective_role == "ReadWrite"
    assert parsed.spec.to_dict() == document["spec"]


def test_reserved_sets_are_declared_in_the_data_file() -> None:
    table = {row["runtime"]: row for row in cache_adapters.reserved_table()}
    assert table["VLLM"]["reserved_args"] == [
        "--kv-transfer-config",
        "--disable-hybrid-kv-cache-manager",
    ]
    assert table["VLLM"]["reserved_env"] == ["PYTHONHASHSEED", "INFERENCECACHE_FAIL_OPEN"]
    assert table["SGLang"]["reserved_args"] == [
        "--enable-lmcache",
        "--lmcache-config-file",
        "--enable-metrics",
    ]
    assert table["SGLang"]["reserved_env"] == [
        "LMCACHE_USE_EXPERIMENTAL",
        "INFERENCECACHE_FAIL_OPEN",
    ]


def test_rules_never_branch_on_a_runtime_name() -> None:
    from pathlib import Path

    import mlcc_constructs.core.cache as package

    sources = sorted(Path(package.__file__).parent.glob("*.py"))
    assert len(sources) > 1  # every module of the package
    for path in sources:
        source = path.read_text()
        for name in ("VLLM", "SGLang", "vllm", "sglang"):
            assert f'"{name}"' not in source, (path.name, name)


@pytest.mark.parametrize(
    ("text", "value", "canonical"),
    [
        ("4Gi", Fraction(4 * 2**30), "4Gi"),
        ("4096Mi", Fraction(4 * 2**30), "4Gi"),
        ("4G", Fraction(4 * 10**9), "4G"),
        ("1.5Gi", Fraction(3 * 2**29), "1536Mi"),
        ("1e9", Fraction(10**9), "1G"),
        ("0", Fraction(0), "0"),
        ("5073741824", Fraction(4 * 10**9 + 2**30), "4954826Ki"),
        (4294967296, Fraction(2**32), "4Gi"),
    ],
)
def test_quantities(text: str | int, value: Fraction, canonical: str) -> None:
    assert parse_quantity(text) == value
    assert format_quantity(value) == canonical


@pytest.mark.parametrize("text", ["4 Gi", "4GB", "", "Gi", True])
def test_bad_quantities(text: object) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)  # type: ignore[arg-type]
