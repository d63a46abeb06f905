"""The deployment spec's JSON schema and flag table, generated from the one declaration of each
field: the :class:`DeploymentSpec` dataclasses (type, default), their attribute docstrings
(description) and field metadata (bounds, enums, flag: :mod:`.field_meta`).

Used by ``tools/spec_schema.py`` (writes ``data/deployment-spec.schema.json`` and
``data/spec-flags.json``) and by the tests that prove the committed files are fresh; never at a
command's run (it reads the package's source with :mod:`ast`)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.field_meta import CLI, REPLACE, SCHEMA

SCHEMA_HEADER: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://mlcc-constructs.dev/schemas/deployment-spec.json",
    "title": "mlcc deployment spec",
    "description": "One served model for `mlcc render -f` and cdk.json `reference_deployments`: "
    "the fields of DeploymentSpec, in sections, plus the render context (account, profile). "
    "Generated from the dataclasses by tools/spec_schema.py: do not edit.",
}
CONTEXT_PROPERTIES: dict[str, Any] = {
    "$schema": {"type": "string", "description": "the schema of the file, for editors"},
    "account": {
        "type": "string",
        "pattern": "^[0-9]{12}$",
        "description": "render context: the AWS account (12 digits) the deployment's bucket "
        "names and ARNs are in. Default: the app's",
    },
    "profile": {
        "type": "string",
        "minLength": 1,
        "description": "render context: the app profile (stacks/buckets.json names). Default: "
        "the app's",
    },
}
"""Document keys that are no :class:`DeploymentSpec` field: the render context's."""


def attribute_docs(cls: type) -> dict[str, str]:
    """Each field of dataclass ``cls`` -> its attribute docstring (the string literal right
    after the field), whitespace collapsed."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for statement, after in itertools.pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[statement.target.id] = " ".join(after.value.value.split())
    return docs


def _hints(cls: type) -> dict[str, Any]:
    module = vars(inspect.getmodule(cls))
    return typing.get_type_hints(cls, globalns=dict(module))


def _type_schema(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        if len(args) == 1:
            return _type_schema(args[0])
        kinds = [_type_schema(a).get("type") for a in args]
        return {"type": [k for k in kinds if isinstance(k, str)]}
    if origin is typing.Literal:
        values = list(typing.get_args(hint))
        if len(values) == 1 and isinstance(values[0], str):
            return {"type": "string"}
        return {"enum": values}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if origin is tuple:
        return {"type": "array", "items": _type_schema(args[0])}
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        value = typing.get_args(hint)[1]
        return (
            {"type": "object"}
            if value is Any
            else {
                "type": "object",
                "additionalProperties": _type_schema(value),
            }
        )
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return class_schema(hint)
    raise TypeError(f"no JSON schema for the spec type {hint!r}")


def _default(item: dataclasses.Field[Any]) -> dict[str, Any]:
    value = item.default
    if value is dataclasses.MISSING or value is None or value == ():
        return {}
    return {"default": value}


def class_schema(cls: type) -> dict[str, Any]:
    """The schema of dataclass ``cls``: an object of its fields, each described by its
    attribute docstring, bounded by its metadata."""
    docs = attribute_docs(cls)
    hints = _hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in dataclasses.fields(cls):
        extra = dict(item.metadata.get(SCHEMA, {}))
        if item.metadata.get(REPLACE):
            found = extra
        else:
            found = {**_type_schema(hints[item.name]), **extra}
            if "enum" in found:
                found.pop("type", None)
            found.update(_default(item))
        if item.name in docs:
            found["description"] = docs[item.name]
        properties[item.name] = found
        if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            required.append(item.name)
    result: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if required:
        result["required"] = required
    result["properties"] = properties
    return result


def spec_schema() -> dict[str, Any]:
    """The whole document schema: :class:`DeploymentSpec`'s fields and the render context."""
    body = class_schema(DeploymentSpec)
    properties = {**CONTEXT_PROPERTIES, **body["properties"]}
    return {**SCHEMA_HEADER, **body, "properties": properties}


@dataclasses.dataclass(frozen=True)
class SpecFlag:
    """One spec field as the CLI sees it: its path (``compute.tensor_parallel_degree``), its
    flags (``("--tp",)``; none: file only), its help (the docstring's first sentence and its
    ``Default:`` sentence), its kind (``str``, ``int``, ``float``, ``bool``, ``list``,
    ``mapping``, ``int-or-auto``) and its choices (a ``Literal`` type's or an ``enum``)."""

    path: str
    flags: tuple[str, ...]
    help: str
    kind: str
    choices: tuple[str, ...] = ()


_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z`0-9])")


def _help(text: str) -> str:
    """The first sentence of a docstring, and its ``Default:`` sentence, as plain text."""
    sentences = [s.strip().rstrip(".") for s in _SENTENCE_END.split(text.replace("``", ""))]
    sentences = [s for s in sentences if s]
    if not sentences:
        return ""
    default = next((s for s in sentences[1:] if s.startswith("Default:")), None)
    return f"{sentences[0]} ({default[0].lower()}{default[1:]})" if default else sentences[0]


def _kind(hint: Any) -> tuple[str, tuple[str, ...]]:
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        if len(args) == 1:
            return _kind(args[0])
        return "int-or-auto", ()
    if origin is typing.Literal:
        return "str", tuple(str(a) for a in typing.get_args(hint))
    if origin is tuple:
        return "list", ()
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "mapping", ()
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return "object", ()
    return {bool: "bool", int: "int", float: "float"}.get(hint, "str"), ()


def spec_fields(cls: type = DeploymentSpec, prefix: str = "") -> Iterator[SpecFlag]:
    """Every leaf field of the spec (a section's fields, not the section), with its flags."""
    docs = attribute_docs(cls)
    hints = _hints(cls)
    for item in dataclasses.fields(cls):
        path = prefix + item.name
        hint = hints[item.name]
        if prefix == "" and isinstance(hint, type) and dataclasses.is_dataclass(hint):
            yield from spec_fields(hint, f"{path}.")
            continue
        kind, choices = _kind(hint)
        enum = item.metadata.get(SCHEMA, {}).get("enum")
        yield SpecFlag(
            path,
            tuple(item.metadata.get(CLI, ())),
            _help(docs.get(item.name, "")),
            kind,
            tuple(enum) if enum else choices,
        )


def flags_document(flags: Sequence[SpecFlag]) -> dict[str, Any]:
    """The content of ``data/spec-flags.json``: the flag table the CLI reads with :mod:`json`
    (no import of the dataclasses' docs, no source parsing at a command's start)."""
    return {
        "description": "Generated by tools/spec_schema.py from the DeploymentSpec dataclasses: "
        "do not edit. Each leaf field of a deployment spec: its path, its command-line flags "
        "(none: set it in a spec file), its help, its kind and its choices.",
        "fields": [
            {
                "path": f.path,
                "flags": list(f.flags),
                "help": f.help,
                "kind": f.kind,
                "choices": list(f.choices),
            }
            for f in flags
        ],
    }
