"""What a spec field declares besides its type, default and attribute docstring: its JSON schema
bounds and its command-line flag, kept in the field's ``metadata`` so the field is declared once
(``tools/spec_schema.py`` generates ``data/deployment-spec.schema.json`` and the flag table from
the dataclasses)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

SCHEMA = "schema"
"""Metadata key: JSON schema keywords added to (or, with ``replace``, replacing) the ones the
field's type gives."""
CLI = "cli"
"""Metadata key: the field's command-line flags (``("--tp",)``), empty: no flag (file only)."""
REPLACE = "replace_schema"
"""Metadata key: the ``schema`` keywords are the field's whole schema (a shape its type cannot
say, e.g. a union keyed by field names)."""


def meta(
    *, cli: str | tuple[str, ...] = (), replace: bool = False, **schema: Any
) -> Mapping[str, Any]:
    """A spec field's metadata: ``cli`` its flag or flags (default none: set in a file only),
    ``schema`` its JSON schema keywords (``minimum=1``), ``replace`` the keywords are its whole
    schema."""
    flags = (cli,) if isinstance(cli, str) else cli
    return MappingProxyType({CLI: flags, SCHEMA: MappingProxyType(schema), REPLACE: replace})
