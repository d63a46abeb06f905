"""The pure rules behind list, clean, Hugging Face sources and full fine-tunes (no I/O)."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.adapters import s3_layout as L
from mlcc_constructs.core.adapters.clean import plan_clean, purge_order
from mlcc_constructs.core.adapters.hf_source import HfSource, adapter_file_names, parse_hf_source
from mlcc_constructs.core.adapters.inventory import group_adapter_keys, loaded_adapters
from mlcc_constructs.core.adapters.model_record import model_base, model_files_problems
from mlcc_constructs.core.adapters.record import content_hash
from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.support.errors import MlccError

CORE = "mlcc-models-123456789012-us-east-1"
MODEL = L.base_model_location(CORE, L.base_model("meta-llama/Llama-3.1-8B-Instruct"))
V1, V2 = "v0123456789ab", "vba9876543210"


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("hf://org/bot", HfSource(repo_id="org/bot")),
        ("hf://Org-1/bot.v2_x@main", HfSource(repo_id="Org-1/bot.v2_x", revision="main")),
        ("hf://org/bot@refs/pr/1", HfSource(repo_id="org/bot", revision="refs/pr/1")),
    ],
)
def test_hf_sources(text: str, source: HfSource) -> None:
    assert parse_hf_source(text) == source
    assert source.uri == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hf://org", "not a Hugging Face repository"),
        ("hf://org/bot/extra", "not a Hugging Face repository"),
        ("hf://org/-bot", "not a Hugging Face repository"),
        ("hf://org/b..ot", "not a Hugging Face repository"),
        ("hf://org/b--ot", "not a Hugging Face repository"),
        ("hf://org/bot@", "not a Hugging Face revision"),
        ("hf://org/bot@a b", "not a Hugging Face revision"),
        ("hf://org/bot@../x", "not a Hugging Face revision"),
        ("hf://org/bot@x@y", "not a Hugging Face repository"),
    ],
)
def test_bad_hf_sources(text: str, message: str) -> None:
    with pytest.raises(MlccError) as error:
        parse_hf_source(text)
    assert str(error.value).startswith(f"/source: {message} (got {text!r}")


def test_a_pinned_source_names_a_commit() -> None:
    assert HfSource(repo_id="o/r").at("a" * 40).uri == "hf://o/r@" + "a" * 40
    with pytest.raises(MlccError, match="the Hub answered with no commit id"):
        HfSource(repo_id="o/r").at("")


def test_the_adapter_files_of_a_repository_are_its_loose_top_level_files() -> None:
    names = [".gitattributes", "README.md", "adapter_config.json", "ckpt-1/a.bin", ".gitignore"]
    assert adapter_file_names(names) == ["README.md", "adapter_config.json"]


def test_pod_paths_parse_back() -> None:
    delivery = load_target("eks").adapter_delivery
    path = L.pod_adapter_path(delivery, "acme", "bot", V1)
    assert L.parse_pod_adapter_path(delivery, path) == ("acme", "bot", V1)
    assert L.parse_pod_adapter_path(delivery, path.rsplit("/", 1)[0]) == ("acme", "bot", None)
    for other in ("/opt/ml/model", f"{path}/x", "/elsewhere/.x/acme/bot", None, f"{path[:-1]}Z"):
        assert L.parse_pod_adapter_path(delivery, other) is None
    realtime = load_target("realtime-inference").adapter_delivery
    assert L.parse_pod_adapter_path(realtime, path) is None
    entries = [{"id": "base", "root": "/opt/ml/model"}, {"id": "bot", "root": path}]
    [loaded] = loaded_adapters(delivery, "http://pod", entries)
    assert (loaded.lora_name, loaded.project, loaded.version) == ("bot", "acme", V1)


def test_full_finetune_prefixes() -> None:
    home = L.full_finetune(CORE, "acme", "full-sft")
    assert L.parse_full_finetune(home) == ("acme", "full-sft")
    assert L.parse_full_finetune(MODEL) is None
    assert L.model_record_location(home).uri == home.uri + L.MODEL_RECORD
    assert L.project_full_finetunes(CORE, "acme").key == "models/mlcc-acme/"
    assert L.base_locations(CORE, {"mlcc-acme": ["full-sft"], "org": ["b", "a"]}) == [
        L.base_model_location(CORE, L.BaseModel(org="org", base="a")),
        L.base_model_location(CORE, L.BaseModel(org="org", base="b")),
    ]
    root = L.models_root(CORE)
    assert L.child_name(root, "models/org/") == "org"
    assert [L.child_name(root, k) for k in ("models/a/b/", "other/x/", "models/ x/")] == [None] * 3


def test_keys_are_grouped_by_version_home_and_stray() -> None:
    root = L.adapters_root(MODEL)
    keys = {
        f"{root.key}acme/bot/{V1}/adapter_config.json": 1,
        f"{root.key}acme/bot/{V1}/{L.ADAPTER_RECORD}": 2,
        f"{root.key}acme/bot/{V2}/sub/file": 3,
        f"{root.key}acme/bot/adapter_config.json": 4,  # an unversioned home
        f"{root.key}acme/bot/notes/x": 5,  # the home's own folder
        f"{root.key}acme/readme": 6,  # in no adapter
        f"{root.key}acme/bot/{V1}.tar.gz": 7,  # V1's packed archive: goes with V1
        f"{root.key}acme/bot/vnotaversion.tar.gz": 8,  # not a version's: the home's
    }
    listing = group_adapter_keys(root, MODEL, keys)
    assert [(a.adapter.name, a.adapter.version, a.bytes) for a in listing.adapters] == [
        ("bot", None, 17),
        ("bot", V1, 10),
        ("bot", V2, 3),
    ]
    assert [a.packed for a in listing.adapters] == [
        None,
        L.S3Location(bucket=CORE, key=f"{root.key}acme/bot/{V1}.tar.gz"),
        None,
    ]
    assert listing.stray == {f"{root.key}acme/readme": 6}
    plan = plan_clean(
        bucket=CORE,
        project="acme",
        adapters=[(L.project_adapters(MODEL, "acme"), listing)],
        finetunes=(L.project_full_finetunes(CORE, "acme"), {}),
    )
    assert [u.kind for u in plan.units] == [
        "adapter-home",
        "adapter-version",
        "adapter-version",
        "stray",
    ]
    version = plan.units[1]
    assert version.ordered_keys[0].endswith(f"{V1}/{L.ADAPTER_RECORD}")  # the record first
    assert plan.objects == len(keys)


def test_purge_deletes_every_version_before_any_marker() -> None:
    versions = [
        {"Key": "b", "VersionId": "2", "IsDeleteMarker": True},
        {"Key": "a", "VersionId": "1", "IsDeleteMarker": False},
        {"Key": "b", "VersionId": "1", "IsDeleteMarker": False},
        {"Key": "a", "VersionId": "2", "IsDeleteMarker": True},
    ]
    assert purge_order(versions) == [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2")]


def test_full_model_rules() -> None:
    assert (
        model_files_problems(["config.json", "model-00001-of-00002.safetensors"], where="x") == []
    )
    [adapter] = model_files_problems(["adapter_config.json", "adapter_model.bin"], where="x")
    assert adapter.message.startswith("this is a LoRA adapter")
    assert model_base(None, b'{"_name_or_path": "org/base"}', where="c") == "org/base"
    assert model_base("org/other", b"{}", where="c") == "org/other"
    with pytest.raises(MlccError, match="the fine-tune's base model is unknown"):
        model_base(None, b'{"_name_or_path": "./out"}', where="c")
    files = {"config.json": "a" * 64, L.MODEL_RECORD: "b" * 64}
    assert content_hash(files, metadata=(L.MODEL_RECORD,)) == content_hash(
        {"config.json": "a" * 64}
    )
