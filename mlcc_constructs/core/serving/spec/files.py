"""The declarative deployment spec (``mlcc render -f spec.yaml``, cdk.json entries, CLI flags).

A YAML or JSON mapping with the fields of :class:`DeploymentSpec` (snake_case) plus the render
context (``account``, ``region``, ``profile``), validated by ``data/deployment-spec.schema.json``.
Command-line flags are one more layer of the same mapping (:func:`spec_from_layers`): they pass
the same schema and semantic checks, so no flag is looser than its file field. Every problem
names where its field came from (the file or the flag) and the JSON pointer of the field.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.cache_routing import ROUTING_STRATEGIES, KvCache, Routing
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import (
    MODEL_BYTES_FIX,
    DeploymentSpec,
    SecretRef,
)
from mlcc_constructs.core.serving.spec.endpoint import Endpoint, SecretsManagerSecret
from mlcc_constructs.core.serving.spec.gateway import ClaimRule, Gateway, JwtAuth
from mlcc_constructs.core.support.documents import (
    STDIN,
    STDIN_NAME,
    load_document,
    parse_json,
    parse_yaml,
    read_text,
)
from mlcc_constructs.core.support.errors import (
    MlccError,
    Problem,
    fail,
    json_pointer,
    raise_if_any,
)
from mlcc_constructs.core.support.schema_check import iter_errors

SCHEMA_FILE = "deployment-spec.schema.json"
CONTEXT_FIELDS = ("account", "region", "profile")
_MERGED = (
    "env",
    "secret_env",
    "endpoint",
    "autoscaling",
    "routing",
    "kv_cache",
)  # merged key by key; other fields are replaced


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


@cache
def schema() -> Mapping[str, Any]:
    """The JSON schema of a deployment spec document."""
    document: Mapping[str, Any] = json.loads(data_path(SCHEMA_FILE).read_text(encoding="utf-8"))
    return document


_SCHEMA_FIX = "see mlcc_constructs/data/deployment-spec.schema.json for the fields"
# (top-level field, keyword) -> a fix more precise than the schema pointer
_FIXES = {
    ("env", "type"): "quote the value: env values are strings, and YAML reads yes/no/on/off as "
    "booleans and 0777 as the octal number 511",
    ("routing", "enum"): "use one of the inference operator's routing strategies: "
    + ", ".join(ROUTING_STRATEGIES),
    ("kv_cache", "enum"): "use l2: redis (with l2_url) or l2: tieredstorage, or drop l2",
    ("model_bytes", "type"): MODEL_BYTES_FIX,
    ("model_bytes", "minimum"): MODEL_BYTES_FIX,
}


# (top-level field, keyword) -> what is allowed, for fields whose problems name their value and
# the allowed values (the schema message alone names neither plainly)
_ALLOWED = {
    ("model_bytes", "type"): "a positive integer (bytes)",
    ("model_bytes", "minimum"): "a positive integer (bytes)",
}


def _detail(error: Any, document: Mapping[str, Any]) -> dict[str, Any]:
    head = str(error.path[0]) if error.path else ""
    allowed = _ALLOWED.get((head, error.validator))
    if allowed is None or len(error.path) != 1:
        return {}
    return {"value": document[head], "allowed": allowed}


def _fix(error: Any) -> str:
    head = str(error.path[0]) if error.path else ""
    return _FIXES.get((head, error.validator), _SCHEMA_FIX)


def _located(problem: Problem, sources: Mapping[str, str]) -> Problem:
    if problem.where or not problem.pointer.startswith("/"):
        return problem
    if problem.pointer == "/":  # the whole document
        return dataclasses.replace(problem, where=sources.get("/", ""))
    parts = problem.pointer.split("/")
    for length in (3, 2):  # /env/KEY is more precise than /env
        where = sources.get("/".join(parts[:length]))
        if where:
            return dataclasses.replace(problem, where=where)
    return problem


def merge_layers(
    layers: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[dict[str, Any], dict[str, str]]:
    """One mapping from ``(where, mapping)`` layers, later layers winning field by field (``env``
    ``secret_env`` and ``endpoint`` key by key), and the source of every field (JSON pointer →
    where)."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for where, layer in layers:
        sources.setdefault("/", where)  # a problem of the whole document: the first layer
        for key, value in layer.items():
            if key in _MERGED and isinstance(value, Mapping):
                current = merged.get(key)
                merged[key] = {**(current if isinstance(current, Mapping) else {}), **value}
                for name in value:
                    sources[json_pointer(key, name)] = where
            else:
                merged[key] = value
            sources[json_pointer(key)] = where
    return merged, sources


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
    errors = sorted(iter_errors(document, schema()), key=lambda e: [str(p) for p in e.path])
    if errors:
        raise MlccError(
            Problem(
                message=error.message,
                pointer=json_pointer(*error.path) or "/",
                fix=_fix(error),
                **_detail(error, document),
            )
            for error in errors
        )
    spec_fields = {f.name for f in fields(DeploymentSpec)}
    values: dict[str, Any] = {k: v for k, v in document.items() if k in spec_fields}
    values["env"] = dict(document.get("env", {}))
    values["secret_env"], problems = _secret_env(document.get("secret_env", {}))
    if "endpoint" in document:
        values["endpoint"] = _endpoint(document["endpoint"])
    if "autoscaling" in document:
        values["autoscaling"] = Autoscaling(**document["autoscaling"])
    if "routing" in document:
        values["routing"] = Routing(**document["routing"])
    if "kv_cache" in document:
        values["kv_cache"] = KvCache(**document["kv_cache"])
    if "allow_from" in document:
        values["allow_from"] = tuple(document["allow_from"])
    raise_if_any(problems)
    if "lora_adapters" in document:
        from mlcc_constructs.core.adapters.lora_rank import AdapterRank

        values["lora_adapters"] = tuple(AdapterRank(**a) for a in document["lora_adapters"])
    if "cache_backend" in document:
        from mlcc_constructs.core.cache.parse import parse_spec

        values["cache_backend"] = parse_spec(document["cache_backend"], path="/cache_backend")
    context = RenderContext(**{k: document.get(k) for k in CONTEXT_FIELDS})
    return SpecFile(spec=DeploymentSpec(**values), context=context)


def _endpoint(document: Mapping[str, Any]) -> Endpoint:
    """``endpoint`` with its nested ``gateway`` (schema-checked already)."""
    fields_ = dict(document)
    if "gateway" in fields_:
        jwt = dict(fields_["gateway"]["jwt"])
        jwt["audiences"] = tuple(jwt.get("audiences", ()))
        jwt["required_claims"] = tuple(
            ClaimRule(**{**claim, "values": tuple(claim["values"])})
            for claim in jwt.get("required_claims", ())
        )
        fields_["gateway"] = Gateway(jwt=JwtAuth(**jwt))
    return Endpoint(**fields_)


_SECRET_FORMS = ({"name", "key"}, {"secrets_manager"}, {"secrets_manager", "json_key"})


def _secret_env(
    document: Mapping[str, Mapping[str, str]],
) -> tuple[dict[str, SecretRef | SecretsManagerSecret], list[Problem]]:
    """``secret_env`` entries: ``{name, key}`` (a Kubernetes Secret) or ``{secrets_manager,
    json_key?}`` (a Secrets Manager secret); anything else is a problem naming the entry."""
    refs: dict[str, SecretRef | SecretsManagerSecret] = {}
    problems = []
    for variable, entry in document.items():
        given = set(entry)
        if given not in _SECRET_FORMS:
            problems.append(
                Problem(
                    message="a secret_env entry is a Kubernetes Secret's key or a Secrets "
                    "Manager secret",
                    pointer=json_pointer("secret_env", variable),
                    value=sorted(given),
                    allowed="{name, key} or {secrets_manager[, json_key]}",
                    fix=f"{variable}: {{secrets_manager: team/secret}} (synced for you) or "
                    f"{variable}: {{name: <Secret>, key: <key>}}",
                )
            )
        elif "name" in entry:
            refs[variable] = SecretRef(name=entry["name"], key=entry["key"])
        else:
            refs[variable] = SecretsManagerSecret(
                secret=entry["secrets_manager"], json_key=entry.get("json_key")
            )
    return refs, problems


def _not_a_mapping(document: object, where: str) -> MlccError:
    return fail(
        "a spec file holds one mapping of deployment fields",
        where=where,
        value=type(document).__name__,
        fix="write 'engine: ...', 'model: ...', 'instance_type: ...' at the top level",
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
                fix="write one mapping ('engine: ...', 'model: ...', 'instance_type: ...') or "
                "a list of them",
            )
        )
    if bad:
        raise MlccError(problem for error in bad for problem in error.problems)
    return labelled


def load_spec_file(path: str | Path) -> SpecFile:
    """Read and validate a ``.yaml``/``.yml``/``.json`` spec file."""
    return spec_from_layers([(str(path), load_spec_document(path))])
