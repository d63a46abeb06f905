"""``mlcc env`` (the engine env) and ``mlcc argv`` (the engine's command line).

With ``-f SPEC`` (``--name`` picks one deployment of a list) the deployment is prepared and
rendered exactly as ``mlcc render`` does, and both commands read the rendered engine container
back: a CacheBackend's flags and env included, ``env`` as the container gets it (the engine
ConfigMap, then the container env; Secret values as ``${secret:<name>/<key>}``). Without ``-f``
they show the resolved engine config of the flags alone (Tier 1, Tier 2 and plain env; the
wrapper's argv of it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mlcc_constructs.cli._common import (
    add_deployment_options,
    registry_from,
    spec_from_args,
    specs_from_args,
)
from mlcc_constructs.cli._parser import Once, add_format_option, emit
from mlcc_constructs.core.support.errors import MlccError, Problem, fail


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    env = subparsers.add_parser(
        "env", help="print the env an engine receives (Tier 1, then Tier 2; -f: the container's)"
    )
    _add_options(env)
    add_format_option(env, default="env", extra=("env",))  # env: KEY=VALUE lines
    env.set_defaults(func=run_env)
    argv = subparsers.add_parser("argv", help="print the engine's argv as a JSON list")
    _add_options(argv)
    argv.add_argument(
        "--role",
        choices=("leader", "worker"),
        default=None,
        help="nodes above 1: the argv of a group's leader or of its first worker, as the wrapper "
        "builds it from the LeaderWorkerSet's LWS_* env at pod start",
    )
    argv.set_defaults(func=run_argv)


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--file",
        action=Once,
        default=None,
        metavar="FILE",
        help="deployment spec file (as mlcc render -f): show what its rendered engine container "
        "runs, CacheBackend wiring included; the flags below override its fields",
    )
    parser.add_argument(
        "--name",
        action=Once,
        dest="pick",
        default=None,
        metavar="NAME",
        help="with -f: the deployment of the file to show (required when it holds several); "
        "without: the deployment's name (the default served model name)",
    )
    add_deployment_options(parser, required=False)
    parser.add_argument(
        "--target",
        default=None,
        help="deployment target (default: eks); on hyperpod-eks the operator stages a Hugging "
        "Face model and the engine gets the mount path",
    )
    for name, what in (("account", "AWS account"), ("region", "AWS region"), ("profile", "")):
        parser.add_argument(
            f"--{name}",
            default=None,
            help=f"with -f: {what or 'deployment profile'} of the IEC's TLS bucket (default: "
            "the model bucket's name, then ./cdk.json)",
        )


def _require_flags(args: argparse.Namespace) -> None:
    missing = [f for f in ("engine", "model", "instance_type") if not getattr(args, f, None)]
    if missing:
        raise fail(
            "missing " + ", ".join("--" + m.replace("_", "-") for m in missing),
            where="command line",
            fix="pass them, or -f FILE with a deployment spec",
        )


def _resolve(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The resolution ``mlcc render`` would compute (the image's engine version, LoRA rank fit,
    target), and the rank-fit warnings (no ``-f``)."""
    from mlcc_constructs.core.serving.resolve.engine_config import (
        resolve_deployment_for_its_target,
    )

    _require_flags(args)
    args.name = args.pick  # without -f, --name names the deployment (as mlcc render's does)
    loaded = spec_from_args(args)
    try:
        _, resolution, fit_warnings = resolve_deployment_for_its_target(
            loaded.spec, registry=registry_from(args)
        )
    except MlccError as error:
        raise loaded.locate(error) from None
    return resolution, fit_warnings


def _prepared(args: argparse.Namespace) -> Any:
    """The deployment of ``-f`` (``--name`` picks it), prepared as ``mlcc render`` does."""
    from mlcc_constructs.cli.render import render_context
    from mlcc_constructs.core.serving.prepared import prepare

    specs = specs_from_args(args)
    names = [str(s.spec.name) for s in specs]
    if args.pick is not None:
        specs = [s for s in specs if s.spec.name == args.pick]
        if not specs:
            raise MlccError(
                Problem(
                    message=f"no deployment named {args.pick!r} in the spec file",
                    where=str(args.file),
                    value=args.pick,
                    allowed=", ".join(names),
                    fix="pass --name with one of the allowed names",
                )
            )
    if len(specs) > 1:
        raise MlccError(
            Problem(
                message=f"the spec file holds {len(specs)} deployments",
                where=str(args.file),
                allowed=", ".join(names),
                fix="pick one with --name NAME",
            )
        )
    (loaded,) = specs
    try:
        context = render_context(
            loaded,
            cidrs=getattr(args, "load_balancer_cidrs", None),
            prometheus_url=getattr(args, "prometheus_url", None),
            operator_namespace=getattr(args, "prometheus_operator_namespace", None),
            image_registry=getattr(args, "image_registry", None),
        )
        return prepare(loaded.spec, context=context, registry=registry_from(args))
    except MlccError as error:
        raise loaded.locate(error) from None


def _notes(resolution: Any, fit_warnings: list[str]) -> list[str]:
    return [str(s) for s in resolution.skipped] + list(resolution.warnings) + fit_warnings


def _warn(notes: Any) -> None:
    for note in notes:
        print(f"mlcc: {note}", file=sys.stderr)


def run_env(args: argparse.Namespace) -> int:
    if args.file:
        from mlcc_constructs.core.serving.process import engine_process

        prepared = _prepared(args)
        env: Any = engine_process(prepared).env
        skipped = [str(s) for s in prepared.resolution.skipped]
        warnings = [w for w in prepared.warnings if w not in skipped]
    else:
        resolution, fit_warnings = _resolve(args)
        env = tuple(resolution.env.items())
        skipped = [str(s) for s in resolution.skipped]
        warnings = list(resolution.warnings) + fit_warnings
    if args.format in ("json", "yaml"):
        emit(args, {"env": dict(env), "skipped": skipped, "warnings": warnings})
        return 0
    _warn(skipped + warnings)
    if args.format == "table":
        emit(args, dict(env))
        return 0
    for key, value in env:
        print(f"{key}={value}")
    return 0


def run_argv(args: argparse.Namespace) -> int:
    if args.file:
        from mlcc_constructs.core.serving.process import engine_argv

        prepared = _prepared(args)
        names = prepared.names
        pod_env = _role_env(args, names.base, names.namespace, prepared.resolution.nodes)
        argv = list(engine_argv(prepared, pod_env=pod_env))
        _warn(prepared.warnings)
    else:
        resolution, fit_warnings = _resolve(args)
        _warn(_notes(resolution, fit_warnings))
        spec = spec_from_args(args).spec
        name = spec.name or spec.engine.name  # the name mlcc render would give it
        pod_env = _role_env(args, name, spec.namespace, resolution.nodes)
        argv = resolution.argv(pod_env)
    print(json.dumps(argv))
    return 0


def _role_env(
    args: argparse.Namespace, name: str, namespace: str, nodes: int
) -> dict[str, str] | None:
    """The LWS env of ``--role`` for the LeaderWorkerSet ``name`` (``None`` without it)."""
    if getattr(args, "role", None) is None:
        return None
    from mlcc_constructs.core.serving.kinds.leader_worker_set import group_env

    return group_env(name, namespace, nodes, args.role)
