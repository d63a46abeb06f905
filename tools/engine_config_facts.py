"""What an engine's config classes say about the values of the flags built from them, for
``engine_parser_facts.py`` (which runs this in the same throwaway process, engine code
imported with its third-party modules stubbed).

A flag's ``bounds`` are the numeric constraints (``gt``/``ge``/``lt``/``le``) its engine
declares on the config class field the flag is built from (vLLM's ``get_kwargs(CacheConfig)``
calls are watched; a pydantic ``Field(gt=0, le=1)``), with that class and field as
``source``; each is recorded only when the class's own validator refuses a value just past
it, and a field name bounded differently by two classes is left out. A flag's ``json`` is the
JSON its value must be: an object with only the keys of the config class the engine's parser
validates it against (each key confirmed by that class's validator), else the JSON kind of the
config class field, when the class's validator refuses the other kind. Not part of the
package.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from typing import Any, Union

BOUNDS = ("gt", "ge", "lt", "le")
"""The numeric constraints recorded (pydantic ``Field(gt=...)`` / annotated_types ``Gt``...)."""
CONFIG_CLASSES: list[type] = []
"""The config classes the engine built its flags from (``_watch``), in the order it read them."""


def watch(module: Any, name: str) -> None:
    """Note every class ``module.name`` (the engine's kwargs-from-config-class function) is
    called with, so a flag can be traced to the config class field it was built from."""
    real = getattr(module, name)

    def watched(cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls not in CONFIG_CLASSES:
            CONFIG_CLASSES.append(cls)
        return real(cls, *args, **kwargs)

    setattr(module, name, watched)


def _constraints(cls: type, field: str) -> dict[str, Any]:
    """The numeric bounds ``cls`` declares on ``field``: a pydantic dataclass's Field
    constraints, else ``Annotated[..., Gt(0)]`` metadata."""
    import typing

    pydantic_fields = getattr(cls, "__pydantic_fields__", None)
    if pydantic_fields is not None and field in pydantic_fields:
        metadata = list(pydantic_fields[field].metadata)
    else:
        try:
            hint = typing.get_type_hints(cls, include_extras=True).get(field)
        except Exception:  # an annotation naming a stand-in that does not evaluate
            return {}
        metadata = list(getattr(hint, "__metadata__", ()))
    found = {}
    for item in metadata:
        for bound in BOUNDS:
            value = getattr(item, bound, None)
            if isinstance(value, int | float) and not isinstance(value, bool):
                found[bound] = value
    return found


def _violations(found: dict[str, Any]) -> list[Any]:
    """A value just outside each bound: what the class's own validator must refuse."""
    out = []
    for bound, edge in found.items():
        step = 1 if isinstance(edge, int) else 0.5
        out.append({"gt": edge, "ge": edge - step, "lt": edge, "le": edge + step}[bound])
    return out


def _refuses(cls: type, field: str, value: Any) -> bool:
    """Whether the pydantic validator of ``cls`` refuses ``value`` for ``field`` (and not only
    for the other fields left out)."""
    validator = getattr(cls, "__pydantic_validator__", None)
    if validator is None:
        return False
    from pydantic import ValidationError

    try:
        validator.validate_python({field: value})
    except ValidationError as error:
        return any(e["loc"][:1] == (field,) for e in error.errors())
    except Exception:  # a __post_init__ that needs what is stubbed: not a field check
        return False
    return False


def bounds(dest: str) -> dict[str, Any] | None:
    """The bounds of the config class field flag ``dest`` was built from, with the class and
    field; each bound confirmed by the class's own validator refusing a value just outside it.
    ``None`` when no class read for the parser bounds a field of that name."""
    found: list[tuple[type, dict[str, Any]]] = []
    for cls in CONFIG_CLASSES:
        names = getattr(cls, "__dataclass_fields__", {})
        if dest in names:
            constraints = _constraints(cls, dest)
            if constraints:
                found.append((cls, constraints))
    if not found:
        return None
    if len({json.dumps(c, sort_keys=True) for _, c in found}) > 1:
        where = ", ".join(c.__qualname__ for c, _ in found)
        print(f"{dest}: different bounds in {where}: not recorded", file=sys.stderr)
        return None
    cls, constraints = found[0]
    refused = all(_refuses(cls, dest, v) for v in _violations(constraints))
    if not refused:
        print(f"{dest}: {cls.__qualname__} does not refuse past {constraints}", file=sys.stderr)
        return None
    return {**constraints, "source": f"{_where(cls)}.{dest}"}


def _parser_type(func: Any) -> Any:
    """The innermost ``type`` function through vLLM's ``optional_type`` closures."""
    seen = func
    while getattr(seen, "__name__", "") in ("_optional_type", "_parse_type"):
        inner = [c.cell_contents for c in (seen.__closure__ or ()) if callable(c.cell_contents)]
        if not inner:
            break
        seen = inner[0]
    return seen


def _parse_fails(func: Any, text: str) -> bool:
    try:
        func(text)
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return True
    return False


def json_shape(action: argparse.Action) -> dict[str, Any] | None:
    """The JSON a flag's value must be, where the engine's own code says so: a config class
    its parser validates the value against (vLLM's ``parse_dataclass``: an object with only
    the class's keys, when its parser refuses another key), else the JSON kind (object or
    array) of the config class field it is built from, when that class's validator refuses
    the other kind. ``None`` when neither holds (or the type is not JSON)."""
    import dataclasses
    import typing

    func = _parser_type(action.type)
    name = getattr(func, "__name__", "")
    if name == "parse_dataclass":
        cls = (func.__defaults__ or (None,))[0]
        if not dataclasses.is_dataclass(cls) or _parse_fails(func, "{}"):
            return None
        if not _parse_fails(func, '{"mlcc_not_a_key": 1}'):
            return {"kind": "object", "source": _where(cls)}
        keys = sorted(k for k in _input_keys(cls) if not _extra_key(cls, k))
        return {"kind": "object", "keys": keys, "source": _where(cls)}
    if name != "loads":
        return None
    for cls in CONFIG_CLASSES:
        if action.dest not in getattr(cls, "__dataclass_fields__", {}):
            continue
        hint = typing.get_type_hints(cls).get(action.dest)
        members = (
            typing.get_args(hint)
            if typing.get_origin(hint) in (Union, types.UnionType)
            else (hint,)
        )
        origins = {typing.get_origin(m) or m for m in members} - {type(None)}
        kind = {frozenset({dict}): "object", frozenset({list}): "array"}.get(frozenset(origins))
        other = [] if kind == "object" else {}
        if kind is not None and _refuses(cls, action.dest, other):
            return {"kind": kind, "source": f"{_where(cls)}.{action.dest}"}
    return None


def _input_keys(cls: Any) -> set[str]:
    """The keys a config class may take: its fields and init-only variables, and their
    pydantic aliases."""
    import dataclasses

    keys = set()
    for name, field in cls.__dataclass_fields__.items():
        if field._field_type is dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            continue
        keys.add(name)
        info = getattr(cls, "__pydantic_fields__", {}).get(name)
        if info is not None and info.alias:
            keys.add(info.alias)
    return keys


def _extra_key(cls: Any, key: str) -> bool:
    """Whether the class's validator calls ``key`` an unexpected key (each recorded key is
    confirmed by the engine's own validator)."""
    from pydantic import ValidationError

    try:
        cls.__pydantic_validator__.validate_json(json.dumps({key: None}))
    except ValidationError as error:
        kinds = ("extra_forbidden", "unexpected_keyword_argument")
        return any(e["type"] in kinds for e in error.errors())
    except Exception:  # a __post_init__ that needs what is stubbed: the key was taken
        return False
    return False


def _where(cls: type) -> str:
    return f"{cls.__module__.replace('.', '/')}.py {cls.__qualname__}"
