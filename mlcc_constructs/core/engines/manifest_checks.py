"""The rules an engine manifest must satisfy: the JSON schema (``engines/manifest.schema.json``,
the shape) with readable messages for the common mistakes, then the rules a schema cannot
express (companions exist, ``allowed`` holds the ``default``, suffixes unique, a suffix is
either a flag or the engine's own env variable, cache directories distinct, no name the wrapper
or the library owns: :mod:`~mlcc_constructs.core.engines.name_checks`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.engines.cache_dirs import cache_dir_problems
from mlcc_constructs.core.engines.metrics import metrics_problems
from mlcc_constructs.core.engines.name_checks import name_problems
from mlcc_constructs.core.support.errors import Problem, json_pointer
from mlcc_constructs.core.support.schema_verdict import Verdict, verdict


def manifest_problems(document: Any, where: str) -> list[Problem]:
    """Every problem of the manifest ``document`` read from ``where``: the schema's first, the
    semantic rules only for a document of the right shape."""
    return _problems_from_schema(document, where) or _semantic_problems(document, where)


def _problems_from_schema(document: Any, where: str) -> list[Problem]:
    if _schema_verdict()(document):  # the common case, without importing jsonschema
        return []
    problems = []
    for error in sorted(_schema_validator().iter_errors(document), key=_error_order):
        path = list(error.absolute_path)
        pointer = json_pointer(*path) or "/"
        if error.validator == "maxProperties" and path == ["capability_map"]:
            problems.append(
                Problem(
                    message="entrypoint 'image' (Model-B) must declare an empty capability_map: "
                    "the image owns its env contract, so MLCC injects nothing",
                    where=where,
                    pointer=pointer,
                    value=sorted(error.instance),
                    fix='set "capability_map": {} or use "entrypoint": "wrapper"',
                )
            )
        elif error.validator == "not" and path[:1] == ["capability_map"]:
            problems.append(
                Problem(
                    message="declares both 'requires' and 'requires_any_of'",
                    where=where,
                    pointer=pointer,
                    fix="'requires' is sugar for one requires_any_of group: keep only one form",
                )
            )
        elif error.validator == "pattern" and path == ["env_var_prefix"]:
            problems.append(
                Problem(
                    message="env_var_prefix must be upper-case and end with '_'",
                    where=where,
                    pointer=pointer,
                    value=error.instance,
                    allowed=r"^[A-Z][A-Z0-9_]*_$, e.g. MYENGINE_",
                )
            )
        elif error.validator == "enum":
            problems.append(
                Problem(
                    message="value not allowed",
                    where=where,
                    pointer=pointer,
                    value=error.instance,
                    allowed=", ".join(map(str, error.validator_value)),
                )
            )
        else:
            problems.append(Problem(message=error.message, where=where, pointer=pointer))
    return problems


def _error_order(error: Any) -> tuple[list[str], str]:
    return [str(p) for p in error.absolute_path], str(error.validator)


@cache
def _schema() -> dict[str, Any]:
    text = shipped_path("engines/manifest.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _schema_verdict() -> Verdict:
    """jsonschema-rs's verdict on a manifest: jsonschema words a manifest's problems only when it
    has some (it costs more to import than a whole ``mlcc validate``)."""
    return verdict(_schema())


@cache
def _schema_validator() -> Any:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(_schema())
    return jsonschema.Draft202012Validator(_schema())


def _semantic_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """Rules the schema cannot express."""
    problems: list[Problem] = []
    capabilities: Mapping[str, Any] = document["capability_map"]
    seen_suffix: dict[str, str] = {}
    for name, cap in capabilities.items():
        base = ("capability_map", name)
        owner = seen_suffix.setdefault(cap["suffix"], name)
        if owner != name:
            problems.append(
                Problem(
                    message=f"suffix also used by capability {owner!r}",
                    where=where,
                    pointer=json_pointer(*base, "suffix"),
                    value=cap["suffix"],
                    fix="give every capability its own env suffix",
                )
            )
        groups = [cap["requires"]] if "requires" in cap else cap.get("requires_any_of", [])
        form = "requires" if "requires" in cap else "requires_any_of"
        for g, group in enumerate(groups):
            for c, companion in enumerate(group):
                pointer = (
                    json_pointer(*base, form, c)
                    if form == "requires"
                    else json_pointer(*base, form, g, c)
                )
                if companion == name:
                    problems.append(
                        Problem(
                            message="a capability cannot require itself",
                            where=where,
                            pointer=pointer,
                            value=companion,
                        )
                    )
                elif companion not in capabilities:
                    problems.append(
                        Problem(
                            message="companion is not declared in this capability_map",
                            where=where,
                            pointer=pointer,
                            value=companion,
                            allowed=", ".join(capabilities) or "(none)",
                            fix=f"declare capability_map.{companion} or remove it from the group",
                        )
                    )
        if "allowed" in cap and "default" in cap:
            allowed = [str(v) for v in cap["allowed"]]
            if str(cap["default"]) not in allowed:
                problems.append(
                    Problem(
                        message="default is not one of the allowed values",
                        where=where,
                        pointer=json_pointer(*base, "default"),
                        value=cap["default"],
                        allowed=", ".join(allowed),
                    )
                )
        if "default" in cap and str(cap["default"]).strip().lower() in _SENTINELS:
            problems.append(
                Problem(
                    message="a default must be a concrete value (absent is safer than empty)",
                    where=where,
                    pointer=json_pointer(*base, "default"),
                    value=cap["default"],
                    fix="remove the default",
                )
            )
        if cap["value_type"] == "boolean" and ("default" in cap or "allowed" in cap):
            problems.append(
                Problem(
                    message="a boolean capability is presence-only: no default or allowed values",
                    where=where,
                    pointer=json_pointer(*base),
                    fix="remove default/allowed, or make it 'valued'",
                )
            )
    if document["entrypoint"] == "wrapper" and "model" not in capabilities:
        problems.append(
            Problem(
                message="a wrapper engine must declare a 'model' capability: the wrapper passes "
                "the model to the engine through it",
                where=where,
                pointer="/capability_map",
                value=sorted(capabilities),
                fix='add "model": {"suffix": "MODEL", "value_type": "valued"} (the env suffix '
                "the engine's model flag is named after)",
            )
        )
    if document["entrypoint"] == "wrapper" and "hub_model_env" in document:
        problems.append(
            Problem(
                message="hub_model_env is for image engines: a wrapper engine is told its model "
                "through its 'model' capability",
                where=where,
                pointer="/hub_model_env",
                value=document["hub_model_env"],
                fix="remove hub_model_env",
            )
        )
    engine_env = set(document.get("engine_env", ()))
    flagged = [
        (json_pointer("list_values", "flags", suffix), suffix)
        for suffix in document.get("list_values", {}).get("flags", {})
    ] + [
        (json_pointer("negation", "except", index), suffix)
        for index, suffix in enumerate(document.get("negation", {}).get("except", ()))
    ]
    for pointer, suffix in flagged:
        if suffix in engine_env:
            problems.append(
                Problem(
                    message="names a flag, but the suffix is listed in engine_env (the engine's "
                    "own env settings, never flags)",
                    where=where,
                    pointer=pointer,
                    value=suffix,
                    fix="remove it here or from engine_env",
                )
            )
    for name, cap in capabilities.items():
        if cap["suffix"] in engine_env:
            problems.append(
                Problem(
                    message="a capability's suffix is also listed in engine_env: it cannot be "
                    "both a flag and the engine's own env setting",
                    where=where,
                    pointer=json_pointer("capability_map", name, "suffix"),
                    value=cap["suffix"],
                    fix="remove it from engine_env or rename the capability's suffix",
                )
            )
    problems += name_problems(document, where)
    problems += metrics_problems(document, where)
    problems += cache_dir_problems(document, where)
    problems += _stream_problems(document, where)
    return problems


def _stream_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """``model_load.stream``: its flag reaches the engine through the wrapper, as the env key
    ``<PREFIX><FLAG_NAME>`` in the engine's flag style, which no capability or engine_env may
    own."""
    stream = (document.get("model_load") or {}).get("stream")
    if stream is None:
        return []
    pointer = "/model_load/stream/flag"
    flag = stream["flag"]
    if document["entrypoint"] != "wrapper":
        return [
            Problem(
                message="model_load.stream needs entrypoint 'wrapper': the library passes its "
                "flag and the model URI through the wrapper",
                where=where,
                pointer="/model_load/stream",
                fix="remove model_load.stream, or make the engine a wrapper engine",
            )
        ]
    style = document["launch"].get("flag_style", "kebab")
    wrong = "_" if style == "kebab" else "-"
    suffix = flag.lstrip("-").upper().replace("-", "_")
    owners = {cap["suffix"] for cap in document["capability_map"].values()}
    owners |= set(document.get("engine_env", ()))
    if wrong in flag.lstrip("-"):
        return [
            Problem(
                message=f"the flag is not in the engine's flag_style ({style})",
                where=where,
                pointer=pointer,
                value=flag,
                fix="spell it as the wrapper emits it: --"
                + flag.lstrip("-").replace(wrong, "-" if wrong == "_" else "_"),
            )
        ]
    if suffix in owners:
        return [
            Problem(
                message=f"the flag's env suffix {suffix} is a capability's or engine_env's: the "
                "library sets it for streaming",
                where=where,
                pointer=pointer,
                value=flag,
                fix=f"remove {suffix} from capability_map / engine_env",
            )
        ]
    return []


_SENTINELS = frozenset({"", "none", "null", "nil", "undefined"})
