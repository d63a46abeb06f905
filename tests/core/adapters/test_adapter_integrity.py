"""Adapter versions checked against their records, against loopback S3 (moto): a version whose
files changed after its record was written is reported damaged by ``list`` (sizes; every byte
with ``--verify``) and refused by ``promote``, ``pack`` and the load path of ``add``; a bad
record is reported on its own version; a record must match its path; a ``--base-model`` that
contradicts ``adapter_config.json`` is refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlcc_constructs.core.adapters import s3_layout as L
from mlcc_constructs.core.adapters.integrity import Damage, content_damage, size_damage
from mlcc_constructs.core.adapters.record import (
    AdapterRecord,
    RecordedFile,
    hash_bytes,
    parse_adapter_record,
)
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.promotion import promote, read_adapter_record
from tests._adapter_env import (
    BUCKET_ARGS,
    CORE,
    LLAMA,
    MISTRAL,
    MODEL,
    FakePod,
    adapter_files,
    raw,
    run,
    s3_client,
)

FILES = {**adapter_files(r=8, weights=b"the-weights"), "tokenizer/vocab.json": b"{}"}
WEIGHTS = "adapter_model.safetensors"


@pytest.fixture
def s3(moto_s3: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    return s3_client(moto_s3, monkeypatch)


def _promoted(s3: Any, files: dict[str, bytes] = FILES, name: str = "bot") -> L.CanonicalAdapter:
    return promote(
        s3,
        source_uri=raw(s3, f"job-{name}", files),
        core_bucket=CORE,
        project="acme",
        name=name,
        created_by="tester",
        now=lambda: "2026-11-30T00:00:00Z",
    ).adapter


def _key(adapter: L.CanonicalAdapter, name: str) -> str:
    return adapter.location.key + name


def _legacy(s3: Any, adapter: L.CanonicalAdapter) -> None:
    """Rewrite the record as one written before file sizes were recorded."""
    document = json.loads(s3.get_object(Bucket=CORE, Key=adapter.record.key)["Body"].read())
    del document["files"]
    s3.put_object(Bucket=CORE, Key=adapter.record.key, Body=json.dumps(document).encode())


@dataclass(frozen=True)
class Harm:
    """A change made to a version after its record was written."""

    id: str
    apply: Callable[[Any, L.CanonicalAdapter], None]
    by_size: bool
    """Whether the listing's sizes show it (else only reading every byte does)."""
    file: str
    """The file the errors name ('' for the whole version: a record without file facts)."""


HARMS = [
    Harm(
        "weights overwritten, same size",
        lambda s3, a: s3.put_object(Bucket=CORE, Key=_key(a, WEIGHTS), Body=b"THE-WEIGHTS"),
        by_size=False,
        file=WEIGHTS,
    ),
    Harm(
        "weights overwritten, other size",
        lambda s3, a: s3.put_object(Bucket=CORE, Key=_key(a, WEIGHTS), Body=b"w"),
        by_size=True,
        file=WEIGHTS,
    ),
    Harm(
        "weights deleted",
        lambda s3, a: s3.delete_object(Bucket=CORE, Key=_key(a, WEIGHTS)),
        by_size=True,
        file=WEIGHTS,
    ),
    Harm(
        "nested file deleted",
        lambda s3, a: s3.delete_object(Bucket=CORE, Key=_key(a, "tokenizer/vocab.json")),
        by_size=True,
        file="tokenizer/vocab.json",
    ),
    Harm(
        "a file added",
        lambda s3, a: s3.put_object(Bucket=CORE, Key=_key(a, "extra.bin"), Body=b"x"),
        by_size=True,
        file="extra.bin",
    ),
    Harm(
        "older record, weights deleted",
        lambda s3, a: (_legacy(s3, a), s3.delete_object(Bucket=CORE, Key=_key(a, WEIGHTS))),
        by_size=False,  # nothing to compare sizes with
        file="",
    ),
]


def _names(error: MlccError, harm: Harm) -> None:
    text = str(error)
    assert "damaged adapter version" in text
    assert (f"file {harm.file} should be" if harm.file else "its files should be") in text


@pytest.mark.parametrize("harm", HARMS, ids=lambda h: h.id)
def test_a_damaged_version_is_never_reported_healthy_packed_or_served(
    s3: Any, moto_s3: str, capsys: Any, harm: Harm
) -> None:
    adapter = _promoted(s3)
    harm.apply(s3, adapter)
    uri = adapter.location.uri
    endpoint = ["--endpoint-url", moto_s3]

    # list: the sizes always; --verify reads every byte
    code, listed, err = run(capsys, "adapter", "list", *BUCKET_ARGS, *endpoint)
    (version,) = listed["adapters"][0]["versions"]
    if harm.by_size:
        assert (code, version["state"], listed["damaged"]) == (1, "damaged", [uri])
        assert version["damage"][0]["file"] == harm.file
        assert err.startswith(f"mlcc: error: {uri}: damaged adapter version: file {harm.file} ")
    else:
        assert (code, version["state"], err) == (0, "complete", "")
    code, listed, err = run(capsys, "adapter", "list", "--verify", *BUCKET_ARGS, *endpoint)
    (version,) = listed["adapters"][0]["versions"]
    assert (code, version["state"], version["checked"]) == (1, "damaged", "content")
    assert listed["damaged"] == [uri]
    assert "damaged adapter version" in err

    # promote of the same source: not "unchanged"
    with pytest.raises(MlccError) as promoted:
        _promoted(s3)
    _names(promoted.value, harm)

    # pack: refused, no archive written
    code, report, err = run(capsys, "adapter", "pack", uri, *endpoint)
    assert (code, report["ok"]) == (1, False)
    assert "not packed" in err and (harm.file in err)
    assert "Contents" not in s3.list_objects_v2(Bucket=CORE, Prefix=adapter.packed.key)

    # served: the load path refuses it, no pod is called
    pod = FakePod()
    try:
        code, report, err = run(
            capsys, "adapter", "add", "bot", "--project", "acme", "--from", uri,
            "--model", MODEL.uri, "--pod-url", pod.url, *BUCKET_ARGS, *endpoint,
        )  # fmt: skip
        assert (code, report["ok"], pod.calls) == (1, False, [])
        assert "not served" in err
    finally:
        pod.close()


def test_an_intact_version_passes_every_check(s3: Any, moto_s3: str, capsys: Any) -> None:
    adapter = _promoted(s3)
    endpoint = ["--endpoint-url", moto_s3]
    code, listed, err = run(capsys, "adapter", "list", "--verify", *BUCKET_ARGS, *endpoint)
    (version,) = listed["adapters"][0]["versions"]
    assert (code, err, version["state"], version["checked"]) == (0, "", "complete", "content")
    assert _promoted(s3) == adapter  # unchanged, checked
    code, report, _ = run(capsys, "adapter", "pack", adapter.location.uri, *endpoint)
    assert (code, report["status"]) == (0, "created")


# --- one bad record is reported on its own version ----------------------------------------


BAD_RECORDS: list[tuple[str, Callable[[dict[str, Any]], bytes], str]] = [
    ("not JSON", lambda d: b"{not json", "not valid JSON"),
    ("another project", lambda d: json.dumps({**d, "project": "other"}).encode(), "/project"),
    ("another name", lambda d: json.dumps({**d, "name": "bot"}).encode(), "/name"),
    ("a bad field", lambda d: json.dumps({**d, "rank": {"r": 0}}).encode(), "/rank/r"),
    (
        "files that do not give the hash",
        lambda d: json.dumps({**d, "files": {WEIGHTS: {"size": 1, "sha256": "0" * 64}}}).encode(),
        "/files",
    ),
]


@pytest.mark.parametrize(("bad", "body", "named"), BAD_RECORDS, ids=[b[0] for b in BAD_RECORDS])
def test_one_bad_record_does_not_hide_the_others(
    s3: Any,
    moto_s3: str,
    capsys: Any,
    bad: str,
    body: Callable[[dict[str, Any]], bytes],
    named: str,
) -> None:
    good = _promoted(s3)
    broken = _promoted(s3, adapter_files(weights=b"other"), name="legal")
    key = broken.record.key
    document = json.loads(s3.get_object(Bucket=CORE, Key=key)["Body"].read())
    s3.put_object(Bucket=CORE, Key=key, Body=body(document))
    code, listed, err = run(capsys, "adapter", "list", *BUCKET_ARGS, "--endpoint-url", moto_s3)
    assert code == 1
    states = {a["name"]: [v["state"] for v in a["versions"]] for a in listed["adapters"]}
    assert states == {"bot": ["complete"], "legal": ["unreadable"]}
    (version,) = next(a for a in listed["adapters"] if a["name"] == "legal")["versions"]
    assert named in version["errors"][0]
    assert listed["damaged"] == [broken.location.uri]
    assert err.startswith(f"mlcc: error: s3://{CORE}/{key}")
    assert good.location.uri not in err


def test_a_record_must_match_its_path(s3: Any) -> None:
    adapter = _promoted(s3)
    body = s3.get_object(Bucket=CORE, Key=adapter.record.key)["Body"].read()
    moved = L.adapter_version(L.adapter_home(MODEL, "acme", "copied"), adapter.version or "")
    s3.put_object(Bucket=CORE, Key=moved.key + "mlcc-adapter.json", Body=body)
    with pytest.raises(MlccError) as error:
        read_adapter_record(s3, moved)
    assert "/name: the record's name does not match its path (got 'bot'; allowed: copied" in str(
        error.value
    )
    assert read_adapter_record(s3, adapter.location) is not None


# --- a --base-model that contradicts adapter_config.json ----------------------------------


@pytest.mark.parametrize(
    ("config_base", "given", "refused"),
    [
        (LLAMA, MISTRAL, True),
        (LLAMA, LLAMA, False),
        (LLAMA, None, False),
        ("/opt/ml/model", MISTRAL, False),  # a local path: nothing to compare
        (None, MISTRAL, False),
    ],
)
def test_a_contradicting_base_model_is_refused(
    s3: Any, config_base: str | None, given: str | None, refused: bool
) -> None:
    files = adapter_files(weights=b"b")
    config = json.loads(files["adapter_config.json"])
    if config_base is None:
        del config["base_model_name_or_path"]
    else:
        config["base_model_name_or_path"] = config_base
    files["adapter_config.json"] = json.dumps(config).encode()
    source = raw(s3, "job-base", files)

    def go() -> str:
        return promote(
            s3, source_uri=source, core_bucket=CORE, project="acme", name="bot", base_model=given
        ).record.base_model

    if refused:
        with pytest.raises(MlccError) as error:
            go()
        text = str(error.value)
        assert f"trained on {config_base}, not on the base given, {given}" in text
        assert "Contents" not in s3.list_objects_v2(Bucket=CORE, Prefix="models/")
    else:
        assert go() == (given or config_base)


# --- the pure checks ----------------------------------------------------------------------


def _record(files: dict[str, bytes], *, facts: bool = True) -> AdapterRecord:
    import hashlib

    return parse_adapter_record(
        {
            "format": "mlcc-adapter/1",
            "project": "acme",
            "name": "bot",
            "version": "v" + hash_bytes(files)[:12],
            "content_hash": hash_bytes(files),
            "source": {"uri": "s3://b/p/"},
            "rank": {"r": 8},
            "base_model": {"id": LLAMA},
            "created_by": "t",
            "created_at": "2026-01-01T00:00:00Z",
            **(
                {
                    "files": {
                        n: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                        for n, b in files.items()
                    }
                }
                if facts
                else {}
            ),
        }
    )


def _digests(files: dict[str, bytes]) -> dict[str, str]:
    import hashlib

    return {n: hashlib.sha256(b).hexdigest() for n, b in files.items()}


ORIGINAL = {"a.json": b"{}", "w.bin": b"1234"}


@pytest.mark.parametrize(
    ("found", "sizes_say", "content_says"),
    [
        (ORIGINAL, (), ()),
        (
            {"a.json": b"{}", "w.bin": b"4321"},
            (),
            (Damage(file="w.bin", expected="4 bytes, sha256 ", found="4 bytes, sha256 "),),
        ),
        (
            {"a.json": b"{}"},
            (Damage(file="w.bin", expected="4 bytes", found="absent"),),
            (Damage(file="w.bin", expected="4 bytes", found="absent"),),
        ),
        (
            {**ORIGINAL, "x": b""},
            (Damage(file="x", expected="absent (not in the record)", found="0 bytes"),),
            (Damage(file="x", expected="absent (not in the record)", found="0 bytes"),),
        ),
    ],
)
def test_size_and_content_damage(
    found: dict[str, bytes], sizes_say: tuple[Damage, ...], content_says: tuple[Damage, ...]
) -> None:
    record = _record(ORIGINAL)
    sizes = {n: len(b) for n, b in found.items()}
    assert size_damage(record, sizes) == sizes_say
    damage = content_damage(record, _digests(found), sizes)
    assert [(d.file, d.found.split(" sha256 ")[0]) for d in damage] == [
        (d.file, d.found.split(" sha256 ")[0]) for d in content_says
    ]
    # an older record (no file facts): no size check, the content hash still decides
    legacy = _record(ORIGINAL, facts=False)
    assert size_damage(legacy, sizes) is None
    assert bool(content_damage(legacy, _digests(found), sizes)) == bool(content_says)


def test_recorded_files_round_trip() -> None:
    record = _record(ORIGINAL)
    assert record.files["w.bin"] == RecordedFile(size=4, sha256=_digests(ORIGINAL)["w.bin"])
    assert parse_adapter_record(record.to_json()) == record


# --- S3 faults in the middle of a promotion -------------------------------------------------


class _Fault(Exception):
    """S3 failing mid-copy (the connection dropped, a throttle that outlived the retries)."""


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fail_at=st.integers(0, len(FILES)))  # a file's write, or the record's (the last)
def test_a_promotion_cut_short_is_never_listed_complete_and_completes_on_retry(
    moto_s3: str, monkeypatch: pytest.MonkeyPatch, capsys: Any, fail_at: int
) -> None:
    s3 = s3_client(moto_s3, monkeypatch)
    source = raw(s3, "job-bot", FILES)
    writes = {"n": 0}

    def fault(**_: Any) -> None:
        writes["n"] += 1
        if writes["n"] == fail_at + 1:
            raise _Fault("connection reset")

    for event in ("before-call.s3.CopyObject", "before-call.s3.PutObject"):
        s3.meta.events.register(event, fault)
    with pytest.raises(_Fault):
        promote(s3, source_uri=source, core_bucket=CORE, project="acme", name="bot")
    for event in ("before-call.s3.CopyObject", "before-call.s3.PutObject"):
        s3.meta.events.unregister(event, fault)
    endpoint = ["--endpoint-url", moto_s3]
    code, listed, _ = run(capsys, "adapter", "list", *BUCKET_ARGS, *endpoint)
    states = [v["state"] for a in listed["adapters"] for v in a["versions"]]
    assert states in ([], ["incomplete"])  # never "complete" without every file
    again = promote(s3, source_uri=source, core_bucket=CORE, project="acme", name="bot")
    assert again.status == "created"
    assert sorted(again.record.files) == sorted(FILES)
    code, listed, err = run(capsys, "adapter", "list", "--verify", *BUCKET_ARGS, *endpoint)
    (version,) = listed["adapters"][0]["versions"]
    assert (code, version["state"], version["checked"]) == (0, "complete", "content")
    assert "mlcc: error" not in err
