"""Shared fixtures. Snapshots are plain ``.yaml``/``.json`` files under ``snapshots/<test module>/``
so a pull request shows the rendered YAML itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from tests._adapter_env import FakePod

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# CDK's built-in CloudFormation validation costs each process that runs it about 7.5 s CPU once
# (a jsii plugin start-up). It runs once, in tests/aws/test_cdk_validation.py, over the app `cdk
# synth` builds; cfn-lint checks every template in tests/aws/test_cfn_lint.py. Every other synth in
# the suite (in-process and the subprocesses that inherit this env) skips it.
os.environ.setdefault("CDK_VALIDATION", "false")

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SNAPSHOTS = REPO / "snapshots"
# llama.cpp has no pinned default image (the SageMaker llama.cpp container that reads
# SM_LLAMA_CPP_* must be named by the user); tests render it with this stand-in.
LLAMA_CPP_TEST_IMAGE = "registry.example.com/sagemaker-llama-cpp:test"


class _PlainFileSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOTS / Path(test_location.filepath).stem)

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        # Only the test module's own folder: snapshots/ also holds the stack histories
        # (snapshots/<stack>/NNNN-*.json), which are no syrupy snapshots and must never be
        # reported unused (nor deleted by --snapshot-update).
        return cls.dirname(test_location=test_location)

    def _text(self, data: Any) -> str:
        raise NotImplementedError

    def serialize(self, data: Any, **_: Any) -> str:
        return data if isinstance(data, str) else self._text(data)


class YamlSnapshot(_PlainFileSnapshot):
    """Strings are stored as-is (already-rendered YAML); other data is dumped as YAML."""

    file_extension = "yaml"

    def _text(self, data: Any) -> str:
        if isinstance(data, list):
            return yaml.safe_dump_all(data, sort_keys=False, default_flow_style=False)
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


class JsonSnapshot(_PlainFileSnapshot):
    """Data is stored as indented JSON with sorted keys."""

    file_extension = "json"

    def _text(self, data: Any) -> str:
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


@pytest.fixture
def yaml_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(YamlSnapshot)


@pytest.fixture
def json_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JsonSnapshot)


SHARED_FILES = (
    "crds/inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml",
    "crds/inferencecache.io_cachebackends.yaml",
    "examples/example-cachebackend-vllm-podlocal.yaml",
)
"""The upstream CRDs and samples (never copied into this repository) the tests validate
against."""


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (upstream CRDs and samples); tests that need it skip, naming what is
    missing, when it is absent."""
    missing = [name for name in SHARED_FILES if not (SHARED / name).is_file()]
    if missing:
        pytest.skip(
            f"upstream data absent from {SHARED}: {', '.join(missing)} (the "
            "InferenceEndpointConfig and CacheBackend CRDs and samples live beside the "
            "repository, never in it)"
        )
    return SHARED


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[str]:
    """A real S3 API on loopback (moto's ThreadedMotoServer), one for the whole run (stopping
    one takes half a second); a test that needs it empty resets it (``POST /moto-api/reset``)."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def pods() -> Iterator[list[FakePod]]:
    """Two stand-in serving pods (their LoRA API and model list), closed after the test."""
    started = [FakePod(), FakePod()]
    yield started
    for pod in started:
        pod.close()


@dataclass(frozen=True)
class BuiltWheel:
    """The package's sdist and wheel, and the wheel's files extracted (what an install puts on
    ``sys.path``)."""

    sdist: Path
    wheel: Path
    site: Path


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> BuiltWheel:
    """``python -m build`` of the checkout (the build backend from this venv: no download),
    once per test process: the sdist, and the wheel built from it (about 3 s)."""
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(folder), str(REPO)],
        check=True, capture_output=True,
    )  # fmt: skip
    (sdist,) = folder.glob("mlcc_constructs-*.tar.gz")
    (wheel,) = folder.glob("mlcc_constructs-*.whl")
    site = folder / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return BuiltWheel(sdist=sdist, wheel=wheel, site=site)
