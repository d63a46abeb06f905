"""The example files the docs and the help texts point at are valid and render."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mlcc_constructs import cli
from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.cache import load_cache_backends
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.files import load_spec_file

EXAMPLES = shipped_path("examples")


def test_the_examples_ship() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir()) == [
        "cachebackend.yaml",
        "deployment.yaml",
        "https-endpoint.yaml",
        "multi-node-vllm.yaml",
        "plugins",
        "reference-context.json",
        "reference.yaml",
    ]


def test_the_reference_set_renders(capsys: pytest.CaptureFixture[str]) -> None:
    """The opt-in reference set (``-c deployments_file=examples/reference.yaml``) is a spec
    list ``mlcc render -f`` takes as it is."""
    path = EXAMPLES / "reference.yaml"
    url = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1"  # the autoscaled one's
    assert cli.main(["render", "-f", str(path), "--prometheus-url", url]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    names = {d["metadata"]["name"] for d in documents if d["kind"] == "ServiceAccount"}
    assert {"llama-vllm", "mistral-vllm-args", "llama-405b-vllm"} <= names


@pytest.mark.parametrize("target", ["eks", "hyperpod-eks"])
def test_the_deployment_example_renders(capsys: pytest.CaptureFixture[str], target: str) -> None:
    path = EXAMPLES / "deployment.yaml"
    assert cli.main(["render", "-f", str(path), "--target", target]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    loaded = load_spec_file(path)
    spec = (
        loaded.spec
        if target == "eks"
        else type(loaded.spec)(**{**loaded.spec.__dict__, "target": target})
    )
    assert documents == list(render(spec, context=loaded.context).objects)


def test_the_cache_backend_example_is_admitted_and_injects(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = EXAMPLES / "cachebackend.yaml"
    assert cli.main(["cache", "check", str(path)]) == 0
    (backend,) = load_cache_backends(path)
    spec_file = tmp_path / "cached.yaml"
    document = {
        "engine": {"name": "sglang"},
        "model": {"uri": "meta-llama/Llama-3.1-8B-Instruct"},
        "compute": {"instance_type": "ml.g5.12xlarge"},
        "name": "cached",
        "cache": {"backend": yaml.safe_load(path.read_text())["spec"]},
    }
    spec_file.write_text(yaml.safe_dump(document), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["render", "-f", str(spec_file)]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)]
    assert kinds.count("ConfigMap") == 3  # engine env, wrapper, LMCache client config
    assert backend.spec.runtime == "SGLang"


def test_the_multi_node_example_renders_one_group_of_two_p5_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = EXAMPLES / "multi-node-vllm.yaml"
    assert cli.main(["render", "-f", str(path)]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    (lws,) = [d for d in documents if d["kind"] == "LeaderWorkerSet"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert not [d for d in documents if d["kind"] == "Deployment"]
    loaded = load_spec_file(path)
    assert documents == list(render(loaded.spec, context=loaded.context).objects)


def test_the_example_plugin_validates_and_renders(capsys: pytest.CaptureFixture[str]) -> None:
    """``mlcc validate examples/plugins`` has a plugin folder to run on, and the plugin it holds
    resolves as a built-in engine does (``--plugin-dir``)."""
    plugins = EXAMPLES / "plugins"
    assert cli.main(["validate", str(plugins)]) == 0
    assert capsys.readouterr().out == f"ok: {plugins} (6 engines in the registry)\n"
    manifest = plugins / "toyserve" / "manifest.json"
    assert cli.main(["validate", str(manifest)]) == 0
    assert capsys.readouterr().out == f"ok: {manifest}\n"
    flags = ["--plugin-dir", str(plugins), "--engine", "toyserve", "--model", "org/name"]
    flags += ["--instance-type", "ml.g5.12xlarge", "--lora", "--engine-version", "1.2.0"]
    assert cli.main(["argv", *flags[:6], "--instance-type", "ml.g6e.xlarge"]) == 0
    assert capsys.readouterr().out.startswith('["toyserve", "serve", "--model", "org/name"')
    assert cli.main(["env", *flags]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "TOYSERVE_MODEL=org/name",
        "TOYSERVE_TENSOR_PARALLEL_SIZE=4",
        "TOYSERVE_ENABLE_LORA=true",
        "TOYSERVE_MAX_LORA_RANK=16",
    ]
