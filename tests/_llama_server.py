"""A real llama.cpp server for the tests: llama.cpp's own HTTP server (PyPI ``xllamacpp``, a CPU
build of llama-server's code) in a child process on 127.0.0.1, serving a tiny llama-architecture
GGUF that PyPI ``gguf`` writes at test time (random weights, about 0.5 MB; nothing is stored in
the repository or downloaded).

The server takes the settings of a rendered llama.cpp deployment: the container's environment
(the ConfigMap's ``SM_LLAMA_CPP_*`` values and the API key variable) turned into llama-server
flags by the same rule as the llama.cpp deep learning container's entrypoint
(:func:`container_flags`; the rule is recorded in ``engines/llama-cpp/manifest.json``
``description``). The child maps each flag to the field of llama-server's ``common_params`` it
sets (:data:`FLAG_FIELDS`, llama.cpp common/arg.cpp); a flag it does not know stops it, so a
setting is never dropped silently.

Used by ``tests/core/engines/test_real_llama_cpp.py`` (and any test that wants the real server:
request the ``llama_server`` fixture after ``from tests._llama_server import llama_server``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SKIP_REASON = (
    "the real llama.cpp tier needs PyPI xllamacpp and gguf (pinned in requirements.lock; "
    "`make bootstrap` installs them): {error}"
)
# llama-server reads its API key from this variable when --api-key is absent (llama.cpp
# common/arg.cpp); the manifest's api_key.env, asserted in the tests.
API_KEY_ENV = "LLAMA_API_KEY"
# The container's entrypoint keeps these SM_LLAMA_CPP_* names for itself (model discovery and
# nginx's port): aws/deep-learning-containers scripts/docker/llama_cpp/sagemaker_entrypoint.sh.
_ENTRYPOINT_OWN = ("MODEL", "MODEL_DIR", "PORT")
# llama-server flag -> its common_params field (llama.cpp common/arg.cpp), as xllamacpp exposes
# them; "set" fields hold a set of names, "list" fields a list, "bool" a switch.
FLAG_FIELDS: dict[str, tuple[str, str]] = {
    "--ctx-size": ("n_ctx", "int"),
    "--parallel": ("n_parallel", "int"),
    "--alias": ("model_alias", "set"),
    "--metrics": ("endpoint_metrics", "bool"),
    "--n-predict": ("n_predict", "int"),
    "--threads": ("cpuparams.n_threads", "int"),
}
START_TIMEOUT = 60.0

# The child: build llama-server's params from the flags, start the server (it loads the model,
# then listens), print the address it listens on, serve until stdin closes.
_CHILD = textwrap.dedent(
    """
    import json, os, sys
    import xllamacpp

    spec = json.loads(sys.argv[1])
    params = xllamacpp.CommonParams()
    params.model.path = spec["model"]
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.warmup = False
    params.cpuparams.n_threads = 1
    key = os.environ.get(spec["api_key_env"])
    if key:
        params.api_keys = [key]
    flags, fields = spec["flags"], spec["fields"]
    i = 0
    while i < len(flags):
        flag = flags[i]
        if flag not in fields:
            sys.exit(f"llama-server flag {flag} has no known params field")
        name, kind = fields[flag]
        if kind == "bool":
            value, i = True, i + 1
        else:
            raw, i = flags[i + 1], i + 2
            value = {"int": int, "set": lambda v: {v}, "list": lambda v: [v]}[kind](raw)
        target = params
        *parents, last = name.split(".")
        for parent in parents:
            target = getattr(target, parent)
        setattr(target, last, value)
    server = xllamacpp.Server(params)
    print(json.dumps({"url": server.listening_address}), flush=True)
    sys.stdin.read()
    """
)


def container_flags(env: Mapping[str, str]) -> list[str]:
    """The llama-server flags the llama.cpp container's entrypoint makes of its environment:
    each ``SM_LLAMA_CPP_<NAME>`` but its own becomes ``--<name>`` (lower case, ``_`` as ``-``);
    ``true`` is the bare flag, ``false`` drops it, any other value follows the flag."""
    flags: list[str] = []
    for key, value in env.items():
        if not key.startswith("SM_LLAMA_CPP_"):
            continue
        name = key.removeprefix("SM_LLAMA_CPP_")
        if name in _ENTRYPOINT_OWN:
            continue
        flag = "--" + name.lower().replace("_", "-")
        if value.lower() == "true":
            flags.append(flag)
        elif value.lower() != "false":
            flags += [flag, value] if value else [flag]
    return flags


def write_tiny_gguf(path: Path, *, seed: int = 0) -> Path:
    """A llama-architecture GGUF with random weights: 2 layers, 64 wide, a byte-fallback
    sentencepiece vocabulary of ASCII letters. The output rows of the control and byte tokens
    are zero, so greedy decoding emits only letters (a stream always has text)."""
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    width, layers, heads, ffn = 64, 2, 4, 128
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), "▁", *letters]
    types = [
        gguf.TokenType.UNKNOWN,
        gguf.TokenType.CONTROL,
        gguf.TokenType.CONTROL,
        *[gguf.TokenType.BYTE] * 256,
        *[gguf.TokenType.NORMAL] * (1 + len(letters)),
    ]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("mlcc-tiny-llama")
    writer.add_context_length(2048)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(width // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)

    def tensor(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    tensor("token_embd.weight", len(tokens), width)
    for block in range(layers):
        writer.add_tensor(f"blk.{block}.attn_norm.weight", np.ones(width, np.float32))
        for part in ("q", "k", "v", "output"):
            tensor(f"blk.{block}.attn_{part}.weight", width, width)
        writer.add_tensor(f"blk.{block}.ffn_norm.weight", np.ones(width, np.float32))
        tensor(f"blk.{block}.ffn_gate.weight", ffn, width)
        tensor(f"blk.{block}.ffn_up.weight", ffn, width)
        tensor(f"blk.{block}.ffn_down.weight", width, ffn)
    writer.add_tensor("output_norm.weight", np.ones(width, np.float32))
    output = (rng.standard_normal((len(tokens), width)) * 0.5).astype(np.float32)
    output[: 3 + 256] = 0.0  # control and byte tokens: never the greedy choice
    writer.add_tensor("output.weight", output)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@dataclass
class RealServer:
    """A running llama.cpp server: its base URL, the flags it took, how long it took to
    listen, and the API key it requires (``None``: none)."""

    url: str
    flags: list[str]
    started_s: float
    api_key: str | None
    process: subprocess.Popen[str]

    def get(self, path: str, *, key: str | None = None) -> tuple[int, str]:
        """``GET path``: the status and the body (an error status is returned, not raised)."""
        return self.call("GET", path, None, key=key)

    def call(
        self, method: str, path: str, body: Any | None, *, key: str | None = None
    ) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if key is not None:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(model: Path, env: Mapping[str, str], *, log: Path) -> RealServer:
    """Start llama-server on 127.0.0.1 (a free port) with the container environment ``env``
    (``SM_LLAMA_CPP_*`` settings and :data:`API_KEY_ENV`); returns once it listens."""
    flags = container_flags(env)
    spec = {"model": str(model), "flags": flags, "fields": FLAG_FIELDS, "api_key_env": API_KEY_ENV}
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("SM_LLAMA_CPP_")}
    child_env.pop(API_KEY_ENV, None)
    child_env.update(env)
    started = time.perf_counter()
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            env=child_env,
            text=True,
        )
    assert process.stdout is not None
    line = process.stdout.readline()  # the child prints once the server listens
    if not line:
        process.wait(timeout=START_TIMEOUT)
        raise RuntimeError(
            f"llama-server did not start (exit {process.returncode}): "
            + log.read_text(errors="replace")[-2000:]
        )
    url = json.loads(line)["url"].rstrip("/")
    return RealServer(
        url=url,
        flags=flags,
        started_s=time.perf_counter() - started,
        api_key=env.get(API_KEY_ENV),
        process=process,
    )


def require_packages() -> None:
    """Skip (with the reason) when the real tier's packages cannot be imported."""
    for module in ("xllamacpp", "gguf"):
        try:
            __import__(module)
        except ImportError as error:
            pytest.skip(SKIP_REASON.format(error=error))


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_packages()
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf")


def serve(
    tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory, env: Mapping[str, str]
) -> Iterator[RealServer]:
    """A real server for a fixture: started with ``env``, stopped at the fixture's end."""
    server = start(tiny_gguf, env, log=tmp_path_factory.mktemp("llama-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()
