"""``mlcc adapter pack``: a canonical version as ``<home>/v<hash12>.tar.gz`` (the ArtifactUrl of
a SageMaker adapter inference component), against loopback S3 (moto): the archive holds exactly
the version's files, is byte-stable, is listed and cleaned with its version, and bad input
writes nothing."""

from __future__ import annotations

import io
import tarfile
from typing import Any

import pytest

from mlcc_constructs.core.adapters import s3_layout as L
from mlcc_constructs.ops.promotion import promote
from tests._adapter_env import (
    BUCKET_ARGS,
    CORE,
    adapter_files,
    everything,
    raw,
    run,
    s3_client,
    upload,
)

FILES = {**adapter_files(r=8, weights=b"packed-weights"), "tokenizer/vocab.json": b"{}"}


@pytest.fixture
def s3(moto_s3: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    return s3_client(moto_s3, monkeypatch)


def _promoted(s3: Any) -> L.CanonicalAdapter:
    promotion = promote(
        s3,
        source_uri=raw(s3, "job-pack", FILES),
        core_bucket=CORE,
        project="acme",
        name="bot",
        created_by="tester",
        now=lambda: "2026-11-30T00:00:00Z",
    )
    return promotion.adapter


def _pack(capsys: Any, moto_s3: str, *argv: str) -> tuple[int, Any, str]:
    return run(capsys, "adapter", "pack", *argv, "--endpoint-url", moto_s3)


def test_pack_writes_the_versions_files_as_one_stable_archive(
    s3: Any, moto_s3: str, capsys: Any
) -> None:
    adapter = _promoted(s3)
    archive = adapter.packed
    assert archive.key == adapter.home.key + f"{adapter.version}.tar.gz"
    code, report, err = _pack(capsys, moto_s3, adapter.location.uri)
    assert (code, err) == (0, "")
    assert report["status"] == "created"
    assert report["artifact_url"] == archive.uri
    assert report["files"] == sorted(FILES)
    body = s3.get_object(Bucket=archive.bucket, Key=archive.key)["Body"].read()
    assert report["bytes"] == len(body)
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == sorted(FILES)  # no record, files at the top
        assert {(m.mtime, m.uid, m.gid, m.mode, m.uname) for m in members} == {(0, 0, 0, 0o644, "")}
        assert {m.name: tar.extractfile(m).read() for m in members} == FILES  # type: ignore[union-attr]
    # a version never changes: packing again keeps the archive
    code, again, _ = _pack(capsys, moto_s3, adapter.location.uri)
    assert (code, again["status"], again["bytes"]) == (0, "unchanged", None)
    # the same files give the same bytes (deleted and packed again)
    s3.delete_object(Bucket=archive.bucket, Key=archive.key)
    _pack(capsys, moto_s3, adapter.location.uri)
    assert s3.get_object(Bucket=archive.bucket, Key=archive.key)["Body"].read() == body


def test_the_archive_is_listed_and_cleaned_with_its_version(
    s3: Any, moto_s3: str, capsys: Any
) -> None:
    adapter = _promoted(s3)
    _pack(capsys, moto_s3, adapter.location.uri)
    code, listed, _ = run(capsys, "adapter", "list", *BUCKET_ARGS, "--endpoint-url", moto_s3)
    (entry,) = listed["adapters"]
    (version,) = entry["versions"]  # no stray "unversioned home" for the archive
    assert (version["version"], version["packed"]) == (adapter.version, adapter.packed.uri)
    assert version["objects"] == len(FILES) + 2  # the files, the record, the archive
    code, report, _ = run(
        capsys, "adapter", "clean", "--project", "acme", "--yes", *BUCKET_ARGS,
        "--endpoint-url", moto_s3,
    )  # fmt: skip
    assert (code, report["status"]) == (0, "deleted")
    assert [u["kind"] for u in report["plan"]["units"]] == ["adapter-version"]
    assert [k for b, k in everything(s3) if k.startswith(adapter.home.key)] == []


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (
            f"s3://{CORE}/models/meta-llama/Llama-3.1-8B-Instruct/.mlcc-adapters/acme/bot/",
            "VERSION: not a canonical adapter version",
        ),
        ("s3://some-bucket/adapters/bot/", "VERSION: not a canonical adapter version"),
    ],
)
def test_not_a_version_is_refused_before_anything_is_read(
    s3: Any, moto_s3: str, capsys: Any, version: str, message: str
) -> None:
    before = everything(s3)
    code, report, err = _pack(capsys, moto_s3, version)
    assert code == 1 and report["ok"] is False
    assert report["errors"][0].startswith(f"{message} (got {version!r}")
    assert err.startswith(f"mlcc: error: {message}")
    assert everything(s3) == before


def test_an_incomplete_version_is_not_packed(s3: Any, moto_s3: str, capsys: Any) -> None:
    adapter = _promoted(s3)
    s3.delete_object(Bucket=adapter.record.bucket, Key=adapter.record.key)  # interrupted
    code, report, _ = _pack(capsys, moto_s3, adapter.location.uri)
    assert code == 1
    assert report["errors"] == [
        "the adapter version has no record: it is incomplete (a promotion was interrupted) "
        f"(got {adapter.location.uri!r}; fix: promote the same source again (it completes the "
        "version), then pack it)"
    ]
    assert "Contents" not in s3.list_objects_v2(Bucket=CORE, Prefix=adapter.packed.key)


def test_a_dry_run_writes_nothing(s3: Any, moto_s3: str, capsys: Any) -> None:
    adapter = _promoted(s3)
    upload(s3, L.model_location(CORE, "other/"), {"x": b"y"})
    before = everything(s3)
    code, report, _ = _pack(capsys, moto_s3, adapter.location.uri, "--dry-run")
    assert (code, report["status"], report["files"]) == (0, "dry-run", sorted(FILES))
    assert everything(s3) == before
