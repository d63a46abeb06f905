"""Loading, unloading and listing adapters on serving pods over HTTP (seed lora-delivery §2,
step 6).

:class:`PodClient` calls an engine's dynamic LoRA endpoints on one pod (and reads its model
list); :func:`roll_out` walks every pod and reports per pod, so one failing pod never hides
the others.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.support.errors import fail

PodAction = Literal["load", "unload"]


@dataclass(frozen=True, kw_only=True)
class PodResult:
    """One pod's answer to one call."""

    pod: str
    action: PodAction
    ok: bool
    status: int | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        """For the command's per-pod report."""
        return {
            "pod": self.pod,
            "action": self.action,
            "ok": self.ok,
            "status": self.status,
            "detail": self.detail,
        }


@dataclass(frozen=True, kw_only=True)
class PodModels:
    """One pod's model list (``entries``: the engine's ``data`` items) or why it has none."""

    pod: str
    ok: bool
    status: int | None
    detail: str
    entries: tuple[Mapping[str, Any], ...] = ()


class PodClient:
    """Calls an engine's dynamic LoRA endpoints (``adapter_api`` of its manifest) on pods.

    ``pod`` is a base URL such as ``http://10.0.0.12:8000``. vLLM and SGLang both take
    ``{"lora_name", "lora_path"}`` to load and ``{"lora_name"}`` to unload. An unload that
    answers 404 (not loaded) counts as done: the goal, "not loaded", holds. ``api_key``: sent
    as ``Authorization: Bearer`` (an engine with an API key guards these routes too).
    """

    def __init__(
        self,
        adapter_api: Mapping[str, str],
        *,
        timeout: float = 60.0,
        api_key: str | None = None,
    ) -> None:
        if not adapter_api.get("load") or not adapter_api.get("unload"):
            raise fail(
                "the engine declares no dynamic LoRA API",
                pointer="/adapter_api",
                value=dict(adapter_api),
                fix="use an engine whose manifest has adapter_api.load and adapter_api.unload",
            )
        self._api = dict(adapter_api)
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
        url = pod.rstrip("/") + self._api.get("list", "")
        if not self._api.get("list"):
            return PodModels(pod=pod, ok=False, status=None, detail="no model list endpoint")
        try:
            request = urllib.request.Request(url, headers=self._auth)
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                body = response.read().decode("utf-8", "replace")
                status = response.status
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace").strip()
            return PodModels(pod=pod, ok=False, status=error.code, detail=detail)
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            return PodModels(pod=pod, ok=False, status=None, detail=str(reason))
        try:
            document = json.loads(body)
        except json.JSONDecodeError:
            return PodModels(pod=pod, ok=False, status=status, detail="not JSON: " + body[:200])
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            return PodModels(pod=pod, ok=False, status=status, detail="no 'data' list")
        entries = tuple(e for e in data if isinstance(e, dict))
        return PodModels(pod=pod, ok=True, status=status, detail="", entries=entries)

    def _call(self, pod: str, action: PodAction, body: dict[str, str]) -> PodResult:
        url = pod.rstrip("/") + self._api[action]
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", **self._auth},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                text = response.read().decode("utf-8", "replace").strip()
                return PodResult(
                    pod=pod, action=action, ok=True, status=response.status, detail=text
                )
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace").strip()
            ok = action == "unload" and error.code == 404
            return PodResult(pod=pod, action=action, ok=ok, status=error.code, detail=text)
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            return PodResult(pod=pod, action=action, ok=False, status=None, detail=str(reason))


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
