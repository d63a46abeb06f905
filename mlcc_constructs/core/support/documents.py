"""Reading the documents the library ships or is given, strictly.

Every user-given file (spec files, CacheBackend files, engine manifests) goes through
:func:`read_text` and :func:`parse_json` / :func:`parse_yaml`:

* the bytes must be UTF-8 text: a binary file or another encoding is a clear error naming the
  offset, not a traceback;
* a duplicate key is an error naming both places (YAML and JSON parsers otherwise keep the last
  one silently, so a file can say one thing and do another);
* a syntax error names the line and column;
* a file is read up to :data:`MAX_DOCUMENT_BYTES` (``-f /dev/zero`` would read forever) and
  nested up to :data:`MAX_NESTING` levels (deeper nesting would exhaust Python's stack);
* the path ``-`` is standard input (``mlcc render -f -``).

Schema checks of shipped data files use jsonschema (:func:`validate_document`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer

_UNREADABLE_FIX = "check the path and that you may read it"

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
"""The most bytes a user-given document may hold (4 MiB: a deployment spec is a few KiB)."""

MAX_NESTING = 64
"""The deepest nesting of mappings and lists a user-given document may have (a deployment
spec nests about 6 levels)."""

STDIN = "-"
"""The path that means standard input."""

STDIN_NAME = "<stdin>"
"""How problems name a document read from standard input."""


def _read_bytes(path: str | Path) -> bytes:
    """At most :data:`MAX_DOCUMENT_BYTES` + 1 bytes of ``path`` (``-``: standard input)."""
    if str(path) == STDIN:
        return sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
    with Path(path).open("rb") as stream:
        return stream.read(MAX_DOCUMENT_BYTES + 1)


def read_text(path: str | Path, *, what: str = "file") -> str:
    """The UTF-8 text of ``path``; a missing, unreadable, binary or non-UTF-8 file is an
    :class:`MlccError` naming it (``-``: standard input)."""
    where = STDIN_NAME if str(path) == STDIN else str(path)
    try:
        data = _read_bytes(path)
    except IsADirectoryError as error:
        raise fail(f"the {what} is a folder, not a file", where=where) from error
    except OSError as error:
        raise fail(
            f"cannot read the {what}: {error.strerror or error}", where=where, fix=_UNREADABLE_FIX
        ) from error
    if len(data) > MAX_DOCUMENT_BYTES:
        raise fail(
            f"the {what} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB "
            f"({MAX_DOCUMENT_BYTES} bytes), the most mlcc reads",
            where=where,
            fix="pass the YAML or JSON text file (not a device or a large data file)",
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        raise fail(
            f"the {what} is binary (a NUL byte at offset {nul}), not text",
            where=where,
            fix="pass the YAML or JSON text file",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise fail(
            f"the {what} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
            f"{error.start})",
            where=where,
            fix="save the file as UTF-8",
        ) from error


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def parse_json(text: str, *, where: str) -> Any:
    """JSON with duplicate keys refused; errors name the line and column."""
    try:
        document = json.loads(text, object_pairs_hook=_refuse_duplicates)
    except RecursionError:
        raise _too_deep(where) from None
    except _DuplicateKey as error:
        raise fail(
            f"duplicate key {error.key!r}: JSON keeps only the last one",
            where=where,
            fix="keep the key once",
        ) from None
    except json.JSONDecodeError as error:
        raise fail(
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            where=where,
            fix="fix the JSON syntax (a trailing comma or a missing quote is typical)",
        ) from error
    check_nesting(document, where=where)
    return document


def _too_deep(where: str) -> MlccError:
    return fail(
        f"the document nests mappings or lists deeper than {MAX_NESTING} levels, the most "
        "mlcc reads",
        where=where,
        fix="flatten the document (a deployment spec nests about 6 levels; is this the "
        "right file?)",
    )


def check_nesting(document: Any, *, where: str) -> None:
    """Refuse ``document`` when its mappings and lists nest deeper than :data:`MAX_NESTING`
    (iterative, so a deep or self-referencing YAML document cannot exhaust the stack)."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    deepest: dict[int, int] = {}  # id -> the deepest level it was seen at (shared YAML nodes)
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth > MAX_NESTING:
            raise _too_deep(where)
        if deepest.get(id(node), 0) >= depth:
            continue
        deepest[id(node)] = depth
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)


def parse_yaml(text: str, *, where: str) -> list[Any]:
    """Every document of a (multi-document) YAML text, with duplicate keys refused (each named
    by line and column, all at once); syntax errors name the line and column."""
    import yaml

    loader_class = _strict_loader()
    loader = loader_class(text)
    try:
        documents = list(_documents(loader))
    except RecursionError:
        raise _too_deep(where) from None
    except yaml.reader.ReaderError as error:
        raise fail(
            f"not valid YAML: the character #x{error.character:04x} at offset {error.position} "
            "is not allowed (control characters are refused)",
            where=where,
            fix="remove the character (is this a text file?)",
        ) from error
    except yaml.YAMLError as error:
        if "maximum nesting depth" in str(getattr(error, "problem", "")):  # libyaml's own limit
            raise _too_deep(where) from None
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(error, "problem", None) or error).split())  # one line
        raise fail(f"not valid YAML: {problem}{at}", where=where) from error
    finally:
        loader.dispose()
    duplicates: list[str] = loader.duplicates
    if duplicates:
        raise MlccError(
            Problem(message=message, where=where, fix="keep the key once") for message in duplicates
        )
    for document in documents:
        check_nesting(document, where=where)
    return documents


def _documents(loader: Any) -> Iterable[Any]:
    while loader.check_data():
        yield loader.get_data()


_LOADER: Any = None


def _strict_loader() -> Any:
    """A safe YAML loader (the C one when PyYAML has it) that records duplicate keys."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates: list[str] = []

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the base loader reports it
                    continue
                here = key_node.start_mark
                if first is not None:
                    self.duplicates.append(
                        f"duplicate key {key!r} at line {here.line + 1} column {here.column + 1} "
                        f"(first at line {first.line + 1}): YAML keeps only the last one"
                    )
                else:
                    seen[key] = here
            return super().construct_mapping(node, deep=deep)

    _LOADER = StrictLoader
    return _LOADER


def load_document(path: str | Path, *, what: str = "file") -> Any:
    """The one document of a ``.json`` file, or of a YAML file (any other suffix)."""
    where = str(path)
    text = read_text(path, what=what)
    if where.endswith(".json"):
        return parse_json(text, where=where)
    documents = parse_yaml(text, where=where)
    if len(documents) > 1:
        raise fail(
            f"the {what} holds {len(documents)} YAML documents; one is expected",
            where=where,
            fix="keep one document (drop the extra '---' sections)",
        )
    return documents[0] if documents else None


def read_json(path: Path) -> Any:
    """The JSON document at ``path`` (shipped data): strict, errors name line and column."""
    return parse_json(read_text(path), where=str(path))


def validate_document(document: Any, schema_path: Path, *, where: str) -> None:
    """Raise one :class:`MlccError` with every schema violation of ``document``."""
    import jsonschema  # only when a document is checked: it is slow to import

    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        Problem(
            message=error.message,
            where=where,
            pointer=json_pointer(*error.absolute_path) or "/",
        )
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        raise MlccError(problems)
