"""Kubernetes object names: DNS-1123 labels and subdomains, RFC 1035 labels
(https://kubernetes.io/docs/concepts/overview/working-with-objects/names/)."""

from __future__ import annotations

import re

MAX_LABEL = 63
"""The longest DNS-1123 (or RFC 1035) label."""
MAX_SUBDOMAIN = 253
"""The longest DNS-1123 subdomain."""
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(rf"^{_LABEL}$")
_RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")


def is_label(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 label (a namespace, a label value's shape): lower-case
    letters, digits and ``-``, starting and ending with a letter or digit, at most 63."""
    return len(name) <= MAX_LABEL and _DNS1123_LABEL.match(name) is not None


def is_rfc1035_label(name: str) -> bool:
    """Whether ``name`` is an RFC 1035 label (a Service name): a DNS-1123 label that starts
    with a letter."""
    return len(name) <= MAX_LABEL and _RFC1035_LABEL.match(name) is not None


def is_subdomain(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 subdomain: dot-separated labels of lower-case letters,
    digits and ``-``, each starting and ending with a letter or digit, at most 253 in all."""
    return len(name) <= MAX_SUBDOMAIN and _SUBDOMAIN.match(name) is not None
