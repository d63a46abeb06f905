"""Kubernetes object names: DNS-1123 subdomains
(https://kubernetes.io/docs/concepts/overview/working-with-objects/names/)."""

from __future__ import annotations

import re

MAX_SUBDOMAIN = 253
"""The longest DNS-1123 subdomain."""
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_subdomain(name: str) -> bool:
    """Whether ``name`` is a DNS-1123 subdomain: dot-separated labels of lower-case letters,
    digits and ``-``, each starting and ending with a letter or digit, at most 253 in all."""
    return len(name) <= MAX_SUBDOMAIN and _SUBDOMAIN.match(name) is not None
