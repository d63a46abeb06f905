"""``mlcc adapter list|clean`` and ``mlcc model promote`` end to end against loopback S3
(moto) and stand-in serving pods: two projects sharing a base, another base, full
fine-tunes, a project whose name starts like another, base weights and unrelated prefixes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.core.adapters import path_names, s3_layout as L
from mlcc_constructs.core.adapters.model_record import ModelRecord
from mlcc_constructs.core.adapters.record import AdapterRecord, RecordedFile, hash_bytes
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.clean import execute_clean, plan_project_clean, project_models
from mlcc_constructs.ops.promotion import Promotion, promote
from tests._adapter_env import (
    ARTIFACTS,
    BUCKET_ARGS,
    CORE,
    LLAMA,
    MISTRAL,
    MODEL,
    FakePod,
    adapter_files,
    everything,
    keys_under,
    raw,
    run,
    s3_client,
    upload,
    version_of,
)
from tests._flat import flat_spec

BOT_V1 = adapter_files(weights=b"bot-1")
BOT_V2 = adapter_files(r=32, weights=b"bot-2")
RESTAGED = L.model_location(CORE, "staged/llama/")
MISTRAL_MODEL = L.base_model_location(CORE, L.base_model(MISTRAL))
FULL_MODEL = {
    "config.json": json.dumps({"_name_or_path": LLAMA, "model_type": "llama"}).encode(),
    "model.safetensors": b"full-weights",
    "tokenizer.json": b"{}",
}


@pytest.fixture
def s3(moto_s3: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    return s3_client(moto_s3, monkeypatch)


def _promote(
    s3: Any, project: str, name: str, files: dict[str, bytes], when: str, **kw: Any
) -> Any:
    """Promote through the real code path (reads, hashes, writes the record last)."""
    return promote(
        s3,
        source_uri=raw(s3, f"{project}-{name}-{when}", files, project=project),
        core_bucket=CORE,
        project=project,
        name=name,
        created_by="tester",
        now=lambda: when,
        technique="sft",
        **kw,
    )


def _stored(
    s3: Any, project: str, name: str, files: dict[str, bytes], when: str, base: str = LLAMA
) -> Promotion:
    """What :func:`_promote` leaves on S3, written directly (the world is rebuilt for every
    test: a promotion's reads and hashing would make it slow)."""
    peft = json.loads(files["adapter_config.json"])
    digest = hash_bytes(files)
    home = L.canonical_adapter_home(CORE, L.base_model(base), project, name)
    adapter = L.parse_canonical_adapter(L.adapter_version(home, path_names.version_id(digest)).uri)
    assert adapter is not None
    record = AdapterRecord(
        project=project,
        name=name,
        version=path_names.version_id(digest),
        content_hash=digest,
        source_uri=f"s3://{ARTIFACTS}/{project}/tune/{name}-{when[:10]}/",
        technique="sft",
        r=peft["r"],
        target_modules=tuple(sorted(peft["target_modules"])),
        base_model=base,
        created_by="tester",
        created_at=when,
        files={
            n: RecordedFile(size=len(b), sha256=hashlib.sha256(b).hexdigest())
            for n, b in files.items()
        },
    )
    upload(s3, adapter.location, files)
    s3.put_object(Bucket=CORE, Key=adapter.record.key, Body=json.dumps(record.to_json()).encode())
    return Promotion(status="created", adapter=adapter, record=record)


def _world(s3: Any) -> dict[str, Any]:
    """Base weights, two projects on one base, another base, fine-tunes, unrelated keys."""
    upload(s3, MODEL, {"config.json": b"{base}", "model.safetensors": b"base-weights"})
    upload(s3, MISTRAL_MODEL, {"config.json": b"{mistral}", "model.safetensors": b"m-weights"})
    upload(s3, L.model_location(CORE, "datasets/chat/"), {"train.jsonl": b"{}"})
    world = {
        "v1": _stored(s3, "acme", "bot", BOT_V1, "2026-01-01T00:00:00Z"),
        "v2": _stored(s3, "acme", "bot", BOT_V2, "2026-02-01T00:00:00Z"),
        "legal": _stored(s3, "acme", "legal", adapter_files(weights=b"l"), "2026-01-15T00:00:00Z"),
        "mistral": _stored(
            s3,
            "acme",
            "m",
            adapter_files(weights=b"m", base=MISTRAL),
            "2026-01-02T00:00:00Z",
            base=MISTRAL,
        ),
        "other": _stored(s3, "other", "bot", BOT_V1, "2026-03-01T00:00:00Z"),
        # a project whose name starts like "acme": its prefixes must survive acme's clean
        "acme2": _stored(s3, "acme2", "bot", BOT_V1, "2026-03-02T00:00:00Z"),
    }
    for project in ("acme", "acme2"):
        home = L.full_finetune(CORE, project, "full-sft")
        upload(s3, home, FULL_MODEL)
        record = ModelRecord(
            project=project,
            name="full-sft",
            content_hash=hash_bytes(FULL_MODEL),
            source_uri=raw(s3, f"{project}-full", FULL_MODEL, project=project),
            base_model=LLAMA,
            created_by="tester",
            created_at="2026-01-03T00:00:00Z",
        )
        upload(s3, home, {L.MODEL_RECORD: json.dumps(record.to_json()).encode()})
    return world


def _adapters(document: dict[str, Any]) -> list[tuple[str, str, str, list[str | None]]]:
    return [
        (a["project"], a["name"], a["model"], [v["version"] for v in a["versions"]])
        for a in document["adapters"]
    ]


# --- list -------------------------------------------------------------------------------


def test_list_every_project_under_every_base(s3: Any, moto_s3: str, capsys: Any) -> None:
    world = _world(s3)
    code, listed, err = run(capsys, "adapter", "list", *BUCKET_ARGS, "--endpoint-url", moto_s3)
    assert (code, err) == (0, "")
    assert listed["models"] == [MODEL.uri, MISTRAL_MODEL.uri]  # every staged base, no fine-tune
    v1, v2 = world["v1"].adapter.version, world["v2"].adapter.version
    assert _adapters(listed) == [
        ("acme", "bot", MODEL.uri, [v2, v1]),  # newest first, by the record's creation time
        ("acme", "legal", MODEL.uri, [world["legal"].adapter.version]),
        ("acme", "m", MISTRAL_MODEL.uri, [world["mistral"].adapter.version]),
        ("acme2", "bot", MODEL.uri, [world["acme2"].adapter.version]),
        ("other", "bot", MODEL.uri, [world["other"].adapter.version]),
    ]
    bot = listed["adapters"][0]
    assert bot["base_model"] == LLAMA
    assert bot["home"] == world["v1"].adapter.home.uri
    assert bot["versions"][0] == {
        "version": v2,
        "uri": world["v2"].adapter.location.uri,
        "state": "complete",
        "created_at": "2026-02-01T00:00:00Z",
        "created_by": "tester",
        "rank": {"r": 32, "rank_pattern": {}, "need": 32},
        "target_modules": ["q_proj", "v_proj"],
        "technique": "sft",
        "source": {"uri": world["v2"].record.source_uri, "job": None},
        "serving_copy": False,
        "serving_copy_of": None,
        "packed": None,  # not packed (mlcc adapter pack)
        "objects": 3,
        "bytes": bot["versions"][0]["bytes"],
        "loaded_on": [],
        "checked": "sizes",  # from the listing: the record holds each file's size
        "damage": [],
        "errors": [],
    }
    assert bot["versions"][0]["bytes"] > len(b"bot-2")
    assert listed["pods"] == [] and listed["failed_pods"] == []


def test_list_one_project_one_base_serving_copies_and_incomplete_versions(
    s3: Any, moto_s3: str, capsys: Any
) -> None:
    world = _world(s3)
    # a serving copy under a re-staged prefix, and a version left without its record
    code, _, _ = run(
        capsys,
        "adapter",
        "add",
        "bot",
        "--project",
        "acme",
        "--from",
        world["v1"].adapter.location.uri,
        "--model",
        RESTAGED.uri,
        "--base-model",
        LLAMA,
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
    )
    assert code == 0
    half = L.adapter_version(world["v1"].adapter.home, "v0123456789ab")
    upload(s3, half, {"adapter_config.json": BOT_V1["adapter_config.json"]})
    code, listed, _ = run(
        capsys,
        "adapter",
        "list",
        "--project",
        "acme",
        "--base-model",
        LLAMA,
        "--model",
        RESTAGED.uri,
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
    )
    assert code == 0
    assert listed["models"] == [MODEL.uri, RESTAGED.uri]
    assert [(a["name"], a["model"]) for a in listed["adapters"]] == [
        ("bot", MODEL.uri),
        ("bot", RESTAGED.uri),
        ("legal", MODEL.uri),
    ]
    states = [(v["version"], v["state"]) for v in listed["adapters"][0]["versions"]]
    assert states[-1] == ("v0123456789ab", "incomplete")  # no record: no time, listed last
    copy = listed["adapters"][1]["versions"][0]
    assert copy["serving_copy"] is True
    assert copy["serving_copy_of"] == world["v1"].adapter.location.uri


def test_list_shows_which_version_each_pod_loaded(
    s3: Any, moto_s3: str, pods: list[FakePod], capsys: Any
) -> None:
    world = _world(s3)
    v2 = world["v2"].adapter.version
    pods[0].serving("bot", f"/opt/ml/model/.mlcc-adapters/acme/bot/{v2}")
    pods[0].models.append({"id": LLAMA, "object": "model", "root": "/opt/ml/model"})
    pods[1].serving("bot", f"/opt/ml/model/.mlcc-adapters/acme/bot/{world['v1'].adapter.version}")
    code, listed, _ = run(
        capsys,
        "adapter",
        "list",
        "--project",
        "acme",
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
        "--pod-url",
        pods[0].url,
        "--pod-url",
        pods[1].url,
    )
    assert code == 0
    versions = listed["adapters"][0]["versions"]
    assert [(v["version"], v["loaded_on"]) for v in versions] == [
        (v2, [pods[0].url]),
        (world["v1"].adapter.version, [pods[1].url]),
    ]
    assert listed["pods"][0]["loaded"] == [
        {
            "lora_name": "bot",
            "path": f"/opt/ml/model/.mlcc-adapters/acme/bot/{v2}",
            "project": "acme",
            "name": "bot",
            "version": v2,
        }
    ]
    assert pods[0].calls == [("GET", "/v1/models", None)]  # the engine's model list, nothing else


def test_list_a_pod_that_does_not_answer_exits_1(s3: Any, moto_s3: str, capsys: Any) -> None:
    _world(s3)
    broken = FakePod(status=500)
    try:
        code, listed, err = run(
            capsys,
            "adapter",
            "list",
            *BUCKET_ARGS,
            "--endpoint-url",
            moto_s3,
            "--pod-url",
            broken.url,
        )
    finally:
        broken.close()
    assert code == 1
    assert listed["failed_pods"] == [broken.url]
    assert len(listed["adapters"]) == 5  # the listing itself is whole
    assert err.startswith(f"mlcc: error: pod {broken.url} failed: ")


def test_list_table(s3: Any, moto_s3: str, capsys: Any) -> None:
    world = _world(s3)
    code, text, _ = run(
        capsys,
        "adapter",
        "list",
        "--project",
        "other",
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
        "--format",
        "table",
    )
    assert code == 0
    header, row = text.splitlines()
    assert header.split() == [
        "PROJECT",
        "NAME",
        "VERSION",
        "STATE",
        "CREATED",
        "RANK",
        "MODULES",
        "TECHNIQUE",
        "SOURCE",
        "COPY",
        "LOADED",
        "ON",
    ]
    assert row.split() == [
        "other",
        "bot",
        world["other"].adapter.version,
        "complete",
        "2026-03-01T00:00:00Z",
        "16",
        "q_proj,v_proj",
        "sft",
        world["other"].record.source_uri,
        "no",
        "-",
    ]


# --- clean ------------------------------------------------------------------------------


def _acme_prefixes() -> list[L.S3Location]:
    return [
        L.project_adapters(MODEL, "acme"),
        L.project_adapters(MISTRAL_MODEL, "acme"),
        L.project_adapters(RESTAGED, "acme"),
        L.project_full_finetunes(CORE, "acme"),
    ]


def _is_acme(bucket_key: tuple[str, str]) -> bool:
    bucket, key = bucket_key
    return any(bucket == p.bucket and key.startswith(p.key) for p in _acme_prefixes())


def _clean(capsys: Any, moto_s3: str, *extra: str) -> tuple[int, Any, str]:
    return run(
        capsys,
        "adapter",
        "clean",
        "--project",
        "acme",
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
        *extra,
    )


def test_clean_deletes_the_project_and_nothing_else(s3: Any, moto_s3: str, capsys: Any) -> None:
    _world(s3)
    run(  # a serving copy under a re-staged prefix
        capsys,
        "adapter",
        "add",
        "legal",
        "--project",
        "acme",
        "--from",
        L.adapter_version(
            L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "legal"),
            version_of(adapter_files(weights=b"l")),
        ).uri,
        "--model",
        RESTAGED.uri,
        "--base-model",
        LLAMA,
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
    )
    before = everything(s3)
    doomed = {k for k in before if _is_acme(k)}
    assert len(doomed) == 3 * 5 + 4  # 5 adapter versions (4 canonical + a copy), 1 fine-tune
    assert all(bucket == CORE for bucket, _ in doomed)
    code, listed_before, _ = run(
        capsys,
        "adapter",
        "list",
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
        "--model",
        RESTAGED.uri,
    )
    assert {a["project"] for a in listed_before["adapters"]} == {"acme", "acme2", "other"}

    code, report, err = _clean(capsys, moto_s3, "--yes", "--model", RESTAGED.uri)
    assert code == 0, err
    assert report["status"] == "deleted"
    assert report["plan"]["objects"] == len(doomed)
    assert report["plan"]["prefixes"] == [p.uri for p in _acme_prefixes()]
    kinds = sorted(u["kind"] for u in report["plan"]["units"])
    assert kinds == ["adapter-version"] * 5 + ["full-finetune"]
    assert report["bucket_versioning"]["versioning"] == "Off"
    # byte for byte: everything that is not acme's is exactly as it was
    assert everything(s3) == {k: v for k, v in before.items() if k not in doomed}
    assert "no pods given" in err

    code, listed_after, _ = run(
        capsys,
        "adapter",
        "list",
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
        "--model",
        RESTAGED.uri,
    )
    assert [a for a in listed_after["adapters"] if a["project"] == "acme"] == []
    assert [a for a in listed_after["adapters"] if a["project"] != "acme"] == [
        a for a in listed_before["adapters"] if a["project"] != "acme"
    ]
    # a second clean finds nothing
    code, again, _ = _clean(capsys, moto_s3, "--yes", "--model", RESTAGED.uri)
    assert (code, again["status"], again["plan"]["objects"]) == (0, "nothing to delete", 0)


def test_clean_dry_run_and_confirmation(
    s3: Any, moto_s3: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _world(s3)
    before = everything(s3)
    code, report, err = _clean(capsys, moto_s3, "--dry-run")
    assert (code, report["status"], report["deleted"]) == (0, "dry-run", [])
    assert "mlcc adapter clean: project acme in s3://" in err
    assert everything(s3) == before

    for answer in ("n\n", ""):  # a "no", and no answer at all (stdin closed)
        monkeypatch.setattr("sys.stdin", io.StringIO(answer))
        code, report, err = _clean(capsys, moto_s3)
        assert code == 1
        assert report["status"] == "not confirmed" and report["ok"] is False
        assert err.splitlines()[-1] == (
            "Delete them? [y/N] mlcc: error: --yes: clean not confirmed: nothing deleted "
            f"(got {answer.strip()!r}; fix: answer y, or pass --yes in scripts)"
        )
        assert everything(s3) == before

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, report, _ = _clean(capsys, moto_s3)
    assert (code, report["status"]) == (0, "deleted")
    assert [k for k in everything(s3) if _is_acme(k)] == []


def test_clean_refuses_while_a_pod_serves_the_project(
    s3: Any, moto_s3: str, pods: list[FakePod], capsys: Any
) -> None:
    world = _world(s3)
    path = f"/opt/ml/model/.mlcc-adapters/acme/bot/{world['v2'].adapter.version}"
    pods[0].serving("bot", path)
    pods[1].serving("bot", "/opt/ml/model/.mlcc-adapters/other/bot/v0123456789ab")
    before = everything(s3)
    pod_args = ["--pod-url", pods[0].url, "--pod-url", pods[1].url]
    code, report, err = _clean(capsys, moto_s3, "--yes", *pod_args)
    assert code == 1
    assert report["status"] == "refused"
    assert report["errors"] == [
        f"--force: pod {pods[0].url} still serves adapter bot from {path} (fix: unload it first "
        "(mlcc adapter remove bot ...), or pass --force)"
    ]
    assert err == f"mlcc: error: {report['errors'][0]}\n"
    assert everything(s3) == before
    assert all(call[0] == "GET" for pod in pods for call in pod.calls)  # nothing unloaded

    code, report, _ = _clean(capsys, moto_s3, "--yes", "--force", *pod_args)
    assert (code, report["status"]) == (0, "deleted")
    assert [k for k in everything(s3) if _is_acme(k)] == []


def test_clean_refuses_when_a_pod_cannot_tell(s3: Any, moto_s3: str, capsys: Any) -> None:
    _world(s3)
    broken = FakePod(status=503)
    try:
        code, report, _ = _clean(capsys, moto_s3, "--yes", "--pod-url", broken.url)
    finally:
        broken.close()
    assert (code, report["status"]) == (1, "refused")
    assert report["errors"][0].startswith(f"--force: pod {broken.url} did not list its adapters")


def _fake_kubectl(
    tmp_path: Path, volumes: list[dict[str, Any]], deployments: list[dict[str, Any]] = ()
) -> Path:
    """kubectl with no serving pods, ``volumes`` as the cluster's PersistentVolumes,
    ``deployments`` as its Deployments and no InferenceEndpointConfig CRD (the server's own
    error); every call is logged."""
    (tmp_path / "volumes.json").write_text(json.dumps({"items": volumes}))
    (tmp_path / "deployments.json").write_text(json.dumps({"items": list(deployments)}))
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(tmp_path / 'calls.log')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "kind = sys.argv[2]\n"
        "if kind == 'inferenceendpointconfigs':\n"
        "    sys.stderr.write('error: the server doesn\\'t have a resource type '\n"
        "                     '\"inferenceendpointconfigs\"\\n')\n"
        "    sys.exit(1)\n"
        f"volumes = json.load(open({str(tmp_path / 'volumes.json')!r}))\n"
        f"deployments = json.load(open({str(tmp_path / 'deployments.json')!r}))\n"
        "print(json.dumps(volumes if kind == 'persistentvolumes' else deployments\n"
        "                 if kind == 'deployments' else {'items': []}))\n"
    )
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    return kubectl


def test_clean_refuses_while_the_cluster_serves_a_fine_tune_as_its_model(
    s3: Any, moto_s3: str, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _world(s3)
    served = L.full_finetune(CORE, "acme", "full-sft")
    spec = flat_spec(
        engine="vllm",
        model=served.uri,
        instance_type="ml.g5.xlarge",
        name="sft",
        model_load="mount",  # the Mountpoint volume names the prefix
    )
    objects = render(spec, context=RenderContext(profile="test")).objects
    (volume,) = [o for o in objects if o["kind"] == "PersistentVolume"]
    _fake_kubectl(tmp_path, [volume])
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    before = everything(s3)
    discover = ["--discover", "--deployment-name", "bot-server"]
    code, report, err = _clean(capsys, moto_s3, "--yes", *discover)
    message = (
        f"--force: PersistentVolume default-sft-model mounts {served.uri}: the model it serves "
        f"is deleted by this clean (full-finetune {served.uri}) (fix: delete or re-point that "
        "deployment first, or pass --force)"
    )
    assert (code, report["status"], report["errors"]) == (1, "refused", [message])
    assert report["model_mounts"] == [
        {"object": "PersistentVolume default-sft-model", "uri": served.uri}
    ]
    assert err == f"mlcc: error: {message}\n"
    assert everything(s3) == before
    assert (tmp_path / "calls.log").read_text().splitlines() == [
        "get pods -n default -l app.kubernetes.io/name=bot-server -o json",
        "get persistentvolumes -o json",
        "get inferenceendpointconfigs --all-namespaces -o json",
        "get deployments --all-namespaces -o json",
    ]
    # another project's fine-tune in the cluster is no conflict of acme's clean
    volume["spec"]["mountOptions"] = [
        o if not o.startswith("prefix ") else f"prefix {L.full_finetune(CORE, 'acme2', 'x').key}"
        for o in volume["spec"]["mountOptions"]
    ]
    _fake_kubectl(tmp_path, [volume])
    code, report, err = _clean(capsys, moto_s3, "--yes", *discover)
    assert (code, report["status"]) == (0, "deleted")
    assert (
        "mlcc: warning: --discover found no Running pods in namespace default: not checked that "
        "no pod serves these adapters"
    ) in err
    assert [k for k in everything(s3) if _is_acme(k)] == []


def test_clean_refuses_while_a_deployment_streams_a_fine_tune(
    s3: Any, moto_s3: str, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed model has no PersistentVolume: its Deployment's annotation names it."""
    _world(s3)
    served = L.full_finetune(CORE, "acme", "full-sft")
    spec = flat_spec(engine="vllm", model=served.uri, instance_type="ml.g5.xlarge", name="sft")
    objects = render(spec, context=RenderContext(profile="test")).objects
    assert not [o for o in objects if o["kind"] == "PersistentVolume"]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    _fake_kubectl(tmp_path, [], [deployment])
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    before = everything(s3)
    code, report, _ = _clean(capsys, moto_s3, "--yes", "--discover", "--deployment-name", "x")
    assert (code, report["status"]) == (1, "refused")
    assert report["model_mounts"] == [{"object": "Deployment default/sft", "uri": served.uri}]
    assert report["errors"][0].startswith(
        f"--force: Deployment default/sft mounts {served.uri}: the model it serves is deleted"
    )
    assert everything(s3) == before


class _Interrupted(Exception):
    pass


class _FailingS3:
    """Wraps a client; the Nth DeleteObjects call (and every later one) fails."""

    def __init__(self, s3: Any, fail_at: int) -> None:
        self._s3, self._left = s3, fail_at

    def delete_objects(self, **kwargs: Any) -> Any:
        self._left -= 1
        if self._left <= 0:
            raise _Interrupted("connection lost")
        return self._s3.delete_objects(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s3, name)


@pytest.mark.parametrize("fail_at", [2, 6])
def test_an_interrupted_clean_is_consistent_and_a_rerun_finishes(
    s3: Any, moto_s3: str, capsys: Any, fail_at: int
) -> None:
    world = _world(s3)
    before = everything(s3)
    doomed = {k for k in before if _is_acme(k)}
    models = project_models(s3, CORE, [])
    facts = plan_project_clean(s3, core_bucket=CORE, project="acme", models=models)
    with pytest.raises(_Interrupted):
        execute_clean(_FailingS3(s3, fail_at), facts.plan)
    now = everything(s3)
    assert doomed & set(now)  # interrupted part-way
    assert {k: v for k, v in now.items() if k not in doomed} == {
        k: v for k, v in before.items() if k not in doomed
    }
    # consistent: every version or fine-tune that still has its record still has every file
    for promoted in (world["v1"], world["v2"], world["legal"], world["mistral"]):
        location = promoted.adapter.location
        if (CORE, L.record_location(location).key) in now:
            assert {k for k in before if k[1].startswith(location.key)} <= set(now)
    # a new promotion of a half-deleted version completes it (it is "incomplete", not "unchanged")
    for promoted, files in ((world["v1"], BOT_V1), (world["v2"], BOT_V2)):
        if (CORE, L.record_location(promoted.adapter.location).key) not in now:
            again = _promote(s3, "acme", "bot", files, "2026-04-01T00:00:00Z")
            assert again.status == "created"
    code, report, _ = _clean(capsys, moto_s3, "--yes")
    assert (code, report["status"]) == (0, "deleted")
    after = everything(s3)
    assert [k for k in after if _is_acme(k)] == []
    assert {k: v for k, v in after.items() if k in before} == {
        k: v for k, v in before.items() if k not in doomed
    }
    assert all(k[0] == ARTIFACTS for k in set(after) - set(before))  # the re-promotions' sources


def test_versioned_bucket_keeps_noncurrent_versions_unless_asked(
    moto_s3: str, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3 = s3_client(moto_s3, monkeypatch, versioned=True)
    _world(s3)

    def versions(prefix: L.S3Location) -> list[tuple[str, str, bool]]:
        answer = s3.list_object_versions(Bucket=prefix.bucket, Prefix=prefix.key)
        return sorted(
            [(v["Key"], v["VersionId"], False) for v in answer.get("Versions", [])]
            + [(m["Key"], m["VersionId"], True) for m in answer.get("DeleteMarkers", [])]
        )

    everyone = L.model_location(CORE, "models/")
    others_before = [v for v in versions(everyone) if not _is_acme((CORE, v[0]))]
    before = everything(s3)
    code, report, err = _clean(capsys, moto_s3, "--yes")
    assert code == 0
    objects = report["plan"]["objects"]
    assert report["bucket_versioning"] == {
        "versioning": "Enabled",
        "noncurrent_versions": 0,
        "delete_markers": 0,
        "noncurrent_after_clean": objects,
    }
    assert "stay as noncurrent versions (restorable, still billed)" in err
    acme = [v for p in _acme_prefixes() for v in versions(p)]
    assert len([v for v in acme if not v[2]]) == objects  # the bytes are still there
    assert len([v for v in acme if v[2]]) == objects  # behind one delete marker each
    assert everything(s3) == {k: v for k, v in before.items() if not _is_acme(k)}

    code, report, err = _clean(capsys, moto_s3, "--yes", "--delete-noncurrent")
    assert code == 0
    assert report["plan"]["objects"] == 0
    assert report["purged"] == {"versions": objects, "delete_markers": objects}
    assert [v for p in _acme_prefixes() for v in versions(p)] == []
    assert [v for v in versions(everyone) if not _is_acme((CORE, v[0]))] == others_before


# --- full fine-tunes --------------------------------------------------------------------


def _model_promote(capsys: Any, moto_s3: str, source: str, *extra: str) -> tuple[int, Any, str]:
    return run(
        capsys,
        "model",
        "promote",
        "full-sft",
        "--project",
        "acme",
        "--from",
        source,
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
        *extra,
    )


def test_model_promote_publishes_a_full_finetune_with_its_record(
    s3: Any, moto_s3: str, capsys: Any
) -> None:
    source = raw(s3, "full", FULL_MODEL)
    home = L.full_finetune(CORE, "acme", "full-sft")
    code, dry, _ = _model_promote(capsys, moto_s3, source, "--dry-run")
    assert (code, dry["status"], keys_under(s3, home)) == (0, "dry-run", [])
    code, promoted, err = _model_promote(capsys, moto_s3, source, "--technique", "sft")
    assert (code, err) == (0, "")
    assert (promoted["status"], promoted["uri"]) == ("created", home.uri)
    assert promoted["copied"] == sorted(FULL_MODEL)
    record = json.loads(
        s3.get_object(Bucket=CORE, Key=L.model_record_location(home).key)["Body"].read()
    )
    assert record == {
        "format": "mlcc-model/1",
        "project": "acme",
        "name": "full-sft",
        "content_hash": promoted["record"]["content_hash"],
        "source": {"uri": source, "job": None},
        "technique": "sft",
        "base_model": {"id": LLAMA, "revision": None},
        "created_by": promoted["record"]["created_by"],
        "created_at": promoted["record"]["created_at"],
    }
    # identical content: unchanged, nothing copied, the record kept
    code, again, _ = _model_promote(capsys, moto_s3, raw(s3, "full-again", FULL_MODEL))
    assert (code, again["status"], again["copied"]) == (0, "unchanged", [])
    assert again["record"] == record
    # other content under the taken name: refused, nothing overwritten
    changed = {**FULL_MODEL, "model.safetensors": b"other-weights"}
    before = everything(s3)
    code, out, err = _model_promote(capsys, moto_s3, raw(s3, "full-2", changed))
    assert code == 1
    assert out["ok"] is False and out["command"] == "model promote"
    assert err.startswith(
        f"mlcc: error: {home.uri}: full fine-tune full-sft already holds other content"
    )
    assert {k: v for k, v in everything(s3).items() if k[0] == CORE} == {
        k: v for k, v in before.items() if k[0] == CORE
    }


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        (
            {"adapter_config.json": b"{}", "adapter_model.safetensors": b"w"},
            (),
            "this is a LoRA adapter (adapter_config.json at the top), not a full model (fix: "
            "promote it with mlcc adapter promote)",
        ),
        ({"config.json": b"{}"}, (), "no model weights at the top of the source"),
        (
            {**FULL_MODEL, "config.json": b'{"_name_or_path": "/opt/ml/model"}'},
            (),
            "/base_model: the fine-tune's base model is unknown (got '/opt/ml/model'; fix: pass "
            "--base-model <org>/<name> (the Hugging Face id it was fine-tuned from))",
        ),
    ],
)
def test_model_promote_refusals(
    s3: Any,
    moto_s3: str,
    capsys: Any,
    files: dict[str, bytes],
    extra: tuple[str, ...],
    message: str,
) -> None:
    code, out, err = _model_promote(capsys, moto_s3, raw(s3, "bad", files), *extra)
    assert code == 1 and out["ok"] is False
    assert message in err
    assert keys_under(s3, L.models_root(CORE)) == []


def test_an_interrupted_model_promotion_is_completed(s3: Any, moto_s3: str, capsys: Any) -> None:
    home = L.full_finetune(CORE, "acme", "full-sft")
    upload(s3, home, {"config.json": FULL_MODEL["config.json"]})  # no record: interrupted
    code, promoted, _ = _model_promote(capsys, moto_s3, raw(s3, "full", FULL_MODEL))
    assert (code, promoted["copied"]) == (0, ["model.safetensors", "tokenizer.json"])
    upload(s3, L.full_finetune(CORE, "acme", "other"), {"stray.bin": b"x"})
    code, failed, err = run(
        capsys,
        "model",
        "promote",
        "other",
        "--project",
        "acme",
        "--from",
        raw(s3, "full", FULL_MODEL),
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
    )
    assert code == 1
    assert failed["ok"] is False
    assert "the fine-tune's home holds files that are not in the source" in err


def test_a_deployment_serves_a_full_finetune_and_adapters_refuse_it(
    s3: Any, moto_s3: str, capsys: Any
) -> None:
    home = L.full_finetune(CORE, "acme", "full-sft")
    code, out, _ = run(
        capsys,
        "render",
        "--engine",
        "vllm",
        "--model",
        home.uri,
        "--instance-type",
        "ml.g5.12xlarge",
        "--name",
        "full-sft",
        "--model-load",
        "mount",  # the Mountpoint volume names the prefix
        "--account",
        "123456789012",
        "--profile",
        "test",  # CORE's: another profile's bucket is refused
    )
    assert code == 0
    volume = next(o for o in yaml.safe_load_all(out) if o["kind"] == "PersistentVolume")
    assert f"prefix {home.key}" in volume["spec"]["mountOptions"]
    code, report, err = run(
        capsys,
        "adapter",
        "plan",
        "bot",
        "--project",
        "acme",
        "--from",
        raw(s3, "a", BOT_V1),
        "--model",
        home.uri,
        *BUCKET_ARGS,
        "--endpoint-url",
        moto_s3,
    )
    assert (code, report["ok"]) == (1, False)
    assert err == (
        "mlcc: error: /model: this deployment serves full fine-tune full-sft of project acme: "
        "a full fine-tune is not a base model, and adapters are delivered only to a deployment "
        f"of the base they were trained on (got '{home.uri}'; fix: deliver the adapter to a "
        "deployment of its Hugging Face base (s3://<core>/models/<org>/<base>/))\n"
    )
    with pytest.raises(MlccError, match="not a base model"):
        L.base_model("mlcc-acme/full-sft")
