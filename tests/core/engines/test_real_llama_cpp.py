"""The real-engine tier: a real llama.cpp server (tests/_llama_server.py) started with the settings
a rendered llama.cpp deployment gives its container, and the library's client side run against
it: ``mlcc endpoint check`` (right, wrong and missing API key, a wrong served name, the stream),
the probes and load balancer health check the render writes, the load balancer's routed paths,
and ``mlcc adapter``'s view of llama.cpp.

What upstream llama-server does that differs from the SageMaker llama.cpp container (its nginx
adds ``/ping`` and ``/invocations``) is asserted as upstream's and named so; the manifest
records the source of each path (``engines/llama-cpp/manifest.json``). Skipped, with the
reason, only when xllamacpp or gguf cannot be imported (both are pinned in requirements.lock).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs import ComputeSpec, Endpoint, EngineSpec, ModelSpec
from mlcc_constructs.core.engines.manifests import EngineManifest, builtin_engines
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, SecretRef
from tests._adapter_env import run
from tests._llama_server import API_KEY_ENV, RealServer, serve, tiny_gguf
from tests.conftest import LLAMA_CPP_TEST_IMAGE

__all__ = ["tiny_gguf"]  # the session fixture, used here

KEY_ENV = "MLCC_REAL_LLAMA_KEY"  # where the client side (mlcc endpoint check) reads the key
SERVED = "tiny-llama"
CTX_SIZE, SLOTS = 512, 2
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def llama_spec(target: str = "eks") -> DeploymentSpec:
    """The one llama.cpp deployment of this module (every test reads its rendered objects): a
    context of CTX_SIZE tokens over SLOTS parallel slots, served as SERVED, metrics on, an API
    key from Secrets Manager (eks) or a Kubernetes Secret (hyperpod-eks: its pods mount no
    Secrets Manager volume)."""
    eks = target == "eks"
    return DeploymentSpec(
        name="tiny-llama",
        namespace="inference",
        target=target,
        engine=EngineSpec(
            name="llama-cpp",
            image=LLAMA_CPP_TEST_IMAGE,
            env={
                "SM_LLAMA_CPP_CTX_SIZE": str(CTX_SIZE),
                "SM_LLAMA_CPP_PARALLEL": str(SLOTS),
                "SM_LLAMA_CPP_ALIAS": SERVED,
                "SM_LLAMA_CPP_METRICS": "true",
            },
            secret_env={}
            if eks
            else {API_KEY_ENV: SecretRef(name="tiny-llama-api-key", key="api-key")},
        ),
        model=ModelSpec(uri="s3://mlcc-models-dev-123456789012-us-east-1/models/mlcc/tiny-llama/"),
        compute=ComputeSpec(instance_type="ml.g5.xlarge"),
        endpoint=Endpoint(api_key_secret="mlcc/tiny-llama-api-key" if eks else None),
    )


def llama_manifest() -> EngineManifest:
    return {m.engine: m for m in builtin_engines()}["llama-cpp"]


def rendered(target: str = "eks") -> list[dict[str, Any]]:
    return list(render(llama_spec(target), context=RenderContext(profile="dev")).objects)


def of_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def engine_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    pod = of_kind(objects, "Deployment")["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "engine"]
    return container


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return rendered()


@pytest.fixture(scope="module")
def api_key() -> str:
    return "sk-" + secrets.token_hex(16)


@pytest.fixture(scope="module")
def container_env(objects: list[dict[str, Any]], api_key: str) -> dict[str, str]:
    """The engine container's environment as the pod gets it: the ConfigMap (envFrom) and the
    API key variable the Deployment fills from the synced Secret (here: a key made now)."""
    env = dict(of_kind(objects, "ConfigMap")["data"])
    for entry in engine_container(objects).get("env", []):
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        if ref is not None and ref["key"] == "api-key":
            env[entry["name"]] = api_key
    return env


@pytest.fixture(scope="module")
def llama_server(
    tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory, container_env: dict[str, str]
) -> Iterator[RealServer]:
    yield from serve(tiny_gguf, tmp_path_factory, container_env)


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, list[str]]:
    """``mlcc endpoint check ARGV``: exit code, the JSON report, the ``mlcc: error:`` lines."""
    code, report, err = run(capsys, "endpoint", "check", *argv)
    return code, report, [line.removeprefix("mlcc: error: ") for line in err.splitlines()]


# -- the server runs what the render says --------------------------------------------------


def test_the_server_takes_the_rendered_settings(
    llama_server: RealServer, container_env: dict[str, str], api_key: str
) -> None:
    # the API key reaches llama-server as the variable it reads itself, never as a flag
    assert llama_manifest().api_key_env == API_KEY_ENV
    assert container_env[API_KEY_ENV] == api_key
    assert llama_server.flags == [
        "--ctx-size", str(CTX_SIZE), "--parallel", str(SLOTS), "--alias", SERVED, "--metrics",
    ]  # fmt: skip
    status, body = llama_server.get("/props", key=api_key)
    props = json.loads(body)
    assert (status, props["total_slots"]) == (200, SLOTS)
    status, body = llama_server.get("/v1/models", key=api_key)
    (model,) = json.loads(body)["data"]
    assert (status, model["id"]) == (200, SERVED)
    # the context is split over the slots (no unified KV cache)
    assert model["meta"]["n_ctx"] * SLOTS == CTX_SIZE


# -- mlcc endpoint check -------------------------------------------------------------------


def test_endpoint_check_passes_with_the_right_key(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    llama_server: RealServer,
    api_key: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, api_key)
    code, report, errors = check(
        capsys, "--url", llama_server.url, "--model", SERVED, "--api-key-env", KEY_ENV
    )
    assert errors == []  # the check's own error lines, when it fails
    assert (code, report["ok"]) == (0, True)
    assert report["models"] == [SERVED]
    assert [(c["method"], c["path"], c["status"]) for c in report["calls"]] == [
        ("GET", "/v1/models", 200),
        ("POST", "/v1/chat/completions", 200),
    ]
    # streamed: the first content event came before the end, and text came
    assert report["tokens"] >= 1 and report["reply"].strip()
    assert 0 < report["ttft_ms"] <= report["total_ms"]
    assert api_key not in json.dumps(report)


def test_endpoint_check_names_a_wrong_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, llama_server: RealServer
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-not-the-key")
    code, report, errors = check(
        capsys, "--url", llama_server.url, "--model", SERVED, "--api-key-env", KEY_ENV
    )
    assert (code, report["ok"], report["status"]) == (1, False, 401)
    assert errors == [
        f"GET {llama_server.url}/v1/models: 401 Unauthorized: Invalid API Key "
        f"(fix: set the endpoint's API key in ${KEY_ENV})"
    ]


def test_endpoint_check_names_a_missing_key(
    capsys: pytest.CaptureFixture[str], llama_server: RealServer
) -> None:
    code, report, errors = check(capsys, "--url", llama_server.url, "--model", SERVED)
    assert (code, report["status"]) == (1, 401)
    assert errors == [
        f"GET {llama_server.url}/v1/models: 401 Unauthorized: Invalid API Key (fix: pass "
        "--api-key-env NAME, the variable that holds the endpoint's API key)"
    ]


def test_a_wrong_served_name_fails_the_listing_not_the_completion(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    llama_server: RealServer,
    api_key: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, api_key)
    code, report, errors = check(
        capsys, "--url", llama_server.url, "--model", "tiny-llama-typo", "--api-key-env", KEY_ENV
    )
    assert (code, report["models"]) == (1, [SERVED])
    assert errors == [
        f"GET {llama_server.url}/v1/models: the endpoint does not serve model 'tiny-llama-typo' "
        f"(allowed: {SERVED}; fix: pass --model with the served model name (the deployment's "
        "served_model_name, by default its name))"
    ]
    # Upstream llama-server in single-model mode ignores the request's model: a completion for
    # another name is answered (by the one model, under its alias), where vLLM answers 404. The
    # check's listing step is what catches a wrong name on llama.cpp.
    status, body = llama_server.call(
        "POST",
        "/v1/chat/completions",
        {"model": "tiny-llama-typo", "messages": [{"role": "user", "content": "hi"}],
         "max_tokens": 2},
        key=api_key,
    )  # fmt: skip
    assert (status, json.loads(body)["model"]) == (200, SERVED)


def test_the_stream_is_server_sent_events_ending_in_done(
    llama_server: RealServer, api_key: str
) -> None:
    status, body = llama_server.call(
        "POST",
        "/v1/chat/completions",
        {"model": SERVED, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
         "stream": True, "temperature": 0},
        key=api_key,
    )  # fmt: skip
    events = [line.removeprefix("data: ") for line in body.splitlines() if line.startswith("data:")]
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text and {c["object"] for c in chunks} == {"chat.completion.chunk"}


# -- probes, the load balancer's health check and routes ----------------------------------


def test_the_probes_answer_on_the_real_server_without_a_key(
    objects: list[dict[str, Any]], llama_server: RealServer
) -> None:
    """The kubelet sends no Authorization header: each probe's path must answer 200 without the
    API key, within the probe's timeout, and the server must listen within the startup
    probe's budget."""
    container = engine_container(objects)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    manifest = llama_manifest()
    for name in PROBES:
        probe = container[name]
        get = probe["httpGet"]
        assert ports[get["port"]] == manifest.launch["port"]
        started = time.perf_counter()
        status, _ = llama_server.get(get["path"])
        seconds = time.perf_counter() - started
        assert (name, get["path"], status) == (name, "/health", 200)
        assert seconds < probe["timeoutSeconds"]
    startup = container["startupProbe"]
    assert llama_server.started_s < startup["periodSeconds"] * startup["failureThreshold"]


def test_ping_is_the_containers_and_health_upstreams(llama_server: RealServer) -> None:
    """Upstream llama-server answers /health and not /ping: /ping is the SageMaker llama.cpp
    container's nginx alias of /health, which that nginx also passes through (manifest
    launch.source). So the probes use /health, which both answer."""
    assert llama_server.get("/health") == (200, '{"status":"ok"}')
    # without the key (as a probe calls) its API-key check answers first; with it, 404
    status, body = llama_server.get("/ping")
    assert (status, json.loads(body)["error"]["type"]) == (401, "authentication_error")
    status, body = llama_server.get("/ping", key=llama_server.api_key)
    assert (status, json.loads(body)["error"]["type"]) == (404, "not_found_error")


def test_the_load_balancer_health_check_answers(
    objects: list[dict[str, Any]], llama_server: RealServer
) -> None:
    annotations = of_kind(objects, "Ingress")["metadata"]["annotations"]
    path = annotations["alb.ingress.kubernetes.io/healthcheck-path"]
    status, _ = llama_server.get(path)
    assert str(status) == annotations["alb.ingress.kubernetes.io/success-codes"]
    # HyperPod: the operator's health check of the same engine (the IEC renders it)
    iec = of_kind(rendered("hyperpod-eks"), "InferenceEndpointConfig")
    paths = sorted(
        {value for key, value in _walk(iec["spec"]) if key in ("healthCheckPath", "path")}
    )
    assert paths == ["/health"]
    assert llama_server.get(paths[0])[0] == 200


def test_every_routed_path_is_served_upstream_but_invocations(
    objects: list[dict[str, Any]], llama_server: RealServer, api_key: str
) -> None:
    """The Ingress routes the manifest's api_paths: llama-server serves each /v1 path (an answer
    other than 404); /invocations is the container's own (its nginx maps it to
    /v1/chat/completions), which upstream answers 404."""
    rules = of_kind(objects, "Ingress")["spec"]["rules"]
    routed = [p["path"] for rule in rules for p in rule["http"]["paths"]]
    assert routed == list(llama_manifest().api_paths)
    chat = {"model": SERVED, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    bodies = {
        "/v1/models": None,
        "/v1/chat/completions": chat,
        "/invocations": chat,
        "/v1/completions": {"model": SERVED, "prompt": "hi", "max_tokens": 1},
        "/v1/embeddings": {"model": SERVED, "input": "hi"},
    }
    answers = {}
    for path in routed:
        method = "GET" if bodies[path] is None else "POST"
        answers[path] = llama_server.call(method, path, bodies[path], key=api_key)[0]
    assert answers == {
        "/invocations": 404,  # upstream; the container's nginx serves it
        "/v1/models": 200,
        "/v1/chat/completions": 200,
        "/v1/completions": 200,
        # a generation model started without --embeddings refuses embeddings (not a 404)
        "/v1/embeddings": 501,
    }


def test_metrics_need_the_key(llama_server: RealServer, api_key: str) -> None:
    """llama-server guards /metrics with the API key (a scraper must send it); /health not."""
    assert llama_server.get("/metrics")[0] == 401
    status, body = llama_server.get("/metrics", key=api_key)
    assert status == 200 and "llamacpp:requests_processing" in body


# -- mlcc adapter --------------------------------------------------------------------------


def test_adapter_calls_are_refused_for_llama_cpp(
    capsys: pytest.CaptureFixture[str], llama_server: RealServer, api_key: str
) -> None:
    """llama-server has /lora-adapters, but it lists and re-scales only the adapters given at
    start (--lora); it cannot load or unload one at run time, which mlcc adapter add/remove
    do. So the manifest declares no adapter_api and the command refuses before any call."""
    status, body = llama_server.get("/lora-adapters", key=api_key)
    assert (status, json.loads(body)) == (200, [])
    code, _, err = run(
        capsys, "adapter", "add", "sql", "--project", "acme", "--account", "123456789012",
        "--region", "us-east-1", "--profile", "dev", "--engine", "llama-cpp",
        "--model", "s3://mlcc-models-dev-123456789012-us-east-1/models/mlcc/tiny-llama/",
        "--from", "s3://mlcc-training-dev-123456789012-us-east-1/sql/", "--pod-url",
        llama_server.url,
    )  # fmt: skip
    assert code != 0
    assert (
        "mlcc: error: --engine: engine llama-cpp declares no dynamic LoRA API (got 'llama-cpp'; "
        "fix: use an engine whose manifest has adapter_api)"
    ) in err.splitlines()


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


# -- a real Prometheus scrapes the real server -------------------------------------------------

PROMETHEUS = shutil.which("prometheus")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _exported_names(exposition: str) -> set[str]:
    """The metric names of a Prometheus text exposition (its sample lines)."""
    return {
        re.split(r"[{\s]", line, maxsplit=1)[0]
        for line in exposition.splitlines()
        if line and not line.startswith("#")
    }


def _query(url: str, promql: str) -> list[dict[str, Any]]:
    address = f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(address, timeout=10) as answer:
        document = json.load(answer)
    assert document["status"] == "success", document
    result: list[dict[str, Any]] = document["data"]["result"]
    return result


@pytest.mark.skipif(
    PROMETHEUS is None,
    reason="prometheus not found: `make test` installs Debian's prometheus (make test-debs)",
)
def test_a_real_prometheus_scrapes_the_real_server(
    llama_server: RealServer, api_key: str, tmp_path: Path
) -> None:
    """Prometheus 2.42 (Debian's) scrapes the real llama-server once a second, with the API key
    as a bearer token (/metrics needs it) and once without it: the keyed scrape ingests every
    name the server exposes and counts the tokens of a real completion; the unkeyed one is
    down. (llama.cpp's manifest declares no metrics, so no autoscaling query reads these yet:
    a managed scraper would need the key.)"""
    assert PROMETHEUS is not None
    target = llama_server.url.removeprefix("http://")
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {
                "job_name": "keyed",
                "authorization": {"credentials": api_key},
                "static_configs": [{"targets": [target]}],
            },
            {"job_name": "unkeyed", "static_configs": [{"targets": [target]}]},
        ],
    }
    (tmp_path / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    try:
        status, _ = llama_server.call(
            "POST",
            "/v1/chat/completions",
            {"model": SERVED, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
            key=api_key,
        )
        assert status == 200
        _, exposition = llama_server.get("/metrics", key=api_key)
        exported = _exported_names(exposition)
        assert "llamacpp:tokens_predicted_total" in exported
        deadline = time.monotonic() + 60
        up: dict[str, str] = {}
        while time.monotonic() < deadline:
            try:
                up = {r["metric"]["job"]: r["value"][1] for r in _query(url, "up")}
            except OSError:
                up = {}  # not listening yet
            if len(up) == 2:
                break
            time.sleep(0.5)
        assert up == {"keyed": "1", "unkeyed": "0"}, (tmp_path / "prometheus.log").read_text()
        ingested = {r["metric"]["__name__"] for r in _query(url, '{job="keyed"}')}
        assert exported <= ingested  # every exposed name, plus Prometheus's own up, scrape_*
        (predicted,) = _query(url, 'llamacpp:tokens_predicted_total{job="keyed"}')
        assert float(predicted["value"][1]) >= 1  # the completion's tokens
    finally:
        process.terminate()
        process.wait(timeout=20)
