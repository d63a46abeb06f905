"""``tools/loader_config_facts.py`` reads a release's loaders as the facts files say: run on a
small source tree written here in the shape of vLLM's ``model_executor/model_loader`` (the
wheel itself is not stored), it finds each loader's closed key set and each key's type and
least value, and lists a loader without a closed set as unrecorded."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TOOL = Path(__file__).resolve().parents[3] / "tools" / "loader_config_facts.py"

INIT = """
from vllm.model_executor.model_loader.a_loader import StreamLoader, OpenLoader
from vllm.model_executor.model_loader.b_loader import PoppingLoader, NoConfigLoader
_LOAD_FORMAT_TO_MODEL_LOADER: dict[str, type] = {
    "stream": StreamLoader,
    "auto": PoppingLoader,
    "hf": PoppingLoader,
    "none": NoConfigLoader,
    "open": OpenLoader,
}
"""
A_LOADER = """
class StreamLoader:
    def __init__(self, load_config):
        extra_config = load_config.model_loader_extra_config
        allowed_keys = {"workers", "floor", "flag"}
        if set(extra_config) - allowed_keys:
            raise ValueError("unexpected")
        workers = extra_config["workers"]
        if isinstance(workers, bool) or not isinstance(workers, int) or workers <= 0:
            raise ValueError("workers")
        floor = extra_config.get("floor")
        if floor is not None and not (isinstance(floor, int) and floor >= -1):
            raise ValueError("floor")
        flag = extra_config["flag"]
        if not isinstance(flag, bool):
            raise ValueError("flag")


class OpenLoader:
    def __init__(self, load_config):
        self.config = Config(**load_config.model_loader_extra_config["config"])
"""
B_LOADER = """
from copy import copy


class PoppingLoader:
    DEFAULT_NAME = "part-{rank}"

    def __init__(self, load_config):
        extra_config = copy(load_config.model_loader_extra_config)
        self.name = extra_config.pop("name", self.DEFAULT_NAME)
        self.track: bool | None = extra_config.pop("track", None)
        self.timeout = float(extra_config.pop("timeout", 5.0))
        if extra_config:
            raise ValueError("unexpected")


class NoConfigLoader:
    def __init__(self, load_config):
        if load_config.model_loader_extra_config:
            raise ValueError("not supported")
"""


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loader_config_facts", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    folder = tmp_path / "vllm" / "model_executor" / "model_loader"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(INIT)
    (folder / "a_loader.py").write_text(A_LOADER)
    (folder / "b_loader.py").write_text(B_LOADER)
    monkeypatch.chdir(tmp_path)
    result: dict[str, Any] = _tool().record("9.9.9", "vllm-9.9.9.whl")
    return result


def test_an_allowed_keys_set_and_its_checks_give_the_keys_types_and_least_values(
    recorded: dict[str, Any],
) -> None:
    stream = recorded["loaders"]["StreamLoader"]
    assert stream["load_formats"] == ["stream"]
    assert stream["function"] == "StreamLoader.__init__"
    assert stream["module"] == "vllm.model_executor.model_loader.a_loader"
    assert stream["keys"] == {
        "flag": {"type": "boolean"},
        "floor": {"type": "integer", "minimum": -1},
        "workers": {"type": "integer", "minimum": 1},
    }


def test_popped_keys_before_refusing_the_rest_are_the_key_set(recorded: dict[str, Any]) -> None:
    popping = recorded["loaders"]["PoppingLoader"]
    assert popping["load_formats"] == ["auto", "hf"]
    assert popping["keys"] == {
        "name": {"type": "string", "note": "its default's type; the loader does not check it"},
        "timeout": {"type": None, "note": "the loader does not check or declare its type"},
        "track": {"type": "boolean", "note": "annotated; the loader does not check its type"},
    }


def test_a_loader_that_refuses_any_config_takes_no_key(recorded: dict[str, Any]) -> None:
    assert recorded["loaders"]["NoConfigLoader"]["keys"] == {}


def test_a_loader_without_a_closed_key_set_is_unrecorded(recorded: dict[str, Any]) -> None:
    assert "OpenLoader" not in recorded["loaders"]
    assert recorded["unrecorded"] == {
        "open": "OpenLoader (vllm.model_executor.model_loader.a_loader): no closed key set in "
        "__init__"
    }
    assert recorded["read_from"]["wheel"] == "PyPI vllm==9.9.9 (vllm-9.9.9.whl)"
