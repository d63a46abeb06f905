"""``mlcc render``: the Kubernetes objects of one deployment, validated, as YAML."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from mlcc_constructs.commands._common import (
    add_deployment_options,
    parse_assignments,
    registry_from,
)
from mlcc_constructs.core.errors import fail

_CONTEXT = ("account", "region", "profile")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the Kubernetes objects of a deployment (eks or hyperpod-eks) as YAML",
        description="Render, validate (kubernetes-validate strict; the IEC v1 CRD rules) and "
        "print the objects of one deployment. Flags override the fields of -f. The account, "
        "region and profile that name the IEC's TLS bucket default to the model bucket's name "
        "(stacks/buckets.json), then to ./cdk.json context.",
    )
    parser.add_argument("-f", "--file", default=None, help="deployment spec file (YAML/JSON)")
    parser.add_argument("--target", choices=["eks", "hyperpod-eks"], default=None)
    parser.add_argument("--name", default=None, help="name of the objects (RFC 1035 label)")
    parser.add_argument("--namespace", default=None, help="namespace (default: default)")
    parser.add_argument("--image", default=None, help="container image (default: pinned)")
    parser.add_argument("--replicas", type=int, default=None, help="pod replicas (default: 1)")
    parser.add_argument(
        "--config-delivery",
        choices=["env", "args"],
        default=None,
        help="env: the image runs the mlcc wrapper; args: argv computed now (stock images)",
    )
    parser.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="NAME=SECRET:KEY",
        help="env from a Kubernetes Secret key, e.g. HF_TOKEN=hf-token:token; repeatable",
    )
    parser.add_argument("--region", default=None, help="AWS region (model and TLS buckets)")
    parser.add_argument("--account", default=None, help="AWS account (IEC TLS bucket)")
    parser.add_argument("--profile", default=None, help="deployment profile (IEC TLS bucket)")
    parser.add_argument("--role-arn", default=None, help="IRSA role of the ServiceAccount (eks)")
    parser.add_argument("--out", default=None, metavar="DIR", help="write one file per object")
    add_deployment_options(parser, required=False)
    parser.set_defaults(func=run_render)


def _secret_refs(items: list[str]) -> dict[str, Any]:
    from mlcc_constructs.core.spec import SecretRef

    refs: dict[str, Any] = {}
    for key, value in parse_assignments(items, "--secret-env").items():
        secret, sep, secret_key = value.partition(":")
        if not sep or not secret or not secret_key:
            raise fail(
                "--secret-env takes NAME=SECRET:KEY",
                pointer="--secret-env",
                value=f"{key}={value}",
                fix="e.g. --secret-env HF_TOKEN=hf-token:token",
            )
        refs[key] = SecretRef(name=secret, key=secret_key)
    return refs


def _cdk_context() -> dict[str, str]:
    path = Path("cdk.json")
    if not path.is_file():
        return {}
    try:
        context = json.loads(path.read_text(encoding="utf-8")).get("context", {})
    except (OSError, ValueError):
        return {}
    return {k: str(context[k]) for k in _CONTEXT if isinstance(context.get(k), str)}


def build_spec(args: argparse.Namespace) -> tuple[Any, Any]:
    """The (DeploymentSpec, RenderContext) of the command line (flags over ``-f``)."""
    from mlcc_constructs.core.render import RenderContext
    from mlcc_constructs.core.spec import DeploymentSpec
    from mlcc_constructs.core.spec_file import load_spec_file

    values: dict[str, Any] = {}
    context: dict[str, Any] = {}
    if args.file:
        loaded = load_spec_file(args.file)
        values = {f.name: getattr(loaded.spec, f.name) for f in dataclasses.fields(DeploymentSpec)}
        context = dataclasses.asdict(loaded.context)
    flags = {
        "engine": args.engine,
        "model": args.model,
        "instance_type": args.instance_type,
        "name": args.name,
        "namespace": args.namespace,
        "target": args.target,
        "image": args.image,
        "replicas": args.replicas,
        "tensor_parallel_degree": args.tp,
        "quantization": args.quantization,
        "engine_version": args.engine_version,
        "config_delivery": args.config_delivery,
        "region": args.region,
        "service_account_role_arn": args.role_arn,
    }
    values.update({k: v for k, v in flags.items() if v is not None})
    if args.lora:
        values["lora"] = True
    values["env"] = {**values.get("env", {}), **parse_assignments(args.set)}
    values["secret_env"] = {**values.get("secret_env", {}), **_secret_refs(args.secret_env)}
    missing = [k for k in ("engine", "model", "instance_type") if not values.get(k)]
    if missing:
        raise fail(
            "missing " + ", ".join(missing),
            pointer=", ".join(missing),
            fix="pass " + " ".join("--" + m.replace("_", "-") for m in missing) + " or -f FILE",
        )
    fallback = _cdk_context()
    for key in _CONTEXT:
        context[key] = getattr(args, key) or context.get(key) or None
    spec = DeploymentSpec(**values)
    render_context = RenderContext(
        account=context["account"] or fallback.get("account"),
        region=context["region"] or fallback.get("region"),
        profile=context["profile"] or fallback.get("profile"),
    )
    return spec, render_context


def run_render(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.render import file_name, render, to_yaml

    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise fail(
            "--out must be a folder, not a file",
            where=args.out,
            fix="pass a folder (created when missing) or omit --out to print the YAML",
        )
    spec, context = build_spec(args)
    rendered = render(spec, context=context, registry=registry_from(args))
    for note in rendered.warnings:
        print(f"mlcc: {note}", file=sys.stderr)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for obj in rendered.objects:
            path = out / file_name(obj)
            path.write_text(to_yaml([obj]), encoding="utf-8")
            print(path)
        return 0
    sys.stdout.write(to_yaml(rendered.objects))
    return 0
