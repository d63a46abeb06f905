"""The names a plugin manifest may not claim (core/engines/name_checks.py): one verdict from
``mlcc validate FILE``, ``mlcc validate FOLDER`` and a plugin loaded for ``mlcc render``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs import cli
from mlcc_constructs.core.engines.name_checks import CONTROL_PREFIX, overlaps
from mlcc_constructs.core.wrapper import CONTROL_ENV
from tests.core.engines.test_plugin_conformance import PLUGIN


def _with(**changes: Any) -> dict[str, Any]:
    """PLUGIN with ``changes`` (``launch__port_flag``: a field of ``launch``)."""
    document = copy.deepcopy(PLUGIN)
    for key, value in changes.items():
        head, _, field = key.partition("__")
        if field:
            document[head][field] = value
        else:
            document[head] = value
    return document


def _second(prefix: str) -> dict[str, Any]:
    return {**copy.deepcopy(PLUGIN), "engine": "hyperserve-two", "env_var_prefix": prefix}


# (id, the plugins of one folder in load order, the refused manifest's index, its pointer and
# the start of the problem after the pointer); index None: every plugin is accepted.
CASES: list[tuple[str, list[dict[str, Any]], int | None, str, str]] = [
    ("the conformance plugin", [PLUGIN], None, "", ""),
    (
        "a prefix that starts with a built-in's",
        [_with(env_var_prefix="VLLM_X_")],
        0,
        "/env_var_prefix",
        "env_var_prefix starts with the prefix VLLM_ of engine 'vllm'",
    ),
    (
        "a built-in's prefix",
        [_with(env_var_prefix="SGLANG_")],
        0,
        "/env_var_prefix",
        "env_var_prefix is the prefix SGLANG_ of engine 'sglang'",
    ),
    (
        "a prefix that begins another plugin's",
        [_with(env_var_prefix="HYPER_FAST_"), _second("HYPER_")],
        1,
        "/env_var_prefix",
        "env_var_prefix begins the prefix HYPER_FAST_ of engine 'hyperserve'",
    ),
    ("a prefix that only reads like another", [PLUGIN, _second("HYPERX_")], None, "", ""),
    (
        "the wrapper's own prefix",
        [_with(env_var_prefix="MLCC_")],
        0,
        "/env_var_prefix",
        "env_var_prefix overlaps the wrapper's reserved MLCC_ variables",
    ),
    (
        "a prefix inside the wrapper's",
        [_with(env_var_prefix="MLCC_ENGINE_")],
        0,
        "/env_var_prefix",
        "env_var_prefix overlaps the wrapper's reserved MLCC_ variables",
    ),
    ("a prefix next to the wrapper's", [_with(env_var_prefix="MLCCX_")], None, "", ""),
    (
        "a port flag a capability translates to",
        [_with(launch__port_flag="--shards")],
        0,
        "/launch/port_flag",
        "launch.port_flag is also the flag of capability 'tensor_parallel_degree'",
    ),
    (
        "a host flag a capability translates to",
        [_with(launch__host_flag="--adapter_rank")],
        0,
        "/launch/host_flag",
        "launch.host_flag is also the flag of capability 'lora_max_rank'",
    ),
    (
        "a port flag in the other flag style",
        [_with(launch__port_flag="--adapter-rank")],
        None,
        "",
        "",
    ),
    (
        "one path for load and unload",
        [_with(adapter_api={"load": "/adapters", "unload": "/adapters"})],
        0,
        "/adapter_api/unload",
        "adapter_api.unload is the load path",
    ),
    (
        "one path for load and unload, but for a slash",
        [_with(adapter_api={"load": "/adapters", "unload": "/adapters/"})],
        0,
        "/adapter_api/unload",
        "adapter_api.unload is the load path",
    ),
    (
        "paths of their own",
        [_with(adapter_api={"load": "/adapters/load", "unload": "/adapters/unload"})],
        None,
        "",
        "",
    ),
    (
        "a runtime switch under the prefix that would become a flag",
        [_with(adapter_api={"load": "/a/load", "unload": "/a/unload",
                            "runtime_env": {"HYPER_RUNTIME_ADAPTERS": "1"}})],
        0,
        "/adapter_api/runtime_env/HYPER_RUNTIME_ADAPTERS",
        "HYPER_RUNTIME_ADAPTERS has the engine's prefix but engine_env does not list "
        "RUNTIME_ADAPTERS: the wrapper would pass it as a flag, not as env (got "
        "'HYPER_RUNTIME_ADAPTERS'; fix: add 'RUNTIME_ADAPTERS' to engine_env",
    ),
    (
        "a runtime switch the engine reads from its environment",
        [_with(adapter_api={"load": "/a/load", "unload": "/a/unload",
                            "runtime_env": {"HYPER_RUNTIME_ADAPTERS": "1"}},
               engine_env=["RUNTIME_ADAPTERS"])],
        None,
        "",
        "",
    ),
]  # fmt: skip


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _folder(tmp_path: Path, plugins: list[dict[str, Any]]) -> tuple[Path, list[Path]]:
    folder = tmp_path / "plugins"
    files = []
    for index, plugin in enumerate(plugins):
        path = folder / f"{index}-{plugin['engine']}" / "manifest.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(plugin), encoding="utf-8")
        files.append(path)
    return folder, files


@pytest.mark.parametrize(
    ("case", "plugins", "refused", "pointer", "start"), CASES, ids=[c[0] for c in CASES]
)
def test_validate_and_render_give_one_verdict(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    plugins: list[dict[str, Any]],
    refused: int | None,
    pointer: str,
    start: str,
) -> None:
    monkeypatch.delenv("MLCC_ENGINE_PATH", raising=False)
    folder, files = _folder(tmp_path, plugins)
    by_file = _run(capsys, "validate", *map(str, files))
    by_folder = _run(capsys, "validate", str(folder))
    spec = ["--engine", plugins[0]["engine"], "--model", "org/name", "--name", "x"]
    spec += ["--instance-type", "g6e.xlarge", "--engine-version", "2.0.0"]
    image = ["--image", "registry.example.com/hyperserve:2.0.0"]
    account = ["--account", "123456789012", "--region", "us-east-1", "--profile", "dev"]
    rendering = _run(capsys, "render", "--plugin-dir", str(folder), *spec, *image, *account)
    # a --set key with no engine prefix reads the registry once more (its plain-env note)
    env = _run(capsys, "env", "--plugin-dir", str(folder), *spec, "--set", "FOO=1")
    if refused is None:
        assert by_file == (0, "".join(f"ok: {f}\n" for f in files), "")
        assert by_folder[0] == 0
        assert rendering[0] == 0, rendering[2]
        assert env[0] == 0, env[2]
        return
    location = f"mlcc: error: {files[refused]}:{pointer}: "
    for code, out, err in (by_file, by_folder, rendering, env):
        assert code == 1
        [line] = err.splitlines()  # one problem, naming the manifest file and the pointer
        assert line.startswith(location + start), line
        assert f"ok: {files[refused]}" not in out
    assert by_file[2] == by_folder[2] == rendering[2] == env[2]


def test_the_reserved_prefix_holds_every_control_variable() -> None:
    assert all(key.startswith(CONTROL_PREFIX) for key in CONTROL_ENV)


@pytest.mark.parametrize(
    ("one", "other", "expected"),
    [
        ("VLLM_", "VLLM_X_", True),
        ("VLLM_X_", "VLLM_", True),
        ("VLLM_", "VLLM_", True),
        ("VLLM_", "VLLMX_", False),
        ("SGLANG_", "VLLM_", False),
    ],
)
def test_overlaps(one: str, other: str, expected: bool) -> None:
    assert overlaps(one, other) is expected
