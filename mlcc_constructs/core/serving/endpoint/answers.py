"""What an OpenAI-compatible endpoint must answer, and the report of ``mlcc endpoint check``.

The check makes two calls: ``GET /v1/models`` must list the served model name (``--model``)
and every ``--adapter`` (a loaded LoRA adapter is listed by its name, as a model); then one
streaming ``POST /v1/chat/completions`` must send server-sent events: ``data: {json}`` chunks,
at least one with content (``choices[].delta.content``, or a reasoning delta), then
``data: [DONE]``. ``ttft_ms`` is the time from sending the completion to its first content
delta, ``total_ms`` to ``[DONE]``. Any other answer is a problem located at the call
(``GET <url>/v1/models``) whose text names what came back and the fix; the API key is never
part of one (:func:`redacted`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.serving.endpoint.address import EndpointAddress
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

MODELS_PATH = "/v1/models"
CHAT_PATH = "/v1/chat/completions"
PROMPT = "Reply with one word: ready."
MAX_TOKENS = 8
SNIPPET = 200
"""The most characters of a server's answer an error quotes."""
# Delta fields that carry generated text (reasoning parsers stream the thinking first).
_TEXT_FIELDS = ("content", "reasoning_content", "reasoning")
_HTTP_FIXES = {
    400: "check --model (the request names it) and the server's log",
    404: "check --url: the OpenAI-compatible API is served at <url>/v1/ (a load balancer "
    "that routes only some paths answers 404 for the others)",
    405: "check --url: it does not point at the OpenAI-compatible API",
    429: "the endpoint is overloaded or rate limited: retry later",
    502: "the load balancer reached no healthy pod: check the pods and their readiness",
    503: "the endpoint has no ready pod yet, or is overloaded: check the pods",
    504: "the load balancer timed out waiting for a pod: check the pods, or raise the load "
    "balancer's idle timeout",
}


def chat_request(model: str) -> dict[str, Any]:
    """The body of the check's streaming completion: short, deterministic."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "stream": True,
    }


def redacted(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (the API key) replaced by ``***``."""
    return text.replace(secret, "***") if secret else text


def snippet(text: str) -> str:
    """The start of a server's answer, on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[:SNIPPET] + "..."


def server_message(body: str) -> str:
    """The message of an error answer: OpenAI's ``error.message``, FastAPI's ``detail``, a
    plain ``message``, or the start of the text."""
    try:
        document = json.loads(body)
    except ValueError:
        return snippet(body)
    if isinstance(document, Mapping):
        error = document.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return snippet(str(error["message"]))
        for key in ("detail", "message", "error"):
            if isinstance(document.get(key), str) and document[key]:
                return snippet(str(document[key]))
    return snippet(body)


def http_problem(
    where: str, status: int, reason: str, body: str, *, api_key_env: str | None
) -> Problem:
    """The problem of an answer that is not 200 (redirects: :func:`redirect_problem`)."""
    message = f"{status} {reason}".strip()
    text = server_message(body)
    if text and text.lower() != reason.lower():
        message += f": {text}"
    if status in (401, 403):
        fix = (
            f"set the endpoint's API key in ${api_key_env}"
            if api_key_env
            else "pass --api-key-env NAME, the variable that holds the endpoint's API key"
        )
    elif status == 404 and where.endswith(CHAT_PATH):
        fix = "pass --model with a name that GET /v1/models lists"
    else:
        fix = _HTTP_FIXES.get(status, "see the server's log")
    return Problem(message=message, where=where, fix=fix)


def oversized_problem(where: str, limit: int, *, what: str = "the answer") -> Problem:
    """An answer (or one line of a stream) longer than the check reads: said as such, not
    reported as the broken JSON its first ``limit`` bytes would be."""
    return Problem(
        message=f"{what} is longer than {limit} bytes, the most the check reads",
        where=where,
        fix="check --url: an OpenAI-compatible server's model list and stream events are small",
    )


def redirect_problem(where: str, status: int, location: str | None, url: str) -> Problem:
    """A redirect is never followed: the check calls exactly the URL it was given."""
    if not location:
        return Problem(message=f"{status} redirect without a Location", where=where)
    fix = "pass the URL it redirects to with --url (a redirect can drop the API key or the body)"
    if location.startswith("https://") and url.startswith("http://"):
        fix = "the endpoint takes HTTPS: pass --url https://..."
    return Problem(message=f"{status} redirect to {location}", where=where, fix=fix)


def model_ids(body: str, where: str) -> tuple[str, ...]:
    """The ids ``GET /v1/models`` lists; an answer that is no model list is an error."""
    try:
        document = json.loads(body)
    except ValueError:
        raise fail(
            f"the answer is not JSON: {snippet(body)!r}",
            where=where,
            fix="check --url: it must point at the OpenAI-compatible API, not a web page or "
            "a proxy's login",
        ) from None
    data = document.get("data") if isinstance(document, Mapping) else None
    if not isinstance(data, list):
        raise fail(
            f"the answer has no 'data' list of models: {snippet(body)!r}",
            where=where,
            fix="check --url: it must point at the OpenAI-compatible API",
        )
    return tuple(str(e["id"]) for e in data if isinstance(e, Mapping) and e.get("id"))


def listing_problems(
    ids: Sequence[str], *, model: str, adapters: Iterable[str], where: str
) -> list[Problem]:
    """The served model and each adapter must be listed."""
    served = ", ".join(ids) or "none"
    problems = []
    if model not in ids:
        problems.append(
            Problem(
                message=f"the endpoint does not serve model {model!r}",
                where=where,
                allowed=served,
                fix="pass --model with the served model name (the deployment's "
                "served_model_name, by default its name)",
            )
        )
    problems += [
        Problem(
            message=f"adapter {adapter!r} is not loaded",
            where=where,
            allowed=served,
            fix="load it (mlcc adapter add) or check --adapter",
        )
        for adapter in adapters
        if adapter not in ids
    ]
    return problems


@dataclass(frozen=True)
class StreamEvent:
    """One server-sent event of the completion: generated text, or the end."""

    text: str = ""
    done: bool = False


def parse_event(line: str, where: str) -> StreamEvent | None:
    """One line of the stream; ``None`` for lines that carry no data (blank lines, comments,
    ``event:``/``id:`` fields). A chunk that is not JSON, or an error event, is an error."""
    field, _, value = line.rstrip("\r\n").partition(":")
    if field != "data":
        return None
    value = value.removeprefix(" ")
    if value.strip() == "[DONE]":
        return StreamEvent(done=True)
    try:
        chunk = json.loads(value)
    except ValueError:
        raise fail(
            f"an event is not JSON: {snippet(value)!r}",
            where=where,
            fix="check --url: it must point at the OpenAI-compatible API",
        ) from None
    if not isinstance(chunk, Mapping):
        raise fail(f"an event is not a JSON object: {snippet(value)!r}", where=where)
    if chunk.get("error"):
        raise fail(
            f"the stream reported an error: {server_message(value)}",
            where=where,
            fix="see the server's log",
        )
    text = ""
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") if isinstance(choice, Mapping) else None
        if isinstance(delta, Mapping):
            text += "".join(str(delta.get(f) or "") for f in _TEXT_FIELDS)
    return StreamEvent(text=text)


def stream_end_problem(where: str, *, tokens: int, done: bool) -> MlccError | None:
    """What is wrong with a stream that ended (``done``: it sent ``[DONE]``)."""
    if not done:
        return fail(
            f"the stream ended before data: [DONE] (after {tokens} content events)",
            where=where,
            fix="see the server's log (a pod that restarts drops its streams), or check that "
            "the load balancer does not cut long responses",
        )
    if tokens == 0:
        return fail(
            "the stream sent no content before data: [DONE]",
            where=where,
            fix="see the server's log; check --model",
        )
    return None


@dataclass(frozen=True, kw_only=True)
class Call:
    """One HTTP call of the check."""

    method: str
    path: str
    status: int | None
    ms: float

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "status": self.status, "ms": self.ms}


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What the calls found (``None``: not reached)."""

    models: tuple[str, ...] | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    tokens: int = 0
    reply: str = ""
    calls: tuple[Call, ...] = ()


def report(
    *,
    url: str | None,
    address: EndpointAddress | None,
    model: str | None,
    adapters: Sequence[str],
    outcome: Outcome,
    problems: Sequence[Problem],
) -> dict[str, Any]:
    """The check's one JSON document, on success and on failure alike."""
    last = outcome.calls[-1] if outcome.calls else None
    return {
        "command": "endpoint check",
        "ok": not problems,
        "url": url,
        "endpoint": address.to_json() if address is not None else None,
        "model": model,
        "adapters": list(adapters),
        "models": list(outcome.models) if outcome.models is not None else None,
        "status": last.status if last is not None else None,
        "ttft_ms": outcome.ttft_ms,
        "total_ms": outcome.total_ms,
        "tokens": outcome.tokens,
        "reply": snippet(outcome.reply),
        "calls": [c.to_json() for c in outcome.calls],
        "unverified": list(address.unverified) if address is not None else [],
        "errors": [str(p) for p in problems],
    }
