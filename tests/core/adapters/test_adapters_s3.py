"""Adapter versions, promotion, delivery and removal against a real S3 API on loopback
(moto's ThreadedMotoServer, started here; boto3 with dummy credentials)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import urllib.request
from typing import Any

import pytest

from mlcc_constructs.core.adapters import path_names, s3_layout as L
from mlcc_constructs.core.adapters.deployment import Deployment, LiveState, live_rank_limit
from mlcc_constructs.core.adapters.record import hash_bytes
from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.platform.buckets import bucket_names
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.delivery import apply_delivery, plan_delivery, remove_serving_copies
from mlcc_constructs.ops.promotion import (
    Promotion,
    promote,
    read_adapter_record,
    recorded_adapters,
)

BUCKETS = bucket_names(account="123456789012", region="us-east-1", profile="test")
CORE, ARTIFACTS = BUCKETS["core"], BUCKETS["artifacts"]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
CANONICAL_MODEL = L.base_model_location(CORE, L.base_model(LLAMA))
CONFIG = {
    "peft_type": "LORA",
    "r": 16,
    "lora_alpha": 32,
    "rank_pattern": {"q_proj": 32},
    "target_modules": ["v_proj", "q_proj"],
    "base_model_name_or_path": LLAMA,
}
FILES = {
    "adapter_config.json": json.dumps(CONFIG).encode(),
    "adapter_model.safetensors": b"weights-one",
    "tokenizer/tokenizer.json": b"{}",
}


@pytest.fixture(scope="module")
def endpoint(moto_s3: str) -> str:
    return moto_s3


@pytest.fixture
def s3(endpoint: str) -> Any:
    import boto3

    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    for bucket in (CORE, ARTIFACTS):
        client.create_bucket(Bucket=bucket)
    return client


def _upload(s3: Any, prefix: L.S3Location, files: dict[str, bytes]) -> str:
    for name, body in files.items():
        s3.put_object(Bucket=prefix.bucket, Key=prefix.key + name, Body=body)
    return prefix.uri


def _raw(s3: Any, job: str, files: dict[str, bytes] = FILES) -> str:
    return _upload(s3, L.job_output(ARTIFACTS, "acme", "tune", job, "checkpoints", "hf"), files)


def _objects(s3: Any, prefix: L.S3Location) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=prefix.bucket, Prefix=prefix.key).get("Contents", [])
    return {
        prefix.relative(o["Key"]): s3.get_object(Bucket=prefix.bucket, Key=o["Key"])["Body"].read()
        for o in listed
    }


def _promote(s3: Any, source: str, **kwargs: Any) -> Promotion:
    return promote(
        s3,
        source_uri=source,
        core_bucket=CORE,
        project="acme",
        name="bot",
        created_by="tester",
        now=lambda: "2026-01-01T00:00:00Z",
        **kwargs,
    )


def _deployment(model: str, **kwargs: Any) -> Deployment:
    return Deployment(
        target=kwargs.pop("target", "hyperpod-eks"),
        model=model,
        project="acme",
        rank_env_key="VLLM_MAX_LORA_RANK",
        default_rank=16,
        adapter_api={"load": "/v1/load_lora_adapter", "unload": "/v1/unload_lora_adapter"},
        **kwargs,
    )


# --- the deployment ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "key", "default", "limit_from"),
    [
        # the manifest's default
        ("vllm", "VLLM_MAX_LORA_RANK", 16, "engine default"),
        # no manifest default: the library's companion default, as the resolver emits it
        ("sglang", "SGLANG_MAX_LORA_RANK", 16, "engine default"),
        # no max LoRA rank at all: no library default either
        ("tensorrt-llm", None, None, "none (the engine has no max LoRA rank)"),
    ],
)
def test_default_rank_is_the_companion_default_the_resolver_emits(
    engine: str, key: str | None, default: int | None, limit_from: str
) -> None:
    manifest = {m.engine: m for m in builtin_engines()}[engine]
    deployment = Deployment.for_engine(
        manifest, target="eks", model=CANONICAL_MODEL.uri, project="acme"
    )
    assert (deployment.rank_env_key, deployment.default_rank) == (key, default)
    assert live_rank_limit(deployment, LiveState()) == (default, limit_from)


# --- content hash -----------------------------------------------------------------------


def test_content_hash_is_order_independent_and_covers_names_and_bytes() -> None:
    forward = hash_bytes(FILES)
    assert forward == hash_bytes(dict(reversed(list(FILES.items()))))
    assert forward != hash_bytes({**FILES, "adapter_model.safetensors": b"weights-two"})
    renamed = {("x" + k if k.startswith("tok") else k): v for k, v in FILES.items()}
    assert forward != hash_bytes(renamed)
    # the record is metadata, never content
    assert forward == hash_bytes({**FILES, "mlcc-adapter.json": b"{}"})


# --- promotion --------------------------------------------------------------------------


def test_promote_twice_is_one_version(s3: Any) -> None:
    source = _raw(s3, "job-1")
    first = _promote(s3, source, technique="sft", source_job="job-1")
    assert first.status == "created"
    assert first.copied == (
        "adapter_config.json",
        "adapter_model.safetensors",
        "tokenizer/tokenizer.json",
    )
    version = path_names.version_id(hash_bytes(FILES))
    assert first.adapter.version == version
    home = L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "bot")
    assert first.adapter.location == L.adapter_version(home, version)

    second = _promote(s3, source)
    assert (second.status, second.copied) == ("unchanged", ())
    assert second.record == first.record  # the stored record, not rewritten

    stored = _objects(s3, home)
    assert sorted(stored) == [
        f"{version}/adapter_config.json",
        f"{version}/adapter_model.safetensors",
        f"{version}/mlcc-adapter.json",
        f"{version}/tokenizer/tokenizer.json",
    ]
    record = json.loads(stored[f"{version}/mlcc-adapter.json"])
    assert record == {
        "format": "mlcc-adapter/1",
        "project": "acme",
        "name": "bot",
        "version": version,
        "content_hash": hash_bytes(FILES),
        "source": {"uri": source, "job": "job-1"},
        "technique": "sft",
        "rank": {"r": 16, "rank_pattern": {"q_proj": 32}},
        "target_modules": ["q_proj", "v_proj"],
        "base_model": {"id": LLAMA, "revision": None},
        "created_by": "tester",
        "created_at": "2026-01-01T00:00:00Z",
        "files": {  # each file's size (as S3 lists it) and sha256
            name: {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
            for name, body in sorted(FILES.items())
        },
    }
    assert read_adapter_record(s3, first.adapter.location) == first.record


def test_changed_bytes_make_a_new_version_and_keep_the_old(s3: Any) -> None:
    old = _promote(s3, _raw(s3, "job-1"))
    before = _objects(s3, old.adapter.location)
    changed = {**FILES, "adapter_model.safetensors": b"weights-two"}
    new = _promote(s3, _raw(s3, "job-2", changed))
    assert new.status == "created"
    assert new.adapter.version != old.adapter.version
    assert new.adapter.home == old.adapter.home
    assert _objects(s3, old.adapter.location) == before
    assert _objects(s3, new.adapter.location)["adapter_model.safetensors"] == b"weights-two"


def test_tar_gz_source_is_the_same_version_as_its_files(s3: Any) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, body in reversed(list(FILES.items())):
            info = tarfile.TarInfo(f"adapter/{name}")
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    key = L.job_output(ARTIFACTS, "acme", "train", "job-3").key + "model.tar.gz"
    s3.put_object(Bucket=ARTIFACTS, Key=key, Body=buffer.getvalue())
    from_tar = _promote(s3, f"s3://{ARTIFACTS}/{key}")
    assert from_tar.status == "created"
    assert from_tar.adapter.version == path_names.version_id(hash_bytes(FILES))
    assert _objects(s3, from_tar.adapter.location)["adapter_model.safetensors"] == b"weights-one"
    assert _promote(s3, _raw(s3, "job-1")).status == "unchanged"


def test_canonical_source_is_used_as_is(s3: Any) -> None:
    promoted = _promote(s3, _raw(s3, "job-1"))
    again = _promote(s3, promoted.adapter.location.uri)
    assert (again.status, again.adapter, again.record) == (
        "canonical",
        promoted.adapter,
        promoted.record,
    )


def test_interrupted_version_is_completed_never_overwritten(s3: Any) -> None:
    source = _raw(s3, "job-1")
    version = L.adapter_version(
        L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "bot"),
        path_names.version_id(hash_bytes(FILES)),
    )
    _upload(s3, version, {"adapter_config.json": FILES["adapter_config.json"]})
    resumed = _promote(s3, source)
    assert resumed.copied == ("adapter_model.safetensors", "tokenizer/tokenizer.json")
    s3.delete_object(Bucket=CORE, Key=L.record_location(version).key)
    s3.put_object(Bucket=CORE, Key=version.key + "adapter_model.safetensors", Body=b"other")
    with pytest.raises(MlccError, match="an incomplete version holds this file with other bytes"):
        _promote(s3, source)


@pytest.mark.parametrize(
    ("files", "kwargs", "message"),
    [
        (
            {"adapter_model.safetensors": b"w"},
            {},
            "no adapter_config.json at the top of the source",
        ),
        (
            {"adapter_config.json": FILES["adapter_config.json"]},
            {},
            "no adapter weights at the top of the source",
        ),
        (
            {
                **FILES,
                "adapter_config.json": json.dumps(
                    {**CONFIG, "base_model_name_or_path": "/opt/ml/model"}
                ).encode(),
            },
            {},
            "adapter_config.json:/base_model_name_or_path: not a Hugging Face model id, "
            "and not a mapped model hub id",
        ),
        (
            FILES,
            {"base_model": "meta-textgeneration-unknown"},
            "/base_model: not a Hugging Face model id",
        ),
    ],
)
def test_promotion_refusals(s3: Any, files, kwargs, message: str) -> None:
    with pytest.raises(MlccError) as error:
        _promote(s3, _raw(s3, "bad", files), **kwargs)
    assert message in str(error.value)
    assert _objects(s3, L.base_model_location(CORE, L.base_model(LLAMA))) == {}


def test_hub_id_in_peft_config_maps_to_its_hf_home(s3: Any) -> None:
    config = {**CONFIG, "base_model_name_or_path": "meta-textgeneration-llama-3-1-8b-instruct"}
    promoted = _promote(
        s3, _raw(s3, "job-4", {**FILES, "adapter_config.json": json.dumps(config).encode()})
    )
    assert promoted.adapter.model == CANONICAL_MODEL
    assert promoted.record.base_model == LLAMA


# --- delivery plan ----------------------------------------------------------------------


def test_dry_run_plan_before_the_version_is_known(s3: Any) -> None:
    source = _raw(s3, "job-1")
    plan = plan_delivery(
        s3,
        operation="add",
        deployment=_deployment(CANONICAL_MODEL.uri),
        live=LiveState(pod_env={"VLLM_MAX_LORA_RANK": "32"}),
        name="bot",
        source=source,
        core_bucket=CORE,
    )
    home = L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "bot").uri
    assert plan.to_json() == {
        "operation": "add",
        "project": "acme",
        "lora_name": "bot",
        "source": source,
        "source_kind": "s3-prefix",
        "steps": ["promote", "load"],
        "base_model": LLAMA,
        "rank": {"need": 32, "limit": 32, "limit_from": "pod env VLLM_MAX_LORA_RANK"},
        "canonical": "",
        "canonical_home": home,
        "serving": home,
        "version": "",
        "path": "",
        "path_home": "/opt/ml/model/.mlcc-adapters/acme/bot",
        "warnings": [],
    }
    assert _objects(s3, CANONICAL_MODEL) == {}  # a plan writes nothing


def test_load_in_place_under_this_deployments_prefix(s3: Any) -> None:
    promoted = _promote(s3, _raw(s3, "job-1"))
    live = LiveState(pod_env={"VLLM_MAX_LORA_RANK": "64"})
    plan = plan_delivery(
        s3,
        operation="update",
        deployment=_deployment(CANONICAL_MODEL.uri),
        live=live,
        name="bot",
        source=promoted.adapter.location.uri,
        core_bucket=CORE,
    )
    assert plan.steps == ("unload", "load")
    assert plan.path == f"/opt/ml/model/.mlcc-adapters/acme/bot/{promoted.adapter.version}"
    assert (plan.rank_need, plan.rank_limit, plan.rank_limit_from) == (
        32,
        64,
        "pod env VLLM_MAX_LORA_RANK",
    )
    applied = apply_delivery(s3, plan, _deployment(CANONICAL_MODEL.uri))
    assert applied.path == plan.path
    assert applied.serving == promoted.adapter.location.uri


def test_unversioned_home_loads_by_path(s3: Any) -> None:
    home = L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "bot")
    _upload(s3, home, FILES)  # a pre-versioning hand copy: no record
    plan = plan_delivery(
        s3,
        operation="add",
        deployment=_deployment(CANONICAL_MODEL.uri),
        live=LiveState(
            iec={
                "spec": {
                    "worker": {
                        "environmentVariables": [{"name": "VLLM_MAX_LORA_RANK", "value": "32"}]
                    }
                }
            }
        ),
        name="bot",
        source=home.uri,
        core_bucket=CORE,
    )
    assert (plan.source_kind, plan.steps) == ("canonical-home", ("load",))
    assert plan.path == "/opt/ml/model/.mlcc-adapters/acme/bot"
    assert plan.rank_limit_from == "IEC env VLLM_MAX_LORA_RANK"


def test_cross_prefix_copy_carries_serving_copy_of(s3: Any) -> None:
    promoted = _promote(s3, _raw(s3, "job-1"))
    restaged = L.model_location(CORE, "staged/llama-3-1-8b/")
    deployment = _deployment(restaged.uri, base_model=LLAMA)
    plan = plan_delivery(
        s3,
        operation="add",
        deployment=deployment,
        live=LiveState(pod_env={"VLLM_MAX_LORA_RANK": "32"}),
        name="bot",
        source=promoted.adapter.location.uri,
        core_bucket=CORE,
    )
    version = promoted.adapter.version
    copy_home = L.adapter_home(restaged, "acme", "bot")
    assert plan.steps == ("copy", "load")
    assert plan.serving == L.adapter_version(copy_home, version).uri
    assert plan.path == f"/opt/ml/model/.mlcc-adapters/acme/bot/{version}"
    applied = apply_delivery(s3, plan, deployment, created_by="tester", now=lambda: "T")
    assert applied.path == plan.path
    copied = _objects(s3, L.adapter_version(copy_home, version))
    original = _objects(s3, promoted.adapter.location)
    assert {k: v for k, v in copied.items() if k != "mlcc-adapter.json"} == {
        k: v for k, v in original.items() if k != "mlcc-adapter.json"
    }
    record = json.loads(copied["mlcc-adapter.json"])
    assert record["serving_copy_of"] == promoted.adapter.location.uri
    assert record["version"] == version
    assert record["content_hash"] == promoted.record.content_hash
    # delivering again copies nothing
    again = apply_delivery(s3, plan, deployment, created_by="someone-else", now=lambda: "T2")
    assert (
        json.loads(_objects(s3, L.adapter_version(copy_home, version))["mlcc-adapter.json"])
        == record
    )
    assert again.path == plan.path


@pytest.mark.parametrize(
    ("deployment_kwargs", "message"),
    [
        (
            {"base_model": "mistralai/Mistral-7B-Instruct-v0.3"},
            "/base_model: adapter bot was trained on another base and is incompatible with this "
            "deployment (got 'meta-llama/Llama-3.1-8B-Instruct@?'; allowed: "
            "mistralai/Mistral-7B-Instruct-v0.3@?; fix: deliver it to a deployment of its own "
            "base)",
        ),
        (
            {"base_model": LLAMA, "base_revision": "main-2"},
            None,  # revision unknown on the adapter side: not compared
        ),
    ],
)
def test_base_mismatch_is_refused(s3: Any, deployment_kwargs, message) -> None:
    promoted = _promote(s3, _raw(s3, "job-1"))
    restaged = L.model_location(CORE, "staged/other/")
    kwargs = {
        "operation": "add",
        "deployment": _deployment(restaged.uri, **deployment_kwargs),
        "live": LiveState(pod_env={"VLLM_MAX_LORA_RANK": "32"}),
        "name": "bot",
        "source": promoted.adapter.location.uri,
        "core_bucket": CORE,
    }
    if message is None:
        assert plan_delivery(s3, **kwargs).steps == ("copy", "load")
        return
    with pytest.raises(MlccError) as error:
        plan_delivery(s3, **kwargs)
    assert str(error.value) == message
    assert _objects(s3, restaged) == {}


def test_revision_mismatch_is_refused_when_both_known(s3: Any) -> None:
    promoted = _promote(s3, _raw(s3, "job-1"), base_revision="rev-a")
    with pytest.raises(MlccError, match="trained on another base"):
        plan_delivery(
            s3,
            operation="add",
            deployment=_deployment(
                L.model_location(CORE, "staged/x/").uri, base_model=LLAMA, base_revision="rev-b"
            ),
            live=LiveState(pod_env={"VLLM_MAX_LORA_RANK": "32"}),
            name="bot",
            source=promoted.adapter.location.uri,
            core_bucket=CORE,
        )


def test_refusals_come_first_and_all_at_once(s3: Any) -> None:
    live = LiveState(
        iec={
            "spec": {
                "modelSourceConfig": {"modelSourceType": "huggingface", "prefetchEnabled": True}
            }
        }
    )
    with pytest.raises(MlccError) as error:
        plan_delivery(
            s3,
            operation="add",
            deployment=_deployment(LLAMA),
            live=live,
            name="bot",
            source="s3://does-not-matter/x/",
            core_bucket=CORE,
        )
    assert [p.pointer for p in error.value.problems] == [
        "/model",
        "/spec/modelSourceConfig/modelSourceType",
        "/spec/modelSourceConfig/prefetchEnabled",
    ]
    assert str(error.value.problems[0]) == (
        "/model: adapters are delivered through the model's S3 mount, and this deployment's "
        "model is not on S3 (got 'meta-llama/Llama-3.1-8B-Instruct'; fix: stage the model to "
        "S3 and redeploy with model=s3://<core>/models/<org>/<base>/)"
    )


@pytest.mark.parametrize(
    ("deployment", "live", "message"),
    [
        (
            _deployment("arn:aws:sagemaker:us-east-1:123456789012:model-package/llama/1"),
            LiveState(),
            "/model: adapters are delivered through the model's S3 mount",
        ),
        (
            _deployment(CANONICAL_MODEL.uri, target="eks"),
            LiveState(s3_mount=False),
            "/volumes: the serving pods do not mount the model through the S3 CSI driver",
        ),
        (
            _deployment(CANONICAL_MODEL.uri, target="realtime-inference"),
            LiveState(),
            "/target: target realtime-inference does not load adapters into pods",
        ),
    ],
)
def test_more_refusals(s3: Any, deployment, live, message: str) -> None:
    with pytest.raises(MlccError) as error:
        plan_delivery(
            s3,
            operation="add",
            deployment=deployment,
            live=live,
            name="bot",
            source=_raw(s3, "job-1"),
            core_bucket=CORE,
        )
    assert str(error.value).startswith(message)


def test_the_mount_is_checked_only_where_the_pods_mount_the_model(s3: Any) -> None:
    # hyperpod-eks: the operator mounts the model (pod_volumes false), whatever the pods list
    plan = plan_delivery(
        s3,
        operation="add",
        deployment=_deployment(CANONICAL_MODEL.uri),
        live=LiveState(pod_env={"VLLM_MAX_LORA_RANK": "32"}, s3_mount=False),
        name="bot",
        source=_raw(s3, "job-1"),
        core_bucket=CORE,
    )
    assert plan.steps == ("promote", "load")


def test_rank_above_the_live_limit_is_refused_before_promotion(s3: Any) -> None:
    source = _raw(s3, "job-1")
    with pytest.raises(MlccError) as error:
        plan_delivery(
            s3,
            operation="add",
            deployment=_deployment(CANONICAL_MODEL.uri),
            live=LiveState(),
            name="bot",
            source=source,
            core_bucket=CORE,
        )
    assert str(error.value) == (
        "/rank: adapter bot needs LoRA rank 32, above the live limit 16 (engine default) "
        "(got 32; fix: raise VLLM_MAX_LORA_RANK to at least 32 and redeploy, then add the "
        "adapter again)"
    )
    assert _objects(s3, CANONICAL_MODEL) == {}


# --- removal ----------------------------------------------------------------------------


def test_remove_deletes_only_serving_copies(s3: Any) -> None:
    promoted = _promote(s3, _raw(s3, "job-1"))
    restaged = L.model_location(CORE, "staged/llama-3-1-8b/")
    deployment = _deployment(restaged.uri, base_model=LLAMA)
    plan = plan_delivery(
        s3,
        operation="add",
        deployment=deployment,
        live=LiveState(pod_env={"VLLM_MAX_LORA_RANK": "32"}),
        name="bot",
        source=promoted.adapter.location.uri,
        core_bucket=CORE,
    )
    apply_delivery(s3, plan, deployment)
    # a canonical adapter that lives under the serving prefix too (hand copy, no record)
    own = L.adapter_version(L.adapter_home(restaged, "acme", "bot"), "v000000000000")
    _upload(s3, own, FILES)
    canonical_before = _objects(s3, promoted.adapter.home)

    assert remove_serving_copies(s3, deployment, "bot", dry_run=True) == [plan.serving]
    assert remove_serving_copies(s3, deployment, "bot") == [plan.serving]
    assert _objects(s3, L.parse_s3_uri(plan.serving)) == {}
    assert sorted(_objects(s3, own)) == sorted(FILES)
    assert _objects(s3, promoted.adapter.home) == canonical_before
    assert remove_serving_copies(s3, deployment, "bot") == []


def test_recorded_adapters_feed_the_rank_fit(s3: Any) -> None:
    from mlcc_constructs.core.adapters.lora_rank import fit_max_rank

    _promote(s3, _raw(s3, "job-1"))
    big = {**FILES, "adapter_config.json": json.dumps({**CONFIG, "r": 48}).encode()}
    promote(
        s3,
        source_uri=_raw(s3, "job-2", big),
        core_bucket=CORE,
        project="other",
        name="wide",
        created_by="t",
    )
    _upload(s3, L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "old"), FILES)
    records = recorded_adapters(s3, CANONICAL_MODEL)
    assert [(r.project, r.name, r.rank().need) for r in records] == [
        ("acme", "bot", 32),
        ("other", "wide", 48),
    ]
    assert [r.name for r in recorded_adapters(s3, CANONICAL_MODEL, project="acme")] == ["bot"]
    fit = fit_max_rank([r.rank() for r in records], {}, 16, (1, 8, 16, 32, 64, 128, 256, 320, 512))
    assert fit.rank == 64


def test_error_locations_are_uris_and_json_pointers(s3: Any) -> None:
    source = _raw(s3, "bad-name", {**FILES, "notes/read me.txt": b"x"})
    with pytest.raises(MlccError) as error:
        _promote(s3, source)
    (problem,) = error.value.problems
    assert (problem.where, problem.pointer, problem.value) == (
        f"{source}notes/read me.txt",
        "",
        "notes/read me.txt",
    )
    bad_r = {**FILES, "adapter_config.json": json.dumps({**CONFIG, "r": 0}).encode()}
    source = _raw(s3, "bad-r", bad_r)
    with pytest.raises(MlccError) as error:
        _promote(s3, source)
    (problem,) = error.value.problems
    assert (problem.where, problem.pointer) == (f"{source}adapter_config.json", "/r")
