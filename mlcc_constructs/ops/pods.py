"""Loading, unloading and listing adapters on serving pods over HTTP (seed lora-delivery §2,
step 6).

:class:`PodClient` calls an engine's dynamic LoRA endpoints on one pod (and reads its model
list); :func:`roll_out` walks every pod and reports per pod, so one failing pod never hides
the others. A failure says why (:func:`failure_reason`): the status and the start of the
answer, a redirect and where to, a timeout, or the connection error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.adapters.load_refusal import load_refusal
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.ops.pod_http import HttpAnswer, call

PodAction = Literal["load", "unload"]


@dataclass(frozen=True, kw_only=True)
class PodResult:
    """One pod's answer to one call: ``detail`` is what it answered (its body), ``reason``
    why the call failed (empty when it did not)."""

    pod: str
    action: PodAction
    ok: bool
    status: int | None
    detail: str
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """For the command's per-pod report."""
        return {
            "pod": self.pod,
            "action": self.action,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
            "reason": self.reason,
        }


@dataclass(frozen=True, kw_only=True)
class PodModels:
    """One pod's model list (``entries``: the engine's ``data`` items) or why it has none
    (``detail``)."""

    pod: str
    ok: bool
    status: int | None
    detail: str
    entries: tuple[Mapping[str, Any], ...] = ()


EXCERPT = 200
"""The most characters of a pod's answer quoted in a failure's reason."""


def excerpt(body: bytes) -> str:
    """The start of an answer on one line (for a failure's reason)."""
    text = " ".join(body.decode("utf-8", "replace").split())
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."


def failure_reason(answer: HttpAnswer, *, ok_statuses: tuple[int, ...] = ()) -> str:
    """Why ``answer`` is no success, or ``""`` for a 2xx (or an ``ok_statuses``) answer.

    A redirect is a failure naming its ``Location``: a pod's LoRA and model-list routes
    never redirect, so one comes from something else at that address (a proxy, a login
    page), and following it would count the wrong call's answer.
    """
    if answer.error is not None:
        return answer.error
    status = answer.status or 0
    if 200 <= status < 300 or status in ok_statuses:
        return ""
    if 300 <= status < 400:
        return (
            f"HTTP {status}: redirected to {answer.location or '(no Location)'}; pod calls "
            "never follow redirects (pass the engine's own address as the pod URL)"
        )
    text = excerpt(answer.body)
    return f"HTTP {status}" + (f": {text}" if text else "")


class PodClient:
    """Calls an engine's dynamic LoRA endpoints (``adapter_api`` of its manifest) on pods.

    ``pod`` is a base URL such as ``http://10.0.0.12:8000``. vLLM and SGLang both take
    ``{"lora_name", "lora_path"}`` to load and ``{"lora_name"}`` to unload. An unload that
    answers 404 (not loaded) counts as done: the goal, "not loaded", holds. A load refused
    with 404 or 400 says the cause and the fix
    (:func:`~mlcc_constructs.core.adapters.load_refusal.load_refusal`; ``runtime_env``: the
    manifest's ``adapter_api.runtime_env``, named in a 404's fix). ``api_key``: sent
    as ``Authorization: Bearer`` (an engine with an API key guards these routes too).
    ``timeout``: seconds for each call in all (connect and every read; :mod:`.pod_http`); a
    redirect is never followed.
    """

    def __init__(
        self,
        adapter_api: Mapping[str, str],
        *,
        timeout: float = 60.0,
        api_key: str | None = None,
        runtime_env: Mapping[str, str] | None = None,
    ) -> None:
        if not adapter_api.get("load") or not adapter_api.get("unload"):
            raise fail(
                "the engine declares no dynamic LoRA API",
                pointer="/adapter_api",
                value=dict(adapter_api),
                fix="use an engine whose manifest has adapter_api.load and adapter_api.unload",
            )
        self._api = dict(adapter_api)
        self._runtime_env = dict(runtime_env or {})
        self._timeout = timeout
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def load(self, pod: str, lora_name: str, lora_path: str) -> PodResult:
        """Load ``lora_path`` as ``lora_name`` on ``pod``."""
        return self._call(pod, "load", {"lora_name": lora_name, "lora_path": lora_path})

    def unload(self, pod: str, lora_name: str) -> PodResult:
        """Unload ``lora_name`` from ``pod``."""
        return self._call(pod, "unload", {"lora_name": lora_name})

    def models(self, pod: str) -> PodModels:
        """What ``pod`` serves: the engine's model list (``adapter_api.list``)."""
        if not self._api.get("list"):
            return PodModels(pod=pod, ok=False, status=None, detail="no model list endpoint")
        url = pod.rstrip("/") + self._api["list"]
        answer = call("GET", url, timeout=self._timeout, headers=self._auth)
        reason = failure_reason(answer)
        if reason:
            return PodModels(pod=pod, ok=False, status=answer.status, detail=reason)
        status = answer.status
        try:
            document = json.loads(answer.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            detail = f"HTTP {status}: not JSON: {excerpt(answer.body)}"
            return PodModels(pod=pod, ok=False, status=status, detail=detail)
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            detail = f"HTTP {status}: no 'data' list in {excerpt(answer.body)}"
            return PodModels(pod=pod, ok=False, status=status, detail=detail)
        entries = tuple(e for e in data if isinstance(e, dict))
        return PodModels(pod=pod, ok=True, status=status, detail="", entries=entries)

    def _call(self, pod: str, action: PodAction, body: dict[str, str]) -> PodResult:
        answer = call(
            "POST",
            pod.rstrip("/") + self._api[action],
            timeout=self._timeout,
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **self._auth},
        )
        reason = failure_reason(answer, ok_statuses=(404,) if action == "unload" else ())
        if reason and action == "load" and answer.status is not None and answer.error is None:
            why = load_refusal(
                answer.status,
                answer.body.decode("utf-8", "replace"),
                load_path=self._api["load"],
                runtime_env=self._runtime_env,
                limit=EXCERPT,
            )
            if why is not None:  # the status alone does not say why (load_refusal's doc)
                reason = f"{reason}; {why}" if answer.status == 404 else f"HTTP 400: {why}"
        return PodResult(
            pod=pod,
            action=action,
            ok=not reason,
            status=answer.status,
            detail=answer.body.decode("utf-8", "replace").strip(),
            reason=reason,
        )


def roll_out(
    client: PodClient,
    pods: Sequence[str],
    *,
    name: str,
    path: str | None,
    unload_first: bool,
) -> list[PodResult]:
    """On every pod: unload ``name`` (when ``unload_first``), then load ``path`` (unless None).

    A pod whose unload failed is not loaded. Results are in pod order.
    """
    results = []
    for pod in pods:
        if unload_first:
            unloaded = client.unload(pod, name)
            results.append(unloaded)
            if not unloaded.ok:
                continue
        if path is not None:
            results.append(client.load(pod, name, path))
    return results
