"""Unresolved CDK tokens in text the core handles: a value known only at deploy time (a
``ServingCluster``'s Prometheus query URL) reaches the core as ``${Token[...]}`` text whose
number follows the app's construction order, not the value."""

from __future__ import annotations

import re

UNRESOLVED_TOKEN = re.compile(r"\$\{Token\[[^\]]*\]\}")


def has_token(text: str) -> bool:
    """``text`` holds an unresolved CDK token."""
    return UNRESOLVED_TOKEN.search(text) is not None
