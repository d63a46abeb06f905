"""Engine flag values checked for range and meaning at render, from the recorded parser facts
(issue 39): a number past the bounds the engine declares on its config class field
(``bounds``, with their source), a choice the engine's Literal allows (kept by the recorder
although it stubs torch), and a list flag given one whitespace-joined value.

The bounds are the engine's own (recorded by ``tools/engine_parser_facts.py`` only where the
engine's config class validator refuses a value past them); here every recorded bound is also
held against pydantic's own reading of the same constraint (vLLM's config classes are pydantic
dataclasses), and values inside the bounds reach the engine as an argv its recorded parser
takes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal, get_args

import pytest

from mlcc_constructs import cli
from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.engines.parser_facts import parser_facts
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec
from tests.core.engines.test_engine_parsers import CONTEXT, parse
from tests.engine_process import engine_process

S3_MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
FILES = sorted(data_path("engine_parsers").glob("*/*.json"))


def _spec(engine: str, env: dict[str, str], **more: Any) -> Any:
    return flat_spec(
        engine=engine,
        model=S3_MODEL,
        instance_type="ml.g5.12xlarge",
        name="llm",
        lora=True,
        env=env,
        **more,
    )


def _refusal(engine: str, env: dict[str, str]) -> str:
    with pytest.raises(MlccError) as raised:
        resolve(_spec(engine, env))
    (problem,) = raised.value.problems
    return str(problem)


# -- refused, with the exact error ------------------------------------------------------------

GPU = (
    "/engine/env/VLLM_GPU_MEMORY_UTILIZATION: VLLM_GPU_MEMORY_UTILIZATION → 2 is out of the "
    "range of --gpu-memory-utilization in vllm 0.31.0 (got '2'; allowed: a number > 0 and <= 1 "
    "(vllm/config/cache.py CacheConfig.gpu_memory_utilization); fix: give a value > 0 and <= 1)"
)
SEQS = (
    "/engine/env/VLLM_MAX_NUM_SEQS: VLLM_MAX_NUM_SEQS → -1 is out of the range of "
    "--max-num-seqs in vllm 0.31.0 (got '-1'; allowed: an integer >= 1 "
    "(vllm/config/scheduler.py SchedulerConfig.max_num_seqs); fix: give a value >= 1)"
)
DTYPE = (
    "/engine/env/VLLM_LORA_DTYPE: VLLM_LORA_DTYPE → 'float32' is not a choice of --lora-dtype "
    "in vllm 0.31.0 (got 'float32'; allowed: auto, bfloat16, float16; fix: use one of the "
    "allowed values)"
)


def _spaced(key: str, flag: str, engine: str) -> str:
    return (
        f"/engine/env/{key}: {key} → {flag} of {engine} takes several values, and whitespace "
        "in one value does not separate them (the engine would get one value holding a space) "
        "(got 'q_proj v_proj'; allowed: a JSON array of values; fix: write them as a JSON "
        'array, e.g. ["q_proj", "v_proj"] (one value that holds a space: a one-element array))'
    )


REFUSED = [
    ("vllm", "VLLM_GPU_MEMORY_UTILIZATION", "2", GPU),
    ("vllm", "VLLM_MAX_NUM_SEQS", "-1", SEQS),
    ("vllm", "VLLM_LORA_DTYPE", "float32", DTYPE),
    ("vllm", "VLLM_LORA_TARGET_MODULES", "q_proj v_proj",
     _spaced("VLLM_LORA_TARGET_MODULES", "--lora-target-modules", "vllm 0.31.0")),
    ("sglang", "SGLANG_LORA_TARGET_MODULES", "q_proj v_proj",
     _spaced("SGLANG_LORA_TARGET_MODULES", "--lora-target-modules", "sglang 0.5.21")),
]  # fmt: skip


def _facts_file(engine: str, version: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        data_path(f"engine_parsers/{engine}/{version}.json").read_text()
    )
    return document


COMPILATION_KEYS = ", ".join(
    _facts_file("vllm", "0.31.0")["flags"]["--compilation-config"]["json"]["keys"]
)
REFUSED += [
    ("vllm", "VLLM_ALLOWED_ORIGINS", "*",
     "/engine/env/VLLM_ALLOWED_ORIGINS: VLLM_ALLOWED_ORIGINS → --allowed-origins of vllm 0.31.0 "
     "takes a JSON array, and this is not JSON (got '*'; allowed: a JSON array "
     "(vllm/entrypoints/launchers/cli_args.py FrontendArgs.allowed_origins); fix: write the "
     'value as JSON, e.g. ["*"])'),
    ("vllm", "VLLM_OVERRIDE_GENERATION_CONFIG", "0.5",
     "/engine/env/VLLM_OVERRIDE_GENERATION_CONFIG: VLLM_OVERRIDE_GENERATION_CONFIG → "
     "--override-generation-config of vllm 0.31.0 takes a JSON object, not a JSON scalar (got "
     "'0.5'; allowed: a JSON object (vllm/config/model.py "
     "ModelConfig.override_generation_config); fix: write the value as a JSON object)"),
    ("vllm", "VLLM_COMPILATION_CONFIG", '{"cudagraph_mod": "FULL"}',
     "/engine/env/VLLM_COMPILATION_CONFIG: VLLM_COMPILATION_CONFIG → 'cudagraph_mod' is not a "
     "key of --compilation-config in vllm 0.31.0 (got '{\"cudagraph_mod\": \"FULL\"}'; "
     f"allowed: {COMPILATION_KEYS} (vllm/config/compilation.py CompilationConfig); fix: did "
     "you mean cudagraph_mode / cudagraph_mm_encoder / cudagraph_num_of_warmups? (unknown: "
     "cudagraph_mod))"),
]  # fmt: skip


@pytest.mark.parametrize(("engine", "key", "value", "error"), REFUSED)
def test_a_value_the_engine_refuses_is_refused_at_render(
    engine: str, key: str, value: str, error: str
) -> None:
    assert _refusal(engine, {key: value}) == error


@pytest.mark.parametrize(("engine", "key", "value", "error"), REFUSED[:4])
def test_the_cli_refuses_it_too(
    capsys: pytest.CaptureFixture[str], engine: str, key: str, value: str, error: str
) -> None:
    args = ["render", "--engine", engine, "--model", S3_MODEL, "--name", "llm"]
    args += ["--instance-type", "ml.g5.12xlarge", "--lora", "--set", f"{key}={value}"]
    capsys.readouterr()
    assert cli.main(args) != 0
    assert f"mlcc: error: --set:{error}" in capsys.readouterr().err


def test_the_spec_share_of_gpu_memory_is_refused_past_one() -> None:
    """``engine.gpu_memory_utilization`` (mlcc's share for the LoRA memory cap, the same
    (0, 1] the engine declares) is refused by the spec's checks (already so before issue 39)."""
    with pytest.raises(MlccError) as raised:
        render(_spec("vllm", {}, gpu_memory_utilization=2), context=CONTEXT)
    assert str(raised.value) == (
        "/engine/gpu_memory_utilization: not a share of GPU memory (got 2; allowed: a number in "
        "(0, 1])"
    )


def test_a_value_at_the_next_release_is_checked_against_its_own_bounds() -> None:
    """An engine version given: that release's recorded bounds apply (0.33.0's too)."""
    with pytest.raises(MlccError, match=r"-1 is out of the range of --max-num-seqs in vllm 0\.33"):
        resolve(_spec("vllm", {"VLLM_MAX_NUM_SEQS": "-1"}, engine_version="0.33.0"))


# -- taken, and the engine's parser takes what reaches it -------------------------------------

TAKEN = [
    ("vllm", "VLLM_GPU_MEMORY_UTILIZATION", "1", "gpu_memory_utilization", "1"),
    ("vllm", "VLLM_GPU_MEMORY_UTILIZATION", "0.05", "gpu_memory_utilization", "0.05"),
    ("vllm", "VLLM_MAX_NUM_SEQS", "1", "max_num_seqs", "1"),
    ("vllm", "VLLM_MAX_NUM_BATCHED_TOKENS", "2K", "max_num_batched_tokens", "2K"),
    ("vllm", "VLLM_LORA_DTYPE", "bfloat16", "lora_dtype", "bfloat16"),
    ("vllm", "VLLM_LORA_TARGET_MODULES", '["q_proj", "v_proj"]', "lora_target_modules",
     ["q_proj", "v_proj"]),
    # a value that holds a space, as a one-element array (the fix the refusal names)
    ("vllm", "VLLM_LORA_MODULES", '["sql=/opt/ml/model/my adapter"]', "lora_modules",
     ["sql=/opt/ml/model/my adapter"]),
    ("sglang", "SGLANG_LORA_TARGET_MODULES", '["q_proj", "v_proj"]', "lora_target_modules",
     ["q_proj", "v_proj"]),
    # JSON of the shape the engine defines
    ("vllm", "VLLM_ALLOWED_ORIGINS", '["https://a.example"]', "allowed_origins",
     ["https://a.example"]),
    ("vllm", "VLLM_COMPILATION_CONFIG", '{"cudagraph_mode": "FULL"}', "compilation_config",
     '{"cudagraph_mode": "FULL"}'),
]  # fmt: skip
TYPES = {"gpu_memory_utilization": float, "max_num_seqs": int}


@pytest.mark.parametrize(("engine", "key", "value", "dest", "parsed"), TAKEN)
def test_a_value_within_the_engine_range_reaches_its_parser(
    tmp_path: Path, engine: str, key: str, value: str, dest: str, parsed: Any
) -> None:
    objects = list(render(_spec(engine, {key: value}), context=CONTEXT).objects)
    argv, _ = engine_process(objects, tmp_path)
    expected = TYPES[dest](parsed) if dest in TYPES else parsed
    assert getattr(parse(engine, argv), dest) == expected


def test_the_recorded_parser_refuses_what_vllm_refuses_at_parse() -> None:
    """vLLM 0.31's ``--lora-dtype`` is a Literal: argparse refuses float32 before any GPU work;
    the recorded parser does too now that the recorder keeps the choices. And one
    whitespace-joined value is one element to a list flag: it names no layer."""
    command = ["vllm", "serve", "m"]
    with pytest.raises(ValueError, match="invalid choice: 'float32'"):
        parse("vllm", [*command, "--lora-dtype", "float32"])
    joined = parse("vllm", [*command, "--lora-target-modules", "q_proj v_proj"])
    assert joined.lora_target_modules == ["q_proj v_proj"]


# -- the recorded bounds are the engine's -----------------------------------------------------


def _bounded_flags() -> list[tuple[str, str, str, dict[str, Any]]]:
    out = []
    for path in FILES:
        document = json.loads(path.read_text())
        for flag, record in document["flags"].items():
            if "bounds" in record:
                out.append((path.parent.name, path.stem, flag, record))
    return out


BOUNDED = _bounded_flags()


def test_the_pinned_vllm_records_the_bounds_of_its_config_classes() -> None:
    facts = parser_facts("vllm", "0.31.0")
    assert facts is not None
    seqs, gpu = facts.flags["--max-num-seqs"].bounds, facts.flags["--gpu-memory-utilization"].bounds
    assert seqs is not None and seqs.limits == (("ge", 1.0),)
    assert gpu is not None and gpu.limits == (("gt", 0.0), ("le", 1.0))
    assert gpu.source == "vllm/config/cache.py CacheConfig.gpu_memory_utilization"
    # every bounded flag has its class and field; SGLang declares none in its ServerArgs
    assert {e for e, _, _, _ in BOUNDED} == {"vllm"}
    assert len([f for e, v, f, _ in BOUNDED if (e, v) == ("vllm", "0.31.0")]) >= 40


@pytest.mark.parametrize(("engine", "version", "flag", "record"), BOUNDED,
                         ids=[f"{e}-{v}{f}" for e, v, f, _ in BOUNDED])  # fmt: skip
def test_each_recorded_bound_is_read_as_pydantic_reads_it(
    engine: str, version: str, flag: str, record: dict[str, Any]
) -> None:
    """mlcc takes a number exactly when pydantic (what vLLM's config classes validate with)
    takes it under the same constraints: at, just inside and just past each edge."""
    pydantic = pytest.importorskip("pydantic", reason="pydantic reads the constraints")
    limits = {k: v for k, v in record["bounds"].items() if k != "source"}
    kind = int if record["type"] == "int" else float
    adapter = pydantic.TypeAdapter(Annotated[kind, pydantic.Field(**limits)])
    facts = parser_facts(engine, version)
    assert facts is not None
    bounds = facts.flags[flag].bounds
    assert bounds is not None
    step = 1 if kind is int else 0.25
    for edge in limits.values():
        for number in (edge - step, edge, edge + step):
            try:
                adapter.validate_python(kind(number))
                takes = True
            except pydantic.ValidationError:
                takes = False
            assert bounds.holds(float(number)) == takes, (flag, number)


# -- the recorder -----------------------------------------------------------------------------


TOOLS = Path(__file__).resolve().parents[3] / "tools"


def _tool(name: str) -> ModuleType:
    """A module of tools/ as the recorder script runs it (its folder first on the path)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recorder() -> ModuleType:
    _tool("engine_config_facts")  # what the recorder imports from beside it
    return _tool("engine_parser_facts")


def test_a_stand_in_keeps_a_union_with_a_literal(recorder: ModuleType) -> None:
    """``torch.dtype | Literal[...]`` with torch stubbed keeps the Literal (vLLM reads its
    choices from the union's members); arithmetic on a stand-in still absorbs."""
    dtype = recorder._Inert("dtype", (), {})
    members = get_args(dtype | Literal["auto", "float16"])
    assert dtype in members and Literal["auto", "float16"] in members
    assert get_args(Literal["auto"] | dtype) == (Literal["auto"], dtype)
    assert dtype + 1 is dtype and (dtype | 3) is dtype


def test_a_choice_set_is_recorded_sorted(recorder: ModuleType) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices={"pytorch", "flashinfer", "ascend", "intel_xpu"})
    flags, _ = recorder.facts(parser)
    assert flags["--backend"]["choices"] == ["ascend", "flashinfer", "intel_xpu", "pytorch"]


def test_the_recorder_reads_bounds_the_config_class_validator_enforces(
    recorder: ModuleType,
) -> None:
    config_facts = sys.modules["engine_config_facts"]
    pydantic = pytest.importorskip("pydantic", reason="the config class is a pydantic dataclass")
    from pydantic.dataclasses import dataclass

    @dataclass
    class CacheConfig:
        gpu_memory_utilization: float = pydantic.Field(default=0.9, gt=0, le=1)
        block_size: int = 16  # no bounds

    config_facts.CONFIG_CLASSES[:] = [CacheConfig]
    try:
        assert config_facts.bounds("gpu_memory_utilization") == {
            "gt": 0,
            "le": 1,
            "source": f"{CacheConfig.__module__.replace('.', '/')}.py "
            f"{CacheConfig.__qualname__}.gpu_memory_utilization",
        }
        assert config_facts.bounds("block_size") is None
        assert config_facts.bounds("not_a_field") is None
    finally:
        config_facts.CONFIG_CLASSES.clear()


def test_the_recorder_reads_the_keys_the_engine_parser_takes(recorder: ModuleType) -> None:
    """A flag parsed into a config class (vLLM's ``parse_dataclass``) takes the keys that
    class's validator takes: not an init-less field, nothing when extra keys pass."""
    pydantic = pytest.importorskip("pydantic", reason="the config class is a pydantic dataclass")
    from dataclasses import field

    from pydantic.dataclasses import dataclass

    config_facts = sys.modules["engine_config_facts"]

    @dataclass(config=pydantic.ConfigDict(extra="forbid"))
    class KVTransferConfig:
        kv_role: str | None = None
        kv_connector: str | None = None
        computed: int = field(default=0, init=False)

    @dataclass
    class Open:
        anything: int = 0

    def parser_of(cls: type) -> argparse.Action:
        def parse_dataclass(val: str, cls: type = cls) -> Any:
            try:
                return pydantic.TypeAdapter(cls).validate_json(val)
            except pydantic.ValidationError as error:
                raise argparse.ArgumentTypeError(repr(error)) from error

        return argparse.ArgumentParser().add_argument("--x-config", type=parse_dataclass)

    where = f"{KVTransferConfig.__module__.replace('.', '/')}.py"
    assert config_facts.json_shape(parser_of(KVTransferConfig)) == {
        "kind": "object",
        "keys": ["kv_connector", "kv_role"],
        "source": f"{where} {KVTransferConfig.__qualname__}",
    }
    assert config_facts.json_shape(parser_of(Open)) == {
        "kind": "object",
        "source": f"{where} {Open.__qualname__}",
    }
