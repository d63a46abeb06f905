"""Plugin-first invariant (ADR-010): a brand-new engine resolves with zero package edits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from tests._flat import flat_spec

PLUGIN = {
    "engine": "hyperserve",
    "env_var_prefix": "HYPER_",
    "entrypoint": "wrapper",
    "min_version": "2.0.0",
    "launch": {
        "command": ["hyperserve", "run"],
        "model": "positional",
        "flag_style": "snake",
        "port": 7000,
        "port_flag": "--listen_port",
        "health_path": "/ready",
    },
    "capability_map": {
        "model": {"suffix": "CHECKPOINT", "value_type": "valued"},
        "tensor_parallel_degree": {"suffix": "SHARDS", "value_type": "valued"},
        "lora_enable": {
            "suffix": "ADAPTERS_ON",
            "value_type": "boolean",
            "requires_any_of": [["lora_slots", "lora_max_rank"], ["lora_preload"]],
        },
        "lora_slots": {"suffix": "ADAPTER_SLOTS", "value_type": "valued", "default": 4},
        "lora_max_rank": {"suffix": "ADAPTER_RANK", "value_type": "valued"},
        "lora_preload": {"suffix": "ADAPTER_PRELOAD", "value_type": "valued"},
    },
}


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    (tmp_path / "hyperserve").mkdir()
    (tmp_path / "hyperserve" / "manifest.json").write_text(json.dumps(PLUGIN))
    return tmp_path


def _spec(**extra: object) -> DeploymentSpec:
    return flat_spec(
        engine="hyperserve",
        model="s3://models/org/name/",
        instance_type="ml.g6e.12xlarge",
        lora=True,
        engine_version="2.1.0",
        **extra,  # type: ignore[arg-type]
    )


def test_new_engine_resolves_env_and_argv(plugin_dir: Path) -> None:
    registry = EngineRegistry.load([plugin_dir], use_env=False)
    resolution = resolve(_spec(env={"HYPER_WARM_START": "true"}), registry=registry)
    # First group: its own manifest default (4) and the library's rank default (16).
    assert resolution.env == {
        "HYPER_CHECKPOINT": "/opt/ml/model",
        "HYPER_SHARDS": "4",
        "HYPER_ADAPTERS_ON": "true",
        "HYPER_ADAPTER_SLOTS": "4",
        "HYPER_ADAPTER_RANK": "16",
        "HYPER_WARM_START": "true",
    }
    assert resolution.argv() == [
        "hyperserve",
        "run",
        "/opt/ml/model",
        "--adapters_on",
        "--adapter_rank",
        "16",
        "--adapter_slots",
        "4",
        "--shards",
        "4",
        "--warm_start",
        "--listen_port",
        "7000",
    ]


def test_second_group_is_used_when_the_first_cannot_resolve(
    plugin_dir: Path, tmp_path: Path
) -> None:
    document = json.loads(json.dumps(PLUGIN))
    del document["capability_map"]["lora_slots"]["default"]
    (plugin_dir / "hyperserve" / "manifest.json").write_text(json.dumps(document))
    registry = EngineRegistry.load([plugin_dir], use_env=False)
    without = resolve(_spec(), registry=registry)
    assert "HYPER_ADAPTERS_ON" not in without.env
    assert [str(s) for s in without.skipped] == [
        "omitting HYPER_ADAPTERS_ON: requires (lora_slots and lora_max_rank) or lora_preload — "
        "missing lora_slots (no value: set HYPER_ADAPTER_SLOTS); lora_preload (no value: set "
        "HYPER_ADAPTER_PRELOAD)"
    ]
    preload = resolve(_spec(env={"HYPER_ADAPTER_PRELOAD": "a=/x"}), registry=registry)
    assert preload.env["HYPER_ADAPTERS_ON"] == "true"
    assert preload.env["HYPER_ADAPTER_PRELOAD"] == "a=/x"
    assert "HYPER_ADAPTER_SLOTS" not in preload.env


def test_cli_and_wrapper_use_the_plugin(plugin_dir: Path) -> None:
    env = {**os.environ, "MLCC_ENGINE_PATH": str(plugin_dir)}
    mlcc = [sys.executable, "-m", "mlcc_constructs.cli"]
    options = ["--engine", "hyperserve", "--model", "org/name", "--instance-type", "g6e.xlarge"]
    options += ["--lora", "--engine-version", "2.0.0"]
    out = subprocess.run(
        [*mlcc, "argv", *options], env=env, capture_output=True, text=True, check=True
    )
    cli_argv = json.loads(out.stdout)
    assert cli_argv[:3] == ["hyperserve", "run", "org/name"]

    # The container side: the same env through the wrapper entrypoint gives the same argv.
    env_cmd = [*mlcc, "env", *options]
    resolved = subprocess.run(env_cmd, env=env, capture_output=True, text=True, check=True)
    pod_env = dict(line.split("=", 1) for line in resolved.stdout.splitlines())
    wrapper = subprocess.run(
        [sys.executable, "-m", "mlcc_constructs.core.wrapper", "--print"],
        env={**env, **pod_env, "MLCC_ENGINE": "hyperserve"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(wrapper.stdout) == cli_argv


def test_no_package_file_names_the_plugin() -> None:
    package = Path(__file__).resolve().parents[3] / "mlcc_constructs"
    offenders = [p for p in package.rglob("*") if p.is_file() and b"hyperserve" in p.read_bytes()]
    assert offenders == []
