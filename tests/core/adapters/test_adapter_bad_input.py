"""Bad input to ``mlcc adapter`` and ``mlcc model``: every value is checked before anything
is written or any pod is called; each problem is one ``mlcc: error:`` line (exit 1, no
traceback), and the command's JSON failure report is on stdout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mlcc_constructs.core.adapters import path_names
from mlcc_constructs.core.adapters.record import hash_bytes
from tests._adapter_env import (
    BUCKET_ARGS,
    MODEL,
    FakePod,
    adapter_files,
    everything,
    raw,
    run,
    s3_client,
)

COMPONENT = (
    "allowed: a non-empty name without '/', whitespace or control characters, not '.' or '..'"
)
HUB_IDS = (
    "huggingface-llm-mistral-7b, huggingface-llm-mistral-7b-instruct, "
    "meta-textgeneration-llama-3-1-70b-instruct, meta-textgeneration-llama-3-1-8b, "
    "meta-textgeneration-llama-3-1-8b-instruct, meta-textgeneration-llama-3-8b, "
    "meta-textgeneration-llama-3-8b-instruct"
)
NOT_HF_ID = (
    "not a Hugging Face model id, and not a mapped model hub id (got '{}'; allowed: <org>/<name> "
    f"(letters, digits, '.', '_', '-') or one of {HUB_IDS}; fix: name the base by its Hugging "
    "Face id, or add the hub id to mlcc_constructs/data/hub_model_ids.json)"
)
POD_URL = "not a valid URL (got '{}'; allowed: http://HOST[:PORT])"
ENDPOINT = "not a valid URL (got '{}'; allowed: http://HOST[:PORT][/PATH])"
OTHER = f"{MODEL.uri}.mlcc-adapters/other/bot/v0123456789ab/"

# (command and arguments; {source} {model} {pod} are filled in) -> the exact error lines
CASES: list[tuple[list[str], list[str]]] = [
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--pod-url",
            "notaurl",
        ],
        ["--pod-url: " + POD_URL.format("notaurl")],
    ),
    (
        [
            "adapter",
            "update",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--pod-url",
            "{pod}",
            "--pod-url",
            "http://10.0.0.1:8000/v1",
            "--pod-url",
            "http://x:99999",
        ],
        [
            "--pod-url: " + POD_URL.format("http://10.0.0.1:8000/v1"),
            "--pod-url: " + POD_URL.format("http://x:99999"),
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--pod-url",
            "{pod}",
            "--timeout",
            "-1",
        ],
        ["--timeout: not a timeout (got '-1'; allowed: seconds, more than 0 and at most 3600)"],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--pod-url",
            "{pod}",
            "--timeout",
            "soon",
        ],
        ["--timeout: not a timeout (got 'soon'; allowed: seconds, more than 0 and at most 3600)"],
    ),
    (
        ["adapter", "promote", "bot", "--from", "{source}", "--endpoint-url", "ftp://x"],
        ["--endpoint-url: " + ENDPOINT.format("ftp://x")],
    ),
    (
        ["adapter", "list", "--endpoint-url", "not a url"],
        ["--endpoint-url: " + ENDPOINT.format("not a url")],
    ),
    (
        [
            "adapter",
            "add",
            "b/ot",
            "--project",
            "ac me",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--pod-url",
            "{pod}",
        ],
        [
            f"NAME: not a valid S3 path component (got 'b/ot'; {COMPONENT})",
            f"--project: not a valid S3 path component (got 'ac me'; {COMPONENT})",
        ],
    ),
    (
        ["adapter", "promote", "bot", "--from", "gs://bucket/adapter/"],
        [
            "--from: adapter sources are S3 prefixes, .tar.gz archives or Hugging Face "
            "repositories (got 'gs://bucket/adapter/'; allowed: s3://bucket/prefix/, "
            "s3://bucket/adapter.tar.gz, a canonical adapter, or hf://<org>/<repo>[@revision]; "
            "fix: upload the adapter to S3 (e.g. the adapters bucket), or name its Hugging Face "
            "repository)"
        ],
    ),
    (
        ["adapter", "promote", "bot", "--from", "hf://org"],
        [
            "--from: not a Hugging Face repository (got 'hf://org'; allowed: hf://<org>/<repo> or "
            "hf://<org>/<repo>@<branch, tag or commit>)"
        ],
    ),
    (
        ["adapter", "plan", "bot", "--from", "hf://org/bot@", "--model", "{model}"],
        [
            "--from: not a Hugging Face revision (got 'hf://org/bot@'; allowed: a branch, tag or "
            "commit after '@' (letters, digits, '.', '_', '-', '/'))"
        ],
    ),
    (
        ["adapter", "promote", "bot", "--from", "s3://Bad_Bucket/adapter/"],
        [
            "--from: not a valid S3 bucket name (got 'Bad_Bucket'; allowed: 3-63 lower-case "
            "letters, digits, '.', '-')"
        ],
    ),
    (
        ["adapter", "add", "bot", "--from", OTHER, "--model", "{model}", "--pod-url", "{pod}"],
        [
            f"--from: a canonical adapter keeps its project and name (got '{OTHER}'; allowed: an "
            "adapter of project acme named bot; fix: add it as bot in project other)"
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "s3://b/models/x/",
            "--pod-url",
            "{pod}",
        ],
        [
            "--model: not a valid S3 bucket name (got 'b'; allowed: 3-63 lower-case letters, "
            "digits, '.', '-')"
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "meta-llama/Llama-3.1-8B",
            "--pod-url",
            "{pod}",
        ],
        [
            "/model: adapters are delivered through the model's S3 mount, and this deployment's "
            "model is not on S3 (got 'meta-llama/Llama-3.1-8B'; fix: stage the model to S3 and "
            "redeploy with model=s3://<core>/models/<org>/<base>/)"
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--engine",
            "nope",
            "--target",
            "mars",
            "--pod-url",
            "{pod}",
        ],
        [
            "--engine: unknown engine (got 'nope'; allowed: llama-cpp, lmi, sglang, tensorrt-llm, "
            "vllm; fix: a plugin engine needs --plugin-dir or MLCC_ENGINE_PATH)",
            "--target: unknown target 'mars' (got 'mars'; allowed: eks, hyperpod-eks, "
            "realtime-inference; fix: use one of the allowed targets)",
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--engine",
            "tensorrt-llm",
            "--pod-url",
            "{pod}",
        ],
        [
            "--engine: engine tensorrt-llm declares no dynamic LoRA API (got 'tensorrt-llm'; fix: "
            "use an engine whose manifest has adapter_api)"
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--pod-env",
            "X",
            "--account",
            "1",
            "--region",
            "xx",
            "--profile",
            "Prod",
        ],
        [
            "--account: invalid account (got '1'; allowed: 12 digits, e.g. 123456789012)",
            "--region: invalid region (got 'xx'; allowed: an AWS region such as us-east-1)",
            "--profile: invalid profile (got 'Prod'; allowed: lower-case letters, digits and '-', "
            "1-20, e.g. dev)",
            "--pod-env: --pod-env takes KEY=VALUE (got 'X'; fix: write --pod-env NAME=value (an "
            "empty value is refused later))",
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--discover",
            "--namespace",
            "Bad_NS",
        ],
        [
            "--namespace: not a valid Kubernetes namespace (got 'Bad_NS'; allowed: lower-case "
            "letters, digits and '-', at most 63 characters)",
            "--discover: --discover needs --deployment-name or --selector (fix: name the serving "
            "Deployment (--deployment-name) or pass --selector)",
        ],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--iec",
            "/nonexistent/iec.yaml",
        ],
        ["--iec: /nonexistent/iec.yaml: No such file or directory"],
    ),
    (
        [
            "adapter",
            "add",
            "bot",
            "--from",
            "{source}",
            "--model",
            "{model}",
            "--target",
            "realtime-inference",
            "--pod-url",
            "{pod}",
        ],
        [
            "/target: target realtime-inference does not load adapters into pods; each adapter "
            "is its own inference component (got 'realtime-inference'; fix: declare the adapter "
            "in the AdapterInferenceComponents construct and deploy)"
        ],
    ),
    (
        [
            "adapter",
            "remove",
            "bot",
            "--model",
            "{model}",
            "--region",
            "nowhere",
            "--pod-url",
            "{pod}",
            "--pod-url",
            "pod-1",
        ],
        [
            "--region: invalid region (got 'nowhere'; allowed: an AWS region such as us-east-1)",
            "--pod-url: " + POD_URL.format("pod-1"),
        ],
    ),
    (
        [
            "adapter",
            "promote",
            "bot",
            "--from",
            "{source}",
            "--base-model",
            "mlcc-acme/ft",
            "--technique",
            "a b",
            "--base-revision",
            " ",
        ],
        [
            "--base-model: not a base model: models/mlcc-<project>/ holds a project's full "
            "fine-tunes, and nothing has a home under them (got 'mlcc-acme/ft'; allowed: a Hugging "
            "Face model id whose org does not start with 'mlcc-'; fix: name the Hugging Face base "
            "it was trained on)",
            "--base-revision: not a valid revision (got ' '; allowed: a non-empty value without "
            "whitespace or control characters)",
            f"--technique: not a valid S3 path component (got 'a b'; {COMPONENT})",
        ],
    ),
    (
        ["adapter", "list", "--base-model", "nope", "--pod-url", "{pod}"],
        ["--base-model: " + NOT_HF_ID.format("nope")],
    ),
    (
        ["adapter", "list", "--format", "xml"],
        [
            "--format: not a valid value (got 'xml'; allowed: json, table, yaml; fix: see mlcc "
            "adapter list --help)"
        ],
    ),
    (
        ["adapter", "clean", "--model", "s3://bucket-1"],
        ["--model: not an S3 URI (got 's3://bucket-1'; allowed: s3://<bucket>/<key>)"],
    ),
    (
        ["adapter", "clean", "--pod-url", "{pod}", "--timeout", "0", "--selector", " "],
        [
            "--timeout: not a timeout (got '0'; allowed: seconds, more than 0 and at most 3600)",
            "--selector: an empty selector (got '')",
        ],
    ),
    (
        ["model", "promote", "ft", "--from", "hf://org/model"],
        [
            "--from: full fine-tunes are promoted from S3 (got 'hf://org/model'; allowed: "
            "s3://bucket/prefix/ or s3://bucket/model.tar.gz; fix: upload the fine-tuned model "
            "(config.json and weights) to S3 first)"
        ],
    ),
    (
        [
            "model",
            "promote",
            "f t",
            "--from",
            "{source}",
            "--base-model",
            "x",
            "--endpoint-url",
            "http://",
        ],
        [
            f"NAME: not a valid S3 path component (got 'f t'; {COMPONENT})",
            "--endpoint-url: " + ENDPOINT.format("http://"),
            "--base-model: " + NOT_HF_ID.format("x"),
        ],
    ),
]


@pytest.fixture(scope="module")
def world(moto_s3: str) -> Iterator[tuple[Any, str, dict[tuple[str, str], bytes]]]:
    """One loopback S3 for the module (no case writes): the client, a good source, and every
    object byte for byte."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        s3 = s3_client(moto_s3, monkeypatch)
        source = raw(s3, "job-1", adapter_files())
        yield s3, source, everything(s3)


@pytest.fixture
def pod() -> Iterator[FakePod]:
    started = FakePod()
    yield started
    started.close()


def _argv(template: list[str], moto_s3: str, source: str, pod: FakePod) -> list[str]:
    argv = [a.format(source=source, model=MODEL.uri, pod=pod.url) for a in template]
    flags = set(argv)
    if "--project" not in flags and argv[:2] != ["adapter", "list"]:
        argv += ["--project", "acme"]
    if "--account" not in flags and argv[1] != "remove":
        argv += BUCKET_ARGS
    if "--endpoint-url" not in flags:
        argv += ["--endpoint-url", moto_s3]
    return argv


@pytest.mark.parametrize(
    ("template", "lines"), CASES, ids=[f"{c[0][0]}-{c[0][1]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_input_is_refused_before_any_side_effect(
    world: tuple[Any, str, dict[tuple[str, str], bytes]],
    moto_s3: str,
    pod: FakePod,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    template: list[str],
    lines: list[str],
) -> None:
    s3, source, before = world
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    argv = _argv(template, moto_s3, source, pod)
    code, report, err = run(capsys, *argv)
    assert err == "".join(f"mlcc: error: {line}\n" for line in lines)
    assert code == 1  # a bad value, whichever step refuses it (a flag's choices included)
    assert report == {"command": " ".join(argv[:2]), "ok": False, "errors": lines}
    assert everything(s3) == before  # nothing written
    assert pod.calls == []  # no pod called


@pytest.mark.parametrize("form", ["prefix/", "prefix", "canonical"])
def test_the_checks_let_every_good_source_form_through(
    world: tuple[Any, str, dict[tuple[str, str], bytes]],
    moto_s3: str,
    pod: FakePod,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    form: str,
) -> None:
    s3, source, before = world
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    version = path_names.version_id(hash_bytes(adapter_files()))
    good = {
        "prefix/": source,
        "prefix": source.rstrip("/"),
        "canonical": f"{MODEL.uri}.mlcc-adapters/acme/bot/{version}/",
    }[form]
    argv = ["adapter", "plan", "bot", "--from", good, "--model", MODEL.uri, "--pod-url", pod.url]
    code, plan, err = run(capsys, *_argv(argv, moto_s3, source, pod))
    if form == "canonical":  # valid, and not there: S3 says so, after the checks
        assert (code, plan["ok"]) == (1, False)
        assert err == f"mlcc: error: no adapter at this canonical location (got {good!r})\n"
    else:
        assert (code, err) == (0, "")
        assert (plan["steps"], plan["source"]) == (["promote", "load"], good)
    assert everything(s3) == before
    assert pod.calls == []
