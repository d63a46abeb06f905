"""Compile and download caches: the manifests' ``cache_dirs``, their checks, and the rendered
pod (env, the cache volume, its mount, the security context otherwise unchanged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.engines.manifests import builtin_engines, load_manifest
from mlcc_constructs.core.serving.prepare.engine_cache import CACHE_MOUNT, CACHE_VOLUME
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.wrapper import MANIFEST_KEYS, pod_manifest
from tests.core.engines.test_manifests import VALID
from tests.core.serving.test_render_core import make_spec, objects

BUILTINS = {m.engine: m for m in builtin_engines()}

# -- the built-in declarations --------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "declared"),
    [
        (
            "vllm",
            [
                ("VLLM_CACHE_ROOT", "vllm"),
                ("TRITON_CACHE_DIR", "triton"),
                ("FLASHINFER_WORKSPACE_BASE", "flashinfer"),
                ("HF_HOME", "huggingface"),
            ],
        ),
        (
            "sglang",
            [
                ("SGLANG_CACHE_DIR", "sglang"),
                ("SGLANG_JIT_CACHE_DIR", "sglang-jit"),
                ("HF_HOME", "huggingface"),
            ],
        ),
        ("tensorrt-llm", []),
        ("lmi", []),
        ("llama-cpp", []),
    ],
)
def test_builtin_cache_dirs(engine: str, declared: list[tuple[str, str]]) -> None:
    manifest = BUILTINS[engine]
    assert [(c.env, c.dir) for c in manifest.cache_dirs] == declared
    for entry in manifest.cache_dirs:
        assert entry.holds and entry.source
        if entry.env.startswith(manifest.env_var_prefix):  # the engine's own: never a flag
            assert entry.env in manifest.engine_env


@pytest.mark.parametrize("engine", sorted(BUILTINS))
def test_cache_dirs_do_not_travel_with_the_pods(engine: str) -> None:
    """The wrapper never reads them: only the render does, into env and a volume."""
    manifest = BUILTINS[engine]
    assert "cache_dirs" not in MANIFEST_KEYS
    assert "cache_dirs" not in pod_manifest(manifest.raw)
    assert "cache_dirs" not in json.loads(manifest.pod_json_text)


# -- bad declarations: the exact error text -------------------------------------------------


def _cache(env: str, dir: str, **extra: Any) -> dict[str, Any]:
    return {"env": env, "dir": dir, "holds": "kernels", "source": "myengine 1.0: env.py", **extra}


def _with_caches(*entries: dict[str, Any], **top: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(VALID))
    document["cache_dirs"] = list(entries)
    document.update(top)
    return document


_FIX = (
    "fix: name the variable the engine reads the cache directory from (one with the engine's "
    "prefix goes in engine_env too)"
)

BAD_CACHE_DIRS = [
    (
        "the same variable twice",
        _with_caches(_cache("TRITON_CACHE_DIR", "triton"), _cache("TRITON_CACHE_DIR", "t2")),
        [
            "{F}:/cache_dirs/1/env: env also used by cache_dirs/0 (got 'TRITON_CACHE_DIR'; "
            "fix: give every cache its own env, or drop the duplicate entry)"
        ],
    ),
    (
        "the same directory twice",
        _with_caches(_cache("TRITON_CACHE_DIR", "kernels"), _cache("HF_HOME", "kernels")),
        [
            "{F}:/cache_dirs/1/dir: dir also used by cache_dirs/0 (got 'kernels'; fix: give "
            "every cache its own dir, or drop the duplicate entry)"
        ],
    ),
    (
        "a variable the pod sets",
        _with_caches(_cache("HOME", "home")),
        [
            "{F}:/cache_dirs/0/env: a cache directory's variable cannot be HOME: the rendered "
            f"pod sets this variable itself (got 'HOME'; {_FIX})"
        ],
    ),
    (
        "a wrapper variable",
        _with_caches(_cache("MLCC_CACHE", "mlcc")),
        [
            "{F}:/cache_dirs/0/env: a cache directory's variable cannot be MLCC_CACHE: MLCC_* "
            f"variables are the wrapper's own (got 'MLCC_CACHE'; {_FIX})"
        ],
    ),
    (
        "a capability's flag key",
        _with_caches(_cache("MYENG_LORA_RANK", "rank")),
        [
            "{F}:/cache_dirs/0/env: a cache directory's variable cannot be MYENG_LORA_RANK: it "
            f"is the flag key of capability 'lora_rank' (got 'MYENG_LORA_RANK'; {_FIX})"
        ],
    ),
    (
        "the API key's variable",
        _with_caches(_cache("MYENG_KEY", "key"), api_key={"env": "MYENG_KEY", "source": "x"}),
        [
            "{F}:/cache_dirs/0/env: a cache directory's variable cannot be MYENG_KEY: it is the "
            f"variable the engine reads its API key from (got 'MYENG_KEY'; {_FIX})"
        ],
    ),
    (
        "a prefixed variable outside engine_env",
        _with_caches(_cache("MYENG_CACHE_DIR", "myengine")),
        [
            "{F}:/cache_dirs/0/env: a cache directory's variable cannot be MYENG_CACHE_DIR: it "
            "has the engine's prefix MYENG_ but is not in engine_env, so the wrapper would take "
            f"it for a flag (got 'MYENG_CACHE_DIR'; {_FIX})"
        ],
    ),
    (
        "a directory that is a path",
        _with_caches(_cache("TRITON_CACHE_DIR", "../triton")),
        ["{F}:/cache_dirs/0/dir: '../triton' does not match '^[a-z0-9][a-z0-9._-]*$'"],
    ),
    (
        "no source",
        _with_caches({"env": "HF_HOME", "dir": "hf", "holds": "downloads"}),
        ["{F}:/cache_dirs/0: 'source' is a required property"],
    ),
]


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in BAD_CACHE_DIRS], ids=[c[0] for c in BAD_CACHE_DIRS]
)
def test_bad_cache_dirs(tmp_path: Path, document: Any, expected: list[str]) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(document))
    with pytest.raises(MlccError) as caught:
        load_manifest(path)
    assert [str(p) for p in caught.value.problems] == [
        e.replace("{F}", str(path)) for e in expected
    ]


def test_good_cache_dirs_load(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    document = _with_caches(
        _cache("MYENG_CACHE_DIR", "myengine"), _cache("HF_HOME", "hf"), engine_env=["CACHE_DIR"]
    )
    path.write_text(json.dumps(document))
    assert [c.env for c in load_manifest(path).cache_dirs] == ["MYENG_CACHE_DIR", "HF_HOME"]


# -- the rendered pod -----------------------------------------------------------------------

SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
}
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": 1000,
    "runAsGroup": 1000,
    "fsGroup": 1000,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _pod(engine: str, **overrides: Any) -> dict[str, Any]:
    rendered = objects(make_spec(engine, **overrides))
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _plain_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp"])
@pytest.mark.parametrize("config_delivery", ["env", "args"])
def test_the_pod_gets_the_declared_caches_on_one_volume(engine: str, config_delivery: str) -> None:
    manifest = BUILTINS[engine]
    if config_delivery == "args" and manifest.entrypoint == "image":
        pytest.skip("a Model-B engine keeps its image's entrypoint (env delivery only)")
    pod = _pod(engine, config_delivery=config_delivery)
    (container,) = pod["containers"]
    env = _plain_env(container)
    expected = {c.env: f"{CACHE_MOUNT}/{c.dir}" for c in manifest.cache_dirs}
    assert {k: env[k] for k in expected if k in env} == expected
    cache_volumes = [v for v in pod["volumes"] if v["name"] == CACHE_VOLUME]
    cache_mounts = [m for m in container["volumeMounts"] if m["name"] == CACHE_VOLUME]
    if expected:
        assert cache_volumes == [{"name": CACHE_VOLUME, "emptyDir": {}}]
        assert cache_mounts == [{"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT}]
    else:  # nothing declared: no volume, the engine writes where it always did
        assert cache_volumes == [] and cache_mounts == []
    # the hardening is untouched: the caches are writable only through the volume
    assert container["securityContext"] == SECURITY_CONTEXT
    assert pod["securityContext"] == POD_SECURITY_CONTEXT
    assert not [v for v in pod["volumes"] if "hostPath" in v]
    mounts = [m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")]
    for key in expected:
        assert any(env[key].startswith(path + "/") for path in mounts), key


def test_a_variable_the_deployment_sets_itself_wins() -> None:
    pod = _pod("vllm", env={"HF_HOME": "/home/mlcc/hf", "VLLM_CACHE_ROOT": "/tmp/vllm"})
    (container,) = pod["containers"]
    names = [e["name"] for e in container["env"]]
    assert names.count("HF_HOME") == 1 and "VLLM_CACHE_ROOT" not in names  # ConfigMap has it
    env = _plain_env(container)
    assert env["HF_HOME"] == "/home/mlcc/hf"
    assert env["TRITON_CACHE_DIR"] == f"{CACHE_MOUNT}/triton"  # the others stay on the volume


def test_a_worker_without_volumes_gets_no_cache_env() -> None:
    """hyperpod-eks: the operator makes the pods and takes no volumes from us, so the engine
    keeps its defaults (the IEC carries no cache variable)."""
    iec = objects(make_spec("vllm", "hyperpod-eks"))[0]
    names = {e["name"] for e in iec["spec"]["worker"].get("environmentVariables", [])}
    assert names.isdisjoint(c.env for c in BUILTINS["vllm"].cache_dirs)
