"""Reading structured CDK context values: ``cdk.json`` or ``-c key=value``.

The CDK CLI passes every ``-c key=value`` to the app as a string, while ``cdk.json`` values
arrive as JSON types. So a string where a list or an object is expected came from ``-c``:
its problems name ``-c <key>``, not cdk.json. A ``-c`` value that starts with ``[`` or ``{``
is JSON (``-c admin_role_arns='["arn:...","arn:..."]'``) and is decoded, never split on
commas.
"""

from __future__ import annotations

import json

from mlcc_constructs.core.support.errors import MlccError, Problem

_JSON_STARTS = ("[", "{")


def context_source(value: object, key: str, *, otherwise: str = "cdk.json:/context") -> str:
    """Where the structured context value ``value`` of ``key`` came from: ``-c <key>`` when it
    is a string (the CLI's form), else ``otherwise`` (default ``cdk.json:/context``)."""
    return f"-c {key}" if isinstance(value, str) else otherwise


def decode_context(value: object, key: str) -> object:
    """``value`` with a ``-c`` JSON text (a string starting with ``[`` or ``{``) decoded; any
    other value unchanged. Text that is not JSON is a problem naming ``-c <key>``."""
    if not isinstance(value, str) or not value.lstrip().startswith(_JSON_STARTS):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise MlccError(
            Problem(
                message=f"starts like JSON but is not JSON ({error.msg} at character {error.pos})",
                where=f"-c {key}",
                value=value,
                allowed="a JSON list or object, or a comma-separated list a,b",
                fix=f'quote the whole value for the shell: -c {key}=\'["a", "b"]\'',
            )
        ) from None
