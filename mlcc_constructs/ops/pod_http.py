"""One HTTP call to a serving pod with one deadline (:func:`call`), for
:mod:`mlcc_constructs.ops.pods`.

``http.client`` (stdlib) rather than ``urllib``: urllib follows redirects (a 302/303 turns a
POST into a GET of the ``Location``, so a pod that redirects the load to ``/health`` answered
"200"), and its timeout bounds each socket read, not the call (a server sending one byte a
second held a call for as long as it liked). Here a redirect is an answer like any other
(the caller fails it), and ``timeout`` is a deadline for the whole call, connect and every
read included: when it passes, the socket is shut down, which ends any read waiting on it.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

MAX_BODY = 4 << 20
"""The most bytes of an answer read (a model list of many adapters stays far below)."""


@dataclass(frozen=True, kw_only=True)
class HttpAnswer:
    """A pod's answer (``status`` and ``body``), or why there is none (``error``)."""

    status: int | None = None
    body: bytes = b""
    location: str | None = None
    """The ``Location`` header (of a redirect)."""
    error: str | None = None
    """No complete answer: timed out, connection failed, not HTTP, too long."""


def call(
    method: str,
    url: str,
    *,
    timeout: float,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpAnswer:
    """``method url`` within ``timeout`` seconds in all; never raises for a network fault."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "", parts.port
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(host, port, timeout=timeout)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sock = connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout, expire)
    watchdog.daemon = True
    started = time.monotonic()
    watchdog.start()
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request(method, target, body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        data = response.read(MAX_BODY + 1)
        if len(data) <= MAX_BODY and response.length:  # closed before Content-Length bytes
            raise http.client.IncompleteRead(data, response.length)
        answer = HttpAnswer(
            status=response.status, body=data, location=response.getheader("Location")
        )
        if len(data) > MAX_BODY:
            answer = HttpAnswer(status=response.status, error=f"an answer over {MAX_BODY} bytes")
    except (http.client.HTTPException, OSError) as error:
        answer = HttpAnswer(error=_reason(error))
    finally:
        watchdog.cancel()
        connection.close()
    if expired.is_set() or time.monotonic() - started > timeout:
        return HttpAnswer(error=f"timed out: no complete answer within {timeout:g} s")
    return answer


def _reason(error: Exception) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, http.client.HTTPException):
        return f"not an HTTP answer ({type(error).__name__}: {error})"
    if isinstance(error, OSError) and error.strerror:
        return f"connection failed: {error.strerror}"
    return f"connection failed: {error}"
