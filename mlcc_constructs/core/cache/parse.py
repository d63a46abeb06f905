"""CacheBackend objects from dicts and YAML files, parsed and admitted.

Field reading is the generic :func:`~mlcc_constructs.core.cache.fields.read_crd` over the
spec dataclasses; every problem is named by its JSON pointer (``/spec/lmCache/chunkSizeTokens``).
Admission problems that restate a parse problem (same field or one inside it) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from mlcc_constructs.core.cache.admission import admission_problems, remember
from mlcc_constructs.core.cache.fields import read_crd
from mlcc_constructs.core.cache.spec import (
    API_VERSION,
    KIND,
    CacheBackendDocument,
    CacheBackendSpec,
)
from mlcc_constructs.core.support.documents import parse_yaml, read_text
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any
from mlcc_constructs.core.support.kube_names import MAX_SUBDOMAIN, is_subdomain


def _suggest(name: str) -> str:
    """``name`` as a DNS-1123 subdomain (lower case, other characters as ``-``), or ``""``."""
    return re.sub(r"[^-a-z0-9.]+", "-", name.lower()).strip("-.")[:MAX_SUBDOMAIN].strip("-.")


def _merge(parse: list[Problem], admission: list[Problem]) -> list[Problem]:
    """Parse problems plus the admission problems that do not restate one of them."""

    def related(a: str, b: str) -> bool:
        return a == b or a.startswith(b + "/") or b.startswith(a + "/")

    return parse + [p for p in admission if not any(related(p.pointer, q.pointer) for q in parse)]


def _parse_and_admit(
    data: object, *, where: str, path: str, problems: list[Problem]
) -> CacheBackendSpec:
    """Raise with ``problems`` plus every problem of ``data``; the admitted spec otherwise."""
    spec = read_crd(CacheBackendSpec, data, pointer=path, where=where, problems=problems)
    if spec is not None:
        problems = _merge(problems, admission_problems(spec, where=where, path=path))
    raise_if_any(problems)
    assert spec is not None
    remember(spec)  # admitted: later admit() calls reuse this
    return spec


def parse_spec(data: object, *, where: str = "", path: str = "/spec") -> CacheBackendSpec:
    """Parse and admit a ``spec`` mapping whose JSON pointer is ``path``
    (:meth:`CacheBackendSpec.from_dict`, then admission); raises :class:`MlccError` with every
    problem."""
    return _parse_and_admit(data, where=where, path=path, problems=[])


def parse_cache_backend(document: object, *, where: str = "") -> CacheBackendDocument:
    """Parse and admit one CacheBackend object (apiVersion, kind, metadata, spec).

    Raises :class:`MlccError` holding every problem of the object.
    """
    problems: list[Problem] = []
    if not isinstance(document, Mapping):
        raise MlccError(Problem(message="not a Kubernetes object", where=where, value=document))
    for key, want in (("apiVersion", API_VERSION), ("kind", KIND)):
        if document.get(key) != want:
            problems.append(
                Problem(
                    message=f"{key} must be {want}",
                    where=where,
                    pointer=f"/{key}",
                    value=document.get(key),
                )
            )
    metadata = document.get("metadata")
    name = namespace = None
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        problems.append(
            Problem(
                message="required field is missing",
                where=where,
                pointer="/metadata/name",
                fix="name the CacheBackend",
            )
        )
    else:
        name = metadata["name"]
        namespace = metadata.get("namespace")
        if not is_subdomain(name):
            problems.append(
                Problem(
                    message="not a Kubernetes object name (DNS-1123 subdomain)",
                    where=where,
                    pointer="/metadata/name",
                    value=name,
                    allowed=f"lower-case letters, digits, '-' and '.', starting and ending "
                    f"with a letter or digit, at most {MAX_SUBDOMAIN} characters",
                    fix="e.g. " + (_suggest(name) or "lmcache"),
                )
            )
    if "spec" not in document:
        problems.append(
            Problem(
                message="required field is missing",
                where=where,
                pointer="/spec",
                fix="add spec.runtime and spec.lmCache",
            )
        )
        raise_if_any(problems)
    spec = _parse_and_admit(document["spec"], where=where, path="/spec", problems=problems)
    assert name is not None
    return CacheBackendDocument(name=name, namespace=namespace, spec=spec)


def load_cache_backends(path: str | Path) -> list[CacheBackendDocument]:
    """Every CacheBackend in a (multi-document) YAML file, parsed and admitted.

    Problems of all documents are raised together; other kinds in the file are skipped.
    """
    where = str(path)
    text = read_text(path, what="CacheBackend file")
    documents = [d for d in parse_yaml(text, where=where) if d]
    found: list[CacheBackendDocument] = []
    problems: list[Problem] = []
    for index, document in enumerate(documents):
        if isinstance(document, Mapping) and document.get("kind") != KIND:
            continue
        label = where if len(documents) == 1 else f"{where}#{index}"
        try:
            found.append(parse_cache_backend(document, where=label))
        except MlccError as error:
            problems.extend(error.problems)
    raise_if_any(problems)
    if not found:
        raise MlccError(
            Problem(
                message=f"no {KIND} object in the file",
                where=where,
                fix=f"add a document with apiVersion {API_VERSION} and kind {KIND}",
            )
        )
    return found


__all__ = ("load_cache_backends", "parse_cache_backend", "parse_spec")
