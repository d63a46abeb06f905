"""The calls of ``mlcc endpoint check``: an OpenAI-compatible endpoint over HTTP(S), and the
live objects that publish it (kubectl).

:class:`EndpointCheck` sends ``GET /v1/models`` and one streaming chat completion with
``http.client`` (stdlib), reading the server-sent events line by line and timing the first
content delta. Each call has one deadline, ``timeout`` seconds after it starts (the first
token and the end of the stream included). TLS is always verified (the system's CAs, or
``ca_file``); a redirect is never followed. The rules (what the answers must hold, the error
texts, the report) are :mod:`mlcc_constructs.core.serving.endpoint.answers`'.
"""

from __future__ import annotations

import functools
import http.client
import json
import ssl
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.serving.endpoint import answers
from mlcc_constructs.core.serving.endpoint.address import (
    EndpointAddress,
    endpoint_source,
    ingress_address,
    operator_address,
)
from mlcc_constructs.core.serving.endpoint.answers import Call, Outcome, StreamEvent
from mlcc_constructs.core.serving.kinds.registry import kind_named
from mlcc_constructs.core.support.errors import MlccError, Problem, fail
from mlcc_constructs.ops.kubectl import kubectl

MAX_BODY = 1 << 20
"""The most bytes of a non-streaming answer read."""
MAX_LINE = 1 << 16
_REDIRECTS = (301, 302, 303, 307, 308)
_UNREACHABLE = (
    "check --url and that the endpoint is reachable from here (an internal load balancer "
    "answers only inside its VPC)"
)


def resolve(*, target: str, name: str, namespace: str) -> EndpointAddress:
    """The endpoint of deployment ``name``, read live with kubectl (the current context)."""
    descriptor = load_target(target)
    fix = "check the kube context and --namespace, or pass --url"
    if endpoint_source(descriptor) == "ingress":
        ingress = kubectl("get", _ingresses(), name, "-n", namespace, "--ignore-not-found", fix=fix)
        return ingress_address(ingress, namespace=namespace, name=name)
    kind = kind_named(descriptor.workload or "")
    iec = kubectl("get", kind.plural, name, "-n", namespace, "--ignore-not-found", fix=fix)
    ingresses: list[Any] = []
    if iec is not None:
        listed = kubectl("get", _ingresses(), "-n", namespace, fix=fix) or {}
        ingresses = list(listed.get("items") or [])
    return operator_address(iec, ingresses, kind=kind, namespace=namespace, name=name)


def ssl_context(ca_file: str | None) -> ssl.SSLContext:
    """Verifying TLS context: the system's CAs, or only ``ca_file`` (PEM) when given."""
    try:
        return ssl.create_default_context(cafile=ca_file)
    except ssl.SSLError as error:
        raise fail(
            f"not a PEM certificate file: {error.reason or error}",
            where="--ca-file",
            value=ca_file,
            fix="pass the CA certificate (PEM) that signed the endpoint's certificate",
        ) from None


class _Stop(Exception):
    """Ends the check at the first call that failed (its problem is already recorded)."""


@dataclass
class _Timed:
    """A call under way: its answer (once the headers came), its deadline, whether it is on
    the record yet."""

    method: str
    path: str
    where: str
    connection: http.client.HTTPConnection
    started: float
    deadline: float
    response: http.client.HTTPResponse | None = None
    recorded: bool = False
    pending: bytes = b""
    """Stream bytes read past the last line returned."""


@dataclass
class EndpointCheck:
    """One check of the endpoint at ``url`` (``scheme://host[:port][/path]``)."""

    url: str
    timeout: float
    api_key: str | None = None
    api_key_env: str | None = None
    ca_file: str | None = None
    address: EndpointAddress | None = None
    clock: Callable[[], float] = time.perf_counter
    calls: list[Call] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # what the calls found so far (a failed call keeps what came before it)
    _ids: tuple[str, ...] | None = field(default=None, init=False)
    _ttft: float | None = field(default=None, init=False)
    _total: float | None = field(default=None, init=False)
    _tokens: int = field(default=0, init=False)
    _reply: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        self._secure = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._base = parts.path
        self._context = ssl_context(self.ca_file) if self._secure else None

    def run(self, model: str, adapters: Sequence[str]) -> Outcome:
        """Both calls (the completion only when the model is listed); every problem found is
        in :attr:`problems`, the API key in none of them."""
        try:
            self._models(model, adapters)
            if self._ids is not None and model in self._ids:
                self._chat(model)
        except _Stop:
            pass
        self.problems = [
            replace(p, message=answers.redacted(p.message, self.api_key)) for p in self.problems
        ]
        return Outcome(
            models=self._ids,
            ttft_ms=self._ttft,
            total_ms=self._total,
            tokens=self._tokens,
            reply=answers.redacted(self._reply, self.api_key),
            calls=tuple(self.calls),
        )

    # -- the two calls ------------------------------------------------------------------

    def _models(self, model: str, adapters: Sequence[str]) -> None:
        timed = self._send("GET", answers.MODELS_PATH, None)
        body = self._body(timed)
        ids: tuple[str, ...] = self._checked(lambda: answers.model_ids(body, timed.where))
        self._ids = ids
        self.problems += answers.listing_problems(
            ids, model=model, adapters=adapters, where=timed.where
        )

    def _chat(self, model: str) -> None:
        body = json.dumps(answers.chat_request(model)).encode()
        timed = self._send("POST", answers.CHAT_PATH, body)
        assert timed.response is not None
        kind = timed.response.getheader("Content-Type") or ""
        if not kind.startswith("text/event-stream"):
            text = self._body(timed)
            self._fail(
                Problem(
                    message=f"the answer is not an event stream (Content-Type {kind or 'none'}):"
                    f" {answers.snippet(text)!r}",
                    where=timed.where,
                    fix="check --url: the server must honour stream: true",
                )
            )
        done = False
        try:
            while not done:
                line = self._line(timed)
                if not line:
                    break
                text = line.decode("utf-8", "replace")
                event: StreamEvent | None = self._checked(
                    functools.partial(answers.parse_event, text, timed.where)
                )
                if event is None:
                    continue
                done = event.done
                if event.text:
                    self._tokens += 1
                    self._reply += event.text
                    if self._ttft is None:
                        self._ttft = self._ms(timed.started)
        finally:
            self._record(timed)
        problem = answers.stream_end_problem(timed.where, tokens=self._tokens, done=done)
        if problem is not None:
            self._fail(problem.problems[0])
        self._total = self._ms(timed.started)

    # -- HTTP ---------------------------------------------------------------------------

    def _headers(self, body: bytes | None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "User-Agent": "mlcc"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _send(self, method: str, path: str, body: bytes | None) -> _Timed:
        """Send one request; a failure, a redirect or an answer other than 200 stops the
        check."""
        started = self.clock()
        connection: http.client.HTTPConnection
        if self._secure:
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=self._context
            )
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        where = f"{method} {self.url}{path}"
        timed = _Timed(method, path, where, connection, started, started + self.timeout)
        first = path == answers.CHAT_PATH
        try:
            connection.request(method, self._base + path, body=body, headers=self._headers(body))
            self._remaining(timed)
            timed.response = connection.getresponse()
        except Exception as error:
            self._record(timed)
            self._fail(self._transport_problem(error, where, first=first, tokens=0))
        status = timed.response.status
        if status == 200:
            return timed
        text = self._body(timed)
        if status in _REDIRECTS:
            location = timed.response.getheader("Location")
            self._fail(answers.redirect_problem(where, status, location, self.url))
        self._fail(
            answers.http_problem(
                where, status, timed.response.reason, text, api_key_env=self.api_key_env
            )
        )

    def _remaining(self, timed: _Timed) -> None:
        """Bound the next socket operation by the call's deadline."""
        left = timed.deadline - self.clock()
        if left <= 0:
            raise TimeoutError
        if timed.connection.sock is not None:
            timed.connection.sock.settimeout(left)

    def _body(self, timed: _Timed) -> str:
        """The whole (non-streaming) answer; the call is then on the record."""
        assert timed.response is not None
        data = b""
        try:
            # chunk by chunk, each bounded by what is left: one read() of the whole body
            # waits per socket receive, so a dripping server could hold it past the deadline
            while len(data) <= MAX_BODY:
                self._remaining(timed)
                piece = timed.response.read1(MAX_BODY + 1 - len(data))
                if not piece:
                    break
                data += piece
        except Exception as error:
            self._fail(self._transport_problem(error, timed.where, first=False, tokens=0))
        finally:
            self._record(timed)
        if len(data) > MAX_BODY:
            self._fail(answers.oversized_problem(timed.where, MAX_BODY))
        return data.decode("utf-8", "replace")

    def _line(self, timed: _Timed) -> bytes:
        """The next line of the stream (``b""`` at its end), read piece by piece with the
        deadline checked before each: ``readline`` waits on every receive in turn, so a server
        sending a byte at a time held it long past ``--timeout``."""
        assert timed.response is not None
        try:
            while b"\n" not in timed.pending:
                if len(timed.pending) > MAX_LINE:
                    self._fail(answers.oversized_problem(timed.where, MAX_LINE, what="a line"))
                self._remaining(timed)
                piece = timed.response.read1(MAX_LINE)
                if not piece:
                    line, timed.pending = timed.pending, b""
                    return line
                timed.pending += piece
        except http.client.IncompleteRead:
            return b""  # the server closed the stream mid-chunk
        except MlccError:
            raise
        except Exception as error:
            first = self._ttft is None
            self._fail(
                self._transport_problem(error, timed.where, first=first, tokens=self._tokens)
            )
        line, _, timed.pending = timed.pending.partition(b"\n")
        return line + b"\n"

    def _transport_problem(
        self, error: Exception, where: str, *, first: bool, tokens: int
    ) -> Problem:
        """The problem of a call that got no complete answer (``first``: the completion had
        sent no content yet)."""
        seconds = f"{self.timeout:g} s"
        if isinstance(error, ssl.SSLCertVerificationError):
            return Problem(
                message=f"TLS certificate verify failed: {error.verify_message}",
                where=where,
                fix=self._tls_fix(str(error.verify_message)),
            )
        if isinstance(error, ssl.SSLError):
            return Problem(
                message=f"TLS: {error.reason or error}",
                where=where,
                fix="check the scheme and port of --url (https:// to a plain-HTTP port fails so)",
            )
        if isinstance(error, TimeoutError):
            if where.endswith(answers.CHAT_PATH) and first:
                return Problem(
                    message=f"no first token within {seconds}",
                    where=where,
                    fix="raise --timeout (the first token waits for queued requests and, after "
                    "a scale-up, for the model to load)",
                )
            if where.endswith(answers.CHAT_PATH):
                return Problem(
                    message=f"the stream did not end within {seconds} "
                    f"(after {tokens} content events)",
                    where=where,
                    fix="raise --timeout",
                )
            return Problem(
                message=f"no answer within {seconds}",
                where=where,
                fix=f"raise --timeout, or {_UNREACHABLE}",
            )
        if isinstance(error, http.client.HTTPException):
            return Problem(
                message=f"not an HTTP answer ({type(error).__name__}: {error})",
                where=where,
                fix="check the scheme and port of --url",
            )
        if isinstance(error, OSError):
            return Problem(
                message=f"connection failed: {error.strerror or error}",
                where=where,
                fix=_UNREACHABLE,
            )
        raise error

    def _tls_fix(self, reason: str) -> str:
        address = self.address
        if "mismatch" in reason:
            names = ", ".join(address.certificate_names) if address is not None else ""
            return "call a host the certificate is for" + (f" ({names})" if names else "")
        if address is not None and address.ca_certificate:
            return (
                "download the certificate the inference operator wrote (aws s3 cp "
                f"{address.ca_certificate} ca.pem) and pass --ca-file ca.pem"
            )
        if self.ca_file:
            return f"the endpoint's certificate is not signed by --ca-file {self.ca_file}"
        return (
            "pass --ca-file PATH, the CA certificate (PEM) that signed the endpoint's "
            "certificate (TLS is always verified)"
        )

    # -- bookkeeping --------------------------------------------------------------------

    def _ms(self, started: float) -> float:
        return round((self.clock() - started) * 1000, 1)

    def _record(self, timed: _Timed) -> None:
        """Put the call on the record (once) and close its connection."""
        if timed.recorded:
            return
        timed.recorded = True
        status = timed.response.status if timed.response is not None else None
        self.calls.append(
            Call(method=timed.method, path=timed.path, status=status, ms=self._ms(timed.started))
        )
        timed.connection.close()

    def _checked(self, check: Callable[[], Any]) -> Any:
        try:
            return check()
        except MlccError as error:
            self.problems += error.problems
            raise _Stop from None

    def _fail(self, problem: Problem) -> NoReturn:
        self.problems.append(problem)
        raise _Stop


def _ingresses() -> str:
    """The Ingress kind's resource name, as ``kubectl get`` takes it (the kinds registry's)."""
    from mlcc_constructs.core.serving.kinds.registry import kind_named

    return kind_named("Ingress").plural
