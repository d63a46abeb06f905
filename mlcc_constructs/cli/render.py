"""``mlcc render``: the Kubernetes objects of one deployment, validated, as YAML."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mlcc_constructs.cli._common import (
    add_deployment_options,
    add_spec_option,
    registry_from,
    spec_flag_table,
    spec_from_args,
    spec_results,
)
from mlcc_constructs.cli._parser import Once
from mlcc_constructs.core.platform.targets import kubernetes_target_names
from mlcc_constructs.core.support.errors import MlccError, fail

_CONTEXT = ("account", "region", "profile")
CIDRS_KEY = "load_balancer_cidrs"
PROMETHEUS_KEY = "prometheus_query_url"
OPERATOR_NAMESPACE_KEY = "prometheus_operator_namespace"
"""The cdk.json context key of the load balancer subnets' CIDRs (by scheme)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the Kubernetes objects of a deployment (eks or hyperpod-eks) as YAML",
        description="Render, validate (kubernetes-validate strict; the IEC v1 CRD rules) and "
        "print the objects of one deployment. Flags override the fields of -f. The account, "
        "region and profile that name the IEC's TLS bucket default to the model bucket's name "
        "(stacks/buckets.json), then to ./cdk.json context.",
    )
    add_spec_options(parser)
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="write the render into DIR (replacing its own earlier render): one file per object, "
        "or one <target>-<namespace>-<name>.k8s.yaml per deployment of a spec list (as make "
        "synth writes dist/)",
    )
    parser.set_defaults(func=run_render)


def add_spec_options(parser: argparse.ArgumentParser) -> None:
    """The deployment options of ``mlcc render`` (``-f`` and the flags that override it), so
    other commands read a deployment exactly as ``mlcc render`` does."""
    parser.add_argument(
        "-f",
        "--file",
        action=Once,
        default=None,
        metavar="FILE",
        help="deployment spec file: one YAML or JSON mapping with the fields of "
        "mlcc_constructs/data/deployment-spec.schema.json (name, target, and the sections "
        "engine, model, compute, scaling, ...), or a list of them (or several YAML documents) "
        "to render many deployments; flags apply to each; see examples/deployment.yaml",
    )
    # the deployment's fields, each flag as its spec field declares it (add_spec_option)
    add_spec_option(parser, "target", choices=kubernetes_target_names())
    add_spec_option(parser, "name")
    add_spec_option(parser, "namespace")
    add_spec_option(parser, "scaling.replicas")
    add_spec_option(parser, "compute.instance_types", nargs="+", metavar="TYPE")
    add_spec_option(parser, "endpoint.max_request_seconds")
    add_spec_option(parser, "model.bytes", metavar="BYTES")
    add_spec_option(parser, "rollout.strategy")
    add_spec_option(parser, "rollout.accept_downtime")
    add_spec_option(parser, "engine.config_delivery")
    add_spec_option(
        parser,
        "engine.secret_env",
        action="append",
        default=[],
        metavar="NAME=SECRET:KEY",
        help="engine.secret_env from a Kubernetes Secret key, e.g. HF_TOKEN=hf-token:token; "
        "repeatable",
    )
    add_spec_option(
        parser,
        "engine.secret_env",
        flags=["--secrets-manager-env"],
        action="append",
        default=[],
        metavar="NAME=SECRET[#JSON_KEY]",
        help="engine.secret_env from an AWS Secrets Manager secret (name or ARN; #KEY picks a "
        "JSON secret's key), synced into the deployment's own Secret, e.g. "
        "HF_TOKEN=team/hf-token; repeatable",
    )
    add_spec_option(parser, "endpoint.scheme")
    add_spec_option(parser, "endpoint.certificate_arn")
    add_spec_option(parser, "endpoint.hostname")
    add_spec_option(parser, "endpoint.group", metavar="GROUP")
    add_spec_option(parser, "endpoint.api_key_secret", metavar="SECRET")
    add_spec_option(
        parser,
        "endpoint.allow_from",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help=spec_flag_table()["endpoint.allow_from"]["help"] + "; repeatable",
    )
    parser.add_argument(
        "--load-balancer-cidrs",
        action="append",
        default=[],
        metavar="SCHEME=CIDR,CIDR",
        help="the subnets the cluster's load balancers of SCHEME live in (what the "
        "NetworkPolicy admits; default: a ServingCluster VPC's, or ./cdk.json context "
        "load_balancer_cidrs); repeatable",
    )
    parser.add_argument(
        "--prometheus-url",
        default=None,
        metavar="URL",
        help="query endpoint of the Amazon Managed Service for Prometheus workspace an "
        "autoscaled deployment's ScaledObject reads (https://aps-workspaces.<region>."
        "amazonaws.com/workspaces/<id>; default: ./cdk.json context prometheus_query_url)",
    )
    parser.add_argument(
        "--prometheus-operator-namespace",
        default=None,
        metavar="NAMESPACE",
        help="namespace of a Prometheus the Prometheus Operator runs: render a ServiceMonitor "
        "for each engine with metrics and admit that namespace on the engine port (default: "
        "./cdk.json context prometheus_operator_namespace, else none)",
    )
    parser.add_argument(
        "--image-registry",
        default=None,
        metavar="REGISTRY",
        help="the ECR private registry whose pull through cache the cluster has "
        "(<account>.dkr.ecr.<region>.amazonaws.com): Docker Hub images are pulled through it "
        "(default: none, images as given)",
    )
    add_spec_option(parser, "region")
    parser.add_argument("--account", default=None, help="AWS account (IEC TLS bucket)")
    parser.add_argument("--profile", default=None, help="deployment profile (IEC TLS bucket)")
    add_spec_option(parser, "service_account_role_arn")
    add_deployment_options(parser, required=False)


def _cdk_context() -> dict[str, Any]:
    path = Path("cdk.json")
    if not path.is_file():
        return {}
    try:
        context = json.loads(path.read_text(encoding="utf-8")).get("context", {})
    except (OSError, ValueError):
        return {}
    found: dict[str, Any] = {
        k: str(context[k]) for k in _CONTEXT if isinstance(context.get(k), str)
    }
    if isinstance(context.get(CIDRS_KEY), dict):
        found[CIDRS_KEY] = context[CIDRS_KEY]
    for key in (PROMETHEUS_KEY, OPERATOR_NAMESPACE_KEY):
        if isinstance(context.get(key), str):
            found[key] = context[key]
    return found


def render_context(
    loaded: Any,
    fallback: dict[str, Any] | None = None,
    cidrs: list[str] | None = None,
    prometheus_url: str | None = None,
    operator_namespace: str | None = None,
    image_registry: str | None = None,
) -> Any:
    """The render context of a loaded spec: its account, region and profile, else
    ``./cdk.json``'s context (``fallback``: that context, when already read); the load
    balancer CIDRs of ``--load-balancer-cidrs`` (``cidrs``), else that context's; the Prometheus
    query URL of ``--prometheus-url``, else that context's ``prometheus_query_url``; the
    Prometheus Operator's namespace of ``--prometheus-operator-namespace``, else that
    context's; the ECR registry of ``--image-registry`` (``image_registry``), else none."""
    from mlcc_constructs.core.serving.spec.context import RenderContext

    fallback = _cdk_context() if fallback is None else fallback
    values = {k: getattr(loaded.context, k) or fallback.get(k) for k in _CONTEXT}
    if image_registry is not None:
        from mlcc_constructs.core.platform.image_cache import check_registry

        check_registry(image_registry, where="--image-registry", pointer="")
    return RenderContext(
        account=values["account"],
        region=values["region"],
        profile=values["profile"],
        load_balancer_cidrs=parse_cidrs(cidrs) if cidrs else fallback.get(CIDRS_KEY),
        prometheus_query_url=prometheus_url or fallback.get(PROMETHEUS_KEY),
        prometheus_operator_namespace=operator_namespace or fallback.get(OPERATOR_NAMESPACE_KEY),
        image_registry=image_registry,
    )


def parse_cidrs(items: list[str]) -> dict[str, list[str]]:
    """``["internal=10.1.0.0/24,10.1.1.0/24"]`` -> ``{"internal": [...]}`` (checked by
    RenderContext)."""
    found: dict[str, list[str]] = {}
    for item in items:
        scheme, sep, networks = item.partition("=")
        if not sep or not scheme or not networks:
            raise fail(
                "--load-balancer-cidrs takes SCHEME=CIDR,CIDR",
                where="--load-balancer-cidrs",
                value=item,
                fix="e.g. --load-balancer-cidrs internal=10.0.16.0/24,10.0.17.0/24",
            )
        found[scheme] = [n.strip() for n in networks.split(",")]
    return found


def build_spec(args: argparse.Namespace) -> tuple[Any, Any]:
    """The one deployment of the command line and its render context (for commands that take
    one deployment the way ``mlcc render`` reads it)."""
    loaded = spec_from_args(args)
    return loaded, render_context(
        loaded,
        cidrs=getattr(args, "load_balancer_cidrs", None),
        prometheus_url=getattr(args, "prometheus_url", None),
        operator_namespace=getattr(args, "prometheus_operator_namespace", None),
        image_registry=getattr(args, "image_registry", None),
    )


def spec_contexts(args: argparse.Namespace, problems: list[Any]) -> Iterator[tuple[Any, Any]]:
    """Each loaded spec of ``-f`` with its render context (the flags over ``./cdk.json``'s
    context); a spec that did not load adds its problems to ``problems`` instead."""
    fallback = _cdk_context()
    for loaded in spec_results(args):
        if isinstance(loaded, MlccError):
            problems.extend(loaded.problems)
            continue
        yield (
            loaded,
            render_context(
                loaded,
                fallback,
                args.load_balancer_cidrs,
                args.prometheus_url,
                args.prometheus_operator_namespace,
                getattr(args, "image_registry", None),
            ),
        )


def run_render(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.serving import renderer as rendering

    renderer = rendering.Renderer(rendering.RenderOptions(registry=registry_from(args)))

    def listed() -> Iterator[Any]:
        """Each entry of -f, or the error that refused loading it, in list order."""
        refused: list[Any] = []
        for loaded, context in spec_contexts(args, refused):
            if refused:  # the entries before this one that did not load
                yield MlccError(list(refused))
                refused.clear()
            yield rendering.RenderEntry(
                where=loaded.where, spec=loaded.spec, context=context, locate=loaded.locate
            )
        if refused:
            yield MlccError(list(refused))

    # The one path of a list (stdout, --out, dist/): every entry's objects and problems, and
    # the duplicate rule; every problem of every deployment, nothing written.
    result = renderer.render_each(listed())
    if result.problems:
        raise MlccError(result.problems)
    rendered = result.rendered
    for entry in rendered:
        for note in entry.rendered.warnings:
            print(f"mlcc: {note}", file=sys.stderr)
    if args.out:
        from mlcc_constructs.ops.render_output import write_folder

        files = (
            rendering.object_files(rendered[0])
            if len(rendered) == 1
            else rendering.list_files(rendered)
        )
        for path in write_folder(Path(args.out), dict(files)):
            print(path)
        return 0
    sys.stdout.write(rendering.stream_text(rendered))
    return 0
