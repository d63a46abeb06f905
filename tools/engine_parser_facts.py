"""Record an engine release's server argument parser and env registry as package data.

Run it in a throwaway venv (``msgspec pydantic numpy pyyaml packaging cloudpickle regex``)
from the folder a release's wheel was unzipped into (its ``*.py`` files only), e.g.::

    pip download --no-deps vllm==0.31.0 -d /tmp/wheels
    unzip -q /tmp/wheels/vllm-0.31.0-*.whl 'vllm/*.py' -d /tmp/src/vllm-0.31.0
    cd /tmp/src/vllm-0.31.0 && PYTHONPATH=. /tmp/venv/bin/python \\
        tools/engine_parser_facts.py vllm 0.31.0 vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl \\
        > mlcc_constructs/data/engine_parsers/vllm/0.31.0.json

It builds the engine's own parser by running the engine's own code (``vllm serve``:
``vllm.entrypoints.launchers.cli_args.make_arg_parser``; ``python -m sglang.launch_server``:
``sglang.srt.server_args.ServerArgs.add_cli_args``) with the third-party modules that are not
installed (torch, transformers, ...) replaced by inert stand-ins, then writes every argparse
action: spelling, aliases, action, nargs, type, choices. The types and choices mlcc checks
(int, float, fixed choice lists) never come from a stand-in: a choice list computed from
one is marked ``choices_unrecorded`` and goes unchecked. A stand-in in an annotation's union
(``torch.dtype | Literal["auto", "float16"]``) stays a union, so the Literal's choices are
kept as the real engine keeps them; a choice set is written sorted (byte-stable).

A flag's ``bounds`` (numeric constraints) and ``json`` (the JSON shape of its value) come
from the engine's own config classes (``engine_config_facts.py`` beside this script). Not part
of the package: the library only reads its output.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, Union, get_origin

from engine_config_facts import bounds, json_shape, watch  # beside this script

INSTALLED = {
    "annotated_types", "cloudpickle", "msgspec", "numpy", "packaging", "pydantic",
    "pydantic_core", "regex", "typing_extensions", "typing_inspection", "yaml",
}  # fmt: skip
COMMANDS = {"vllm": "vllm serve", "sglang": "python3 -m sglang.launch_server"}


def _is_type(value: Any) -> bool:
    """Whether ``value`` can be a member of a ``Union`` (a class, ``None``, a typing form)."""
    return value is None or isinstance(value, type) or get_origin(value) is not None


class _Inert(abc.ABCMeta):
    """A stand-in class for anything of a module that is not installed."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert(name, (), {})

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls

    def __getitem__(cls, key: Any) -> Any:
        return cls

    def __setitem__(cls, key: Any, value: Any) -> None:
        pass

    def __or__(cls, other: Any) -> Any:
        # In an annotation (``torch.dtype | Literal["auto", "float16"]``) a stand-in is a type
        # like the real one: the union keeps the other member, whose Literal choices the engine
        # turns into argparse choices (vLLM's LoRAConfig.lora_dtype). Elsewhere it absorbs.
        return Union[cls, other] if _is_type(other) else cls  # noqa: UP007 (| recurses)

    def __ror__(cls, other: Any) -> Any:
        return Union[other, cls] if _is_type(other) else cls  # noqa: UP007 (| recurses)

    def _absorb(cls, other: Any) -> Any:
        return cls

    __add__ = __radd__ = __sub__ = __mul__ = __rmul__ = __truediv__ = _absorb

    def __iter__(cls) -> Iterator[Any]:
        return iter(())

    def __bool__(cls) -> bool:
        return False

    def __len__(cls) -> int:
        return 0

    def __int__(cls) -> int:
        return 0

    def __float__(cls) -> float:
        return 0.0

    def __lt__(cls, other: Any) -> bool:
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __hash__(cls) -> int:
        return id(cls)

    def __eq__(cls, other: object) -> bool:
        return cls is other

    def __enter__(cls) -> Any:
        return cls

    def __exit__(cls, *args: Any) -> bool:
        return False

    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()


class _InertModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert(name, (), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Gives an inert module for every import that is not the engine, stdlib or installed."""

    def __init__(self, engine: str) -> None:
        self.engine = engine

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        top = fullname.split(".")[0]
        if top in (self.engine, *INSTALLED) or top in sys.stdlib_module_names:
            return None
        for finder in sys.meta_path:
            if finder is not self and finder.find_spec(fullname, path, target) is not None:  # type: ignore[attr-defined]
                return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _InertModule(spec.name)
        module.__path__ = []
        module.__version__ = "2.9.0"  # type: ignore[attr-defined]  # torch's, read at import
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _metadata_version(engine: str, version: str) -> Callable[[str], str]:
    real = importlib.metadata.version

    def lookup(name: str) -> str:
        if name == engine:
            return version
        try:
            return real(name)
        except importlib.metadata.PackageNotFoundError:
            return "5.0.0"  # transformers' major, read at import

    return lookup


def _type_name(func: Any) -> str | None:
    """The argparse ``type`` as a fact: the builtin it converts to (through vLLM's
    ``optional_type`` closures), else the function's own name."""
    if func is None:
        return None
    seen = func
    while getattr(seen, "__name__", "") in ("_optional_type", "_parse_type", "<lambda>"):
        inner = [c.cell_contents for c in (seen.__closure__ or ()) if callable(c.cell_contents)]
        if not inner:
            break
        seen = inner[0]
    name = getattr(seen, "__name__", type(seen).__name__)
    return {"loads": "json"}.get(name, name)


def _action(action: argparse.Action) -> tuple[str, str | None]:
    """(the action's kind, the engine's own class when it is one)."""
    kinds = (
        (argparse.BooleanOptionalAction, "boolean_optional"),
        (argparse._StoreTrueAction, "store_true"),
        (argparse._StoreFalseAction, "store_false"),
        (argparse._StoreConstAction, "store_const"),
        (argparse._AppendAction, "append"),
        (argparse._CountAction, "count"),
        (argparse._StoreAction, "store"),
    )
    for cls, kind in kinds:
        if isinstance(action, cls):
            custom = None if type(action) is cls else type(action).__name__
            return kind, custom
    # an engine's own Action: it takes no value when nargs is 0, else values per nargs
    return ("store_const" if action.nargs == 0 else "store"), type(action).__name__


def _plain(choices: Any) -> bool:
    """Whether every choice is a plain value (not computed from a stand-in)."""
    return all(c is None or isinstance(c, str | int | float | bool) for c in choices)


def facts(parser: argparse.ArgumentParser) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Every flag of ``parser`` keyed by its first spelling, and its positional."""
    flags: dict[str, Any] = {}
    positional = None
    # Every spelling the parser accepts, help-visible or not: vLLM 0.33's EnableDisableAction
    # keeps --no-enable-x registered but drops it from the action's option_strings (help).
    registered: dict[int, list[str]] = {}
    for spelling, owner in parser._option_string_actions.items():
        registered.setdefault(id(owner), []).append(spelling)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings:
            positional = {"dest": action.dest, "nargs": action.nargs}
            continue
        kind, custom = _action(action)
        visible = list(action.option_strings)
        hidden = [s for s in registered.get(id(action), []) if s not in visible]
        spellings = visible + hidden
        record: dict[str, Any] = {"action": kind}
        if kind == "boolean_optional":  # vLLM 0.33's EnableDisableAction: --disable-x is off
            negative = set(getattr(action, "negative_option_strings", ()))
            off = [s for s in spellings if s.startswith("--no-") or s in negative]
            record["off"] = off
            spellings = [s for s in spellings if s not in off]
        if hidden:
            record["hidden"] = hidden  # accepted, not in --help
        if spellings[1:]:
            record["aliases"] = spellings[1:]
        if custom:
            record["engine_action"] = custom
        if kind in ("store", "append"):
            record["type"] = _type_name(action.type) or "str"
            if action.nargs is not None:
                record["nargs"] = action.nargs
            if action.choices is not None and _plain(action.choices):
                # a set's order is the hash seed's: sorted, so a re-record is byte-stable
                unordered = isinstance(action.choices, set | frozenset)
                record["choices"] = (
                    sorted(action.choices, key=str) if unordered else list(action.choices)
                )
            elif action.choices is not None:  # e.g. from torch: the choices go unchecked
                record["choices_unrecorded"] = "computed from a module this script stubs"
            limits = bounds(action.dest)
            if limits is not None:
                record["bounds"] = limits
            shape = json_shape(action)
            if shape is not None:
                record["json"] = shape
        if action.required:
            record["required"] = True
        flags[spellings[0]] = record
    return flags, positional


def _vllm() -> tuple[argparse.ArgumentParser, list[str]]:
    import vllm.engine.arg_utils as arg_utils

    @contextlib.contextmanager
    def defaults_for_help_only() -> Iterator[None]:
        # Nested configs' defaults are built only for help text; their validators need a GPU.
        with contextlib.suppress(Exception):
            yield

    arg_utils.suppress_logging = defaults_for_help_only  # type: ignore[attr-defined]
    watch(arg_utils, "get_kwargs")  # the config class behind each flag, for its bounds
    import importlib

    from vllm import envs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # where `vllm serve` (entrypoints/cli/serve.py) imports it from: 0.31 launchers, 0.33 common
    for where in ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.common.cli_args"):
        with contextlib.suppress(ModuleNotFoundError):
            make_arg_parser = importlib.import_module(where).make_arg_parser
            break

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    return parser, sorted(envs.environment_variables)


def _sglang() -> tuple[argparse.ArgumentParser, list[str]]:
    # sglang.kernels' __init__ registers GPU kernels; only an enum under it is read.
    for package in ("sglang.kernels", "sglang.kernels.ops", "sglang.kernels.ops.kv_canary"):
        module = types.ModuleType(package)
        module.__path__ = [os.path.join(os.getcwd(), *package.split("."))]
        sys.modules[package] = module
    from sglang.srt.environ import EnvField, Envs
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    names = sorted(k for k, v in vars(Envs).items() if isinstance(v, EnvField))
    return parser, names


def main() -> None:
    engine, version, wheel = sys.argv[1:4]
    sys.meta_path.append(_Finder(engine))
    importlib.metadata.version = _metadata_version(engine, version)
    parser, env = {"vllm": _vllm, "sglang": _sglang}[engine]()
    flags, positional = facts(parser)
    read = {
        "vllm": "vllm/entrypoints/cli/serve.py -> make_arg_parser (0.31: "
        "entrypoints/launchers/cli_args.py, 0.33: entrypoints/common/cli_args.py; FrontendArgs, "
        "engine/arg_utils.py AsyncEngineArgs.add_cli_args); vllm/envs.py environment_variables",
        "sglang": "sglang/srt/server_args.py ServerArgs.add_cli_args (arg_groups/arg_utils.py "
        "add_cli_args_from_dataclass over arg_groups/fields/*.py); sglang/srt/environ.py Envs",
    }[engine]
    out: dict[str, Any] = {
        "engine": engine,
        "version": version,
        "command": COMMANDS[engine],
        "read_from": {
            "wheel": f"PyPI {engine}=={version} ({wheel})",
            "files": read,
            "method": "the engine's own parser built by running its code with uninstalled "
            "third-party modules stubbed (tools/engine_parser_facts.py); every argparse action; "
            "bounds: the gt/ge/lt/le constraints of the config class field a flag is built "
            "from (its source), each one refused past its edge by that class's own validator",
        },
        "flags": dict(sorted(flags.items())),
        "env": env,
    }
    if positional is not None:
        out["positional"] = positional
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
