"""``mlcc argv -f`` and ``mlcc env -f`` print exactly what the rendered pod runs, CacheBackend
flags and env included: over the pipeline matrix, the argv equals what the real wrapper builds
inside the rendered container (its ConfigMap env, its container env, its own args), or the
container's command and args where no wrapper runs, and the env equals the container's."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs.cli import main
from mlcc_constructs.core import wrapper
from mlcc_constructs.core.cache import CacheBackendSpec
from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec, sectioned_doc
from tests.core.cache.test_cache_admission import seed_safe_spec
from tests.core.serving.test_pipeline_matrix import CONTEXT, MATRIX, SOURCES

ENGINES = {m.engine: m for m in builtin_engines()}
LLAMA_CPP_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/sagemaker-llama-cpp:test"


def _values(case: tuple[Any, ...]) -> dict[str, Any]:
    engine, target, lora, delivery, cache, source = case
    values: dict[str, Any] = {
        "engine": engine,
        "model": SOURCES[source],
        "instance_type": "ml.g5.12xlarge",
        "name": "m",
        "namespace": "inference",
        "target": target,
        "lora": lora,
        "config_delivery": delivery,
        "env": {"NCCL_DEBUG": "WARN"},
        "secret_env": {"API_TOKEN": {"name": "api", "key": "token"}},
        "account": "123456789012",
        "region": "us-east-1",
        "profile": "dev",
    }
    if engine == "llama-cpp":
        values["image"] = LLAMA_CPP_IMAGE
    if cache:
        values["cache_backend"] = seed_safe_spec(ENGINES[engine].raw.get("cache_runtime", "VLLM"))
    return values


def _prepared(values: dict[str, Any]) -> Any:
    fields = {k: v for k, v in values.items() if k not in ("account", "region", "profile")}
    fields["secret_env"] = {}
    if "cache_backend" in fields:
        fields["cache_backend"] = CacheBackendSpec.from_dict(fields["cache_backend"])
    from mlcc_constructs.core.serving.spec.deployment import SecretRef

    fields["secret_env"] = {
        k: SecretRef(name=v["name"], key=v["key"]) for k, v in values["secret_env"].items()
    }
    return prepare(flat_spec(**fields), context=CONTEXT)


def _mlcc(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(args))
    return code, out.getvalue()


def _pod(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The engine container of the rendered workload (as the pod runs it) and its env: the
    ConfigMaps it takes env from, then its env entries (Secret values as placeholders)."""
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    workload = next(o for o in objects if o["kind"] in ("Deployment", "InferenceEndpointConfig"))
    if workload["kind"] == "Deployment":
        container = next(
            c for c in workload["spec"]["template"]["spec"]["containers"] if c["name"] == "engine"
        )
        entries = container.get("env", [])
    else:
        container = workload["spec"]["worker"]
        entries = container.get("environmentVariables", [])
    env: list[tuple[str, str]] = []
    for source in container.get("envFrom", []):
        env += list(by_name[("ConfigMap", source["configMapRef"]["name"])]["data"].items())
    for entry in entries:
        if "value" in entry:
            env.append((entry["name"], entry["value"]))
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            env.append((entry["name"], f"${{secret:{ref['name']}/{ref['key']}}}"))
    return container, env


def _wrapper_argv(
    objects: list[dict[str, Any]], env: list[tuple[str, str]], args: list[str], tmp_path: Path
) -> list[str]:
    """What the container-side wrapper execs, run on the pod's env and args (its manifest file,
    mounted from the wrapper ConfigMap on eks, written where the pod would read it)."""
    environment = dict(env)
    if wrapper.MANIFEST_ENV in environment:
        wrapper_map = next(o for o in objects if o["metadata"]["name"].endswith("-wrapper"))
        manifest = tmp_path / "manifest.json"
        manifest.write_text(wrapper_map["data"]["manifest.json"], encoding="utf-8")
        environment[wrapper.MANIFEST_ENV] = str(manifest)
    saved = dict(os.environ)
    out = io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(environment)
        with contextlib.redirect_stdout(out):
            assert wrapper.main(["--print", *args]) == 0
    finally:
        os.environ.clear()
        os.environ.update(saved)
    argv: list[str] = json.loads(out.getvalue())
    return argv


@pytest.mark.parametrize("case", MATRIX, ids=lambda c: "-".join(map(str, c)))
def test_argv_and_env_of_a_spec_file_are_what_the_rendered_pod_runs(
    case: tuple[Any, ...], tmp_path: Path
) -> None:
    values = _values(case)
    spec_file = tmp_path / "deploy.yaml"
    spec_file.write_text(yaml.safe_dump(sectioned_doc(values)), encoding="utf-8")
    try:
        prepared = _prepared(values)
    except MlccError:  # refused by the pipeline: refused by both commands too
        assert _mlcc("argv", "-f", str(spec_file))[0] == 1
        assert _mlcc("env", "-f", str(spec_file))[0] == 1
        return
    objects = [e.object for e in prepared.objects]
    container, env = _pod(objects)

    code, out = _mlcc("env", "-f", str(spec_file), "--format", "json")
    assert code == 0
    assert list(json.loads(out)["env"].items()) == env

    code, out = _mlcc("argv", "-f", str(spec_file))
    runs_wrapper = wrapper.ENGINE_ENV in dict(env)  # the wrapper reads its engine from env
    if "command" not in container:  # the image's own entrypoint reads the env
        assert code == 1
        return
    assert code == 0
    expected = (
        _wrapper_argv(objects, env, container.get("args", []), tmp_path)
        if runs_wrapper
        else [*container["command"], *container.get("args", [])]
    )
    assert json.loads(out) == expected
    if case[4]:  # a CacheBackend's flags reach the engine whatever the delivery
        assert "--kv-transfer-config" in expected or "--enable-lmcache" in expected


def test_the_matrix_covers_cached_engines_both_ways() -> None:
    cached = {(c[0], c[3]) for c in MATRIX if c[4] and c[1] == "eks"}
    assert {("vllm", "env"), ("vllm", "args"), ("sglang", "env"), ("sglang", "args")} <= cached


def test_name_picks_one_deployment_of_a_list(tmp_path: Path) -> None:
    base = _values(("vllm", "eks", False, "env", False, "hf"))
    other = {**base, "name": "other", "env": {"VLLM_MAX_NUM_SEQS": "8"}}
    spec_file = tmp_path / "list.yaml"
    spec_file.write_text(yaml.safe_dump(sectioned_doc([base, other])), encoding="utf-8")
    code, out = _mlcc("argv", "-f", str(spec_file), "--name", "other")
    assert code == 0 and "--max-num-seqs" in json.loads(out)
    code, out = _mlcc("argv", "-f", str(spec_file), "--name", "m")
    assert code == 0 and "--max-num-seqs" not in json.loads(out)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["argv", "-f", str(spec_file)]) == 1
        assert main(["env", "-f", str(spec_file), "--name", "nope"]) == 1
    assert err.getvalue().splitlines() == [
        f"mlcc: error: {spec_file}: the spec file holds 2 deployments (allowed: m, other; fix: "
        "pick one with --name NAME)",
        f"mlcc: error: {spec_file}: no deployment named 'nope' in the spec file (got 'nope'; "
        "allowed: m, other; fix: pass --name with one of the allowed names)",
    ]
