"""``mlcc preflight``: what would fail a deploy, found before it starts, with read-only calls.

App mode (the default) reads the app as ``cdk synth`` does: ``./cdk.json``'s context with
``-c KEY=VALUE`` over it (its deployments, ``ecr_pull_through_secrets``, ``admin_role_arns``,
``hyperpod_instance_groups``), and the bootstrap version the synthesised app needs from
``./cdk.out`` (``make synth`` first). Spec mode (``-f SPEC``) checks the deployments of a spec
file on a cluster the app does not describe (``--cluster NAME``: its Kubernetes version is read
for the add-on and HyperPod checks; ``--kubernetes-version`` for a cluster still to come).

Every check runs and reports at once, each with what it found, what is needed and the fix (the
checks and their AWS APIs: :data:`~mlcc_constructs.core.preflight.findings.CHECKS`). Exit 1 when
any finding is a blocker (``--strict``: or could not be checked), else 0. No secret value is
ever read: secrets are checked with DescribeSecret.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mlcc_constructs.cli._parser import add_format_option, emit
from mlcc_constructs.core.support.errors import fail

QUERY_URL_TOKEN = "${Token[mlcc.preflight.cluster-query-url]}"
"""What an autoscaled deployment's Prometheus URL is while preflight prepares it (the app's
cluster makes the workspace; preflight renders nothing it applies)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "preflight",
        help="check the AWS account before cdk deploy: quotas, capacity, add-on builds, "
        "versions, secrets, certificates, staged models, roles, CDK bootstrap (read-only)",
        description="Check, with read-only AWS calls and the deployer's credentials, what would "
        "fail cdk deploy late: EC2 vCPU quotas against the app's peak GPU nodes, instance "
        "offerings in its zones, P-family capacity reservations, HyperPod quotas and "
        "Kubernetes version, EKS add-on builds, Secrets Manager secrets (metadata only), ACM "
        "certificates, hosted zones, staged s3:// models, admin roles and the CDK bootstrap. "
        "Every finding says what was found, what is needed and the fix. Exit 1 on a blocker.",
    )
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a CDK context value over cdk.json's, as cdk deploy -c takes it; repeatable",
    )
    parser.add_argument(
        "-f",
        "--file",
        default=None,
        metavar="SPEC",
        help="spec mode: check the deployments of this spec file (mlcc render -f format) "
        "instead of the app's",
    )
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument(
        "--cluster",
        default=None,
        metavar="NAME",
        help="spec mode: the EKS cluster the deployments run on (its Kubernetes version is "
        "read: the pinned add-on builds are checked for it)",
    )
    cluster.add_argument(
        "--kubernetes-version",
        default=None,
        metavar="X.Y",
        help="spec mode: the cluster's Kubernetes version, when it does not exist yet (app "
        "mode: the pinned one)",
    )
    parser.add_argument(
        "--region", default=None, help="AWS region (default: the app's context region)"
    )
    parser.add_argument("--cdk-json", default="cdk.json", help="the app's cdk.json")
    parser.add_argument(
        "--cdk-out", default="cdk.out", help="the synthesised app (its bootstrap version)"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="also exit 1 when a check could not run (access denied, API not available)",
    )
    parser.add_argument(
        "--endpoint-url",
        default=None,
        help="one endpoint for every AWS service (a moto server in tests; default: AWS)",
    )
    add_format_option(parser, default="table")
    parser.set_defaults(func=run_preflight)


def app_context(path: Path, pairs: list[str]) -> dict[str, Any]:
    """cdk.json's ``context`` with each ``-c KEY=VALUE`` over it (the values as CDK passes
    them: strings; the readers decode JSON text)."""
    context: dict[str, Any] = {}
    if path.is_file():
        context = dict(json.loads(path.read_text(encoding="utf-8")).get("context", {}))
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(
                "-c takes KEY=VALUE",
                where="-c",
                value=pair,
                fix="e.g. -c region=us-west-2, as cdk deploy takes it",
            )
        context[key] = value
    return context


def run_preflight(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from mlcc_constructs.core.preflight.checks import all_findings
    from mlcc_constructs.core.preflight.findings import exit_code, report_document, report_table
    from mlcc_constructs.ops.preflight import (
        DEFAULT_QUALIFIER,
        QUALIFIER_KEY,
        boto3_clients,
        gather,
        required_bootstrap,
    )

    context = app_context(Path(args.cdk_json), args.context)
    if args.region:
        context["region"] = args.region
    needs = _spec_needs(args, context) if args.file else _app_needs(context)
    required, parameter = required_bootstrap(Path(args.cdk_out))
    qualifier = str(context.get(QUALIFIER_KEY) or DEFAULT_QUALIFIER)
    parameter = parameter or f"/cdk-bootstrap/{qualifier}/version"
    facts = gather(
        needs,
        boto3_clients(endpoint_url=args.endpoint_url),
        bootstrap_required=required,
        bootstrap_parameter=parameter,
    )
    findings = all_findings(needs, facts, now=datetime.now(UTC), qualifier=qualifier)
    code = exit_code(findings, strict=args.strict)
    emit(args, report_document(findings), ok=code == 0, table=lambda: report_table(findings))
    return code


def _app_needs(context: dict[str, Any]) -> Any:
    """What the app of ``context`` needs (its deployments prepared as app.py prepares them)."""
    from mlcc_constructs.core.platform.app_settings import (
        read_egress,
        read_environment,
        read_hyperpod,
    )
    from mlcc_constructs.core.platform.versions import pinned
    from mlcc_constructs.core.preflight.needs import app_needs
    from mlcc_constructs.core.serving.spec.app_deployments import prepare_app_deployments

    get = context.get
    environment = read_environment(get)
    deployments = prepare_app_deployments(
        get,
        environment=environment,
        prometheus_query_url=get("prometheus_query_url") or QUERY_URL_TOKEN,
    )
    egress = read_egress(get, environment)
    return app_needs(
        [(d.where, d.prepared) for d in deployments],
        environment=environment,
        pull_through_secrets=egress.pull_through_secrets,
        hyperpod=read_hyperpod(get, environment),
        pinned=pinned(),
    )


def _spec_needs(args: argparse.Namespace, context: dict[str, Any]) -> Any:
    """What the deployments of ``-f SPEC`` need (their account, region and profile, else the
    context's)."""
    from mlcc_constructs.core.platform.versions import pinned
    from mlcc_constructs.core.preflight.needs import spec_needs
    from mlcc_constructs.core.serving.spec.app_deployments import prepare_labelled
    from mlcc_constructs.core.serving.spec.files import load_spec_documents

    defaults = {key: context.get(key) for key in ("account", "region", "profile")}
    deployments = prepare_labelled(
        load_spec_documents(args.file),
        defaults=defaults,
        prometheus_query_url=context.get("prometheus_query_url") or QUERY_URL_TOKEN,
    )
    region = args.region or defaults["region"]
    if not region:
        raise fail(
            "spec mode needs the region the deployments run in",
            where="--region",
            fix="pass --region REGION (or run where cdk.json names the region)",
        )
    return spec_needs(
        [(d.where, d.prepared) for d in deployments],
        region=str(region),
        account=str(defaults["account"]) if defaults["account"] else None,
        kubernetes=args.kubernetes_version,
        cluster=args.cluster,
        pinned=pinned(),
    )
