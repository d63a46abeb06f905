"""An engine started with an API key guards its LoRA routes too (vLLM's /v1/load_lora_adapter
is under /v1; SGLang checks every route): the adapter commands send the key from the variable
--api-key-env names, and without it the pod's 401 is reported, not hidden."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.cli._api_key import api_key_problems
from mlcc_constructs.ops.pods import PodClient
from tests._adapter_env import FakePod

API = {"load": "/v1/load_lora_adapter", "unload": "/v1/unload_lora_adapter", "list": "/v1/models"}


@pytest.fixture
def guarded() -> Any:
    pod = FakePod(api_key="s3cr3t").serving("acme", "/opt/ml/model/.mlcc-adapters/acme")
    yield pod
    pod.close()


def test_the_key_is_sent_to_every_route(guarded: FakePod) -> None:
    client = PodClient(API, timeout=5, api_key="s3cr3t")
    assert client.load(guarded.url, "acme", "/opt/ml/model/x").ok
    assert client.unload(guarded.url, "acme").ok
    models = client.models(guarded.url)
    assert models.ok and [e["id"] for e in models.entries] == ["acme"]
    assert [c[0] for c in guarded.calls] == ["POST", "POST", "GET"]


def test_without_the_key_each_call_reports_the_401(guarded: FakePod) -> None:
    client = PodClient(API, timeout=5)
    loaded = client.load(guarded.url, "acme", "/opt/ml/model/x")
    assert (loaded.ok, loaded.status) == (False, 401)
    unloaded = client.unload(guarded.url, "acme")
    assert (unloaded.ok, unloaded.status) == (False, 401)  # only a 404 counts as unloaded
    assert client.models(guarded.url).status == 401


def test_the_key_comes_from_the_named_variable_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Args:
        api_key_env: str | None = "LLM_KEY"
        api_key: str | None = None

    monkeypatch.setenv("LLM_KEY", "s3cr3t")
    assert api_key_problems(Args()) == ("s3cr3t", [])
    monkeypatch.delenv("LLM_KEY")
    key, problems = api_key_problems(Args())
    assert key is None and [p.where for p in problems] == ["--api-key-env"]
    flagged = Args()
    flagged.api_key = "s3cr3t"
    key, problems = api_key_problems(flagged)
    assert key is None and "s3cr3t" not in str(problems)
