"""The streaming load, for real and without a GPU: a small safetensors file on loopback S3
(moto's server), read by the real Run:ai Model Streamer (``runai-model-streamer[s3]``, the
package vLLM 0.31.0's ``runai_streamer`` load format uses: its ``vllm[runai]`` extra requires
``runai-model-streamer[s3]>=0.15.7``) exactly as vLLM's loader calls it (``list_safetensors`` on
the model URI, then ``SafetensorsStreamer.stream_files`` and ``get_tensors``:
``vllm/model_executor/model_loader/runai_streamer_loader.py`` and ``weight_utils.py
runai_safetensors_weights_iterator`` of the 0.31.0 wheel), in a process whose environment is
the rendered pod's own.

That environment is the engine's (``engine_process``: the Deployment's env and ConfigMap run
through the delivered wrapper, the model URI from its argv), plus what the cluster adds and a
test must stand in for:

* EKS Pod Identity's variables, as its webhook injects them into a pod whose ServiceAccount has
  an association (``AWS_CONTAINER_CREDENTIALS_FULL_URI``,
  ``AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE``:
  https://docs.aws.amazon.com/sdkref/latest/guide/feature-container-credentials.html: "Amazon
  EKS sets" both), pointing at a
  loopback stand-in for the node's Pod Identity agent that answers only the pod's token;
* loopback S3 instead of the regional endpoint (``AWS_ENDPOINT_URL``, path-style addressing:
  ``RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0``, as vLLM's docs say for S3-compatible stores).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from tests._flat import flat_spec
from tests.engine_process import engine_process

# Whether they are installed, not imported (so not pytest.importorskip): the streamer runs in the
# engine's subprocess below, and importing it here would load torch into every xdist worker at
# collection (about 2 s CPU each).
if any(importlib.util.find_spec(name) is None for name in ("runai_model_streamer", "torch")):
    pytest.skip(
        "runai-model-streamer and torch are not installed: they are the stream-test extra "
        "(make test installs requirements-stream-test.lock; make synth does not)",
        allow_module_level=True,
    )

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = f"mlcc-models-dev-{ACCOUNT}-{REGION}"
PREFIX = "models/test-org/tiny-model/"
CONTEXT = RenderContext(account=ACCOUNT, region=REGION, profile="dev")
TOKEN = "eks-pod-identity-token-of-the-pod"
TENSORS = {
    # name -> (safetensors dtype, shape, little-endian bytes)
    "embed.weight": ("F32", [2, 3], struct.pack("<6f", 0.5, 1.0, 1.5, -2.0, 3.25, 1e-3)),
    "layer.0.bias": ("I64", [3], struct.pack("<3q", 7, -8, 1 << 40)),
    "norm.weight": ("BF16", [4], bytes(range(8))),
}

# What vLLM 0.31.0's runai_streamer loader does with the model URI, in the engine's process.
STREAM = r"""
import json, sys
import torch
from runai_model_streamer import SafetensorsStreamer, list_safetensors

files = list_safetensors(sys.argv[1])
tensors = {}
with SafetensorsStreamer() as streamer:
    streamer.stream_files(files)
    for name, tensor in streamer.get_tensors():
        raw = tensor.contiguous().view(-1).view(torch.uint8)
        tensors[name] = raw.numpy().tobytes().hex()
print(json.dumps({"files": files, "tensors": tensors}))
"""


def safetensors_file(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    """The safetensors format: an 8-byte little-endian header length, the JSON header
    (dtype, shape, data offsets per tensor; padded with spaces to 8 bytes), the data."""
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(d for _, _, d in tensors.values())


class _Agent(BaseHTTPRequestHandler):
    """The node's Pod Identity agent, stood in for: credentials for the pod's token only."""

    calls: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        token = self.headers.get("Authorization")
        type(self).calls.append(token)
        if token != TOKEN:
            self.send_response(403)
            self.end_headers()
            return
        body = json.dumps(
            {
                "AccessKeyId": "ASIAPODIDENTITYTEST",
                "SecretAccessKey": "pod-identity-secret",
                "Token": "pod-identity-session",
                "Expiration": "2099-01-01T00:00:00Z",
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def agent() -> Iterator[str]:
    """The loopback Pod Identity agent's credentials URI."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), _Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Agent.calls.clear()
    yield f"http://127.0.0.1:{port}/v1/credentials"
    server.shutdown()
    server.server_close()


@pytest.fixture
def staged(moto_s3: str) -> str:
    """The model staged on loopback S3: its safetensors file and config.json."""
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=moto_s3,
        region_name=REGION,
        aws_access_key_id="staging",
        aws_secret_access_key="staging",
    )
    if BUCKET not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}model.safetensors", Body=safetensors_file(TENSORS))
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}config.json", Body=b"{}")
    return moto_s3


def _pod_process(tmp_path: Path, delivery: str) -> tuple[str, dict[str, str]]:
    """The rendered pod's engine process: its model argument and its environment."""
    spec = flat_spec(
        engine="vllm",
        model=f"s3://{BUCKET}/{PREFIX}",
        instance_type="ml.g5.12xlarge",
        name="tiny",
        namespace="inference",
        config_delivery=delivery,
    )
    argv, env = engine_process(list(render(spec, context=CONTEXT).objects), tmp_path)
    assert argv[:2] == ["vllm", "serve"] and "--load-format" in argv
    assert argv[argv.index("--load-format") + 1] == "runai_streamer"
    return argv[2], env  # the positional model


def _stream(model: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", STREAM, model],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _cluster_env(tmp_path: Path, *, s3: str, agent: str | None) -> dict[str, str]:
    """What the cluster adds to the pod (module doc): Pod Identity's variables (``agent``
    ``None``: no association) and the loopback S3 endpoint."""
    added = {
        "AWS_ENDPOINT_URL": s3,
        "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0",
        "LC_ALL": "C.UTF-8",
    }
    if agent is not None:
        token = tmp_path / "eks-pod-identity-token"
        token.write_text(TOKEN)
        added["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = agent
        added["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = str(token)
    return added


@pytest.mark.parametrize("delivery", ["env", "args"])
def test_the_real_streamer_reads_the_model_with_the_pods_environment(
    tmp_path: Path, staged: str, agent: str, delivery: str
) -> None:
    model, pod_env = _pod_process(tmp_path, delivery)
    assert model == f"s3://{BUCKET}/{PREFIX}"
    assert pod_env["AWS_REGION"] == REGION and pod_env["AWS_DEFAULT_REGION"] == REGION
    assert not [k for k in pod_env if k.startswith("AWS_") and "REGION" not in k]  # no keys
    result = _stream(model, {**pod_env, **_cluster_env(tmp_path, s3=staged, agent=agent)})
    assert result.returncode == 0, result.stderr[-3000:]
    streamed = json.loads(result.stdout.strip().splitlines()[-1])
    assert streamed["files"] == [f"s3://{BUCKET}/{PREFIX}model.safetensors"]
    assert {name: bytes.fromhex(h) for name, h in streamed["tensors"].items()} == {
        name: data for name, (_, _, data) in TENSORS.items()
    }
    # The credentials were the pod's: the agent was asked, with the pod's token only.
    assert _Agent.calls and set(_Agent.calls) == {TOKEN}


def test_without_the_pods_identity_the_streamer_reads_nothing(tmp_path: Path, staged: str) -> None:
    model, pod_env = _pod_process(tmp_path, "env")
    # No association: nothing but the instance metadata service is left, which Auto Mode's
    # nodes do not answer pods on (hop limit 1); off here so nothing waits for it.
    added = {**_cluster_env(tmp_path, s3=staged, agent=None), "AWS_EC2_METADATA_DISABLED": "true"}
    result = _stream(model, {**pod_env, **added})
    assert result.returncode != 0
    assert "NoCredentialsError" in result.stderr or "credentials" in result.stderr.lower()
