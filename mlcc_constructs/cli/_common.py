"""Options shared by several commands (engine selection, plugin folders, deployment facts)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from mlcc_constructs.core.support.errors import fail

if TYPE_CHECKING:
    from mlcc_constructs.core.serving.spec.files import SpecFile
    from mlcc_constructs.core.support.errors import MlccError

# Deployment spec field -> the argparse attribute of its flag (``--tp``, ``--role-arn``...).
SPEC_FLAGS: dict[str, str] = {
    "engine": "engine",
    "model": "model",
    "instance_type": "instance_type",
    "name": "name",
    "served_model_name": "served_model_name",
    "namespace": "namespace",
    "target": "target",
    "image": "image",
    "replicas": "replicas",
    "tensor_parallel_degree": "tp",
    "nodes": "nodes",
    "pipeline_parallel_degree": "pp",
    "quantization": "quantization",
    "lora": "lora",
    "engine_version": "engine_version",
    "config_delivery": "config_delivery",
    "region": "region",
    "account": "account",
    "profile": "profile",
    "service_account_role_arn": "role_arn",
    "api_key_secret": "api_key_secret",
    "instance_types": "instance_types",
    "max_request_seconds": "max_request_seconds",
    "rollout": "rollout",
    "accept_downtime": "accept_downtime",
    "model_bytes": "model_bytes",
    "model_load": "model_load",
}
ENDPOINT_FLAGS: dict[str, str] = {
    "scheme": "endpoint_scheme",
    "certificate_arn": "certificate_arn",
    "hostname": "hostname",
    "group": "load_balancer_group",
}
REQUIRED = ("engine", "model", "instance_type")


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
    """The engine facts of a deployment (the resolver's inputs)."""
    parser.add_argument("--engine", required=required, help="engine name, e.g. vllm or sglang")
    parser.add_argument(
        "--model", required=required, help="s3://bucket/prefix/ or a Hugging Face org/name"
    )
    parser.add_argument(
        "--instance-type", required=required, help="e.g. ml.g5.12xlarge or g5.12xlarge"
    )
    parser.add_argument(
        "--tp", type=int, default=None, help="tensor-parallel degree (default: the GPU count)"
    )
    parser.add_argument(
        "--nodes",
        type=_nodes,
        default=None,
        help="nodes one model copy spans: a number, or auto from --model-bytes (default: 1)",
    )
    parser.add_argument(
        "--pp", type=int, default=None, help="pipeline-parallel degree (default: 1)"
    )
    parser.add_argument("--quantization", default=None, help="quantization method, e.g. awq")
    parser.add_argument(
        "--served-model-name",
        default=None,
        help="the model name clients send (OpenAI API 'model'; default: the deployment's name)",
    )
    parser.add_argument("--lora", action="store_true", help="serve LoRA adapters")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="engine env: <PREFIX>* keys (Tier 2; a key setting a computed Tier-1 value is "
        "refused, naming the field to use) or plain env; repeatable",
    )
    parser.add_argument("--engine-version", default=None, help="engine version for version gates")
    parser.add_argument(
        "--model-load",
        choices=["mount", "stream"],
        default=None,
        help="how the engine reads an s3:// model: the target's mount, or streamed by the "
        "engine itself (default: stream where the engine, version and target support it)",
    )
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


def flag_layers(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    """One ``(--flag, {field: value})`` layer per deployment flag the user gave; ``--set`` and
    ``--secret-env`` become ``env`` and ``secret_env`` layers."""
    layers: list[tuple[str, dict[str, Any]]] = []
    for field, attribute in SPEC_FLAGS.items():
        value = getattr(args, attribute, None)
        if value is not None and value is not False:
            layers.append((f"--{attribute.replace('_', '-')}", {field: value}))
    if getattr(args, "set", None):
        layers.append(("--set", {"env": parse_assignments(args.set)}))
    if getattr(args, "secret_env", None):
        layers.append(("--secret-env", {"secret_env": secret_refs(args.secret_env)}))
    if getattr(args, "secrets_manager_env", None):
        values = secrets_manager_refs(args.secrets_manager_env)
        layers.append(("--secrets-manager-env", {"secret_env": values}))
    for field, attribute in ENDPOINT_FLAGS.items():
        value = getattr(args, attribute, None)
        if value is not None:
            layers.append((f"--{attribute.replace('_', '-')}", {"endpoint": {field: value}}))
    if getattr(args, "allow_from", None):
        layers.append(("--allow-from", {"allow_from": list(args.allow_from)}))
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
        merged, _ = merge_layers(layers)
        missing = [k for k in REQUIRED if not merged.get(k)]
        if missing:
            results.append(
                fail(
                    "missing " + ", ".join(missing),
                    where=where,
                    fix="pass "
                    + " ".join("--" + m.replace("_", "-") for m in missing)
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
