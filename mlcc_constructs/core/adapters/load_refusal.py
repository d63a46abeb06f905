"""Why a serving pod refused to load an adapter, and the fix (issue 35, item 8).

``mlcc adapter add``/``update`` load through the engine's dynamic LoRA API (its manifest's
``adapter_api``). Two answers have a cause the bare status does not name:

* **404 on the load path**: the route is not there. vLLM serves it only while
  ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` is true (the manifest's ``adapter_api.runtime_env``,
  which a ``lora`` deployment on a target that loads adapters at runtime renders); otherwise
  the engine build lacks the endpoint.
* **400**: the engine refused this adapter and said why (vLLM's error ``message``, SGLang's
  ``error_message``): the message is shown as the engine wrote it.

Pure: it reads the status and the answer's text, never the network.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_MESSAGE_FIELDS = ("message", "error_message", "detail")
"""Where an engine's JSON error holds its text: vLLM's ``ErrorResponse`` (``message``, or
``error.message`` in recent releases), SGLang's ``LoRAUpdateResult`` (``error_message``),
FastAPI's own (``detail``)."""


def engine_message(text: str) -> str | None:
    """The engine's own message in a JSON error answer ``text`` (module doc), or ``None``."""
    try:
        document: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    nested = document.get("error")
    for holder in (nested, document) if isinstance(nested, dict) else (document,):
        for name in _MESSAGE_FIELDS:
            value = holder.get(name)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
    if isinstance(nested, str) and nested.strip():
        return " ".join(nested.split())
    return None


def load_refusal(
    status: int, text: str, *, load_path: str, runtime_env: Mapping[str, str], limit: int
) -> str | None:
    """What a ``status`` answer (body ``text``) to a load means, with the fix; ``None`` for a
    status with no known cause (module doc). ``load_path``: the manifest's
    ``adapter_api.load``; ``runtime_env``: its ``adapter_api.runtime_env``; ``limit``: the most
    characters of the engine's message quoted."""
    if status == 404:
        switch = ", ".join(f"{key}={value}" for key, value in runtime_env.items())
        if switch:
            return (
                f"the pod serves no {load_path} route: runtime adapter loading is off (the "
                f"engine runs without {switch}) or the engine build lacks the endpoint; fix: "
                f"render the deployment with lora: true (it sets {switch}, engine manifest "
                "adapter_api.runtime_env) and roll out its pods, or use an image whose engine "
                f"serves {load_path}"
            )
        return (
            f"the pod serves no {load_path} route: the engine build lacks the endpoint; fix: "
            f"use an image whose engine serves {load_path}"
        )
    if status == 400:
        message = engine_message(text) or " ".join(text.split()) or "(no message)"
        if len(message) > limit:
            message = message[:limit] + "..."
        return (
            f"the engine refused the load: {message}; fix: correct what the engine names (the "
            "adapter's rank against the pods' max LoRA rank, its target modules, its base "
            "model, its path in the pod), then run the command again"
        )
    return None
