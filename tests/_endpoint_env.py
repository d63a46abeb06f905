"""Stand-ins for ``mlcc endpoint check``: a loopback OpenAI-compatible server (HTTP, or HTTPS
with a certificate made at test time) whose every answer a test can bend, and a fake
``kubectl`` on PATH answering canned objects."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

KEY = "sk-test-0123456789abcdef"
KEY_ENV = "MLCC_TEST_API_KEY"


def make_certificate(folder: Path, name: str = "ca") -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (as the inference operator makes one), and its
    key: ``(cert.pem, key.pem)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"mlcc-test-{name}")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}-key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def chunk(content: str | None = None, *, role: bool = False) -> dict[str, Any]:
    """One ``chat.completion.chunk`` (a role-only first chunk has empty content)."""
    delta: dict[str, Any] = {"role": "assistant", "content": ""} if role else {}
    if content is not None:
        delta["content"] = content
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "llama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


@dataclass
class Behaviour:
    """How the stand-in answers; a test changes what it needs."""

    models: list[str] = field(default_factory=lambda: ["llama", "sql"])
    key: str | None = KEY
    models_delay: float = 0.0
    models_body: str | None = None
    models_drip: float = 0.0  # seconds between the bytes of the model list
    redirect: tuple[int, str] | None = None
    chat_models: set[str] | None = None  # None: every listed model
    content_type: str = "text/event-stream"
    first_token_delay: float = 0.0
    pieces: list[str] = field(default_factory=lambda: ["Ready", "."])
    events: list[str] | None = None  # raw data lines instead of pieces
    ending: str = "done"  # done | close | hang
    line_drip: float = 0.0  # after the first token: one event sent a byte at a time, this apart


class StandIn:
    """A loopback OpenAI-compatible server; ``requests`` records what it received."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.behaviour = Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()  # ends every wait at close
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _json(self, status: int, document: Any) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _authorised(self) -> bool:
                b = stand_in.behaviour
                presented = self.headers.get("Authorization")
                if b.key is None or presented == f"Bearer {b.key}":
                    return True
                # like a proxy that echoes what it was sent: the check must redact it
                self._json(401, {"error": f"Unauthorized (got {presented or 'no key'})"})
                return False

            def _wait(self, seconds: float) -> None:
                if seconds:
                    stand_in.release.wait(seconds)

            def do_GET(self) -> None:
                stand_in.requests.append({"method": "GET", "path": self.path, **self._seen()})
                b = stand_in.behaviour
                if b.redirect is not None:
                    self.send_response(b.redirect[0])
                    self.send_header("Location", b.redirect[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self._wait(b.models_delay)
                if not self._authorised():
                    return
                if self.path != "/v1/models":
                    self._json(404, {"detail": "Not Found"})
                    return
                if b.models_body is not None:
                    body = b.models_body.encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                data = [{"id": m, "object": "model", "owned_by": "vllm"} for m in b.models]
                if b.models_drip:
                    self._drip(json.dumps({"object": "list", "data": data}).encode())
                    return
                self._json(200, {"object": "list", "data": data})

            def _drip(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for index in range(len(body)):
                    try:
                        self.wfile.write(body[index : index + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up at its deadline, as it should
                        return
                    if stand_in.release.wait(stand_in.behaviour.models_drip):
                        return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                seen = {"method": "POST", "path": self.path, "body": body, **self._seen()}
                stand_in.requests.append(seen)
                b = stand_in.behaviour
                if not self._authorised():
                    return
                known = b.models if b.chat_models is None else b.chat_models
                if body.get("model") not in known:
                    message = f"The model `{body.get('model')}` does not exist."
                    self._json(404, {"error": {"message": message, "type": "NotFoundError"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", b.content_type)
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                if b.content_type != "text/event-stream":
                    self.wfile.write(json.dumps({"choices": []}).encode())
                    return
                self._event(json.dumps(chunk(role=True)))
                self._wait(b.first_token_delay)
                lines = (
                    b.events if b.events is not None else [json.dumps(chunk(p)) for p in b.pieces]
                )
                for line in lines:
                    self._event(line)
                if b.line_drip:
                    self._drip_event(json.dumps(chunk("slow" * 50)), b.line_drip)
                if b.ending == "done":
                    self._event("[DONE]")
                elif b.ending == "hang":
                    self._wait(5)

            def _drip_event(self, data: str, every: float) -> None:
                for byte in f"data: {data}\n\n".encode():
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the client gave up at its deadline, as it should
                        return
                    if stand_in.release.wait(every):
                        return

            def _event(self, data: str) -> None:
                self.wfile.write(f"data: {data}\n\n".encode())
                self.wfile.flush()

            def _seen(self) -> dict[str, Any]:
                return {"authorization": self.headers.get("Authorization")}

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that gave up at its deadline (reset, broken pipe) is what a test
                # of deadlines wants: no traceback on the test's stderr.
                if isinstance(sys.exc_info()[1], ConnectionError):
                    return
                super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        if context is not None:
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"{'https' if context else 'http'}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


_FAKE_KUBECTL = """\
import json, sys
folder = {folder!r}
argv = sys.argv[1:]
with open(folder + "/calls.jsonl", "a") as log:
    log.write(json.dumps(argv) + "\\n")
answers = json.load(open(folder + "/answers.json"))
answer = answers.get(" ".join(argv))
if answer is None:
    sys.stderr.write("fake kubectl: no answer for " + " ".join(argv))
    sys.exit(2)
if answer.get("stdout") is not None:
    print(json.dumps(answer["stdout"]))
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("code", 0))
"""


class FakeKubectl:
    """``kubectl`` on PATH: each argv (joined by spaces) answers canned JSON."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.answers: dict[str, dict[str, Any]] = {}
        self._write()
        script = folder / "kubectl"
        script.write_text(f"#!{sys.executable} -S\n" + _FAKE_KUBECTL.format(folder=str(folder)))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def _write(self) -> None:
        (self.folder / "answers.json").write_text(json.dumps(self.answers))

    def answer(self, argv: str, stdout: Any = None, *, code: int = 0, stderr: str = "") -> None:
        self.answers[f"{argv} -o json"] = {"stdout": stdout, "code": code, "stderr": stderr}
        self._write()

    def calls(self) -> list[str]:
        path = self.folder / "calls.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [" ".join(json.loads(line)) for line in lines]


def ingress(
    name: str,
    *,
    hostname: str | None = "127.0.0.1",
    annotations: dict[str, str] | None = None,
    owner: dict[str, str] | None = None,
    namespace: str = "inference",
) -> dict[str, Any]:
    """A live Ingress (an address once the load balancer exists)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    if owner:
        metadata["ownerReferences"] = [owner]
    status = {"loadBalancer": {"ingress": [{"hostname": hostname}] if hostname else []}}
    rule = {"http": {"paths": [{"path": "/", "pathType": "Prefix"}]}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": metadata,
        "spec": {"ingressClassName": "alb", "rules": [rule]},
        "status": status,
    }


def elapsed_ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000
