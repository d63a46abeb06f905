"""Every Tier-2 flag checked against the recorded parser of the engine release that runs it
(``mlcc_constructs/data/engine_parsers/<engine>/<version>.json``; issue 25), and the facts
files themselves: their schema, and their agreement with the builtin manifests."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.engines.manifests import EngineManifest, builtin_engines, parse_version
from mlcc_constructs.core.engines.parser_facts import (
    BOOLEAN_ACTIONS,
    parser_facts,
    recorded_versions,
)
from mlcc_constructs.core.engines.values import ValueChecks
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.serving.resolve.tiers import resolve
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.wrapper import flag_for
from tests._flat import flat_spec

S3_MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
MANIFESTS = {m.engine: m for m in builtin_engines()}
FACTS_DIR = data_path("engine_parsers")
FILES = sorted(FACTS_DIR.glob("*/*.json"))
RECORDED = [(p.parent.name, p.stem) for p in FILES]


def _resolve(engine: str, env: dict[str, str], version: str | None = None) -> Any:
    """``version``: the engine release of the image (the pinned image's repository, tagged
    with it: the version follows the image); ``None``: the pinned image."""
    repository = pinned().engine_images[engine].rsplit(":", 1)[0]
    return resolve(
        flat_spec(
            engine=engine,
            model=S3_MODEL,
            instance_type="ml.g5.12xlarge",
            engine_version=version,
            image=None if version is None else f"{repository}:v{version}",
            env=env,
        )
    )


# -- refused: (engine, version or None for the pinned one, key, value, words in the error) ----
REFUSED = [
    ("vllm", None, "VLLM_DISABLE_LOG_REQUESTS", "true",
     ["--disable-log-requests is not a flag of vllm 0.31.0",
      "--enable-log-requests / --no-enable-log-requests"]),
    ("vllm", "0.31.0", "VLLM_MAX_NUM_SEQ", "8", ["did you mean --max-num-seqs"]),
    *[("vllm", None, "VLLM_ENFORCE_EAGER", v, ["takes no value", "fix: true or false"])
      for v in ("1", "0", "yes", "on")],
    ("sglang", None, "SGLANG_ENABLE_MIXED_CHUNK", "1", ["fix: true or false"]),
    ("sglang", None, "SGLANG_ENABLE_LORA", "yes", ["presence-only flag", "allowed: true, false"]),
    ("sglang", None, "SGLANG_LORA_TARGET_MODULES", "q_proj,v_proj",
     ["a comma does not separate them", 'JSON array, e.g. ["q_proj", "v_proj"]']),
    ("vllm", None, "VLLM_LORA_TARGET_MODULES", "q_proj,v_proj", ['["q_proj", "v_proj"]']),
    ("sglang", None, "SGLANG_LORA_TARGET_MODULES", '["q_proj", "x_proj"]',
     ["'x_proj' is not a choice of --lora-target-modules in sglang 0.5.21"]),
    ("vllm", None, "VLLM_MAX_NUM_SEQS", "eight", ["takes an integer", "not 'eight'"]),
    ("vllm", None, "VLLM_GPU_MEMORY_UTILIZATION", "high", ["takes a number"]),
    ("vllm", None, "VLLM_MAX_NUM_SEQS", "true", ["takes a value (int)", "pass the flag bare"]),
    ("vllm", None, "VLLM_MAX_LORA_RANK", "7", ["value not allowed for VLLM_MAX_LORA_RANK"]),
    ("sglang", None, "SGLANG_LOG_REQUESTS_FORMAT", "xml",
     ["'xml' is not a choice of --log-requests-format", "allowed: text, json"]),
    ("sglang", None, "SGLANG_MAX_RUNNING_REQUESTS", '["1", "2"]', ["takes one value, not a list"]),
    ("sglang", None, "SGLANG_DATA_PARALLEL_SIZE", "four", ["takes an integer"]),  # an alias
]  # fmt: skip


@pytest.mark.parametrize(("engine", "version", "key", "value", "words"), REFUSED)
def test_a_tier2_flag_the_release_does_not_take_is_refused(
    engine: str, version: str | None, key: str, value: str, words: list[str]
) -> None:
    with pytest.raises(MlccError) as raised:
        _resolve(engine, {key: value}, version)
    text = str(raised.value)
    assert f"/engine/env/{key}" in text
    for word in words:
        assert word in text


# -- taken: (engine, version, key, value, what the argv holds, what it must not) -------------
TAKEN = [
    ("vllm", None, "VLLM_ENABLE_LOG_REQUESTS", "true", ["--enable-log-requests"], []),
    ("vllm", None, "VLLM_ENABLE_LOG_REQUESTS", "false", ["--no-enable-log-requests"], []),
    ("vllm", "0.33.0", "VLLM_DISABLE_LOG_REQUESTS", "true", ["--disable-log-requests"], []),
    # 0.33's EnableDisableAction keeps the wrapper's --no-enable-x, hidden from --help
    ("vllm", "0.33.0", "VLLM_ENABLE_PREFIX_CACHING", "false", ["--no-enable-prefix-caching"], []),
    ("vllm", None, "VLLM_MAX_NUM_SEQS", "8", ["--max-num-seqs", "8"], []),
    ("vllm", None, "VLLM_GPU_MEMORY_UTILIZATION", "0.85", ["0.85"], []),
    ("vllm", None, "VLLM_ENFORCE_EAGER", "True", ["--enforce-eager"], []),
    ("vllm", None, "VLLM_LORA_TARGET_MODULES", '["q_proj","v_proj"]', ["q_proj", "v_proj"], []),
    ("sglang", None, "SGLANG_LORA_STRICT_LOADING", "false", ["--no-lora-strict-loading"], []),
    ("sglang", None, "SGLANG_LORA_STRICT_LOADING", "true", ["--lora-strict-loading"], []),
    ("sglang", None, "SGLANG_LOG_REQUESTS_FORMAT", "json", ["--log-requests-format", "json"], []),
    ("sglang", None, "SGLANG_ENABLE_MIXED_CHUNK", "false", [], ["--enable-mixed-chunk"]),
    ("sglang", None, "SGLANG_CONTEXT_LENGTH", "32k", ["32k"], []),  # its own parser's type
]  # fmt: skip


@pytest.mark.parametrize(("engine", "version", "key", "value", "holds", "lacks"), TAKEN)
def test_a_tier2_flag_the_release_takes_renders(
    engine: str, version: str | None, key: str, value: str, holds: list[str], lacks: list[str]
) -> None:
    argv = _resolve(engine, {key: value}, version).argv()
    for word in holds:
        assert word in argv
    for word in lacks:
        assert word not in argv


@pytest.mark.parametrize(
    ("engine", "key", "flag"),
    [
        ("vllm", "VLLM_DISABLE_LOG_STATS", "--disable-log-stats"),  # store_true
        ("sglang", "SGLANG_ENABLE_MIXED_CHUNK", "--enable-mixed-chunk"),
    ],
)
def test_false_for_a_flag_without_an_off_form_is_omitted_and_reported(
    engine: str, key: str, flag: str
) -> None:
    resolution = _resolve(engine, {key: "false"})
    assert flag not in resolution.argv()
    assert [w for w in resolution.warnings if w.startswith(f"{key}=false passes nothing")]


@pytest.mark.parametrize(("version", "warned"), [(None, False), ("0.33.0", True)])
def test_an_engine_variable_stays_env(version: str | None, warned: bool) -> None:
    """VLLM_ENGINE_ITERATION_TIMEOUT_S is read by the pinned vLLM 0.31.0 and dropped by 0.33.0:
    env on both (never a flag), with a warning on 0.33.0."""
    resolution = _resolve("vllm", {"VLLM_ENGINE_ITERATION_TIMEOUT_S": "120"}, version)
    assert not [a for a in resolution.argv() if "iteration" in a]
    assert resolution.env["VLLM_ENGINE_ITERATION_TIMEOUT_S"] == "120"
    said = [w for w in resolution.warnings if w.startswith("VLLM_ENGINE_ITERATION_TIMEOUT_S is")]
    assert bool(said) == warned


def test_a_release_without_recorded_facts_is_refused_naming_the_recorded_ones() -> None:
    """Issue 39: its flags cannot be checked, so it is not served unchecked."""
    with pytest.raises(MlccError) as raised:
        _resolve("vllm", {"VLLM_SOME_FUTURE_FLAG": "3"}, "0.32.0")
    assert str(raised.value.problems[0]) == (
        "/engine/version: vllm 0.32.0 has no recorded parser facts: its flags and values cannot "
        "be checked (got '0.32.0'; allowed: a vllm release with recorded facts: 0.31.0, 0.33.0; "
        "fix: use an image of vllm 0.31.0 or 0.33.0, or record the release's parser "
        "(tools/engine_parser_facts.py writes mlcc_constructs/data/engine_parsers/vllm/"
        "0.32.0.json))"
    )


@pytest.mark.parametrize(
    ("version", "key", "warned"),
    [
        ("0.33.0", "VLLM_LOGGING_LEVEL", False),
        ("0.31.0", "VLLM_ENGINE_ITERATION_TIMEOUT_S", False),
        ("0.33.0", "VLLM_ENGINE_ITERATION_TIMEOUT_S", True),  # 0.33.0 dropped it
    ],
)
def test_an_engine_env_variable_the_release_does_not_read_is_warned_about(
    version: str, key: str, warned: bool
) -> None:
    warnings: list[str] = []
    checks = ValueChecks(
        manifest=MANIFESTS["vllm"],
        version=parse_version(version),
        given_version=version,
        problems=[],
        warnings=warnings,
    )
    assert checks.own_env(key)
    assert warnings == (
        [f"{key} is passed as env, but vllm {version} does not read it (its env registry is "
         "recorded in mlcc_constructs/data/engine_parsers/)"] if warned else []
    )  # fmt: skip


# -- the facts files -------------------------------------------------------------------------

ACTIONS = {"store", "append", *BOOLEAN_ACTIONS}
FLAG_KEYS = {"action", "off", "aliases", "engine_action", "type", "nargs", "choices",
             "choices_unrecorded", "required", "hidden", "bounds", "json"}  # fmt: skip
SPELLING = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9_.-]*$")


@pytest.mark.parametrize("path", FILES, ids=[f"{e}-{v}" for e, v in RECORDED])
def test_facts_files_have_the_schema(path: Any) -> None:
    document = json.loads(path.read_text())
    assert set(document) <= {"engine", "version", "command", "read_from", "flags", "env",
                             "positional"}  # fmt: skip
    assert (document["engine"], document["version"]) == (path.parent.name, path.stem)
    assert document["engine"] in MANIFESTS
    assert set(document["read_from"]) == {"wheel", "files", "method"}
    assert f"{document['engine']}=={document['version']}" in document["read_from"]["wheel"]
    assert list(document["flags"]) == sorted(document["flags"]) and document["flags"]
    spellings: list[str] = []
    for flag, record in document["flags"].items():
        assert set(record) <= FLAG_KEYS and record["action"] in ACTIONS, flag
        names = [flag, *record.get("aliases", []), *record.get("off", [])]
        assert all(SPELLING.match(n) for n in names), flag
        # a hidden spelling (accepted, not in --help) is one of the flag's own spellings
        assert set(record.get("hidden", [])) <= set(names[1:]), flag
        spellings += names
        if record["action"] == "boolean_optional":
            assert record["off"], flag
        else:
            assert "off" not in record, flag
        if record["action"] in ("store", "append"):
            assert isinstance(record["type"], str), flag
        else:
            assert not {"type", "nargs", "choices"} & set(record), flag
        assert record.get("nargs") in (None, "?", "*", "+") or isinstance(record["nargs"], int)
        assert isinstance(record.get("choices", []), list)
        if "bounds" in record:  # a config class field's numeric bounds, with where they are
            bounds = dict(record["bounds"])
            assert isinstance(bounds.pop("source"), str) and bounds, flag
            assert set(bounds) <= {"gt", "ge", "lt", "le"}, flag
            assert all(isinstance(v, int | float) for v in bounds.values()), flag
            assert record["action"] == "store", flag
        if "json" in record:  # the JSON shape the engine defines, with where it does
            shape = record["json"]
            assert set(shape) <= {"kind", "keys", "source"} and shape["kind"] in ("object", "array")
            assert isinstance(shape["source"], str), flag
            assert shape.get("keys", ["a"]) == sorted(set(shape.get("keys", ["a"]))), flag
            assert "keys" not in shape or shape["kind"] == "object", flag
    assert len(spellings) == len(set(spellings)), "one spelling names one flag"
    assert document["env"] == sorted(set(document["env"])) and document["env"]


def test_the_pinned_releases_have_recorded_facts() -> None:
    for engine in ("vllm", "sglang"):
        version = pinned().engine_versions[engine]
        assert parser_facts(engine, version) is not None, (engine, version)
        assert version in recorded_versions(engine)


def _capability_flags(manifest: EngineManifest) -> set[str]:
    style = manifest.launch.get("flag_style", "kebab")
    flags = {
        flag_for(c.suffix, style)
        for c in manifest.capabilities
        if not (c.name == "model" and manifest.launch.get("model") == "positional")
    }
    flags |= {manifest.launch[f] for f in ("port_flag", "host_flag") if f in manifest.launch}
    if manifest.stream_load is not None:
        flags.add(manifest.stream_load.flag)
    config = (manifest.raw.get("api_key") or {}).get("config_file")
    if config:
        flags.add(config["flag"])
    return flags


CACHE_FLAGS = {
    # the runtime of the CacheBackend adapters (data/cache_adapters.json) that add each
    # engine's flags
    "vllm": "VLLM",
    "sglang": "SGLang",
}


@pytest.mark.parametrize(("engine", "version"), [r for r in RECORDED if r[0] in MANIFESTS])
def test_every_flag_the_builtin_manifests_render_is_a_flag_of_the_release(
    engine: str, version: str
) -> None:
    facts = parser_facts(engine, version)
    assert facts is not None
    manifest = MANIFESTS[engine]
    flags = _capability_flags(manifest)
    adapters = json.loads(data_path("cache_adapters.json").read_text())["adapters"]
    ours = [a for a in adapters if a["runtime"] == CACHE_FLAGS[engine]]
    assert ours, "each engine has a CacheBackend adapter"
    for adapter in ours:
        flags |= {arg["flag"] for arg in adapter["args"]} | set(adapter["reserved"]["args"])
    unknown = sorted(f for f in flags if f not in facts.flags)
    assert unknown == [], f"{engine} {version} has no {unknown}"


@pytest.mark.parametrize(("engine", "version"), [r for r in RECORDED if r[0] in MANIFESTS])
def test_the_manifest_off_forms_are_the_release_s(engine: str, version: str) -> None:
    """negation is derived from the parser: a store_true flag has no off form in the manifest;
    a BooleanOptionalAction flag has one."""
    document = json.loads((FACTS_DIR / engine / f"{version}.json").read_text())
    manifest = MANIFESTS[engine]
    for flag, record in document["flags"].items():
        suffix = flag.removeprefix("--").upper().replace("-", "_")
        blocker = manifest.off_form_blocker(suffix, None)
        if record["action"] == "boolean_optional":
            assert blocker is None, flag
        elif record["action"] == "store_true":
            assert blocker is not None, flag


@pytest.mark.parametrize(("engine", "version"), [r for r in RECORDED if r[0] in MANIFESTS])
def test_engine_env_lists_only_variables_the_release_reads(engine: str, version: str) -> None:
    """Every engine_env entry is in the env registry of the pinned release; an entry a recorded
    release does not read is warned about there (VLLM_ENGINE_ITERATION_TIMEOUT_S: read by the
    pinned vLLM 0.31.0, dropped by 0.33.0), and only those are."""
    facts = parser_facts(engine, version)
    pinned_facts = parser_facts(engine, pinned().engine_versions[engine])
    assert facts is not None and pinned_facts is not None
    manifest = MANIFESTS[engine]
    assert sorted(manifest.engine_env - pinned_facts.env) == []
    warnings: list[str] = []
    checks = ValueChecks(
        manifest=manifest,
        version=parse_version(version),
        given_version=version,
        problems=[],
        warnings=warnings,
    )
    for key in sorted(manifest.engine_env):
        assert checks.own_env(key)
    unread = sorted(key for key in manifest.engine_env if key not in facts.env)
    assert [w.split(" ", 1)[0] for w in warnings] == unread
