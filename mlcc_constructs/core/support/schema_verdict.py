"""The valid/invalid verdict of a JSON schema on the hot path, from jsonschema-rs.

Rendered objects are almost always valid, so the question every render asks is only "valid?".
:func:`verdict` answers it with jsonschema-rs; a caller asks jsonschema for the messages only
when the answer is no, so every problem is still worded by jsonschema. The answer is jsonschema's
(draft 2020-12, no format checker: ``format`` is an annotation), which
``tests/core/support/test_schema_verdict.py`` checks on generated objects.

jsonschema-rs reads Python data as JSON, where jsonschema sees Python types: it calls a tuple an
array (jsonschema: not an array) and ``inf``/``nan`` ``null`` (jsonschema: numbers), and raises
``ValueError`` on what JSON has no form for (a set, a non-string key, a ``str`` subclass). Such
an instance is never judged by jsonschema-rs: the answer is no, and jsonschema decides (its
problems, or none). The callers' instances are JSON data (``json.loads``, jsii's JSON, the
renderers' dicts), so this costs a walk of the instance (~9 us per deployment), not a fallback.
"""

# Adopted over our own compiled predicates (core/support/schema_compile.py, deleted), `make
# bench` "libraries vs ours", 2026-12-01, 2 cores, CPU time jsonschema-rs/ours, each workload
# interleaved: `mlcc render -f` of 500 deployments 0.92-0.95, the dist/ writer at 500 0.88-0.91,
# `mlcc render` of one deployment 1.03-1.07, `mlcc validate` 1.23-1.24 (the extension's import,
# ~10 ms: email.utils, socket, datetime, decimal); in process 10x sooner (0.005 against 0.053 ms
# per deployment). Ours was not 1.5x faster end to end anywhere, so the library answers; its
# import is paid only where a verdict is asked (render, validation, plugin manifests), never by
# `mlcc env` or `mlcc argv` without plugins. fastjsonschema 2.22.3 (drafts 4-7 only) was slower
# everywhere: 2.1x in process, 1.9x (render 500) to 4.7x (render 1). Re-measured as adopted
# (this module, its JSON-data walk included, against the deleted code; 20 paired rounds, CPU,
# median): render 500 0.98, dist/ 500 0.93, render 1 1.11, validate 1.28; in process 0.015 ms
# per deployment.

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Verdict = Callable[[Any], bool]
"""True: the instance is valid. False: it is not, or jsonschema must judge it."""

_SCALARS = frozenset({str, int, bool, type(None)})


def verdict(schema: dict[str, Any]) -> Verdict:
    """The verdict of ``schema`` (local ``$ref`` s such as ``#/$defs/name`` resolve against
    ``schema`` itself; nothing is fetched)."""
    import jsonschema_rs  # here: only a command that validates pays its import

    is_valid = jsonschema_rs.Draft202012Validator(
        schema, validate_formats=False, offline=True
    ).is_valid

    def check(instance: Any) -> bool:
        if not _json_data(instance):
            return False
        try:
            return is_valid(instance)
        except ValueError:  # not JSON data after all (a non-string key, a lone surrogate)
            return False

    return check


def _json_data(value: Any) -> bool:
    """Whether ``value`` holds only what jsonschema-rs reads as jsonschema does: dicts, lists,
    strings, ints, bools, ``None`` and finite floats (exact types, no subclasses), string keys."""
    kind = type(value)
    if kind is dict or kind is list:
        return _json_items(value)
    return kind in _SCALARS or (kind is float and value - value == 0)


def _json_items(node: dict[str, Any] | list[Any]) -> bool:
    values: Iterable[Any] = node
    if type(node) is dict:
        # jsonschema-rs reads a non-string key as its text in some places (a {1: "x"} object
        # then passes a string-keyed rule jsonschema refuses): such data is jsonschema's.
        for key in node:  # a plain loop: ~3x sooner than any() over a generator here
            if type(key) is not str:
                return False
        values = node.values()
    for value in values:
        kind = type(value)
        if kind in _SCALARS:
            continue
        if kind is dict or kind is list:
            if not _json_items(value):
                return False
        elif kind is not float or value - value != 0:  # inf - inf and nan - nan are nan
            return False
    return True
