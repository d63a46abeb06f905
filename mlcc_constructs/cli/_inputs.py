"""Checks of command-line values, each naming its flag: a command collects the problems of
every flag it takes and raises them at once, before its first side effect.

Each ``*_problems`` function returns a list (empty when the value is fine); the S3 layout,
bucket and source rules themselves are the core's, re-located here to the flag that carried
the value (``--project`` rather than ``/project``).
"""

from __future__ import annotations

import math
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from mlcc_constructs.core.support.errors import MlccError, Problem
from mlcc_constructs.core.support.kube_names import MAX_LABEL, MAX_SUBDOMAIN, is_label, is_subdomain

T = TypeVar("T")

MAX_TIMEOUT = 3600.0
"""The longest ``--timeout`` accepted (seconds per pod call)."""
# Kubernetes object names (DNS-1123 subdomain) and namespaces (DNS-1123 label).


def at_flag(flag: str, problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` located at ``flag`` (their JSON pointer dropped: a flag holds one value)."""
    return [replace(p, where=flag, pointer="") for p in problems]


def checked(flag: str, check: Callable[[], T]) -> tuple[T | None, list[Problem]]:
    """Run a core check; its problems come back located at ``flag``."""
    try:
        return check(), []
    except MlccError as error:
        return None, at_flag(flag, error.problems)


def _printable(value: str) -> bool:
    return bool(value) and not any(
        ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in value
    )


def text_problems(flag: str, value: str | None, *, what: str) -> list[Problem]:
    """A non-empty value without whitespace or control characters (``None``: not given)."""
    if value is None or _printable(value):
        return []
    return [
        Problem(
            message=f"not a valid {what}",
            where=flag,
            value=value,
            allowed="a non-empty value without whitespace or control characters",
        )
    ]


def url_problems(flag: str, value: str | None, *, path: bool) -> list[Problem]:
    """An ``http://`` or ``https://`` URL with a host (and a valid port); ``path=False`` also
    refuses a path (a pod URL is ``http://IP:PORT``: the API paths are the engine's)."""
    if value is None:
        return []
    allowed = "http://HOST[:PORT]" + ("[/PATH]" if path else "")
    try:
        parts = urllib.parse.urlsplit(value)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if (
        parts is None
        or not _printable(value)
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or not port_ok
        or parts.query
        or parts.fragment
        or parts.username is not None
        or (not path and parts.path not in ("", "/"))
    ):
        return [Problem(message="not a valid URL", where=flag, value=value, allowed=allowed)]
    return []


# A pod is called once however often it is named: two URLs that differ only in the case of the
# scheme or host, an explicit default port or a trailing slash name the same pod, and calling
# it twice would load (or unload) the adapter on it twice. A repeat is dropped with a warning
# rather than refused: it asks for nothing that contradicts the first (unlike two different
# --from), and a pod both discovered and given is the same pod.
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalised_pod_url(url: str) -> str:
    """``scheme://host:port``: lower-case scheme and host, the port explicit, no trailing
    slash (a URL that does not parse is kept as given: the input checks refuse it)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return url
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"  # IPv6
    return f"{parts.scheme.lower()}://{host}:{port}"


def unique_pods(urls: Iterable[str]) -> tuple[list[str], list[str]]:
    """The pods in order, each once (as first given), and a warning per repeat."""
    seen: dict[str, str] = {}
    pods: list[str] = []
    warnings: list[str] = []
    for url in urls:
        key = normalised_pod_url(url)
        if key in seen:
            same = "" if seen[key] == url else f" (the same pod as {seen[key]})"
            warnings.append(f"pod {url} given more than once{same}: it is called once")
            continue
        seen[key] = url
        pods.append(url)
    return pods, warnings


def timeout_problems(flag: str, value: str) -> tuple[float, list[Problem]]:
    """Seconds, ``0 < t <= MAX_TIMEOUT``; the parsed value (60 when invalid) and problems."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_TIMEOUT:
        return 60.0, [
            Problem(
                message="not a timeout",
                where=flag,
                value=value,
                allowed=f"seconds, more than 0 and at most {MAX_TIMEOUT:g}",
            )
        ]
    return seconds, []


def dns_problems(flag: str, value: str | None, *, label: bool) -> list[Problem]:
    """A Kubernetes namespace (``label``) or object name."""
    if value is None:
        return []
    if (is_label if label else is_subdomain)(value):
        return []
    return [
        Problem(
            message="not a valid Kubernetes " + ("namespace" if label else "name"),
            where=flag,
            value=value,
            allowed="lower-case letters, digits and '-'"
            + ("" if label else " or '.'")
            + f", at most {MAX_LABEL if label else MAX_SUBDOMAIN} characters",
        )
    ]
