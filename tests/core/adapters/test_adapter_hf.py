"""Hugging Face adapter sources (``--from hf://<org>/<repo>[@revision]``) against a loopback
fake of the Hub's file API (``HF_ENDPOINT`` points at it) and loopback S3 (moto). Every name
resolution is checked: nothing in these tests may reach a host other than 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from mlcc_constructs.core.adapters import path_names, s3_layout as L
from mlcc_constructs.core.adapters.record import hash_bytes
from tests._adapter_env import (
    BUCKET_ARGS,
    CORE,
    LLAMA,
    MODEL,
    FakePod,
    adapter_files,
    everything,
    run,
    s3_client,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
FILES = adapter_files(r=8, weights=b"hub-weights")
REPO_FILES = {
    **FILES,
    "README.md": b"# bot\n",
    ".gitattributes": b"*.safetensors filter=lfs\n",
    "checkpoint-500/adapter_model.safetensors": b"an older checkpoint",
}
ADAPTER = {n: b for n, b in REPO_FILES.items() if "/" not in n and n != ".gitattributes"}
VERSION = path_names.version_id(hash_bytes(ADAPTER))


class FakeHub:
    """The Hub endpoints ``huggingface_hub`` uses: the model API (files of a revision, its
    commit) and ``resolve`` (HEAD for metadata, GET for bytes). A repository may answer an
    error status with the Hub's ``X-Error-Code`` header instead."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str | None]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def route(self, send_body: bool) -> None:
                path = unquote(self.path.split("?")[0])
                hub.calls.append((self.command, path, self.headers.get("authorization")))
                if path.startswith("/api/models/"):
                    repo_id, _, revision = path.removeprefix("/api/models/").partition("/revision/")
                    repo = hub.repos.get(repo_id)
                    if repo is None:
                        return self.error(404, "RepoNotFound")
                    if repo.get("error"):
                        return self.error(*repo["error"])
                    if revision not in ("", "main", repo["sha"]):
                        return self.error(404, "RevisionNotFound")
                    files = [{"rfilename": name} for name in repo["files"]]
                    body = json.dumps({"id": repo_id, "sha": repo["sha"], "siblings": files})
                    return self.answer(body.encode(), send_body, {})
                parts = path.lstrip("/").split("/")
                repo = hub.repos.get("/".join(parts[:2]))
                if len(parts) < 5 or parts[2] != "resolve" or repo is None:
                    return self.error(404, "EntryNotFound")
                body = repo["files"]["/".join(parts[4:])]
                etag = hashlib.sha256(body).hexdigest()
                headers = {"X-Repo-Commit": repo["sha"], "ETag": f'"{etag}"'}
                return self.answer(body, send_body, headers)

            def answer(self, body: bytes, send_body: bool, headers: dict[str, str]) -> None:
                self.send_response(200)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

            def error(self, status: int, code: str | None) -> None:
                body = b'{"error": "no"}'
                self.send_response(status)
                if code:
                    self.send_header("X-Error-Code", code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self.route(True)

            def do_HEAD(self) -> None:
                self.route(False)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def downloads(self) -> list[str]:
        return [path for method, path, _ in self.calls if "/resolve/" in path and method == "GET"]


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse (and record) every name resolution of a host other than the loopback."""
    refused: list[str] = []
    resolve = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "localhost", "::1"):
            refused.append(str(host))
            raise OSError(f"test: no network outside the loopback ({host})")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    return refused


@pytest.fixture
def hub(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, loopback_only: list[str]
) -> Iterator[FakeHub]:
    from huggingface_hub import constants

    fake = FakeHub()
    fake.repos["org/bot"] = {"sha": SHA, "files": REPO_FILES}
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    # huggingface_hub read its settings when it was imported (maybe by an earlier test): its
    # own side request (the agent registry it fetches once a day from the import-time
    # endpoint) is answered by a fresh cached copy, the token file by none
    agents = tmp_path / "agents.json"
    agents.write_text(json.dumps({"standardEnvVars": [], "harnesses": {}}))
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(agents))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    yield fake
    fake.server.shutdown()
    fake.server.server_close()
    assert loopback_only == []


@pytest.fixture
def s3(moto_s3: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    return s3_client(moto_s3, monkeypatch)


def _promote(capsys: Any, moto_s3: str, source: str) -> tuple[int, Any, str]:
    return run(
        capsys, "adapter", "promote", "bot", "--project", "acme", "--from", source,
        *BUCKET_ARGS, "--endpoint-url", moto_s3,
    )  # fmt: skip


def _core(s3: Any) -> dict[tuple[str, str], bytes]:
    return {k: v for k, v in everything(s3).items() if k[0] == CORE}


def test_promote_from_hugging_face(s3: Any, moto_s3: str, hub: FakeHub, capsys: Any) -> None:
    code, promoted, err = _promote(capsys, moto_s3, "hf://org/bot")
    assert (code, err) == (0, "")
    home = L.canonical_adapter_home(CORE, L.base_model(LLAMA), "acme", "bot")
    version = L.adapter_version(home, VERSION)
    assert (promoted["status"], promoted["uri"]) == ("created", version.uri)
    assert promoted["copied"] == sorted(ADAPTER)  # the loose top-level files, not git's
    stored = _core(s3)
    assert {k: v for k, v in stored.items() if not k[1].endswith(L.ADAPTER_RECORD)} == {
        (CORE, version.key + name): body for name, body in ADAPTER.items()
    }
    record = json.loads(stored[(CORE, L.record_location(version).key)])
    assert record["source"] == {"uri": f"hf://org/bot@{SHA}", "job": None}  # the commit
    assert (record["rank"]["r"], record["base_model"]["id"]) == (8, LLAMA)
    assert "checkpoint-500/adapter_model.safetensors" not in "".join(hub.downloads())
    # the same files again (a branch or the commit): the same version, nothing copied
    for source in ("hf://org/bot@main", f"hf://org/bot@{SHA}"):
        code, again, _ = _promote(capsys, moto_s3, source)
        assert (code, again["status"], again["copied"]) == (0, "unchanged", [])
    assert _core(s3) == stored


def test_hf_token_is_sent(
    s3: Any, moto_s3: str, hub: FakeHub, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    code, _, _ = _promote(capsys, moto_s3, "hf://org/bot")
    assert code == 0
    assert {auth for _, path, auth in hub.calls if "org/bot" in path} == {"Bearer hf_secret"}


def test_add_from_hugging_face_loads_on_every_pod(
    s3: Any, moto_s3: str, hub: FakeHub, capsys: Any
) -> None:
    pod = FakePod()
    try:
        code, report, err = run(
            capsys, "adapter", "add", "bot", "--project", "acme", "--from", "hf://org/bot",
            "--model", MODEL.uri, *BUCKET_ARGS, "--endpoint-url", moto_s3, "--pod-url", pod.url,
        )  # fmt: skip
    finally:
        pod.close()
    assert (code, err) == (0, "")
    assert report["source_kind"] == "huggingface"
    path = f"/opt/ml/model/.mlcc-adapters/acme/bot/{VERSION}"
    assert report["path"] == path
    assert pod.calls == [("POST", "/v1/load_lora_adapter", {"lora_name": "bot", "lora_path": path})]
    # planned, then promoted: each adapter file is fetched from the Hub once
    assert sorted(hub.downloads()) == sorted(f"/org/bot/resolve/{SHA}/{n}" for n in ADAPTER)


GATED_FIX = (
    "fix: accept the repository's terms on its Hub page with the account whose token is in "
    "HF_TOKEN, or use a token that has access"
)
MISSING_FIX = (
    "fix: check the repository id; for a private repository set HF_TOKEN to a token that can "
    "read it"
)


@pytest.mark.parametrize(
    ("source", "error", "message"),
    [
        (
            "hf://org/gated",
            (401, "GatedRepo"),
            "hf://org/gated: the Hugging Face repository org/gated is gated and this token may "
            f"not read it (HTTP 401; HF_TOKEN is not set) ({GATED_FIX})",
        ),
        (
            "hf://org/gated",
            (403, "GatedRepo"),
            "hf://org/gated: the Hugging Face repository org/gated is gated and this token may "
            f"not read it (HTTP 403; HF_TOKEN is not set) ({GATED_FIX})",
        ),
        (
            "hf://org/gated",
            (403, None),
            "hf://org/gated: the Hugging Face repository org/gated is gated and this token may "
            f"not read it (HTTP 403; HF_TOKEN is not set) ({GATED_FIX})",
        ),
        (
            "hf://org/private",
            (401, None),
            "hf://org/private: the Hugging Face repository org/private does not exist, or it is "
            f"private and this token may not read it (HTTP 401; HF_TOKEN is not set) "
            f"({MISSING_FIX})",
        ),
        (
            "hf://org/missing",
            None,
            "hf://org/missing: the Hugging Face repository org/missing does not exist, or it is "
            f"private and this token may not read it (HTTP 404; HF_TOKEN is not set) "
            f"({MISSING_FIX})",
        ),
        (
            "hf://org/bot@v9",
            None,
            "hf://org/bot@v9: the Hugging Face repository org/bot has no revision 'v9' (HTTP "
            "404) (fix: name an existing branch, tag or commit after '@', or none for the "
            "default branch)",
        ),
    ],
)
def test_gated_private_and_missing_repositories_are_clear_errors(
    s3: Any,
    moto_s3: str,
    hub: FakeHub,
    capsys: Any,
    source: str,
    error: tuple[int, str | None] | None,
    message: str,
) -> None:
    if error is not None:
        repo_id = source.removeprefix("hf://")
        hub.repos[repo_id] = {"sha": SHA, "files": REPO_FILES, "error": error}
    before = everything(s3)
    code, report, err = _promote(capsys, moto_s3, source)
    assert (code, err) == (1, f"mlcc: error: {message}\n")
    assert report == {"command": "adapter promote", "ok": False, "errors": [message]}
    assert everything(s3) == before  # nothing written
    assert hub.downloads() == []  # nothing downloaded either


def test_a_repository_without_an_adapter_is_refused_before_any_download(
    s3: Any, moto_s3: str, hub: FakeHub, capsys: Any
) -> None:
    hub.repos["org/model"] = {"sha": SHA, "files": {"config.json": b"{}", "README.md": b""}}
    code, report, err = _promote(capsys, moto_s3, "hf://org/model")
    assert code == 1
    assert err.splitlines() == [
        "mlcc: error: hf://org/model: no adapter_config.json at the top of the source (got "
        "['README.md', 'config.json']; fix: point at the PEFT adapter folder (e.g. the job's "
        "checkpoints/hf/))",
        "mlcc: error: hf://org/model: no adapter weights at the top of the source (allowed: "
        "adapter_model.safetensors or adapter_model.bin)",
    ]
    assert len(report["errors"]) == 2
    assert hub.downloads() == []
    assert _core(s3) == {}


def test_an_unreachable_hub_is_a_clear_error(
    s3: Any, moto_s3: str, hub: FakeHub, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", closed)
    code, report, err = _promote(capsys, moto_s3, "hf://org/bot")
    assert code == 1
    assert err.startswith(
        f"mlcc: error: hf://org/bot: cannot reach the Hugging Face Hub at {closed}: "
    )
    assert err.endswith("(fix: check the network, or HF_ENDPOINT for a mirror)\n")
    assert report["ok"] is False
    assert _core(s3) == {}


def test_the_latest_download_is_reused_and_an_older_one_deleted(hub: FakeHub) -> None:
    from mlcc_constructs.core.adapters.hf_source import parse_hf_source
    from mlcc_constructs.ops.hf_hub import HubSource

    other = {**FILES, "adapter_model.safetensors": b"other-weights"}
    hub.repos["org/other"] = {"sha": "f" * 40, "files": other}
    first = HubSource(parse_hf_source("hf://org/bot"))
    again = HubSource(parse_hf_source(f"hf://org/bot@{SHA}"))  # the same commit
    assert again.read("adapter_model.safetensors") == b"hub-weights"
    assert len(hub.downloads()) == len(ADAPTER)  # fetched once
    folder = Path(first._download.folder.name)
    assert folder.is_dir()
    moved = HubSource(parse_hf_source("hf://org/other"))
    assert moved.read("adapter_model.safetensors") == b"other-weights"
    assert moved.files["adapter_model.safetensors"] == hashlib.sha256(b"other-weights").hexdigest()
    assert not folder.exists()  # one adapter on disk at a time
