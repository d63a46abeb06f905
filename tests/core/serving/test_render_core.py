"""The core render (plain dicts): snapshots per engine x target x LoRA, and the render rules."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.core.engines.manifests import EngineRegistry, builtin_engines
from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.prepare.container import (
    ENGINE_CONTAINER,
    config_hash,
    pod_resources,
)
from mlcc_constructs.core.serving.prepare.names import name_problems
from mlcc_constructs.core.serving.prepare.pod import CONFIG_HASH_ANNOTATION
from mlcc_constructs.core.serving.prepared import infer_environment
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, SecretRef
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.support.yaml_output import to_yaml
from tests._flat import flat_spec, replace_flat
from tests.conftest import LLAMA_CPP_TEST_IMAGE

BUCKET = "mlcc-models-dev-123456789012-us-east-1"
MODEL = f"s3://{BUCKET}/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(profile="dev")
ENGINES = ("vllm", "sglang", "tensorrt-llm", "lmi", "llama-cpp")
LORA_ENGINES = ("vllm", "sglang")
TARGETS = ("eks", "hyperpod-eks")


def make_spec(engine: str = "vllm", target: str = "eks", **overrides: Any) -> DeploymentSpec:
    values: dict[str, Any] = {
        "engine": {"name": engine},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": f"llama-{engine}",
        "namespace": "inference",
        "target": target,
    }
    if engine == "llama-cpp":
        values["image"] = LLAMA_CPP_TEST_IMAGE
    values.update(overrides)
    return flat_spec(**values)


def objects(spec: DeploymentSpec, **kwargs: Any) -> list[dict[str, Any]]:
    return list(render(spec, context=kwargs.pop("context", CONTEXT), **kwargs).objects)


def by_kind(rendered: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(o for o in rendered if o["kind"] == kind)


def engine_env(obj: dict[str, Any]) -> dict[str, str]:
    """The engine env an object carries: ConfigMap data or the IEC's environmentVariables."""
    if obj["kind"] == "ConfigMap":
        return dict(obj["data"])
    return {e["name"]: e["value"] for e in obj["spec"]["worker"].get("environmentVariables", [])}


# -- snapshots: every built-in engine x target x LoRA --------------------------------------

RENDERABLE = [
    (engine, target, lora)
    for engine in ENGINES
    for target in TARGETS
    for lora in (False, True)
    if not lora or engine in LORA_ENGINES
]


@pytest.mark.parametrize(
    ("engine", "target", "lora"),
    RENDERABLE,
    ids=[f"{e}-{t}-{'lora' if lo else 'base'}" for e, t, lo in RENDERABLE],
)
def test_snapshot(yaml_snapshot: Any, engine: str, target: str, lora: bool) -> None:
    rendered = objects(make_spec(engine, target, lora=lora))
    assert to_yaml(rendered) == yaml_snapshot


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("engine", [e for e in ENGINES if e not in LORA_ENGINES])
def test_lora_on_an_engine_without_lora_fails(engine: str, target: str) -> None:
    with pytest.raises(MlccError) as caught:
        render(make_spec(engine, target, lora=True), context=CONTEXT)
    assert str(caught.value).startswith(
        f"/lora/enabled: engine {engine!r} declares no 'lora_enable' capability"
    )


def test_snapshot_set_matches_the_built_in_engines() -> None:
    assert sorted(m.engine for m in builtin_engines()) == sorted(ENGINES)


# -- ADR-010 invariants ---------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, ["VLLM_MODEL", "VLLM_TENSOR_PARALLEL_SIZE", "VLLM_SERVED_MODEL_NAME"]),
        (
            {"quantization": "awq"},
            [
                "VLLM_MODEL",
                "VLLM_TENSOR_PARALLEL_SIZE",
                "VLLM_QUANTIZATION",
                "VLLM_SERVED_MODEL_NAME",
            ],
        ),
        (
            {"lora": True},
            [
                "VLLM_MODEL",
                "VLLM_TENSOR_PARALLEL_SIZE",
                "VLLM_SERVED_MODEL_NAME",
                "VLLM_ENABLE_LORA",
            ],
        ),
    ],
)
def test_vllm_tier1_keys_are_exactly_the_pinned_set(
    target: str, extra: dict[str, Any], expected: list[str]
) -> None:
    spec = make_spec("vllm", target, env={"VLLM_MAX_NUM_SEQS": "64"}, **extra)
    rendered = render(spec, context=CONTEXT)
    # eks streams the s3:// model (model_load's default there): the load format is Tier 1 too;
    # with lora both targets load adapters at runtime: vLLM's runtime LoRA switch comes last.
    expected = [*expected, *(["VLLM_LOAD_FORMAT"] if target == "eks" else [])]
    expected += ["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] if "lora" in extra else []
    assert [k for k, _ in rendered.prepared.resolution.tier1] == expected
    obj = (
        rendered.objects[0]
        if target == "hyperpod-eks"
        else by_kind(list(rendered.objects), "ConfigMap")
    )
    env = engine_env(obj)
    assert list(env)[: len(expected)] == expected
    assert list(env)[len(expected)] == "VLLM_MAX_NUM_SEQS"  # Tier 2 after Tier 1
    if "lora" in extra:
        assert env["VLLM_ENABLE_LORA"] == "true"
        assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "true"
    assert env["VLLM_TENSOR_PARALLEL_SIZE"] == "4"


@pytest.mark.parametrize(("engine", "target", "lora"), RENDERABLE)
def test_no_object_carries_another_engines_prefix(engine: str, target: str, lora: bool) -> None:
    text = to_yaml(objects(make_spec(engine, target, lora=lora)))
    own = EngineRegistry.load(use_env=False).get(engine).env_var_prefix
    for other in builtin_engines():
        if other.engine != engine and not own.startswith(other.env_var_prefix):
            assert not re.search(rf"\b{other.env_var_prefix}[A-Z0-9_]+", text), other.engine


@pytest.mark.parametrize("target", TARGETS)
def test_sglang_lora_always_carries_its_companions(target: str) -> None:
    rendered = objects(make_spec("sglang", target, lora=True))
    obj = rendered[0] if target == "hyperpod-eks" else by_kind(rendered, "ConfigMap")
    env = engine_env(obj)
    assert env["SGLANG_ENABLE_LORA"] == "true"
    assert env["SGLANG_MAX_LORA_RANK"] == "16"
    assert env["SGLANG_LORA_TARGET_MODULES"] == "all"
    assert env["SGLANG_TP_SIZE"] == "4"


def test_renderer_never_branches_on_an_engine_name() -> None:
    source = (Path(__file__).parents[3] / "mlcc_constructs/core/serving/render.py").read_text()
    for engine in ENGINES:
        assert f'"{engine}"' not in source and f"'{engine}'" not in source


# -- config delivery ------------------------------------------------------------------------


def mlcc_argv(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert cli.main(["argv", *args]) == 0
    result: list[str] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("engine", "flags"),
    [
        ("vllm", ["--lora", "--set", "VLLM_MAX_NUM_SEQS=32"]),
        ("sglang", ["--lora", "--quantization", "fp8"]),
        ("tensorrt-llm", ["--set", "TRTLLM_MAX_BATCH_SIZE=8"]),
    ],
)
def test_args_delivery_argv_equals_mlcc_argv(
    capsys: pytest.CaptureFixture[str], engine: str, flags: list[str], target: str
) -> None:
    spec = make_spec(
        engine,
        target,
        config_delivery="args",
        lora="--lora" in flags,
        quantization="fp8" if "fp8" in flags else None,
        env=dict(f.split("=", 1) for f in flags if "=" in f),
    )
    rendered = objects(spec)
    if target == "eks":
        assert not [o for o in rendered if o["kind"] == "ConfigMap"]
        container = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        assert "envFrom" not in container
    else:
        container = rendered[0]["spec"]["worker"]
        assert not any(
            e["name"].startswith("MLCC_") for e in container.get("environmentVariables", [])
        )
    expected = mlcc_argv(
        capsys, "--engine", engine, "--model", MODEL, "--instance-type", "ml.g5.12xlarge",
        "--name", f"llama-{engine}", "--target", target, *flags,
    )  # fmt: skip
    assert container["command"] + container.get("args", []) == expected


def test_env_delivery_runs_the_wrapper_with_the_config_map() -> None:
    rendered = objects(make_spec("vllm"))
    container = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == ENGINE_CONTAINER
    assert container["command"] == ["python3", "/opt/mlcc/wrapper.py"]
    assert container["envFrom"] == [{"configMapRef": {"name": "llama-vllm-config"}}]
    assert {"name": "MLCC_ENGINE", "value": "vllm"} in container["env"]
    assert {"name": "mlcc-wrapper", "mountPath": "/opt/mlcc", "readOnly": True} in container[
        "volumeMounts"
    ]


def test_the_mounted_wrapper_runs_on_its_own_in_a_stock_image(tmp_path: Path) -> None:
    """What the pod runs, with nothing of this package importable: python3 -I -S (isolated,
    no site-packages) on the two files of the wrapper ConfigMap, with the pod's env."""
    import subprocess
    import sys

    rendered = objects(make_spec("vllm", lora=True, env={"VLLM_MAX_NUM_SEQS": "8"}))
    wrapper = next(o for o in rendered if o["metadata"]["name"] == "llama-vllm-wrapper")
    config = next(o for o in rendered if o["metadata"]["name"] == "llama-vllm-config")
    container = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    for name, text in wrapper["data"].items():
        (tmp_path / name).write_text(text)
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env["MLCC_ENGINE_MANIFEST"] = str(tmp_path / "manifest.json")
    assert env["USER"] == "mlcc"  # UID 1000 has no passwd entry in the images
    # every ConfigMap key but the engine's own variables (the runtime LoRA switch) is a flag
    own = EngineRegistry.load(use_env=False).get("vllm").engine_env
    assert config["data"]["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "true"
    assert env["MLCC_ENGINE_KEYS"].split(",") == [k for k in config["data"] if k not in own]
    # The stock vLLM image sets VLLM_USAGE_SOURCE itself; it must not become a flag.
    image_env = {"VLLM_USAGE_SOURCE": "production-docker-image", "VLLM_FROM_IMAGE": "x"}
    out = subprocess.run(
        [sys.executable, "-I", "-S", str(tmp_path / "wrapper.py"), "--print"],
        env={**image_env, **config["data"], **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == [
        "vllm", "serve", MODEL, "--enable-lora", "--load-format", "runai_streamer",
        "--max-num-seqs", "8", "--served-model-name", "llama-vllm", "--tensor-parallel-size",
        "4", "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_the_inlined_wrapper_runs_the_hyperpod_worker(engine: str) -> None:
    """An IEC worker has no volumes: its command carries the wrapper, its env the manifest."""
    import subprocess
    import sys

    spec = make_spec(engine, "hyperpod-eks", env={"NCCL_DEBUG": "WARN"})
    iec = objects(spec)[0]
    worker = iec["spec"]["worker"]
    assert worker["command"][:2] == ["python3", "-c"]
    env = {e["name"]: e["value"] for e in worker["environmentVariables"] if "value" in e}
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", worker["command"][2], "--print"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    args = ["--engine", engine, "--model", MODEL, "--instance-type", "ml.g5.12xlarge"]
    args += ["--name", f"llama-{engine}"]
    assert json.loads(out.stdout) == resolve_argv(args, target="hyperpod-eks")


def resolve_argv(args: list[str], *, target: str) -> list[str]:
    """What `mlcc argv` computes for the same inputs (the model is mounted on hyperpod-eks)."""
    from mlcc_constructs.core.serving.resolve.tiers import resolve

    options = dict(zip(args[::2], args[1::2], strict=True))
    spec = flat_spec(
        engine=options["--engine"],
        model=options["--model"],
        instance_type=options["--instance-type"],
        target=target,
        engine_version=None,  # the pinned image's release, as mlcc render
        # the rendered deployment serves under its name where the engine has the setting
        served_model_name=options.get("--name") if _serves_by_name(options["--engine"]) else None,
    )
    return resolve(spec).argv()


def _serves_by_name(engine: str) -> bool:
    manifest = next(m for m in builtin_engines() if m.engine == engine)
    return manifest.capability("served_model_name") is not None


def test_model_b_engine_keeps_the_image_entrypoint_and_refuses_args() -> None:
    rendered = objects(make_spec("lmi", env={"OPTION_ROLLING_BATCH": "vllm"}))
    container = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "command" not in container and "args" not in container
    assert by_kind(rendered, "ConfigMap")["data"] == {"OPTION_ROLLING_BATCH": "vllm"}
    with pytest.raises(
        MlccError, match="/engine/config_delivery: engine 'lmi' has entrypoint 'image'"
    ):
        render(make_spec("lmi", config_delivery="args"), context=CONTEXT)


# -- eks objects ----------------------------------------------------------------------------


def test_eks_objects_pass_kubernetes_validate_strict() -> None:
    for engine, target, lora in RENDERABLE:
        if target == "eks":
            for obj in objects(make_spec(engine, target, lora=lora)):
                assert core_object_problems(obj) == [], (engine, obj["kind"])


def test_s3_model_gets_a_static_mountpoint_volume() -> None:
    rendered = objects(make_spec("vllm", model_load="mount"))
    volume, claim = (
        by_kind(rendered, "PersistentVolume"),
        by_kind(rendered, "PersistentVolumeClaim"),
    )
    assert volume["metadata"]["name"] == "inference-llama-vllm-model"
    assert volume["spec"]["csi"]["driver"] == "s3.csi.aws.com"
    assert volume["spec"]["csi"]["volumeAttributes"] == {"bucketName": BUCKET}
    options = volume["spec"]["mountOptions"]
    assert "prefix models/meta-llama/Llama-3.1-8B-Instruct/" in options
    assert "region us-east-1" in options and "read-only" in options
    assert volume["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    pod = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]
    mount = pod["containers"][0]["volumeMounts"][-1]
    assert mount == {"name": "model-weights", "mountPath": "/opt/ml/model", "readOnly": True}


def test_hugging_face_model_has_no_volume_and_token_only_as_secret_ref() -> None:
    token = SecretRef(name="hf-token", key="token")
    spec = make_spec(
        "vllm", model="mistralai/Mistral-7B-Instruct-v0.3", secret_env={"HF_TOKEN": token}
    )
    rendered = objects(spec)
    assert not [o for o in rendered if o["kind"].startswith("PersistentVolume")]
    env = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
    } in env
    assert "HF_TOKEN" not in by_kind(rendered, "ConfigMap")["data"]
    full = RenderContext(account="123456789012", region="us-west-2", profile="dev")
    iec = objects(dataclasses.replace(spec, target="hyperpod-eks"), context=full)[0]
    source = iec["spec"]["modelSourceConfig"]
    assert source["huggingFaceModel"] == {
        "modelId": "mistralai/Mistral-7B-Instruct-v0.3",
        "tokenSecretRef": {"name": "hf-token", "key": "token"},
    }
    assert source["prefetchEnabled"] is True
    assert iec["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"].startswith(
        "s3://mlcc-tls-dev-123456789012-us-west-2/"
    )


def test_config_hash_follows_the_config_map_data() -> None:
    first = objects(make_spec("vllm"))
    second = objects(make_spec("vllm", env={"VLLM_MAX_NUM_SEQS": "8"}))
    hashes = []
    for rendered in (first, second):
        annotations = by_kind(rendered, "Deployment")["spec"]["template"]["metadata"]["annotations"]
        env_data = next(o for o in rendered if o["metadata"]["name"] == "llama-vllm-config")
        wrapper = next(o for o in rendered if o["metadata"]["name"] == "llama-vllm-wrapper")
        mounted = config_hash(wrapper["data"])  # the wrapper files, hashed as one entry
        assert annotations[CONFIG_HASH_ANNOTATION] == config_hash(
            {**env_data["data"], "/opt/mlcc": mounted}
        )
        hashes.append(annotations[CONFIG_HASH_ANNOTATION])
    assert hashes[0] != hashes[1]


def test_irsa_annotation_only_when_a_role_is_given() -> None:
    arn = "arn:aws:iam::123456789012:role/llama"
    with_role = by_kind(objects(make_spec("vllm", service_account_role_arn=arn)), "ServiceAccount")
    assert with_role["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": arn}
    assert "annotations" not in by_kind(objects(make_spec("vllm")), "ServiceAccount")["metadata"]


@pytest.mark.parametrize(
    ("instance", "gpus", "expected"),
    [
        ("ml.g5.12xlarge", 4, {"cpu": "43", "memory": "172Gi", "nvidia.com/gpu": "4"}),
        ("ml.g5.12xlarge", 2, {"cpu": "21", "memory": "86Gi", "nvidia.com/gpu": "2"}),
        ("ml.g5.xlarge", 1, {"cpu": "3", "memory": "13Gi", "nvidia.com/gpu": "1"}),
        ("ml.p5.48xlarge", 8, {"cpu": "172", "memory": "1843Gi", "nvidia.com/gpu": "8"}),
    ],
)
def test_pod_resources_leave_node_headroom(
    instance: str, gpus: int, expected: dict[str, str]
) -> None:
    assert pod_resources(lookup(instance), gpus) == expected


def test_user_tp_degree_sizes_the_pod() -> None:
    rendered = objects(make_spec("vllm", tensor_parallel_degree=2))
    resources = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0][
        "resources"
    ]
    assert resources["limits"]["nvidia.com/gpu"] == "2"


# -- hyperpod-eks ---------------------------------------------------------------------------


@pytest.mark.parametrize(("lora", "prefetch"), [(False, True), (True, False)])
def test_iec_prefetch_is_off_only_for_lora_with_s3(lora: bool, prefetch: bool) -> None:
    iec = objects(make_spec("vllm", "hyperpod-eks", lora=lora))[0]
    source = iec["spec"]["modelSourceConfig"]
    assert source["prefetchEnabled"] is prefetch
    assert source["modelLocation"] == "models/meta-llama/Llama-3.1-8B-Instruct"
    assert source["s3Storage"] == {"bucketName": BUCKET, "region": "us-east-1"}


def test_iec_tls_bucket_comes_from_the_bucket_descriptor() -> None:
    spec = replace_flat(
        make_spec("vllm", "hyperpod-eks"), model=MODEL.replace("-dev-", "-prod-")
    )  # the prod profile's own model bucket: another profile's is refused
    iec = objects(spec, context=RenderContext(profile="prod"))[0]
    uri = iec["spec"]["tlsConfig"]["tlsCertificateOutputS3Uri"]
    assert uri == "s3://mlcc-tls-prod-123456789012-us-east-1/inference/llama-vllm"


def test_infer_environment_from_a_descriptor_bucket() -> None:
    assert infer_environment(BUCKET) == {
        "account": "123456789012",
        "region": "us-east-1",
        "profile": "dev",
    }
    assert infer_environment("somebody-elses-bucket") == {}


# -- plugin-first invariant -----------------------------------------------------------------

PLUGIN = {
    "engine": "hyperserve",
    "env_var_prefix": "HYPER_",
    "entrypoint": "wrapper",
    "min_version": "2.0.0",
    "launch": {
        "command": ["hyperserve", "run"],
        "model": "positional",
        "flag_style": "snake",
        "port": 7000,
        "port_flag": "--listen_port",
        "health_path": "/ready",
        "metrics_path": "/stats",
    },
    "capability_map": {
        "model": {"suffix": "CHECKPOINT", "value_type": "valued"},
        "tensor_parallel_degree": {"suffix": "SHARDS", "value_type": "valued"},
        "lora_enable": {
            "suffix": "ADAPTERS_ON",
            "value_type": "boolean",
            "requires": ["lora_max_rank"],
        },
        "lora_max_rank": {"suffix": "ADAPTER_RANK", "value_type": "valued"},
    },
}


@pytest.mark.parametrize("target", TARGETS)
def test_custom_plugin_renders_with_zero_package_edits(tmp_path: Path, target: str) -> None:
    (tmp_path / "hyperserve").mkdir()
    (tmp_path / "hyperserve" / "manifest.json").write_text(json.dumps(PLUGIN))
    registry = EngineRegistry.load([tmp_path], use_env=False)
    spec = make_spec(
        "hyperserve",
        target,
        lora=True,
        image="example.com/hyperserve:2.1",
        env={"HYPER_QUEUE": "9"},
    )
    rendered = objects(spec, registry=registry)
    obj = rendered[0] if target == "hyperpod-eks" else by_kind(rendered, "ConfigMap")
    assert list(engine_env(obj).items())[:5] == [
        ("HYPER_CHECKPOINT", "/opt/ml/model"),
        ("HYPER_SHARDS", "4"),
        ("HYPER_ADAPTERS_ON", "true"),
        ("HYPER_ADAPTER_RANK", "16"),
        ("HYPER_QUEUE", "9"),
    ]
    if target == "hyperpod-eks":
        assert obj["spec"]["loadBalancer"] == {"healthCheckPath": "/ready"}
        assert obj["spec"]["metrics"]["modelMetrics"] == {"port": 7000, "path": "/stats"}
    else:
        container = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        assert container["startupProbe"]["httpGet"]["path"] == "/ready"
        assert container["ports"][0]["containerPort"] == 7000


def test_plugin_without_an_image_needs_one(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps(PLUGIN))
    (tmp_path / "hyperserve").mkdir()
    (tmp_path / "hyperserve" / "manifest.json").write_text(json.dumps(PLUGIN))
    registry = EngineRegistry.load([tmp_path / "hyperserve"], use_env=False)
    with pytest.raises(MlccError) as caught:
        render(make_spec("hyperserve"), context=CONTEXT, registry=registry)
    assert str(caught.value) == (
        "/engine/image: engine 'hyperserve' has no pinned default image "
        "(fix: pass --image (DeploymentSpec.image) with the engine's container image)"
    )


# -- bad input: exact errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "context", "message"),
    [
        (
            {"name": None},
            CONTEXT,
            "/name: a name is required to render Kubernetes objects (allowed: lower-case letters, "
            "digits and '-', starting with a letter, at most 63; fix: pass --name, e.g. --name "
            "my-model)",
        ),
        (
            {"name": "Llama_VLLM"},
            CONTEXT,
            "/name: not a valid Kubernetes name (RFC 1035 label) (got 'Llama_VLLM'; allowed: "
            "lower-case letters, digits and '-', starting with a letter, at most 63; fix: use "
            "e.g. 'llama-vllm')",
        ),
        (
            {"namespace": "Prod"},
            CONTEXT,
            "/namespace: not a valid namespace name (DNS-1123 label) (got 'Prod'; allowed: "
            "lower-case letters, digits and '-', at most 63; fix: use e.g. 'inference')",
        ),
        (
            {"target": "realtime-inference"},
            CONTEXT,
            "/target: not a Kubernetes target (got 'realtime-inference'; allowed: eks, "
            "hyperpod-eks; fix: use eks or hyperpod-eks (realtime-inference is rendered by the "
            "CDK app))",
        ),
        (
            {"model": "s3://my-bucket/models/x/"},
            CONTEXT,
            "/region: the region of the model bucket is unknown (got None; fix: pass --region "
            "(DeploymentSpec.region); Mountpoint and the HyperPod operator need it)",
        ),
        (
            # Every descriptor bucket names its profile: only a bucket of one's own leaves
            # the profile unknown.
            {"target": "hyperpod-eks", "model": "s3://my-bucket/models/x/", "region": "us-east-1"},
            RenderContext(account="123456789012"),
            "/profile: the IEC's TLS bucket (stacks/buckets.json 'tls') needs profile (fix: pass "
            "--profile (or set them in cdk.json context / RenderContext))",
        ),
    ],
)
def test_bad_input_errors(overrides: dict[str, Any], context: RenderContext, message: str) -> None:
    with pytest.raises(MlccError) as caught:
        render(make_spec("vllm", **overrides), context=context)
    assert str(caught.value) == message


def test_long_names_are_refused() -> None:
    assert name_problems("a" * 63) == []
    assert name_problems("a" * 64)[0].message == "not a valid Kubernetes name (RFC 1035 label)"


def test_yaml_is_byte_stable() -> None:
    first = to_yaml(objects(make_spec("sglang", lora=True)))
    assert first == to_yaml(objects(make_spec("sglang", lora=True)))
    assert yaml.safe_load_all(first)


def test_validation_uses_a_bundled_kubernetes_1_29_plus_schema() -> None:
    import kubernetes_validate

    from mlcc_constructs.core.serving.kinds._schemas import kubernetes_version

    major, minor = (int(p) for p in kubernetes_version().split("."))
    assert (major, minor) >= (1, 29)
    for obj in objects(make_spec("vllm", lora=True)):
        # our cached validator and the library's own entry point agree (strict, offline)
        kubernetes_validate.validate(obj, kubernetes_version(), strict=True)
    bad = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"portz": []}}
    assert [str(p) for p in core_object_problems(bad)] == [
        "Service/x:/spec: Additional properties are not allowed ('portz' was unexpected) "
        f"(Kubernetes {kubernetes_version()} strict schema) "
        "(fix: fix the field, or remove a JSON patch that set it)"
    ]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
def test_yaml_round_trips_exactly(engine: str) -> None:
    """Block-literal strings (wrapper script, manifest JSON) load back byte for byte."""
    rendered = objects(make_spec(engine, lora=engine != "tensorrt-llm"))
    assert list(yaml.safe_load_all(to_yaml(rendered))) == rendered


def test_llama_cpp_needs_an_explicit_image() -> None:
    with pytest.raises(MlccError) as caught:
        objects(make_spec("llama-cpp", image=None))
    assert str(caught.value) == (
        "/engine/image: engine 'llama-cpp' has no pinned default image (fix: pass --image "
        "(DeploymentSpec.image) with the engine's container image)"
    )
