"""The declarative deployment spec (``mlcc render -f spec.yaml``, cdk.json entries, CLI flags).

A YAML or JSON mapping with the fields of :class:`DeploymentSpec` (snake_case, in sections:
``engine``, ``model``, ``compute``...) plus the render context (``account``, ``region``,
``profile``), validated by ``data/deployment-spec.schema.json`` (:mod:`.build`).
Command-line flags are one more layer of the same mapping (:func:`spec_from_layers`): they pass
the same schema and semantic checks, so no flag is looser than its file field. Every problem
names where its field came from (the file or the flag) and the JSON pointer of the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.serving.spec.build import (
    CONTEXT_FIELDS,
    SCHEMA_FILE,
    build_document,
    schema,
)
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import SECTIONS, DeploymentSpec
from mlcc_constructs.core.support.documents import (
    STDIN,
    STDIN_NAME,
    load_document,
    parse_json,
    parse_yaml,
    read_text,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer

__all__ = [
    "CONTEXT_FIELDS",
    "SCHEMA_FILE",
    "SpecFile",
    "load_spec_document",
    "load_spec_documents",
    "load_spec_file",
    "merge_layers",
    "schema",
    "spec_from_layers",
    "spec_from_mapping",
]

_MERGED_DEEPER = ("/engine/env", "/engine/secret_env")
"""Mappings inside a section merged key by key too; every other value inside a section (the
model's ``config``, the cache ``backend``, ``scaling.autoscaling``...) is replaced whole."""


@dataclass(frozen=True, kw_only=True)
class SpecFile:
    """A loaded spec: the deployment, the render context it carries, and where each field came
    from (JSON pointer → file or flag), so later problems can name their source; ``where``: the
    document it was read from (``FILE``, ``FILE#1`` for an entry of a list, default ``""``)."""

    spec: DeploymentSpec
    context: RenderContext
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    where: str = ""

    def locate(self, error: MlccError) -> MlccError:
        """``error`` with each problem's ``where`` set to the source of its field, when the
        problem names a field of this spec and no place of its own."""
        return MlccError(_located(p, self.sources) for p in error.problems)


def _located(problem: Problem, sources: Mapping[str, str]) -> Problem:
    if problem.where or not problem.pointer.startswith("/"):
        return problem
    if problem.pointer == "/":  # the whole document
        return dataclasses.replace(problem, where=sources.get("/", ""))
    parts = problem.pointer.split("/")
    for length in range(len(parts), 1, -1):  # /engine/env/KEY is more precise than /engine
        where = sources.get("/".join(parts[:length]))
        if where:
            return dataclasses.replace(problem, where=where)
    return problem


def merge_layers(
    layers: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[dict[str, Any], dict[str, str]]:
    """One mapping from ``(where, mapping)`` layers, later layers winning field by field: a
    section (``compute``...) and ``engine.env`` / ``engine.secret_env`` key by key, any other
    value whole; and the source of every field (JSON pointer -> where)."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for where, layer in layers:
        sources.setdefault("/", where)  # a problem of the whole document: the first layer
        _merge(merged, layer, "", where, sources)
    return merged, sources


def _merge(
    merged: dict[str, Any],
    layer: Mapping[str, Any],
    pointer: str,
    where: str,
    sources: dict[str, str],
) -> None:
    for key, value in layer.items():
        here = pointer + json_pointer(key)
        deeper = (pointer == "" and key in SECTIONS) or here in _MERGED_DEEPER
        current = merged.get(key)
        if deeper and isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = dict(current)
            _merge(merged[key], value, here, where, sources)
        elif deeper and isinstance(value, Mapping):
            merged[key] = {}
            _merge(merged[key], value, here, where, sources)
        else:
            merged[key] = value
        sources[here] = where


def spec_from_layers(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> SpecFile:
    """Merge ``layers`` (:func:`merge_layers`), validate once, build the spec; every problem
    names the layer its field came from."""
    document, sources = merge_layers(layers)
    try:
        loaded = _build(document)
    except MlccError as error:
        raise MlccError(_located(p, sources) for p in error.problems) from None
    return dataclasses.replace(loaded, sources=MappingProxyType(sources))


def spec_from_mapping(document: Any, *, where: str) -> SpecFile:
    """Validate ``document`` (parsed YAML/JSON) and build the spec; all problems at once."""
    if not isinstance(document, Mapping):
        raise _not_a_mapping(document, where)
    return spec_from_layers([(where, document)])


def _build(document: Mapping[str, Any]) -> SpecFile:
    spec, context = build_document(document)
    return SpecFile(spec=spec, context=context)


def _not_a_mapping(document: object, where: str) -> MlccError:
    return fail(
        "a spec file holds one mapping of deployment fields",
        where=where,
        value=type(document).__name__,
        fix="write 'engine: {name: ...}', 'model: {uri: ...}', 'compute: {instance_type: ...}' "
        "at the top level",
    )


def load_spec_document(path: str | Path) -> dict[str, Any]:
    """Read a ``.yaml``/``.yml``/``.json`` spec file as a mapping (not yet validated)."""
    where = str(path)
    document = load_document(path, what="spec file")
    if not isinstance(document, dict):
        raise _not_a_mapping(document, where)
    return document


def load_spec_documents(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """The deployments of a spec file, each with where it is: one mapping (``FILE``), a list
    of mappings or several YAML documents (``FILE#0``, ``FILE#1``...). The path ``-`` reads
    standard input (YAML, which JSON is a form of), named ``<stdin>``."""
    where = STDIN_NAME if str(path) == STDIN else str(path)
    text = read_text(path, what="spec file")
    if where.endswith(".json"):  # an empty JSON file holds no deployment, as in YAML
        documents = [parse_json(text, where=where)] if text.strip() else []
    else:
        documents = [d for d in parse_yaml(text, where=where) if d is not None]
    if len(documents) == 1 and isinstance(documents[0], list):
        documents = documents[0]
    if len(documents) == 1:
        labelled = [(where, documents[0])]
    else:
        labelled = [(f"{where}#{index}", document) for index, document in enumerate(documents)]
    bad = [
        _not_a_mapping(document, label)
        for label, document in labelled
        if not isinstance(document, dict)
    ]
    if not labelled:
        bad.append(
            fail(
                "the spec file holds no deployment (it is empty or an empty list)",
                where=where,
                fix="write one mapping ('engine: {name: ...}', 'model: {uri: ...}', "
                "'compute: {instance_type: ...}') or a list of them",
            )
        )
    if bad:
        raise MlccError(problem for error in bad for problem in error.problems)
    return labelled


def load_spec_file(path: str | Path) -> SpecFile:
    """Read and validate a ``.yaml``/``.yml``/``.json`` spec file."""
    return spec_from_layers([(str(path), load_spec_document(path))])
