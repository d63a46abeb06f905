"""The sections of a deployment spec given as plain mappings (a file's, or a dict passed to
``DeploymentSpec``) -> their dataclasses, validated by the generated
``data/deployment-spec.schema.json`` first; every problem at once, each naming the field's JSON
pointer (``/compute/instance_type``). Below :mod:`.deployment` (which calls it for a dict
section) and :mod:`.build` (a whole document)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.cache_routing import ROUTING_STRATEGIES, KvCache, Routing
from mlcc_constructs.core.serving.spec.endpoint import Endpoint, SecretsManagerSecret
from mlcc_constructs.core.serving.spec.gateway import ClaimRule, Gateway, JwtAuth
from mlcc_constructs.core.serving.spec.secret_ref import SecretRef
from mlcc_constructs.core.serving.spec.sections import (
    MODEL_BYTES_FIX,
    CacheSpec,
    ComputeSpec,
    EngineSpec,
    LoraSpec,
    ModelSpec,
    RolloutSpec,
    ScalingSpec,
)
from mlcc_constructs.core.support.errors import Problem, json_pointer, raise_if_any
from mlcc_constructs.core.support.schema_check import iter_errors

SCHEMA_FILE = "deployment-spec.schema.json"


@cache
def schema() -> Mapping[str, Any]:
    """The JSON schema of a deployment spec document (generated from the dataclasses by
    ``tools/spec_schema.py``)."""
    document: Mapping[str, Any] = json.loads(data_path(SCHEMA_FILE).read_text(encoding="utf-8"))
    return document


@cache
def _sections_schema() -> Mapping[str, Any]:
    """The document schema with nothing required: a mapping of some sections."""
    return {**schema(), "required": []}


_SCHEMA_FIX = "see mlcc_constructs/data/deployment-spec.schema.json for the fields"
# (field path, keyword) -> a fix more precise than the schema pointer
_FIXES: dict[tuple[tuple[str, ...], str], str] = {
    (("engine", "env"), "type"): "quote the value: env values are strings, and YAML reads "
    "yes/no/on/off as booleans and 0777 as the octal number 511",
    (("cache", "routing"), "enum"): "use one of the inference operator's routing strategies: "
    + ", ".join(ROUTING_STRATEGIES),
    (("cache", "kv_cache"), "enum"): "use l2: redis (with l2_url) or l2: tieredstorage, or drop l2",
    (("model", "bytes"), "type"): MODEL_BYTES_FIX,
    (("model", "bytes"), "minimum"): MODEL_BYTES_FIX,
}
# (field path, keyword) -> what is allowed, for fields whose problems name their value and the
# allowed values (the schema message alone names neither plainly)
_ALLOWED: dict[tuple[tuple[str, ...], str], str] = {
    (("model", "bytes"), "type"): "a positive integer (bytes)",
    (("model", "bytes"), "minimum"): "a positive integer (bytes)",
}


def _head(error: Any) -> tuple[str, ...]:
    return tuple(str(p) for p in error.path[:2])


def _detail(error: Any, document: Mapping[str, Any]) -> dict[str, Any]:
    allowed = _ALLOWED.get((_head(error), error.validator))
    if allowed is None or len(error.path) != 2:
        return {}
    return {"value": document[error.path[0]][error.path[1]], "allowed": allowed}


def schema_problems(document: Mapping[str, Any], *, sections_only: bool = False) -> list[Problem]:
    """Every violation of the spec schema by ``document`` (``sections_only``: a mapping of some
    sections, nothing required), each with its pointer and fix."""
    errors = sorted(
        iter_errors(document, _sections_schema() if sections_only else schema()),
        key=lambda e: [str(p) for p in e.path],
    )
    return [
        Problem(
            message=error.message,
            pointer=json_pointer(*error.path) or "/",
            fix=_FIXES.get((_head(error), error.validator), _SCHEMA_FIX),
            **_detail(error, document),
        )
        for error in errors
    ]


def build_sections(
    sections: Mapping[str, Mapping[str, Any]], *, checked: bool = False
) -> dict[str, Any]:
    """Each section given as a mapping (``{"compute": {"instance_type": ...}}``) as its
    dataclass, validated by the schema first (unless ``checked``: the caller validated the
    whole document)."""
    if not checked:
        raise_if_any(schema_problems(sections, sections_only=True))
    built: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, value in sections.items():
        made, found = _BUILDERS[name](value)
        built[name] = made
        problems += found
    raise_if_any(problems)
    return built


_Built = tuple[Any, list[Problem]]


def _engine(document: Mapping[str, Any]) -> _Built:
    values = dict(document)
    values["env"] = dict(document.get("env", {}))
    values["secret_env"], problems = _secret_env(document.get("secret_env", {}))
    return (None if problems else EngineSpec(**values)), problems


def _lora(document: Mapping[str, Any]) -> _Built:
    from mlcc_constructs.core.adapters.lora_rank import AdapterRank

    values = dict(document)
    if "adapters" in values:
        values["adapters"] = tuple(AdapterRank(**a) for a in values["adapters"])
    return LoraSpec(**values), []


def _endpoint(document: Mapping[str, Any]) -> _Built:
    """``endpoint`` with its nested ``gateway`` (schema-checked already)."""
    values = dict(document)
    if "gateway" in values:
        jwt = dict(values["gateway"]["jwt"])
        jwt["audiences"] = tuple(jwt.get("audiences", ()))
        jwt["required_claims"] = tuple(
            ClaimRule(**{**claim, "values": tuple(claim["values"])})
            for claim in jwt.get("required_claims", ())
        )
        values["gateway"] = Gateway(jwt=JwtAuth(**jwt))
    return Endpoint(**values), []


def _scaling(document: Mapping[str, Any]) -> _Built:
    values = dict(document)
    if "autoscaling" in values:
        values["autoscaling"] = Autoscaling(**values["autoscaling"])
    return ScalingSpec(**values), []


def _cache(document: Mapping[str, Any]) -> _Built:
    values = dict(document)
    if "backend" in values:
        from mlcc_constructs.core.cache.parse import parse_spec

        values["backend"] = parse_spec(values["backend"], path="/cache/backend")
    if "kv_cache" in values:
        values["kv_cache"] = KvCache(**values["kv_cache"])
    if "routing" in values:
        values["routing"] = Routing(**values["routing"])
    return CacheSpec(**values), []


def _plain(cls: Callable[..., Any]) -> Callable[[Mapping[str, Any]], _Built]:
    return lambda document: (cls(**document), [])


_BUILDERS: dict[str, Callable[[Mapping[str, Any]], _Built]] = {
    "engine": _engine,
    "model": _plain(ModelSpec),
    "compute": _plain(ComputeSpec),
    "lora": _lora,
    "endpoint": _endpoint,
    "scaling": _scaling,
    "rollout": _plain(RolloutSpec),
    "cache": _cache,
}

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
                    pointer=json_pointer("engine", "secret_env", variable),
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
