"""A Kubernetes Secret's key as an env value (:class:`SecretRef`), and the file form of a
``secret_env`` entry (:data:`SECRET_ENV_SCHEMA`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.support.typecheck import check_fields


@dataclass(frozen=True, kw_only=True)
class SecretRef:
    """A key of a Kubernetes Secret; secrets never travel as plain env or ConfigMap data."""

    name: str
    """The Secret's name (in the deployment's namespace)."""
    key: str
    """The key within the Secret."""

    def __post_init__(self) -> None:
        check_fields(self)


SECRET_ENV_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "description": "either name and key (a Kubernetes Secret) or secrets_manager and "
        "optionally json_key",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "the Kubernetes Secret"},
            "key": {"type": "string", "minLength": 1, "description": "its key"},
            "secrets_manager": {
                "type": "string",
                "minLength": 1,
                "description": "the Secrets Manager secret's name or ARN",
            },
            "json_key": {
                "type": "string",
                "minLength": 1,
                "description": "the key of a JSON secret's value to use",
            },
        },
    },
}
"""The schema of ``engine.secret_env`` in a file: each entry ``{name, key}`` (a
:class:`SecretRef`) or ``{secrets_manager, json_key?}`` (a Secrets Manager secret), the form
the loader reads (two shapes one type cannot say)."""
