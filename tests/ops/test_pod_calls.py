"""Pod calls taken at their word (stand-in pods on loopback): a redirect is a failure naming its
Location and is never followed, ``--timeout`` is a deadline for the whole call (a server
dripping its answer fails it), every failure says its reason, and a pod named twice is called
once. The hypothesis test throws arbitrary answers (status, redirects, slow and short bodies,
bad JSON) at the client: it never raises, and succeeds only on a 2xx."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mlcc_constructs.cli._inputs import normalised_pod_url, unique_pods
from mlcc_constructs.ops.pods import PodClient
from tests._adapter_env import BUCKET_ARGS, MODEL, FakePod, adapter_files, raw, run, s3_client

API = {"load": "/v1/load_lora_adapter", "unload": "/v1/unload_lora_adapter", "list": "/v1/models"}
Behaviour = Callable[[socket.socket, bytes], None]
"""What a stand-in pod does with a request (its raw bytes): writes its answer to the socket."""


def answer(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Behaviour:
    def send(sock: socket.socket, request: bytes) -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return send


def drip(status: int, body: bytes, every: float, *, in_headers: bool = False) -> Behaviour:
    """Send the answer one byte at a time, ``every`` seconds apart (the body, or everything)."""

    def send(sock: socket.socket, request: bytes) -> None:
        head = f"HTTP/1.1 {status} OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        slow = head + body if in_headers else body
        if not in_headers:
            sock.sendall(head)
        for byte in slow:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return  # the client gave up
            time.sleep(every)

    return send


class StandInPod:
    """A TCP server that reads one HTTP request per connection and runs ``behaviour``."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[bytes] = []
        pod = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(rest) < length:
                    rest += self.request.recv(65536)
                pod.requests.append(head.split(b"\r\n")[0])
                pod.behaviour(self.request, data)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in() -> Iterator[Callable[[Behaviour], StandInPod]]:
    started: list[StandInPod] = []

    def start(behaviour: Behaviour) -> StandInPod:
        started.append(StandInPod(behaviour))
        return started[-1]

    yield start
    for pod in started:
        pod.close()


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


# one row per answer: (id, behaviour, ok, what the reason says)
LOADS: list[tuple[str, Behaviour, bool, str]] = [
    ("200", answer(200, b"Success"), True, ""),
    ("204", answer(204), True, ""),
    ("302 to /health", answer(302, b"", {"Location": "/health"}), False, "redirected to /health"),
    ("303", answer(303, b"", {"Location": "http://x/y"}), False, "HTTP 303: redirected to"),
    ("307 without Location", answer(307), False, "redirected to (no Location)"),
    ("500", answer(500, b"  CUDA out of\nmemory  "), False, "HTTP 500: CUDA out of memory"),
    ("400 long body", answer(400, b"x" * 5000), False,
     "HTTP 400: the engine refused the load: " + "x" * 200 + "...; fix: "),
    ("404 on load", answer(404, b"no route"), False, "HTTP 404: no route"),
    ("dripped body", drip(200, b"Success" * 40, 0.02), False, "timed out: no complete answer"),
    ("dripped headers", drip(200, b"", 0.02, in_headers=True), False, "timed out"),
    ("not HTTP", lambda s, r: s.sendall(b"SSH-2.0-OpenSSH\r\n"), False, "not an HTTP answer"),
    ("closed at once", lambda s, r: None, False, "not an HTTP answer"),
    ("short body", lambda s, r: s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"),
     False, "IncompleteRead"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("behaviour", "ok", "reason"), [row[1:] for row in LOADS], ids=[row[0] for row in LOADS]
)
def test_a_load_is_ok_only_on_a_2xx_and_a_failure_says_why(
    stand_in: Callable[[Behaviour], StandInPod], behaviour: Behaviour, ok: bool, reason: str
) -> None:
    pod = stand_in(behaviour)
    result = PodClient(API, timeout=0.5).load(pod.url, "bot", "/opt/ml/model/x")
    assert result.ok is ok
    assert (result.reason == "") is ok
    assert reason in result.reason
    assert [r.split(b" ")[0] for r in pod.requests] == [b"POST"]  # never followed


# A refused load names its cause and the fix (core/adapters/load_refusal.py): the stand-in
# pods answer as vLLM and SGLang do.
VLLM_RUNTIME = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "true"}
FIX_400 = (
    "; fix: correct what the engine names (the adapter's rank against the pods' max LoRA rank, "
    "its target modules, its base model, its path in the pod), then run the command again"
)
REFUSED_LOADS: list[tuple[str, Behaviour, dict[str, str], str]] = [
    (
        "vllm without runtime updating",  # FastAPI's answer for a route it does not serve
        answer(404, b'{"detail":"Not Found"}'),
        VLLM_RUNTIME,
        'HTTP 404: {"detail":"Not Found"}; the pod serves no /v1/load_lora_adapter route: '
        "runtime adapter loading is off (the engine runs without "
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=true) or the engine build lacks the endpoint; fix: "
        "render the deployment with lora: true (it sets VLLM_ALLOW_RUNTIME_LORA_UPDATING=true, "
        "engine manifest adapter_api.runtime_env) and roll out its pods, or use an image whose "
        "engine serves /v1/load_lora_adapter",
    ),
    (
        "an engine that needs no switch",
        answer(404, b"{}"),
        {},
        "HTTP 404: {}; the pod serves no /v1/load_lora_adapter route: the engine build lacks "
        "the endpoint; fix: use an image whose engine serves /v1/load_lora_adapter",
    ),
    (
        "vllm error, top-level message",
        answer(400, json.dumps({"object": "error", "message": "LoRA rank 64 is greater than "
               "max_lora_rank 16.", "type": "BadRequestError", "code": 400}).encode()),
        VLLM_RUNTIME,
        "HTTP 400: the engine refused the load: LoRA rank 64 is greater than max_lora_rank 16."
        + FIX_400,
    ),
    (
        "vllm error, nested",
        answer(400, json.dumps({"error": {"message": "The lora adapter 'bot' has already "
               "been loaded.", "type": "InvalidUserInput", "code": 400}}).encode()),
        VLLM_RUNTIME,
        "HTTP 400: the engine refused the load: The lora adapter 'bot' has already been "
        "loaded." + FIX_400,
    ),
    (
        "sglang error",
        answer(400, json.dumps({"success": False, "error_message": "LoRA is not enabled"})
               .encode()),
        {},
        "HTTP 400: the engine refused the load: LoRA is not enabled" + FIX_400,
    ),
    (
        "400 with no body",
        answer(400),
        VLLM_RUNTIME,
        "HTTP 400: the engine refused the load: (no message)" + FIX_400,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("behaviour", "runtime_env", "reason"),
    [row[1:] for row in REFUSED_LOADS],
    ids=[row[0] for row in REFUSED_LOADS],
)
def test_a_refused_load_names_its_cause_and_the_fix(
    stand_in: Callable[[Behaviour], StandInPod],
    behaviour: Behaviour,
    runtime_env: dict[str, str],
    reason: str,
) -> None:
    pod = stand_in(behaviour)
    client = PodClient(API, timeout=1, runtime_env=runtime_env)
    result = client.load(pod.url, "bot", "/opt/ml/model/x")
    assert (result.ok, result.reason) == (False, reason)
    unloaded = client.unload(pod.url, "bot")  # an unload's 404 stays "not loaded": done
    assert unloaded.ok is (unloaded.status == 404)


def test_an_unload_of_an_adapter_not_loaded_is_done(
    stand_in: Callable[[Behaviour], StandInPod],
) -> None:
    pod = stand_in(answer(404, b"not found"))
    result = PodClient(API, timeout=1).unload(pod.url, "bot")
    assert (result.ok, result.status, result.reason) == (True, 404, "")


def test_a_pod_that_does_not_answer_says_connection_failed() -> None:
    result = PodClient(API, timeout=1).load(_closed_port(), "bot", "/p")
    assert (result.ok, result.status) == (False, None)
    assert result.reason.startswith("connection failed: ")


MODEL_LISTS: list[tuple[str, Behaviour, bool, str]] = [
    ("a list", answer(200, json.dumps({"data": [{"id": "m"}]}).encode()), True, ""),
    ("not JSON", answer(200, b"<html>login</html>"), False, "HTTP 200: not JSON: <html>login"),
    ("no data", answer(200, b'{"models": []}'), False, "no 'data' list"),
    ("not UTF-8", answer(200, b"\xff\xfe"), False, "not JSON"),
    ("redirect", answer(301, b"", {"Location": "/login"}), False, "redirected to /login"),
    ("dripped", drip(200, b'{"data": []}' * 20, 0.02), False, "timed out"),
]


@pytest.mark.parametrize(
    ("behaviour", "ok", "detail"),
    [row[1:] for row in MODEL_LISTS],
    ids=[row[0] for row in MODEL_LISTS],
)
def test_a_model_list_is_taken_only_when_it_is_one(
    stand_in: Callable[[Behaviour], StandInPod], behaviour: Behaviour, ok: bool, detail: str
) -> None:
    pod = stand_in(behaviour)
    models = PodClient(API, timeout=0.5).models(pod.url)
    assert models.ok is ok
    assert detail in models.detail


# --- a pod named twice is called once ----------------------------------------------------


@pytest.mark.parametrize(
    ("urls", "pods", "warned"),
    [
        (["http://a:8000", "http://b:8000"], ["http://a:8000", "http://b:8000"], 0),
        (["http://a:8000", "http://a:8000"], ["http://a:8000"], 1),
        (["http://a:8000", "http://A:8000/"], ["http://a:8000"], 1),
        (["http://a", "http://a:80", "HTTP://a/"], ["http://a"], 2),
        (["https://a", "https://a:443", "http://a:443"], ["https://a", "http://a:443"], 1),
        (["http://[::1]:8000", "http://[::1]:8000/"], ["http://[::1]:8000"], 1),
        (["http://a:8000", "http://a:8001"], ["http://a:8000", "http://a:8001"], 0),
    ],
)
def test_unique_pods(urls: list[str], pods: list[str], warned: int) -> None:
    found, warnings = unique_pods(urls)
    assert (found, len(warnings)) == (pods, warned)
    assert len({normalised_pod_url(u) for u in urls}) == len(pods)


def test_a_repeated_pod_url_loads_once(
    moto_s3: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    s3 = s3_client(moto_s3, monkeypatch)
    pod = FakePod()
    try:
        code, report, err = run(
            capsys, "adapter", "add", "bot", "--project", "acme",
            "--from", raw(s3, "job-1", adapter_files()), "--model", MODEL.uri,
            "--pod-url", pod.url, "--pod-url", pod.url + "/", *BUCKET_ARGS,
            "--endpoint-url", moto_s3,
        )  # fmt: skip
    finally:
        pod.close()
    assert code == 0
    assert [c[0] for c in pod.calls] == ["POST"]
    assert [p["pod"] for p in report["pods"]] == [pod.url]
    assert f"mlcc: warning: pod {pod.url}/ given more than once (the same pod as {pod.url})" in err


def test_each_failing_pod_says_why_on_stderr(
    moto_s3: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    stand_in: Callable[[Behaviour], StandInPod],
) -> None:
    s3 = s3_client(moto_s3, monkeypatch)
    redirecting = stand_in(answer(302, b"", {"Location": "/health"}))
    dead = _closed_port()
    code, report, err = run(
        capsys, "adapter", "add", "bot", "--project", "acme",
        "--from", raw(s3, "job-1", adapter_files()), "--model", MODEL.uri,
        "--pod-url", redirecting.url, "--pod-url", dead, "--timeout", "2", *BUCKET_ARGS,
        "--endpoint-url", moto_s3,
    )  # fmt: skip
    assert code == 1
    assert report["failed_pods"] == sorted([redirecting.url, dead])
    lines = [line for line in err.splitlines() if line.startswith("mlcc:")]
    assert (
        f"mlcc: error: pod {redirecting.url} failed: load: HTTP 302: redirected to /health"
        in (lines[0])
    )
    assert lines[1].startswith(f"mlcc: error: pod {dead} failed: load: connection failed: ")


@pytest.mark.parametrize(
    ("engine", "status", "body", "cause"),
    [
        (
            "vllm", 404, b'{"detail":"Not Found"}',
            'load: HTTP 404: {"detail":"Not Found"}; the pod serves no /v1/load_lora_adapter '
            "route: runtime adapter loading is off (the engine runs without "
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING=true) or the engine build lacks the endpoint; fix: "
            "render the deployment with lora: true (it sets "
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING=true, engine manifest adapter_api.runtime_env) and "
            "roll out its pods, or use an image whose engine serves /v1/load_lora_adapter",
        ),
        (
            "sglang", 400, b'{"success": false, "error_message": "LoRA is not enabled"}',
            "load: HTTP 400: the engine refused the load: LoRA is not enabled" + FIX_400,
        ),
    ],
)  # fmt: skip
def test_adapter_add_names_why_a_pod_refused_the_load(
    moto_s3: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    engine: str,
    status: int,
    body: bytes,
    cause: str,
) -> None:
    s3 = s3_client(moto_s3, monkeypatch)
    pod = FakePod(status=status, body=body)
    try:
        code, report, err = run(
            capsys, "adapter", "add", "bot", "--project", "acme", "--engine", engine,
            "--from", raw(s3, "job-1", adapter_files()), "--model", MODEL.uri,
            "--pod-url", pod.url, *BUCKET_ARGS, "--endpoint-url", moto_s3,
        )  # fmt: skip
    finally:
        pod.close()
    assert code == 1
    assert report["failed_pods"] == [pod.url]
    assert err.splitlines() == [f"mlcc: error: pod {pod.url} failed: {cause}"]


# --- fuzzing the answers -------------------------------------------------------------------


class _Fuzzed:
    """One stand-in pod for every example; its next answer is set per example."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = answer(200)
        self.pod = StandInPod(lambda s, r: self.behaviour(s, r))


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[_Fuzzed]:
    server = _Fuzzed()
    yield server
    server.pod.close()


ANSWERS = st.fixed_dictionaries(
    {
        "status": st.one_of(st.integers(100, 599), st.sampled_from([200, 301, 302, 307, 308])),
        "body": st.binary(max_size=300) | st.sampled_from([b'{"data": []}', b"{", b"\xff"]),
        "location": st.none() | st.sampled_from(["/health", "http://evil/", ""]),
        "cut": st.none() | st.integers(0, 40),
        "drip": st.booleans(),
    }
)


def _fuzzed_behaviour(spec: dict[str, Any]) -> Behaviour:
    def send(sock: socket.socket, request: bytes) -> None:
        body = spec["body"]
        head = f"HTTP/1.1 {spec['status']} X\r\nContent-Length: {len(body)}\r\n"
        if spec["location"] is not None:
            head += f"Location: {spec['location']}\r\n"
        data = (head + "\r\n").encode() + body
        if spec["cut"] is not None:
            data = data[: spec["cut"]]  # the pod dies mid-answer
        try:
            if spec["drip"]:
                for byte in data[:20]:
                    sock.sendall(bytes([byte]))
                    time.sleep(0.02)
                data = data[20:]
            sock.sendall(data)
        except OSError:
            return  # the client gave up (its deadline)

    return send


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=ANSWERS, action=st.sampled_from(["load", "unload", "models"]))
def test_any_answer_is_a_result_never_a_traceback(
    fuzzed: _Fuzzed, spec: dict[str, Any], action: str
) -> None:
    fuzzed.behaviour = _fuzzed_behaviour(spec)
    # A dripped answer takes 0.4 s: past a 0.2 s deadline, whatever the load. An answer sent at
    # once gets 2 s, so a loaded machine cannot turn it into a timeout (it was flaky at 0.2 s).
    client = PodClient(API, timeout=0.2 if spec["drip"] else 2.0)
    url = fuzzed.pod.url
    whole = spec["cut"] is None and not spec["drip"]
    status = spec["status"]
    if action == "models":
        models = client.models(url)
        assert models.ok is (models.detail == "")
        if models.ok:
            assert 200 <= status < 300 and whole
        return
    result = client.load(url, "bot", "/p") if action == "load" else client.unload(url, "bot")
    assert result.ok is (result.reason == "")
    if result.ok:
        assert 200 <= status < 300 or (action == "unload" and status == 404)
        assert spec["cut"] is None or spec["cut"] >= len(spec["body"])
    elif whole and status >= 200:
        ok_statuses = (404,) if action == "unload" else ()
        assert not (200 <= status < 300) and status not in ok_statuses
        assert result.reason.startswith(f"HTTP {status}")
