"""Tier 1 closed (issue 35, item 7): a key the library computes cannot be set through ``env``
(a spec file, ``--set``, either config delivery), whatever the engine; the refusal names the
spec field that sets it. One row per key kind and engine, asserting the exact text; a property
test over every built-in manifest, whose computed keys it derives from the manifests' data on
its own; a plugin gets the rule from its manifest; the CLI refuses before rendering."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from mlcc_constructs.core.engines.manifests import EngineManifest, EngineRegistry, builtin_engines
from mlcc_constructs.core.serving.resolve.computed_keys import computed_keys
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# What each kind of computed key says: (what it sets, why it is Tier 1, the spec field, its flag)
MODEL_KIND = ("the model", "the library computes it from the model source", "model.uri", "--model")
TP = (
    "the tensor-parallel degree",
    "the library computes it from the instance's GPUs and checks it against them",
    "compute.tensor_parallel_degree",
    "--tp",
)
PP = (
    "the pipeline-parallel degree",
    "the library passes pipeline_parallel_degree (one stage per node with nodes: auto) and "
    "checks it with the tensor-parallel degree against the GPUs of every node",
    "compute.pipeline_parallel_degree",
    "--pp",
)
SERVED = (
    "the served model name",
    "the library passes the deployment's name (or served_model_name), the model name clients "
    "and mlcc endpoint check send",
    "served_model_name",
    "--served-model-name",
)
MULTI_NODE_WHY = (
    "a multi-node launch flag the library passes to each pod of a multi-node group itself "
    "(manifest multi_node)"
)
MULTI_NODE_FIX = (
    "remove it; set compute.nodes (--nodes; DeploymentSpec.compute.nodes) for a model copy over "
    "several nodes: "
    "each pod then gets its own"
)
API_KEY_WHY = "the library delivers it from a secret, never from env (manifest api_key)"
API_KEY_FIX = (
    "remove it; set endpoint.api_key_secret (--api-key-secret; "
    "DeploymentSpec.endpoint.api_key_secret)"
)


def capability(key: str, value: str, kind: tuple[str, str, str, str], alias: str = "") -> str:
    sets, why, field, flag = kind
    via = f" ({alias})" if alias else ""
    return (
        f"/engine/env/{key}: {key}{via} sets {sets}, which is Tier 1: {why} (got {value!r}; fix: "
        "set "
        f"{field} ({flag}; DeploymentSpec.{field}) instead)"
    )


def multi_node(key: str, value: str, flag: str, alias: str = "") -> str:
    via = f" ({alias})" if alias else ""
    return (
        f"/engine/env/{key}: {key}{via} sets {flag}, which is Tier 1: {MULTI_NODE_WHY} (got "
        f"{value!r}; "
        f"fix: {MULTI_NODE_FIX})"
    )


def api_key(key: str, sets: str, shown: str, fix: str = API_KEY_FIX) -> str:
    return (
        f"/engine/env/{key}: {key} sets {sets}, which is Tier 1: {API_KEY_WHY} (got {shown!r}; "
        f"fix: {fix})"
    )


# (engine, extra spec fields, key, value, the exact refusal)
ROWS: list[tuple[str, dict[str, Any], str, str, str]] = [
    ("vllm", {}, "VLLM_MODEL", "/x", capability("VLLM_MODEL", "/x", MODEL_KIND)),
    ("vllm", {}, "VLLM_TENSOR_PARALLEL_SIZE", "2",
     capability("VLLM_TENSOR_PARALLEL_SIZE", "2", TP)),
    ("vllm", {}, "VLLM_PIPELINE_PARALLEL_SIZE", "3",
     capability("VLLM_PIPELINE_PARALLEL_SIZE", "3", PP)),
    ("vllm", {}, "VLLM_SERVED_MODEL_NAME", "other",
     capability("VLLM_SERVED_MODEL_NAME", "other", SERVED)),
    ("vllm", {}, "VLLM_NNODES", "2", multi_node("VLLM_NNODES", "2", "--nnodes")),
    ("vllm", {}, "VLLM_NODE_RANK", "1", multi_node("VLLM_NODE_RANK", "1", "--node-rank")),
    ("vllm", {}, "VLLM_MASTER_ADDR", "10.0.0.1",
     multi_node("VLLM_MASTER_ADDR", "10.0.0.1", "--master-addr")),
    ("vllm", {}, "VLLM_MASTER_PORT", "29500",
     multi_node("VLLM_MASTER_PORT", "29500", "--master-port")),
    ("vllm", {}, "VLLM_HEADLESS", "true", multi_node("VLLM_HEADLESS", "true", "--headless")),
    ("vllm", {}, "VLLM_API_KEY", "s3cr3t",  # a credential: the refusal shows the key only
     api_key("VLLM_API_KEY", "the API key", "VLLM_API_KEY",
             API_KEY_FIX + ", or give VLLM_API_KEY from a Kubernetes Secret in engine.secret_env")),
    ("vllm", {"model_load": "stream"}, "VLLM_LOAD_FORMAT", "pt",
     "/engine/env/VLLM_LOAD_FORMAT: VLLM_LOAD_FORMAT sets --load-format, which is Tier 1: the "
     "library "
     "passes --load-format runai_streamer while it streams the model (model.load stream; "
     "manifest model_load.stream) (got 'pt'; fix: remove it, or set model.load (--model-load; "
     "DeploymentSpec.model.load) to mount to choose the load format yourself)"),
    ("vllm", {}, "AWS_REGION", "us-west-2",
     "/engine/env/AWS_REGION: AWS_REGION sets the model bucket's region, which is Tier 1: the "
     "library "
     "sets it while it streams the model (manifest model_load.stream.env: model_region) (got "
     "'us-west-2'; fix: remove it; set region (--region; DeploymentSpec.region), or "
     "model.load: mount)"),
    ("vllm", {"lora": True}, "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "false",
     "/engine/env/VLLM_ALLOW_RUNTIME_LORA_UPDATING: VLLM_ALLOW_RUNTIME_LORA_UPDATING sets runtime "
     "adapter loading, which is Tier 1: the library sets it to true where adapters are loaded "
     "at runtime (lora.enabled on a target that loads them through the engine's API; manifest "
     "adapter_api.runtime_env) (got 'false'; fix: remove it: lora.enabled (--lora; "
     "DeploymentSpec.lora.enabled) "
     "sets it)"),
    ("sglang", {}, "SGLANG_MODEL_PATH", "/x", capability("SGLANG_MODEL_PATH", "/x", MODEL_KIND)),
    ("sglang", {}, "SGLANG_MODEL", "/x",
     capability("SGLANG_MODEL", "/x", MODEL_KIND, "--model, an alias of --model-path")),
    ("sglang", {}, "SGLANG_TP_SIZE", "2", capability("SGLANG_TP_SIZE", "2", TP)),
    ("sglang", {}, "SGLANG_TENSOR_PARALLEL_SIZE", "2",
     capability("SGLANG_TENSOR_PARALLEL_SIZE", "2", TP,
                "--tensor-parallel-size, an alias of --tp-size")),
    ("sglang", {}, "SGLANG_PP_SIZE", "2", capability("SGLANG_PP_SIZE", "2", PP)),
    ("sglang", {}, "SGLANG_PIPELINE_PARALLEL_SIZE", "2",
     capability("SGLANG_PIPELINE_PARALLEL_SIZE", "2", PP,
                "--pipeline-parallel-size, an alias of --pp-size")),
    ("sglang", {}, "SGLANG_SERVED_MODEL_NAME", "x",
     capability("SGLANG_SERVED_MODEL_NAME", "x", SERVED)),
    ("sglang", {}, "SGLANG_NNODES", "2", multi_node("SGLANG_NNODES", "2", "--nnodes")),
    ("sglang", {}, "SGLANG_NODE_RANK", "0", multi_node("SGLANG_NODE_RANK", "0", "--node-rank")),
    ("sglang", {}, "SGLANG_DIST_INIT_ADDR", "a:1",
     multi_node("SGLANG_DIST_INIT_ADDR", "a:1", "--dist-init-addr")),
    ("sglang", {}, "SGLANG_NCCL_INIT_ADDR", "a:1",
     multi_node("SGLANG_NCCL_INIT_ADDR", "a:1", "--dist-init-addr",
                "--nccl-init-addr, an alias of --dist-init-addr")),
    ("sglang", {}, "SGLANG_API_KEY", "s3cr3t",
     api_key("SGLANG_API_KEY", "the API key", "SGLANG_API_KEY")),
    ("sglang", {}, "SGLANG_CONFIG", "/etc/x.yaml",
     api_key("SGLANG_CONFIG", "--config, the file the wrapper writes the API key to",
             "/etc/x.yaml")),
    ("tensorrt-llm", {}, "TRTLLM_MODEL", "/x", capability("TRTLLM_MODEL", "/x", MODEL_KIND)),
    ("tensorrt-llm", {}, "TRTLLM_TP_SIZE", "2", capability("TRTLLM_TP_SIZE", "2", TP)),
    ("lmi", {}, "HF_MODEL_ID", "org/x", capability("HF_MODEL_ID", "org/x", MODEL_KIND)),
    ("llama-cpp", {}, "SM_LLAMA_CPP_HF_REPO", "org/x",
     capability("SM_LLAMA_CPP_HF_REPO", "org/x", MODEL_KIND)),
    ("llama-cpp", {}, "LLAMA_API_KEY", "s3cr3t",
     api_key("LLAMA_API_KEY", "the API key", "LLAMA_API_KEY",
             API_KEY_FIX + ", or give LLAMA_API_KEY from a Kubernetes Secret in "
             "engine.secret_env")),
]  # fmt: skip


def _spec(engine: str, **extra: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": engine,
        "model": MODEL,
        "instance_type": "ml.g5.12xlarge",
        "name": "llm",
        **extra,
    }
    return flat_spec(**values)


@pytest.mark.parametrize(
    ("engine", "extra", "key", "value", "refusal"),
    ROWS,
    ids=[f"{row[0]}-{row[2]}" for row in ROWS],
)
def test_a_computed_key_is_refused_naming_its_spec_field(
    engine: str, extra: dict[str, Any], key: str, value: str, refusal: str
) -> None:
    with pytest.raises(MlccError) as caught:
        resolve(_spec(engine, env={key: value}, **extra))
    assert [str(p) for p in caught.value.problems] == [refusal]


def test_every_built_in_engine_with_such_keys_has_a_row() -> None:
    """The table covers every computed key the built-in manifests declare (the deployment's
    conditional ones too: streaming, runtime adapter loading)."""
    covered = {(engine, key) for engine, _, key, _, _ in ROWS}
    declared = {(m.engine, key) for m in builtin_engines() for key in computed_keys(m)}
    assert declared <= covered


# -- the property: derived from the manifests' data here, independently of the module ------


PARSERS = Path(__file__).resolve().parents[3] / "mlcc_constructs" / "data" / "engine_parsers"


def _aliases(engine: str, flag: str) -> set[str]:
    """The long aliases every recorded parser of ``engine`` gives ``flag``."""
    found: set[str] = set()
    for path in sorted((PARSERS / engine).glob("*.json")):
        record = json.loads(path.read_text())["flags"].get(flag) or {}
        found.update(a for a in record.get("aliases", ()) if a.startswith("--"))
    return found


def _declared_tier1_keys(manifest: EngineManifest) -> list[str]:
    """Every key the library computes whatever the deployment, read from the raw manifest and
    the recorded parsers (aliases)."""
    raw, prefix = manifest.raw, manifest.env_var_prefix
    snake = raw["launch"].get("flag_style") == "snake"
    computed = ("model", "tensor_parallel_degree", "pipeline_parallel_degree", "served_model_name")
    flags = []
    for name in computed:
        suffix = raw["capability_map"].get(name, {}).get("suffix")
        if suffix is not None:
            word = suffix.lower()
            flags.append("--" + (word if snake else word.replace("_", "-")))
    block = raw.get("multi_node") or {}
    flags += [a for a in [*block.get("leader_args", ()), *block.get("worker_args", ())]]
    section = raw.get("api_key") or {}
    if "config_file" in section:
        flags += ["--" + section["config_file"]["key"], section["config_file"]["flag"]]
    keys = [section["env"]] if "env" in section else []
    keys += [raw["hub_model_env"]] if "hub_model_env" in raw else []
    for flag in flags:
        if flag.startswith("--"):
            for spelling in {flag} | _aliases(manifest.engine, flag):
                keys.append(prefix + spelling[2:].upper().replace("-", "_"))
    return sorted(set(keys))


ENGINE_KEYS = [(m.engine, key) for m in builtin_engines() for key in _declared_tier1_keys(m)]


def test_the_property_covers_every_kind() -> None:
    engines = {engine for engine, _ in ENGINE_KEYS}
    assert engines == {"vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp"}
    assert len(ENGINE_KEYS) == 28  # llama.cpp's LLAMA_API_KEY (manifest api_key.env) the 28th


@settings(max_examples=150, deadline=None)
@given(
    pair=st.sampled_from(ENGINE_KEYS),
    value=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./:", min_size=1, max_size=20)
    | st.sampled_from(["true", "false", "1", "0"]),
    lora=st.booleans(),
    nodes=st.sampled_from([1, 2]),
)
def test_no_tier1_key_of_a_built_in_engine_can_be_set_through_env(
    pair: tuple[str, str], value: str, lora: bool, nodes: int
) -> None:
    engine, key = pair
    extra: dict[str, Any] = {"lora": lora and engine in ("vllm", "sglang")}
    if nodes > 1 and engine in ("vllm", "sglang"):  # a real multi-node group: still refused
        extra |= {"nodes": 2, "tensor_parallel_degree": 4, "pipeline_parallel_degree": 2}
    with pytest.raises(MlccError) as caught:
        resolve(_spec(engine, env={key: value}, **extra))
    refusals = [p for p in caught.value.problems if p.pointer == f"/engine/env/{key}"]
    assert len(refusals) == 1
    assert ", which is Tier 1: " in refusals[0].message
    assert "DeploymentSpec." in refusals[0].fix


# -- a plugin gets the rule from its own manifest ------------------------------------------

PLUGIN = {
    "engine": "gridserve",
    "env_var_prefix": "GRID_",
    "entrypoint": "wrapper",
    "min_version": "1.0.0",
    "launch": {"command": ["gridserve"], "model": "flag", "flag_style": "snake", "port": 7000,
               "health_path": "/ready"},
    "multi_node": {"leader_args": ["--world_size", "{group_size}", "--rank", "0"],
                   "worker_args": ["--world_size", "{group_size}", "--rank", "{worker_index}"],
                   "master_port": 7100, "worker_serves_http": False, "source": "test"},
    "capability_map": {
        "model": {"suffix": "WEIGHTS", "value_type": "valued"},
        "tensor_parallel_degree": {"suffix": "SHARDS", "value_type": "valued"},
        "served_model_name": {"suffix": "ALIAS", "value_type": "valued"},
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("key", "refusal"),
    [
        ("GRID_SHARDS", capability("GRID_SHARDS", "2", TP)),
        ("GRID_ALIAS", capability("GRID_ALIAS", "2", SERVED)),
        ("GRID_WORLD_SIZE", multi_node("GRID_WORLD_SIZE", "2", "--world_size")),
        ("GRID_RANK", multi_node("GRID_RANK", "2", "--rank")),
    ],
)
def test_a_plugin_gets_the_rule_from_its_manifest(tmp_path: Path, key: str, refusal: str) -> None:
    (tmp_path / "gridserve").mkdir()
    (tmp_path / "gridserve" / "manifest.json").write_text(json.dumps(PLUGIN))
    registry = EngineRegistry.load([tmp_path], use_env=False)
    spec = _spec("gridserve", engine_version="1.2.0", env={key: "2"})
    with pytest.raises(MlccError) as caught:
        resolve(spec, registry=registry)
    assert [str(p) for p in caught.value.problems] == [refusal]


def test_quantization_and_the_lora_settings_stay_settable() -> None:
    """Not computed: the env may set them (a value the spec also sets must agree)."""
    resolution = resolve(
        _spec("vllm", lora=True, env={"VLLM_QUANTIZATION": "fp8", "VLLM_MAX_LORA_RANK": "64"})
    )
    assert resolution.env["VLLM_QUANTIZATION"] == "fp8"
    assert resolution.env["VLLM_MAX_LORA_RANK"] == "64"


# -- the CLI: --set, a spec file, both config deliveries -------------------------------------


CLI_ROWS = [
    # (command, spec file, flags, the one error line)
    ("render", "deployment.yaml", ["--set", "VLLM_HEADLESS=true"],
     "mlcc: error: --set:" + multi_node("VLLM_HEADLESS", "true", "--headless")),
    ("render", "deployment.yaml", ["--config-delivery", "args", "--set", "VLLM_NNODES=2"],
     "mlcc: error: --set:" + multi_node("VLLM_NNODES", "2", "--nnodes")),
    ("render", "multi-node-vllm.yaml", ["--set", "VLLM_PIPELINE_PARALLEL_SIZE=4"],
     "mlcc: error: --set:" + capability("VLLM_PIPELINE_PARALLEL_SIZE", "4", PP)),
    ("env", "deployment.yaml", ["--set", "VLLM_SERVED_MODEL_NAME=other"],
     "mlcc: error: --set:" + capability("VLLM_SERVED_MODEL_NAME", "other", SERVED)),
    ("argv", "deployment.yaml", ["--set", "VLLM_TENSOR_PARALLEL_SIZE=2"],
     "mlcc: error: --set:" + capability("VLLM_TENSOR_PARALLEL_SIZE", "2", TP)),
]  # fmt: skip


@pytest.mark.parametrize(("command", "example", "args", "line"), CLI_ROWS)
def test_the_cli_refuses_before_rendering(
    command: str, example: str, args: list[str], line: str
) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mlcc_constructs.cli",
            command,
            "-f",
            str(EXAMPLES / example),
            *args,
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert out.stderr.splitlines() == [line]
