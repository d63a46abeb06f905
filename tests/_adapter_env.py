"""Helpers shared by the adapter lifecycle tests: a loopback S3 client (moto), a serving pod
stand-in with the engine's LoRA and model-list endpoints, byte-for-byte bucket snapshots,
and a runner for ``mlcc``."""

from __future__ import annotations

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mlcc_constructs.cli import main
from mlcc_constructs.core.adapters import path_names, s3_layout as L
from mlcc_constructs.core.adapters.record import hash_bytes
from mlcc_constructs.core.platform.buckets import bucket_names

ENV = {"account": "123456789012", "region": "us-east-1", "profile": "test"}
BUCKETS = bucket_names(**ENV)
CORE, ARTIFACTS = BUCKETS["core"], BUCKETS["artifacts"]
BUCKET_ARGS = ["--account", ENV["account"], "--region", ENV["region"], "--profile", "test"]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
MODEL = L.base_model_location(CORE, L.base_model(LLAMA))


def adapter_files(r: int = 16, weights: bytes = b"w1", base: str = LLAMA) -> dict[str, bytes]:
    """A minimal PEFT adapter folder."""
    config = {"peft_type": "LORA", "r": r, "target_modules": ["q_proj", "v_proj"]}
    config["base_model_name_or_path"] = base
    return {
        "adapter_config.json": json.dumps(config).encode(),
        "adapter_model.safetensors": weights,
    }


def version_of(files: dict[str, bytes]) -> str:
    return path_names.version_id(hash_bytes(files))


def s3_client(endpoint: str, monkeypatch: pytest.MonkeyPatch, *, versioned: bool = False) -> Any:
    """A fresh loopback S3 (moto reset) with the core and artifacts buckets."""
    import boto3  # type: ignore[import-untyped]

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    for bucket in (CORE, ARTIFACTS):
        client.create_bucket(Bucket=bucket)
        if versioned:
            client.put_bucket_versioning(
                Bucket=bucket, VersioningConfiguration={"Status": "Enabled"}
            )
    return client


def upload(s3: Any, prefix: L.S3Location, files: dict[str, bytes]) -> str:
    for name, body in files.items():
        s3.put_object(Bucket=prefix.bucket, Key=prefix.key + name, Body=body)
    return prefix.uri


def raw(s3: Any, job: str, files: dict[str, bytes], project: str = "acme") -> str:
    """Upload ``files`` as a job's raw output; returns its prefix URI."""
    return upload(s3, L.job_output(ARTIFACTS, project, "tune", job, "checkpoints", "hf"), files)


def everything(s3: Any) -> dict[tuple[str, str], bytes]:
    """Every object of both buckets, byte for byte."""
    found = {}
    for bucket in (CORE, ARTIFACTS):
        paginator = s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                body = s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
                found[(bucket, item["Key"])] = body
    return found


def keys_under(s3: Any, prefix: L.S3Location) -> list[str]:
    listed = s3.list_objects_v2(Bucket=prefix.bucket, Prefix=prefix.key).get("Contents", [])
    return sorted(item["Key"] for item in listed)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """``mlcc ARGV``: exit code, stdout parsed as JSON (raw text when it is not), stderr."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # a usage error: argparse exits (2)
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    try:
        parsed: Any = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        parsed = out
    return code, parsed, err


class FakePod:
    """A serving pod: records LoRA calls, answers them with ``status`` (and ``body``), and
    the model list with ``models``."""

    def __init__(
        self,
        models: list[dict[str, Any]] | None = None,
        status: int = 200,
        api_key: str | None = None,
        body: bytes | None = None,
    ) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.models = models or []
        self.status = status
        self.body = body  # a LoRA call's answer (default: "Success" on 200, else "boom")
        self.api_key = api_key  # an engine started with an API key: 401 without it
        pod = self

        class Handler(BaseHTTPRequestHandler):
            def _refused(self) -> bool:
                if pod.api_key is None or self.headers.get("Authorization") == (
                    f"Bearer {pod.api_key}"
                ):
                    return False
                pod.calls.append(("401", self.path, None))
                self.send_response(401)
                self.end_headers()
                self.wfile.write(b'{"error": "Unauthorized"}')
                return True

            def do_GET(self) -> None:
                if self._refused():
                    return
                pod.calls.append(("GET", self.path, None))
                body = json.dumps({"object": "list", "data": pod.models}).encode()
                self.send_response(pod.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self._refused():
                    return
                pod.calls.append(("POST", self.path, json.loads(body)))
                self.send_response(pod.status)
                self.end_headers()
                default = b"Success" if pod.status == 200 else b"boom"
                self.wfile.write(default if pod.body is None else pod.body)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll: shutdown() waits for it, once per test
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def serving(self, lora_name: str, path: str) -> FakePod:
        """Report ``lora_name`` loaded from ``path`` (as vLLM's /v1/models does)."""
        self.models.append({"id": lora_name, "object": "model", "root": path, "parent": LLAMA})
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
