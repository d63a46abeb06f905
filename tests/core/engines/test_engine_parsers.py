"""What reaches the engine process, checked against the engines' own argument parsers.

The parsers are recorded as package data (``mlcc_constructs/data/engine_parsers/<engine>/
<version>.json``: every flag's spellings, argparse action and off forms, nargs, type, choices
and the env variables each release reads, with the wheel and files they were read from), so
no GPU, network or engine install is needed; these tests use the pinned releases'. Every case is
rendered for both targets and both config deliveries; the engine's argv must parse, be the
same in both deliveries and equal ``mlcc argv --target``; its environment must hold its own
variables and no key that became a flag.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

from mlcc_constructs import cli
from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.cache import CacheBackendSpec
from mlcc_constructs.core.engines.manifests import EngineManifest, builtin_engines
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.prepare.engine_cache import cache_env
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.wrapper import list_form
from tests._flat import flat_spec
from tests.core.cache.test_cache_admission import seed_safe_spec
from tests.engine_process import engine_process

FACTS_DIR = data_path("engine_parsers")
FACTS = {
    engine: json.loads((FACTS_DIR / engine / f"{version}.json").read_text())
    for engine, version in sorted(pinned().engine_versions.items())
    if (FACTS_DIR / engine / f"{version}.json").is_file()
}
MANIFESTS = {m.engine: m for m in builtin_engines()}
S3_MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
HF_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
TARGETS = ("eks", "hyperpod-eks")
TYPES = {"int": int, "float": float, "json": json.loads, "json_list_type": json.loads}
"""The recorded types a test parser converts with; every other one (the engine's own parser
functions) takes the text as it is."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def parser_for(engine: str) -> argparse.ArgumentParser:
    """An argparse parser with the recorded facts of ``engine``'s parser."""
    facts = FACTS[engine]
    parser = _Parser(prog=engine, allow_abbrev=False, add_help=False)
    if "positional" in facts:
        parser.add_argument(facts["positional"]["dest"], nargs=facts["positional"]["nargs"])
    for flag, spec in facts["flags"].items():
        kwargs: dict[str, Any] = {}
        action, dest = spec["action"], flag.lstrip("-").replace("-", "_")
        if action == "boolean_optional":  # on, and each recorded off form
            kwargs.update(action="store_const", const=True, dest=dest)
            for off in spec["off"]:
                parser.add_argument(off, action="store_const", const=False, dest=dest)
        elif action in ("store_true", "store_false", "count"):
            kwargs["action"] = action
        elif action == "store_const":
            kwargs.update(action="store_const", const=True)
        else:
            kwargs["type"] = TYPES.get(spec["type"], str)
            kwargs["action"] = "append" if action == "append" else "store"
            for field in ("nargs", "choices", "required"):
                if field in spec:
                    kwargs[field] = spec[field]
        parser.add_argument(flag, *spec.get("aliases", []), **kwargs)
    return parser


def parse(engine: str, argv: list[str]) -> argparse.Namespace:
    """``argv`` (the engine's full command line) parsed by the recorded parser."""
    command = MANIFESTS[engine].launch["command"]
    assert argv[: len(command)] == command
    return parser_for(engine).parse_args(argv[len(command) :])


# -- the recorded facts agree with the manifests and the pins ---------------------------------


@pytest.mark.parametrize("engine", sorted(FACTS))
def test_facts_are_of_the_pinned_engine_version(engine: str) -> None:
    assert FACTS[engine]["version"] == pinned().engine_versions[engine]


@pytest.mark.parametrize("engine", sorted(FACTS))
def test_engine_env_lists_only_variables_the_engine_reads(engine: str) -> None:
    manifest = MANIFESTS[engine]
    assert manifest.engine_env, "the engine's own variables are declared"
    assert sorted(manifest.engine_env - set(FACTS[engine]["env"])) == []


def test_vllm_dropped_variables_are_no_longer_read() -> None:
    """vLLM reads these no more (ATTENTION_BACKEND is the --attention-backend flag now)."""
    gone = {"VLLM_ATTENTION_BACKEND", "VLLM_RPC_TIMEOUT", "VLLM_USE_V1"}
    assert gone.isdisjoint(FACTS["vllm"]["env"])
    assert gone.isdisjoint(MANIFESTS["vllm"].engine_env)


def _suffix(flag: str) -> str:
    return flag.removeprefix("--").upper().replace("-", "_")


@pytest.mark.parametrize("engine", sorted(FACTS))
def test_manifest_forms_match_the_parser(engine: str) -> None:
    """The off form and the list forms a manifest declares are what the parser takes."""
    manifest: EngineManifest = MANIFESTS[engine]
    for flag, spec in FACTS[engine]["flags"].items():
        suffix, action = _suffix(flag), spec.get("action")
        if action == "boolean_optional":
            assert manifest.off_form_blocker(suffix, None) is None, flag
        elif action == "store_true":
            assert manifest.off_form_blocker(suffix, None) is not None, flag
        form = list_form(manifest.raw, suffix)
        if action == "append":
            assert form == "repeat", flag
        elif spec.get("nargs") in ("+", "*"):
            assert form == "spread", flag
        elif form == "verbatim":  # one argument holding a JSON array
            assert spec.get("type") in ("json", "json_list_type"), flag
    # and every flag the manifest names a list form for is one of the release's
    for suffix in manifest.raw.get("list_values", {}).get("flags", {}):
        assert "--" + suffix.lower().replace("_", "-") in FACTS[engine]["flags"], suffix


# -- every case through both targets and both deliveries ------------------------------------

CASES: dict[str, dict[str, Any]] = {
    "vllm-lora-tier2": {"engine": "vllm", "lora": True, "env": {"VLLM_MAX_NUM_SEQS": "8"}},
    "vllm-prefix-caching-off": {
        "engine": "vllm",
        "model": HF_MODEL,
        "env": {"VLLM_ENABLE_PREFIX_CACHING": "false", "VLLM_ENFORCE_EAGER": "true"},
    },
    "vllm-lists": {
        "engine": "vllm",
        "lora": True,
        "env": {
            "VLLM_IGNORE_PATTERNS": '["*.pt", "original/*"]',
            "VLLM_LORA_MODULES": '["support=/opt/ml/model/a", {"name": "b", "path": "/p"}]',
        },
    },
    "vllm-own-env": {
        "engine": "vllm",
        "lora": True,
        "env": {"VLLM_NO_USAGE_STATS": "1", "VLLM_LOGGING_LEVEL": "DEBUG"},
    },
    "sglang-lora": {"engine": "sglang", "lora": True, "quantization": "fp8"},
    "sglang-lists": {
        "engine": "sglang",
        "model": HF_MODEL,
        "lora": True,
        "env": {"SGLANG_LORA_TARGET_MODULES": '["q_proj", "v_proj"]', "NCCL_DEBUG": "WARN"},
    },
    "sglang-own-env": {
        "engine": "sglang",
        "env": {"SGLANG_ENABLE_METRICS": "true", "SGLANG_USE_MODELSCOPE": "false"},
    },
}
EXPECTED: dict[str, dict[str, Any]] = {
    "vllm-prefix-caching-off": {"enable_prefix_caching": False, "enforce_eager": True},
    "vllm-lists": {
        "ignore_patterns": ["*.pt", "original/*"],
        "lora_modules": ["support=/opt/ml/model/a", '{"name":"b","path":"/p"}'],
        "enable_lora": True,
    },
    "sglang-lists": {"lora_target_modules": ["q_proj", "v_proj"], "enable_lora": True},
    "sglang-lora": {"quantization": "fp8", "lora_target_modules": ["all"], "max_lora_rank": 16},
    "sglang-own-env": {"enable_metrics": True},
}


def _spec(case: str, target: str, delivery: str) -> DeploymentSpec:
    values = {"model": S3_MODEL, "instance_type": "ml.g5.12xlarge", "name": "llm", **CASES[case]}
    return flat_spec(target=target, config_delivery=delivery, **values)


def _cli_argv(capsys: pytest.CaptureFixture[str], case: str, target: str) -> list[str]:
    values = CASES[case]
    args = ["argv", "--engine", values["engine"], "--model", values.get("model", S3_MODEL)]
    args += ["--instance-type", "ml.g5.12xlarge", "--target", target, "--name", "llm"]
    args += ["--lora"] if values.get("lora") else []
    args += ["--quantization", values["quantization"]] if "quantization" in values else []
    for key, value in values.get("env", {}).items():
        args += ["--set", f"{key}={value}"]
    capsys.readouterr()
    assert cli.main(args) == 0
    result: list[str] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_engine_gets_one_argv_its_parser_takes_and_a_clean_env(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str, target: str
) -> None:
    engine = CASES[case]["engine"]
    manifest = MANIFESTS[engine]
    processes = {}
    for delivery in ("env", "args"):
        folder = tmp_path / delivery
        folder.mkdir()
        objects = list(render(_spec(case, target, delivery), context=CONTEXT).objects)
        processes[delivery] = engine_process(objects, folder)
    (argv, env_by_env), (args_argv, env_by_args) = processes["env"], processes["args"]

    assert argv == args_argv  # one argv, whatever the delivery
    assert argv == _cli_argv(capsys, case, target)  # and it is `mlcc argv --target`
    namespace = parse(engine, argv)
    for dest, value in EXPECTED.get(case, {}).items():
        assert getattr(namespace, dest) == value, dest

    user_env = CASES[case].get("env", {})
    own = {k: v for k, v in user_env.items() if k in manifest.engine_env}
    if CASES[case].get("lora"):  # both targets load adapters at runtime: the engine's switch
        own |= manifest.adapter_runtime_env
    # where pods take volumes, the declared cache directories arrive as env too (engine_cache)
    caches = dict(cache_env(manifest, user_env)) if target == "eks" else {}
    assert caches or target != "eks", "vLLM and SGLang declare cache directories"
    plain = {k: v for k, v in user_env.items() if not k.startswith(manifest.env_var_prefix)}
    for env in (env_by_env, env_by_args):
        # the engine's own variables and plain env arrive; nothing that became a flag does
        assert own.items() <= env.items() and plain.items() <= env.items()
        assert caches.items() <= env.items()
        engine_keys = {k for k in env if k.startswith(manifest.env_var_prefix)}
        cache_keys = {k for k in caches if k.startswith(manifest.env_var_prefix)}
        assert cache_keys <= manifest.engine_env  # the engine's own variables, never flags
        assert engine_keys == set(own) | cache_keys, engine_keys
        assert not [k for k in env if k.startswith("MLCC_")]


@pytest.mark.parametrize("delivery", ["env", "args"])
def test_a_flag_from_tier2_and_the_cache_adapter_is_passed_once(
    tmp_path: Path, delivery: str
) -> None:
    """SGLang's LMCache adapter contributes --enable-metrics; so does SGLANG_ENABLE_METRICS."""
    backend = seed_safe_spec("SGLang")
    spec = flat_spec(
        engine="sglang",
        model=S3_MODEL,
        instance_type="ml.g5.12xlarge",
        name="cached",
        config_delivery=delivery,
        env={"SGLANG_ENABLE_METRICS": "true", "SGLANG_MAX_RUNNING_REQUESTS": "32"},
        cache_backend=CacheBackendSpec.from_dict(backend),
    )
    argv, _ = engine_process(list(render(spec, context=CONTEXT).objects), tmp_path)
    assert argv.count("--enable-metrics") == 1
    assert parse("sglang", argv).enable_lmcache
    # Both deliveries give this exact argv: the adapter's flags replace a Tier-2 flag of the
    # same name in place, the others follow host and port.
    assert argv[3:] == [
        "--enable-metrics", "--max-running-requests", "32", "--model-path", "/opt/ml/model",
        "--served-model-name", "cached", "--tp-size", "4", "--host", "0.0.0.0", "--port",
        "30000", "--enable-lmcache",
        "--lmcache-config-file", "/var/run/inference-cache/lmcache/client.yaml",
        "--context-length", "32768",
    ]  # fmt: skip


@pytest.mark.parametrize(("engine", "runtime"), [("vllm", "VLLM"), ("sglang", "SGLang")])
@pytest.mark.parametrize("delivery", ["env", "args"])
def test_the_seed_cache_example_reaches_each_engine_as_arguments_it_accepts(
    tmp_path: Path, engine: str, runtime: str, delivery: str
) -> None:
    spec = flat_spec(
        engine=engine,
        model=S3_MODEL,
        instance_type="ml.g5.12xlarge",
        name="cached",
        config_delivery=delivery,
        cache_backend=CacheBackendSpec.from_dict(seed_safe_spec(runtime)),
    )
    argv, _ = engine_process(list(render(spec, context=CONTEXT).objects), tmp_path)
    parse(engine, argv)  # raises on a flag this engine's parser does not have


def test_the_recorded_parser_rejects_what_the_engine_rejects() -> None:
    """The facts are strict: one element per variable was the bug, and it fails here too."""
    with pytest.raises(ValueError, match="invalid choice: 'q_proj,v_proj'"):
        parse("sglang", [*MANIFESTS["sglang"].launch["command"], "--model-path", "m",
                         "--lora-target-modules", "q_proj,v_proj"])  # fmt: skip
    with pytest.raises(ValueError, match="unrecognized arguments: --no-enable-metrics"):
        parse("sglang", [*MANIFESTS["sglang"].launch["command"], "--model-path", "m",
                         "--no-enable-metrics"])  # fmt: skip
