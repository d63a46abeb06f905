"""The canonical S3 layout: every path, every refusal, and no other file composing paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlcc_constructs.core.adapters import path_names, s3_layout as L
from mlcc_constructs.core.platform.buckets import bucket_names
from mlcc_constructs.core.platform.targets import AdapterDelivery, load_target
from mlcc_constructs.core.support.errors import MlccError

REPO = Path(__file__).resolve().parents[3]
BUCKETS = bucket_names(account="123456789012", region="us-east-1", profile="dev")
CORE, ARTIFACTS = BUCKETS["core"], BUCKETS["artifacts"]
LLAMA = L.base_model("meta-llama/Llama-3.1-8B-Instruct")


def test_bucket_names_come_from_the_descriptor() -> None:
    assert CORE == "mlcc-models-dev-123456789012-us-east-1"
    assert ARTIFACTS == "mlcc-artifacts-dev-123456789012-us-east-1"


def test_every_path() -> None:
    home = L.canonical_adapter_home(CORE, LLAMA, "acme", "support-bot")
    assert home.uri == (
        "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
        ".mlcc-adapters/acme/support-bot/"
    )
    version = L.adapter_version(home, "v0123456789ab")
    assert version.uri == home.uri + "v0123456789ab/"
    assert L.record_location(version).uri == version.uri + "mlcc-adapter.json"
    assert L.full_finetune(CORE, "acme", "full-sft").uri == (
        "s3://mlcc-models-dev-123456789012-us-east-1/models/mlcc-acme/full-sft/"
    )
    assert L.job_output(ARTIFACTS, "acme", "tune", "job-1", "checkpoints").uri == (
        "s3://mlcc-artifacts-dev-123456789012-us-east-1/acme/tune/job-1/checkpoints/"
    )
    assert L.job_output(ARTIFACTS, "acme", "optimize").uri == (
        "s3://mlcc-artifacts-dev-123456789012-us-east-1/acme/optimize/"
    )
    assert path_names.version_id("0123456789ab" + "c" * 52) == "v0123456789ab"
    assert L.base_of_model_location(L.base_model_location(CORE, LLAMA)) == LLAMA
    assert L.base_of_model_location(L.full_finetune(CORE, "acme", "x")) is None


def test_pod_paths_follow_the_target_descriptor() -> None:
    delivery = load_target("hyperpod-eks").adapter_delivery
    assert L.pod_adapter_path(delivery, "acme", "support-bot", "v0123456789ab") == (
        "/opt/ml/model/.mlcc-adapters/acme/support-bot/v0123456789ab"
    )
    assert L.pod_adapter_path(load_target("eks").adapter_delivery, "acme", "bot") == (
        "/opt/ml/model/.mlcc-adapters/acme/bot"
    )
    with pytest.raises(MlccError, match="does not deliver adapters through the model mount"):
        L.pod_adapter_path(load_target("realtime-inference").adapter_delivery, "acme", "bot")
    with pytest.raises(MlccError, match="must be the S3 layout's adapter folder"):
        L.pod_adapter_path(
            AdapterDelivery(strategy="model-prefix", mount_path="/m", subdir="adapters"), "a", "b"
        )


def test_hub_ids_map_and_unknown_ones_are_refused() -> None:
    assert L.base_model("meta-textgeneration-llama-3-1-8b-instruct") == LLAMA
    with pytest.raises(MlccError) as error:
        L.base_model("meta-textgeneration-llama-9-unknown")
    text = str(error.value)
    assert text.startswith(
        "/base_model: not a Hugging Face model id, and not a mapped model hub id "
        "(got 'meta-textgeneration-llama-9-unknown'; allowed: <org>/<name>"
    )
    assert text.endswith(
        "fix: name the base by its Hugging Face id, or add the hub id to "
        "mlcc_constructs/data/hub_model_ids.json)"
    )


@pytest.mark.parametrize(
    ("project", "name", "bad"),
    [
        ("", "bot", "project"),
        ("acme", "a/b", "name"),
        ("..", "bot", "project"),
        ("acme", ".", "name"),
        ("ac me", "bot", "project"),
        ("acme", "bot\t", "name"),
        ("acme", "bot\x00", "name"),
        ("acme", "bot\u200b", "name"),  # zero-width space: a format (C*) character
    ],
)
def test_bad_components_are_refused(project: str, name: str, bad: str) -> None:
    with pytest.raises(MlccError) as error:
        L.canonical_adapter_home(CORE, LLAMA, project, name)
    value = project if bad == "project" else name
    assert str(error.value) == (
        f"/{bad}: not a valid S3 path component (got {value!r}; allowed: a non-empty name "
        "without '/', whitespace or control characters, not '.' or '..')"
    )


def test_all_bad_components_reported_at_once() -> None:
    with pytest.raises(MlccError) as error:
        L.canonical_adapter_home(CORE, LLAMA, "a b", "")
    assert [p.pointer for p in error.value.problems] == ["/project", "/name"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: L.adapter_version(L.canonical_adapter_home(CORE, LLAMA, "a", "b"), "v123"),
            "/version: not an adapter version (got 'v123'; allowed: v<first 12 hex digits of "
            "the content hash>, e.g. v0123456789ab)",
        ),
        (
            lambda: L.canonical_adapter_home("Bad_Bucket", LLAMA, "a", "b"),
            "s3://Bad_Bucket/: not a valid S3 bucket name (got 'Bad_Bucket'; allowed: 3-63 "
            "lower-case letters, digits, '.', '-')",
        ),
        (
            lambda: L.model_location(CORE, "models/../x/"),
            f"s3://{CORE}/models/../x/: not a valid S3 path component (got '..'",
        ),
        (
            lambda: L.job_output(ARTIFACTS, "a", "tune", "ok", "b c"),
            "/parts/1: not a valid S3 path component (got 'b c'",
        ),
        (
            lambda: L.job_output(ARTIFACTS, "a", "deploy"),  # type: ignore[arg-type]
            "/kind: unknown job kind (got 'deploy'; allowed: tune, train, optimize)",
        ),
        (
            lambda: L.base_model("meta-llama/../x"),
            "/base_model: not a Hugging Face model id, and not a mapped model hub id",
        ),
        (
            lambda: L.parse_s3_uri("https://example.com/x"),
            "/uri: not an S3 URI (got 'https://example.com/x'; allowed: s3://<bucket>/<key>)",
        ),
    ],
)
def test_bad_inputs(call, message: str) -> None:
    with pytest.raises(MlccError) as error:
        call()
    assert str(error.value).startswith(message)


def test_parse_canonical_adapter() -> None:
    home = L.canonical_adapter_home(CORE, LLAMA, "acme", "bot")
    version = L.adapter_version(home, "v0123456789ab")
    parsed = L.parse_canonical_adapter(version.uri)
    assert parsed is not None
    assert (parsed.project, parsed.name, parsed.version) == ("acme", "bot", "v0123456789ab")
    assert parsed.home == home
    assert parsed.location == version
    assert parsed.model == L.base_model_location(CORE, LLAMA)
    unversioned = L.parse_canonical_adapter(home.uri.rstrip("/"))
    assert unversioned is not None and unversioned.version is None
    elsewhere = L.parse_canonical_adapter("s3://other-bucket/staged/llama/.mlcc-adapters/p/n/")
    assert elsewhere is not None and elsewhere.model.uri == "s3://other-bucket/staged/llama/"
    for not_canonical in (
        "s3://b-1/raw/adapter/",
        f"{home.uri}v0123456789ab/extra/",
        f"{home.uri}not-a-version/",
        "s3://b-1/.mlcc-adapters/p/n/",
        "hf://org/name",
    ):
        assert L.parse_canonical_adapter(not_canonical) is None


# --- path drift -------------------------------------------------------------------------

# Fragments only the layout module may write. Data (targets/*.json), tests, snapshots and
# docs are excluded: they describe the layout, they don't compose it.
_FRAGMENTS = re.compile(
    r"\.mlcc-adapters|models/mlcc-|mlcc-adapter\.json|mlcc-model\.json"
    r"|/(tune|train|optimize)/|[\"']models/"
)


def test_no_other_file_composes_layout_paths() -> None:
    offenders = []
    for root in ("mlcc_constructs", "stacks"):
        for path in sorted((REPO / root).rglob("*.py")):
            if path == REPO / "mlcc_constructs" / "core" / "adapters" / "s3_layout.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _FRAGMENTS.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    app = REPO / "app.py"
    if app.exists():
        offenders += [
            f"app.py:{n}: {line.strip()}"
            for n, line in enumerate(app.read_text(encoding="utf-8").splitlines(), 1)
            if _FRAGMENTS.search(line)
        ]
    assert offenders == [], "compose these paths with mlcc_constructs.core.adapters.s3_layout"


def test_the_drift_check_sees_the_layout_module() -> None:
    text = (REPO / "mlcc_constructs" / "core" / "adapters" / "s3_layout.py").read_text(
        encoding="utf-8"
    )
    assert _FRAGMENTS.search(text)
