"""Options shared by several commands (engine selection, plugin folders, deployment facts)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from typing import TYPE_CHECKING, Any

from mlcc_constructs.core.support.errors import fail

if TYPE_CHECKING:
    from mlcc_constructs.core.serving.spec.files import SpecFile
    from mlcc_constructs.core.support.errors import MlccError

SPEC_FLAGS_FILE = "spec-flags.json"
CONTEXT_FLAGS: dict[str, str] = {"account": "account", "profile": "profile"}
"""Render-context fields of a spec document (no ``DeploymentSpec`` field) -> their flag's
argparse attribute."""


@functools.cache
def spec_flag_table() -> dict[str, dict[str, Any]]:
    """Each spec field's path -> its flags, help, kind and choices: ``data/spec-flags.json``,
    generated from the ``DeploymentSpec`` dataclasses by ``tools/spec_schema.py`` (read as JSON:
    no source parsing at a command's start)."""
    from mlcc_constructs.core._resources import data_path

    document = json.loads(data_path(SPEC_FLAGS_FILE).read_text(encoding="utf-8"))
    return {entry["path"]: entry for entry in document["fields"]}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


@functools.cache
def spec_flags() -> dict[str, str]:
    """Deployment spec field (its path in the spec document) -> the argparse attribute of its
    flag (``compute.tensor_parallel_degree`` -> ``tp``), the render context's included; the
    ``engine.env`` and ``engine.secret_env`` flags take ``NAME=...`` items
    (:func:`flag_layers`)."""
    table = {
        path: _dest(entry["flags"][0])
        for path, entry in spec_flag_table().items()
        if entry["flags"] and entry["kind"] != "mapping"
    }
    return {**table, **CONTEXT_FLAGS}


def add_spec_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, path: str, **overrides: Any
) -> None:
    """The flag of spec field ``path``, as its one declaration says (flag, help, type, choices:
    :func:`spec_flag_table`); ``overrides``: argparse keywords of this command (``required``,
    ``metavar``, ``nargs``...)."""
    entry = spec_flag_table()[path]
    keywords: dict[str, Any] = {"default": None, "help": entry["help"]}
    kind = entry["kind"]
    if kind == "bool":
        keywords = {"action": "store_true", "help": entry["help"]}
    elif kind in ("int", "float"):
        keywords["type"] = int if kind == "int" else float
    elif kind == "int-or-auto":
        keywords["type"] = _nodes
    if entry["choices"]:
        keywords["choices"] = list(entry["choices"])
    flags = overrides.pop("flags", entry["flags"][:1])
    keywords.update(overrides)
    parser.add_argument(*flags, **keywords)


REQUIRED = ("engine.name", "model.uri", "compute.instance_type")


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="folder of engine plugins (<engine>/manifest.json); repeatable; "
        "$MLCC_ENGINE_PATH adds more",
    )
    parser.add_argument(
        "--override-builtin",
        action="append",
        default=[],
        metavar="ENGINE",
        help="let a plugin replace the built-in engine of this name",
    )


def registry_from(args: argparse.Namespace) -> Any:
    from mlcc_constructs.core.engines.manifests import EngineRegistry

    return EngineRegistry.load(args.plugin_dir, allow_override=args.override_builtin)


def add_deployment_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The engine facts of a deployment (the resolver's inputs): each flag as its spec field
    declares it (:func:`add_spec_option`)."""
    add_spec_option(parser, "engine.name", required=required)
    add_spec_option(parser, "model.uri", required=required)
    add_spec_option(parser, "compute.instance_type", required=required)
    add_spec_option(parser, "compute.tensor_parallel_degree")
    add_spec_option(parser, "compute.nodes")
    add_spec_option(parser, "compute.pipeline_parallel_degree")
    add_spec_option(parser, "engine.quantization")
    add_spec_option(parser, "served_model_name")
    add_spec_option(parser, "lora.enabled")
    add_spec_option(
        parser,
        "engine.env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=spec_flag_table()["engine.env"]["help"] + "; repeatable",
    )
    add_spec_option(parser, "engine.image")  # the engine version follows it
    add_spec_option(parser, "engine.version")
    add_spec_option(parser, "model.load")
    add_registry_options(parser)


def parse_assignments(items: list[str], option: str = "--set") -> dict[str, str]:
    """``["A=1", "B=x=y"]`` → ``{"A": "1", "B": "x=y"}``; a malformed item is an error."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fail(
                f"{option} takes KEY=VALUE",
                where=option,
                value=item,
                fix=f"write {option} NAME=value (an empty value is refused later)",
            )
        if key in result:
            raise fail(f"{option} sets {key} twice", where=option, value=item)
        result[key] = value
    return result


def secret_refs(items: list[str]) -> dict[str, dict[str, str]]:
    """``["HF_TOKEN=hf-token:token"]`` → ``{"HF_TOKEN": {"name": "hf-token", "key": "token"}}``."""
    refs: dict[str, dict[str, str]] = {}
    for key, value in parse_assignments(items, "--secret-env").items():
        secret, sep, secret_key = value.partition(":")
        if not sep or not secret or not secret_key:
            raise fail(
                "--secret-env takes NAME=SECRET:KEY",
                where="--secret-env",
                value=f"{key}={value}",
                fix="e.g. --secret-env HF_TOKEN=hf-token:token",
            )
        refs[key] = {"name": secret, "key": secret_key}
    return refs


def secrets_manager_refs(items: list[str]) -> dict[str, dict[str, str]]:
    """``["HF_TOKEN=team/hf#token"]`` -> ``{"HF_TOKEN": {"secrets_manager": "team/hf",
    "json_key": "token"}}`` (``#`` is in no secret name or ARN)."""
    refs: dict[str, dict[str, str]] = {}
    for key, value in parse_assignments(items, "--secrets-manager-env").items():
        secret, sep, json_key = value.partition("#")
        if not secret or (sep and not json_key):
            raise fail(
                "--secrets-manager-env takes NAME=SECRET or NAME=SECRET#JSON_KEY",
                where="--secrets-manager-env",
                value=f"{key}={value}",
                fix="e.g. --secrets-manager-env HF_TOKEN=team/hf-token",
            )
        refs[key] = {"secrets_manager": secret, **({"json_key": json_key} if sep else {})}
    return refs


def nested(path: str, value: Any) -> dict[str, Any]:
    """``("compute.nodes", 2)`` -> ``{"compute": {"nodes": 2}}``: a field's layer."""
    head, _, rest = path.partition(".")
    return {head: nested(rest, value) if rest else value}


def lookup_path(document: Any, path: str) -> Any:
    """The value at ``path`` (``compute.instance_type``) of a spec document, else ``None``."""
    for part in path.split("."):
        document = document.get(part) if isinstance(document, dict) else None
    return document


def flag_layers(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """One ``(--flag, {section: {field: value}})`` layer per deployment flag the user gave;
    ``--set`` and ``--secret-env`` become ``engine.env`` and ``engine.secret_env`` layers."""
    layers: list[tuple[str, dict[str, Any]]] = []
    for path, attribute in spec_flags().items():
        value = getattr(args, attribute, None)
        if value is not None and value is not False and value != []:
            layers.append((f"--{attribute.replace('_', '-')}", nested(path, value)))
    if getattr(args, "set", None):
        layers.append(("--set", nested("engine.env", parse_assignments(args.set))))
    if getattr(args, "secret_env", None):
        layers.append(("--secret-env", nested("engine.secret_env", secret_refs(args.secret_env))))
    if getattr(args, "secrets_manager_env", None):
        values = secrets_manager_refs(args.secrets_manager_env)
        layers.append(("--secrets-manager-env", nested("engine.secret_env", values)))
    return layers


def spec_from_args(args: argparse.Namespace) -> SpecFile:
    """The deployment of the command line: the ``-f`` file (when given), then each flag, as
    layers of one mapping validated once (the same checks for a flag as for its field)."""
    specs = specs_from_args(args)
    if len(specs) > 1:
        raise fail(
            f"the spec file holds {len(specs)} deployments; this command takes one",
            where=str(args.file),
            fix="pass a file with one deployment (mlcc render takes a list)",
        )
    return specs[0]


def specs_from_args(args: argparse.Namespace) -> list[SpecFile]:
    """Every deployment of the command line (see :func:`spec_results`); all problems of all
    deployments raised at once."""
    from mlcc_constructs.core.support.errors import MlccError

    results = spec_results(args)
    problems = [p for r in results if isinstance(r, MlccError) for p in r.problems]
    if problems:
        raise MlccError(problems)
    return [r for r in results if not isinstance(r, MlccError)]


def spec_results(args: argparse.Namespace) -> list[SpecFile | MlccError]:
    """Each deployment of the ``-f`` file (one mapping, a list or several YAML documents) with
    the flags layered over it, or the error that refused it."""
    from mlcc_constructs.core.serving.spec.files import (
        load_spec_documents,
        merge_layers,
        spec_from_layers,
    )
    from mlcc_constructs.core.serving.spec.flat_shape import flat_shape_problem
    from mlcc_constructs.core.support.errors import MlccError

    documents: list[tuple[str, dict[str, Any]]] = [("command line", {})]
    if getattr(args, "file", None):
        documents = load_spec_documents(args.file)
    flags = flag_layers(args)
    # A command's own defaults (``spec_defaults``: field -> value) sit between the file and
    # the flags, for the fields the file does not set.
    defaults: dict[str, Any] = getattr(args, "spec_defaults", None) or {}
    results: list[SpecFile | MlccError] = []
    for where, document in documents:
        unset = {k: v for k, v in defaults.items() if k not in document}
        layers = (
            ([(where, document)] if document else [])
            + ([(f"mlcc {getattr(args, 'command', '')}'s default", unset)] if unset else [])
            + flags
        )
        flat = flat_shape_problem(document, where=where)
        if flat is not None:  # the 0.1 shape: say where its fields went, not what is missing
            results.append(MlccError([flat]))
            continue
        merged, _ = merge_layers(layers)
        missing = [k for k in REQUIRED if not lookup_path(merged, k)]
        if missing:
            results.append(
                fail(
                    "missing " + ", ".join(missing),
                    where=where,
                    fix="pass "
                    + " ".join(spec_flag_table()[m]["flags"][0] for m in missing)
                    + " or -f FILE",
                )
            )
            continue
        try:
            results.append(dataclasses.replace(spec_from_layers(layers), where=where))
        except MlccError as error:
            results.append(error)
    _note_plain_set_keys(args, [r for r in results if not isinstance(r, MlccError)])
    return results


def _note_plain_set_keys(args: argparse.Namespace, specs: list[SpecFile]) -> None:
    """Warn (stderr) once per ``--set`` key with no engine prefix and engine: it becomes plain
    env, not a flag (the core's ``env_rules.plain_env_note``). Only for a deployment whose env
    the core accepts: a refused key or value is left to its error."""
    if not getattr(args, "set", None) or not specs:
        return
    import sys

    from mlcc_constructs.core.serving.resolve.env_rules import plain_env_note
    from mlcc_constructs.core.serving.resolve.settings import read_settings
    from mlcc_constructs.core.support.errors import MlccError

    given = set(parse_assignments(args.set))
    notes: dict[str, None] = {}
    try:
        registry = registry_from(args)
        for loaded in specs:
            settings = read_settings(loaded.spec, registry)
            if settings.problems:
                continue
            for key, _ in settings.plain:
                note = plain_env_note(key, settings.manifest, registry) if key in given else None
                notes.update({note: None} if note else {})
    except MlccError:
        return  # an unknown engine or a bad plugin: the command reports it
    for note in notes:
        print(f"mlcc: {note}", file=sys.stderr)


def _nodes(text: str) -> int | str:
    """``--nodes``: a number or ``auto`` (the spec's checks refuse one below 1)."""
    return text if text == "auto" else int(text)
