"""``mlcc endpoint check`` end to end against a loopback OpenAI-compatible stand-in (HTTP and
HTTPS with a certificate made here) and a fake kubectl: the success report, and every failure
class with its exact error line."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.ops.endpoint import MAX_BODY
from tests._adapter_env import run
from tests._endpoint_env import KEY, KEY_ENV, StandIn, make_certificate

UNREACHABLE = (
    "check --url and that the endpoint is reachable from here (an internal load balancer "
    "answers only inside its VPC)"
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    monkeypatch.setenv(KEY_ENV, KEY)
    stand_in = StandIn()
    yield stand_in
    stand_in.close()


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = make_certificate(folder, "operator")
    other, _ = make_certificate(folder, "other")
    return {"cert": cert, "key": key, "other": other}


@pytest.fixture
def tls_server(monkeypatch: pytest.MonkeyPatch, certificates: dict[str, Path]) -> Iterator[StandIn]:
    monkeypatch.setenv(KEY_ENV, KEY)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificates["cert"], certificates["key"])
    stand_in = StandIn(context)
    yield stand_in
    stand_in.close()


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, list[str]]:
    """``mlcc endpoint check ARGV``: exit code, the JSON report, the ``mlcc: error:`` lines."""
    code, report, err = run(capsys, "endpoint", "check", *argv)
    assert KEY not in json.dumps(report) and KEY not in err  # the key is never printed
    return code, report, [line.removeprefix("mlcc: error: ") for line in err.splitlines()]


def by_url(stand_in: StandIn, *extra: str) -> list[str]:
    return ["--url", stand_in.url, "--model", "llama", "--api-key-env", KEY_ENV, *extra]


# -- success --------------------------------------------------------------------------------


def test_a_healthy_endpoint(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    code, report, errors = check(capsys, *by_url(server, "--adapter", "sql"))
    assert (code, errors) == (0, [])
    timings = {k: report.pop(k) for k in ("ttft_ms", "total_ms")}
    assert 0 < timings["ttft_ms"] <= timings["total_ms"]
    assert [c.pop("ms") >= 0 for c in report["calls"]] == [True, True]
    assert report == {
        "command": "endpoint check",
        "ok": True,
        "url": server.url,
        "endpoint": None,
        "model": "llama",
        "adapters": ["sql"],
        "models": ["llama", "sql"],
        "status": 200,
        "tokens": 2,
        "reply": "Ready.",
        "calls": [
            {"method": "GET", "path": "/v1/models", "status": 200},
            {"method": "POST", "path": "/v1/chat/completions", "status": 200},
        ],
        "unverified": [],
        "errors": [],
    }
    get, post = server.requests
    assert get["authorization"] == post["authorization"] == f"Bearer {KEY}"
    assert post["body"] == {
        "model": "llama",
        "messages": [{"role": "user", "content": "Reply with one word: ready."}],
        "max_tokens": 8,
        "temperature": 0,
        "stream": True,
    }


def test_a_slow_first_token_is_timed(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    server.behaviour.first_token_delay = 0.4
    code, report, errors = check(capsys, *by_url(server, "--timeout", "3"))
    assert (code, errors) == (0, [])
    assert 400 <= report["ttft_ms"] <= report["total_ms"] < 3000


def test_a_base_path_is_kept(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    argv = ["--url", server.url + "/llm/", *by_url(server)[2:]]  # --url once: a repeat is refused
    code, report, errors = check(capsys, *argv)
    assert errors == [
        f"GET {server.url}/llm/v1/models: 404 Not Found (fix: check --url: the "
        "OpenAI-compatible API is served at <url>/v1/ (a load balancer that routes only some "
        "paths answers 404 for the others))"
    ]
    assert (code, report["url"], report["status"]) == (1, server.url + "/llm", 404)


# -- the answers --------------------------------------------------------------------------


def test_a_missing_or_wrong_key_is_401(
    capsys: pytest.CaptureFixture[str], server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, report, errors = check(capsys, "--url", server.url, "--model", "llama")
    assert errors == [
        f"GET {server.url}/v1/models: 401 Unauthorized: Unauthorized (got no key) (fix: pass "
        "--api-key-env NAME, the variable that holds the endpoint's API key)"
    ]
    assert (code, report["ok"], report["status"], report["models"]) == (1, False, 401, None)
    server.behaviour.key = "sk-the-right-one"
    code, report, errors = check(capsys, *by_url(server))
    assert errors == [
        f"GET {server.url}/v1/models: 401 Unauthorized: Unauthorized (got Bearer ***) "
        f"(fix: set the endpoint's API key in ${KEY_ENV})"
    ]


def test_the_key_variable_must_be_set(
    capsys: pytest.CaptureFixture[str], server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    errors = check(capsys, *by_url(server))[2]
    assert errors == [
        f"--api-key-env: the variable {KEY_ENV} is not set (fix: export {KEY_ENV}=<the "
        "endpoint's API key>)"
    ]
    monkeypatch.setenv(KEY_ENV, "")
    assert check(capsys, *by_url(server))[2] == [
        f"--api-key-env: the variable {KEY_ENV} is empty (fix: export {KEY_ENV}=<the "
        "endpoint's API key>)"
    ]
    assert server.requests == []  # nothing was called


def test_an_unknown_model_is_404(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    server.behaviour.chat_models = {"sql"}  # listed, but the completion route does not know it
    code, report, errors = check(capsys, *by_url(server))
    assert errors == [
        f"POST {server.url}/v1/chat/completions: 404 Not Found: The model `llama` does not "
        "exist. (fix: pass --model with a name that GET /v1/models lists)"
    ]
    assert (code, report["models"], report["status"], report["ttft_ms"]) == (
        1,
        ["llama", "sql"],
        404,
        None,
    )


def test_the_model_list_must_hold_the_model_and_adapters(
    capsys: pytest.CaptureFixture[str], server: StandIn
) -> None:
    server.behaviour.models = ["llama-3"]
    code, report, errors = check(capsys, *by_url(server, "--adapter", "sql", "--adapter", "ner"))
    where = f"GET {server.url}/v1/models"
    assert errors == [
        f"{where}: the endpoint does not serve model 'llama' (allowed: llama-3; fix: pass "
        "--model with the served model name (the deployment's served_model_name, by default "
        "its name))",
        f"{where}: adapter 'sql' is not loaded (allowed: llama-3; fix: load it (mlcc adapter "
        "add) or check --adapter)",
        f"{where}: adapter 'ner' is not loaded (allowed: llama-3; fix: load it (mlcc adapter "
        "add) or check --adapter)",
    ]
    assert (code, report["models"]) == (1, ["llama-3"])
    assert [r["method"] for r in server.requests] == ["GET"]  # no completion for a lost model


def test_invalid_json_from_the_model_list(
    capsys: pytest.CaptureFixture[str], server: StandIn
) -> None:
    server.behaviour.models_body = "<html><body>Sign in</body></html>"
    errors = check(capsys, *by_url(server))[2]
    assert errors == [
        f"GET {server.url}/v1/models: the answer is not JSON: '<html><body>Sign "
        "in</body></html>' (fix: check --url: it must point at the OpenAI-compatible API, not "
        "a web page or a proxy's login)"
    ]
    server.behaviour.models_body = '{"models": []}'
    assert check(capsys, *by_url(server))[2] == [
        f"GET {server.url}/v1/models: the answer has no 'data' list of models: "
        """'{"models": []}' (fix: check --url: it must point at the OpenAI-compatible API)"""
    ]


@pytest.mark.parametrize("status", [301, 302, 307])
def test_a_redirect_is_an_error_naming_its_location(
    capsys: pytest.CaptureFixture[str], server: StandIn, status: int
) -> None:
    server.behaviour.redirect = (status, "https://llm.example.com/v1/models")
    code, report, errors = check(capsys, *by_url(server))
    assert errors == [
        f"GET {server.url}/v1/models: {status} redirect to https://llm.example.com/v1/models "
        "(fix: the endpoint takes HTTPS: pass --url https://...)"
    ]
    assert (code, report["status"], len(server.requests)) == (1, status, 1)  # not followed
    server.behaviour.redirect = (status, f"{server.url}/elsewhere")
    assert check(capsys, *by_url(server))[2] == [
        f"GET {server.url}/v1/models: {status} redirect to {server.url}/elsewhere (fix: pass "
        "the URL it redirects to with --url (a redirect can drop the API key or the body))"
    ]


# -- time -----------------------------------------------------------------------------------


def test_a_timeout(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    server.behaviour.models_delay = 5
    code, report, errors = check(capsys, *by_url(server, "--timeout", "0.3"))
    assert errors == [
        f"GET {server.url}/v1/models: no answer within 0.3 s (fix: raise --timeout, or "
        f"{UNREACHABLE})"
    ]
    assert (code, report["status"], report["calls"][0]["ms"] < 2000) == (1, None, True)


def test_a_dripping_answer_is_cut_at_the_deadline(
    capsys: pytest.CaptureFixture[str], server: StandIn
) -> None:
    server.behaviour.models_drip = 0.1  # the model list (~100 bytes) would take over 10 s
    code, report, errors = check(capsys, *by_url(server, "--timeout", "1"))
    assert errors == [
        f"GET {server.url}/v1/models: no answer within 1 s (fix: raise --timeout, or {UNREACHABLE})"
    ]
    assert (code, report["status"], report["calls"][0]["ms"] < 5000) == (1, 200, True)


def test_a_dripping_stream_is_cut_at_the_deadline(
    capsys: pytest.CaptureFixture[str], server: StandIn
) -> None:
    """One event sent a byte every 0.1 s (it would take 25 s): the check ends at its deadline.
    It used to wait on each byte in turn (readline), 59 s for --timeout 5."""
    server.behaviour.line_drip = 0.1
    started = time.monotonic()
    code, report, errors = check(capsys, *by_url(server, "--timeout", "2"))
    assert time.monotonic() - started < 6
    assert errors == [
        f"POST {server.url}/v1/chat/completions: the stream did not end within 2 s (after 2 "
        "content events) (fix: raise --timeout)"
    ]
    assert (code, report["tokens"]) == (1, 2)


def test_an_answer_over_the_cap_is_said_to_be(
    capsys: pytest.CaptureFixture[str], server: StandIn
) -> None:
    """A model list over 1 MiB: named as too long (it was reported as not JSON, from the first
    MiB the check had read)."""
    server.behaviour.models_body = "[" * (MAX_BODY + 10)
    code, _, errors = check(capsys, *by_url(server))
    assert errors == [
        f"GET {server.url}/v1/models: the answer is longer than {MAX_BODY} bytes, the most the "
        "check reads (fix: check --url: an OpenAI-compatible server's model list and stream "
        "events are small)"
    ]
    assert code == 1


def test_no_first_token_within_the_timeout(
    capsys: pytest.CaptureFixture[str], server: StandIn
) -> None:
    # 2 s, not less: the model list must still answer within it on a loaded machine.
    server.behaviour.first_token_delay = 6
    code, report, errors = check(capsys, *by_url(server, "--timeout", "2"))
    assert errors == [
        f"POST {server.url}/v1/chat/completions: no first token within 2 s (fix: raise "
        "--timeout (the first token waits for queued requests and, after a scale-up, for the "
        "model to load))"
    ]
    assert (code, report["ttft_ms"], report["total_ms"]) == (1, None, None)


def test_a_stream_that_never_ends(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    server.behaviour.ending = "hang"
    code, report, errors = check(capsys, *by_url(server, "--timeout", "0.3"))
    assert errors == [
        f"POST {server.url}/v1/chat/completions: the stream did not end within 0.3 s (after 2 "
        "content events) (fix: raise --timeout)"
    ]
    assert (code, report["tokens"], report["ttft_ms"] is not None) == (1, 2, True)


@pytest.mark.parametrize(
    ("pieces", "ending", "error"),
    [
        (
            ["Ready"],
            "close",
            "the stream ended before data: [DONE] (after 1 content events) (fix: see the "
            "server's log (a pod that restarts drops its streams), or check that the load "
            "balancer does not cut long responses)",
        ),
        (
            [],
            "done",
            "the stream sent no content before data: [DONE] (fix: see the server's log; check "
            "--model)",
        ),
        (
            [],
            "close",
            "the stream ended before data: [DONE] (after 0 content events) (fix: see "
            "the server's log (a pod that restarts drops its streams), or check that the load "
            "balancer does not cut long responses)",
        ),
    ],
)
def test_a_stream_without_content_or_done(
    capsys: pytest.CaptureFixture[str],
    server: StandIn,
    pieces: list[str],
    ending: str,
    error: str,
) -> None:
    server.behaviour.pieces, server.behaviour.ending = pieces, ending
    code, report, errors = check(capsys, *by_url(server))
    assert (code, errors) == (1, [f"POST {server.url}/v1/chat/completions: {error}"])
    assert report["total_ms"] is None


def test_bad_events(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    where = f"POST {server.url}/v1/chat/completions"
    server.behaviour.events = ["{not json"]
    assert check(capsys, *by_url(server))[2] == [
        f"{where}: an event is not JSON: '{{not json' (fix: check --url: it must point at the "
        "OpenAI-compatible API)"
    ]
    server.behaviour.events = ['{"error": {"message": "CUDA out of memory", "code": 500}}']
    assert check(capsys, *by_url(server))[2] == [
        f"{where}: the stream reported an error: CUDA out of memory (fix: see the server's log)"
    ]
    server.behaviour.events, server.behaviour.content_type = None, "application/json"
    assert check(capsys, *by_url(server))[2] == [
        f"{where}: the answer is not an event stream (Content-Type application/json): "
        """'{"choices": []}' (fix: check --url: the server must honour stream: true)"""
    ]


# -- TLS ------------------------------------------------------------------------------------


def test_tls_is_verified(
    capsys: pytest.CaptureFixture[str], tls_server: StandIn, certificates: dict[str, Path]
) -> None:
    where = f"GET {tls_server.url}/v1/models"
    code, report, errors = check(capsys, *by_url(tls_server))
    assert errors == [
        f"{where}: TLS certificate verify failed: self-signed certificate (fix: pass --ca-file "
        "PATH, the CA certificate (PEM) that signed the endpoint's certificate (TLS is always "
        "verified))"
    ]
    assert (code, tls_server.requests) == (1, [])
    other = str(certificates["other"])
    assert check(capsys, *by_url(tls_server, "--ca-file", other))[2] == [
        f"{where}: TLS certificate verify failed: self-signed certificate (fix: the endpoint's "
        f"certificate is not signed by --ca-file {other})"
    ]
    localhost = tls_server.url.replace("127.0.0.1", "localhost")
    argv = ["--url", localhost, "--model", "llama", "--api-key-env", KEY_ENV]
    assert check(capsys, *argv, "--ca-file", str(certificates["cert"]))[2] == [
        f"GET {localhost}/v1/models: TLS certificate verify failed: Hostname mismatch, "
        "certificate is not valid for 'localhost'. (fix: call a host the certificate is for)"
    ]
    code, report, errors = check(
        capsys, *by_url(tls_server, "--ca-file", str(certificates["cert"]))
    )
    assert (code, errors, report["tokens"]) == (0, [], 2)


def test_https_to_a_plain_port(capsys: pytest.CaptureFixture[str], server: StandIn) -> None:
    url = server.url.replace("http://", "https://")
    errors = check(capsys, "--url", url, "--model", "llama")[2]
    assert errors == [
        f"GET {url}/v1/models: TLS: WRONG_VERSION_NUMBER (fix: check the scheme and port of "
        "--url (https:// to a plain-HTTP port fails so))"
    ]


def test_the_ca_file_is_checked_first(
    capsys: pytest.CaptureFixture[str], server: StandIn, tmp_path: Path
) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    errors = check(capsys, *by_url(server, "--ca-file", str(tmp_path / "junk.pem")))[2]
    assert errors == [
        f"--ca-file: not a PEM certificate file: NO_CERTIFICATE_OR_CRL_FOUND (got "
        f"'{tmp_path / 'junk.pem'}'; fix: pass the CA certificate (PEM) that signed the "
        "endpoint's certificate)",
        f"--ca-file: --ca-file is for an https endpoint; {server.url} is plain HTTP (fix: drop "
        "--ca-file, or check an https URL)",
    ]
    assert check(capsys, "--url", "https://h", "--model", "m", "--ca-file", "nope.pem")[2] == [
        "--ca-file: no such file (got 'nope.pem')"
    ]
    assert server.requests == []


# -- the command line -----------------------------------------------------------------------


def test_every_input_is_checked_before_the_first_call(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, report, errors = check(
        capsys,
        *("--url", "ftp://h/v1", "--namespace", "x", "--adapter", "a b", "--timeout", "0"),
        *("--api-key-env", "sk-not-a-name"),
    )
    assert errors == [
        "--url: not a valid URL (got 'ftp://h/v1'; allowed: http://HOST[:PORT][/PATH])",
        "--namespace: --namespace needs --name (fix: pass --url URL, or --name NAME --namespace "
        "NS to find the endpoint with kubectl)",
        "--model: --url needs --model (fix: pass --model with the served model name)",
        "--adapter: not a valid adapter (got 'a b'; allowed: a non-empty value without "
        "whitespace or control characters)",
        "--api-key-env: not an environment variable name (allowed: letters, digits and '_', "
        "not starting with a digit; fix: export NAME=<the API key> and pass --api-key-env NAME "
        "(the key is never a flag value))",
        "--timeout: not a timeout (got '0'; allowed: seconds, more than 0 and at most 3600)",
    ]
    assert report == {"command": "endpoint check", "ok": False, "errors": errors}
    assert check(capsys, "--url", "http://h/v1/", "--model", "m")[2] == [
        "--url: the base URL is wanted: the check adds /v1/models and /v1/chat/completions "
        "(got 'http://h/v1/'; fix: pass --url http://h)"
    ]
    assert check(capsys, "--url", "http://h", "--name", "llama")[2] == [
        "--url: --url and --name exclude each other (fix: pass --url URL, or --name NAME "
        "--namespace NS to find the endpoint with kubectl)"
    ]
    assert check(capsys, "--name", "Llama", "--target", "ekz")[2] == [
        "--name: not a valid Kubernetes name (RFC 1035 label) (got 'Llama'; allowed: "
        "lower-case letters, digits and '-', starting with a letter, at most 63; fix: use e.g. "
        "'llama')",
        "--namespace: --name needs --namespace (fix: pass --url URL, or --name NAME "
        "--namespace NS to find the endpoint with kubectl)",
        "--target: unknown target 'ekz' (got 'ekz'; allowed: eks, hyperpod-eks, "
        "realtime-inference; fix: use one of the allowed targets (did you mean eks?))",
    ]
    code, report, errors = check(capsys, "--url", "http://h", "--model", "m", "--api-key", KEY)
    assert (code, errors) == (
        1,
        [
            "--api-key: the API key is never a flag value (fix: export NAME=<the API key> and "
            "pass --api-key-env NAME)"
        ],
    )
    monkeypatch.delenv(KEY_ENV, raising=False)
    code, report, errors = check(
        capsys, "--url", "http://h", "--model", "m", "--api-key-env", "abcDEF123"
    )
    assert errors == [
        "--api-key-env: the variable NAME is not set (fix: export NAME=<the endpoint's API key>)"
    ]
