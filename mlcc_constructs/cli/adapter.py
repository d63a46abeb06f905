"""``mlcc adapter promote|plan|add|update|remove``: LoRA adapters on S3 and in serving pods.

- ``promote NAME --from SRC``: copy a source prefix or ``.tar.gz`` to its canonical version
  (identical content: nothing copied). Prints the promotion as JSON.
- ``plan NAME --from SRC``: the delivery plan as JSON, nothing written (= ``add --dry-run``).
- ``add NAME --from SRC``: refusals, rank pre-check, promote/copy, then load on every pod.
- ``update NAME --from SRC``: the same delivery, then unload + load on every pod.
- ``remove NAME``: unload from every pod, delete only this deployment's serving copies.

Pods are given as ``--pod-url http://IP:PORT`` (repeatable), or discovered with ``--discover``:
``kubectl get pods -l <selector>`` (Running pods only; URL = pod IP + the engine's port), the
pod env (container env + envFrom ConfigMaps) for the live rank limit, and for hyperpod-eks the
live ``InferenceEndpointConfig`` named ``--deployment-name``. Without discovery the live state
can be given with ``--pod-env KEY=VALUE`` and ``--iec FILE``. The report is JSON on stdout;
the exit code is 1 when any pod failed.

S3: boto3's usual credentials and region; ``--endpoint-url`` (or ``AWS_ENDPOINT_URL``) for an
S3-compatible endpoint. The core bucket name comes from ``stacks/buckets.json`` for
``--account``/``--region``/``--profile``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Literal

from mlcc_constructs.cli._common import add_registry_options, parse_assignments
from mlcc_constructs.core.errors import fail

if TYPE_CHECKING:  # the handlers import these lazily: keep `mlcc` start-up small
    from mlcc_constructs.core.adapter_deployment import Deployment, LiveState
    from mlcc_constructs.ops.pods import PodResult


_FROM_HELP = "the adapter: an s3:// prefix with its PEFT files, or an s3:// .tar.gz of them"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("adapter", help="promote and deliver LoRA adapters")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    promote = actions.add_parser("promote", help="promote a source to its canonical version")
    _add_common(promote, deployment=False)
    promote.add_argument("--from", dest="source", required=True, metavar="SRC", help=_FROM_HELP)
    promote.add_argument("--technique", default=None, help="e.g. sft, dpo")
    promote.add_argument("--source-job", default=None, help="the job that produced it")
    promote.add_argument("--dry-run", action="store_true", help="hash and report; write nothing")
    promote.set_defaults(func=run_promote)

    for action, text in (
        ("plan", "print the delivery plan as JSON; write and call nothing"),
        ("add", "deliver an adapter and load it on every pod"),
        ("update", "deliver a new version and swap it in on every pod"),
    ):
        sub = actions.add_parser(action, help=text)
        _add_common(sub, deployment=True)
        sub.add_argument("--from", dest="source", required=True, metavar="SRC", help=_FROM_HELP)
        if action != "plan":
            sub.add_argument("--dry-run", action="store_true", help="print the plan only")
        sub.set_defaults(func=run_deliver)

    remove = actions.add_parser("remove", help="unload from every pod, delete serving copies")
    _add_common(remove, deployment=True, buckets=False)
    remove.add_argument("--dry-run", action="store_true", help="report only")
    remove.set_defaults(func=run_remove)


def _add_common(parser: argparse.ArgumentParser, *, deployment: bool, buckets: bool = True) -> None:
    parser.add_argument("name", help="adapter name (the engine's lora_name)")
    parser.add_argument("--project", required=True, help="project the adapter belongs to")
    parser.add_argument(
        "--base-model", default=None, help="Hugging Face id of the base (default: derived)"
    )
    parser.add_argument("--base-revision", default=None, help="base model revision, if known")
    if buckets:
        parser.add_argument("--account", required=True, help="AWS account id (bucket names)")
        parser.add_argument("--region", required=True, help="AWS region (bucket names)")
        parser.add_argument("--profile", required=True, help="mlcc profile, e.g. dev")
    else:
        parser.add_argument("--region", default=None, help="AWS region (default: boto3's)")
    parser.add_argument("--endpoint-url", default=None, help="S3 endpoint (default: AWS)")
    if not deployment:
        return
    parser.add_argument("--engine", default="vllm", help="engine name (default: vllm)")
    parser.add_argument("--target", default="eks", help="eks or hyperpod-eks (default: eks)")
    parser.add_argument(
        "--model", required=True, help="the deployment's model: s3://bucket/prefix/"
    )
    parser.add_argument(
        "--pod-url", action="append", default=[], metavar="URL", help="a serving pod; repeatable"
    )
    parser.add_argument(
        "--pod-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="live pod env (e.g. VLLM_MAX_LORA_RANK=64); repeatable",
    )
    parser.add_argument("--iec", default=None, metavar="FILE", help="live IEC as JSON or YAML")
    parser.add_argument(
        "--discover", action="store_true", help="find pods, pod env and the IEC with kubectl"
    )
    parser.add_argument("--namespace", default="default", help="Kubernetes namespace")
    parser.add_argument(
        "--deployment-name",
        default=None,
        help="the serving Deployment/IEC name (default selector app.kubernetes.io/name=NAME)",
    )
    parser.add_argument("--selector", default=None, help="pod label selector for --discover")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per pod call")
    add_registry_options(parser)


def _s3(args: argparse.Namespace) -> Any:
    import boto3  # type: ignore[import-untyped]

    return boto3.client("s3", endpoint_url=args.endpoint_url, region_name=args.region)


def _core_bucket(args: argparse.Namespace) -> str:
    from mlcc_constructs.core.buckets import bucket_name

    return bucket_name("core", account=args.account, region=args.region, profile=args.profile)


def _print(document: Any) -> None:
    print(json.dumps(document, indent=2))


def run_promote(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.promotion import promote

    promotion = promote(
        _s3(args),
        source_uri=args.source,
        core_bucket=_core_bucket(args),
        project=args.project,
        name=args.name,
        base_model=args.base_model,
        base_revision=args.base_revision,
        technique=args.technique,
        source_job=args.source_job,
        dry_run=args.dry_run,
    )
    _print(promotion.to_json())
    return 0


# --- deployment and live state ----------------------------------------------------------


def _deployment(args: argparse.Namespace) -> Deployment:
    from mlcc_constructs.cli._common import registry_from
    from mlcc_constructs.core.adapter_deployment import Deployment

    return Deployment.for_engine(
        registry_from(args).get(args.engine),
        target=args.target,
        model=args.model,
        project=args.project,
        base_model=args.base_model,
        base_revision=args.base_revision,
    )


def _live(args: argparse.Namespace) -> tuple[list[str], LiveState]:
    """Pod URLs and the live state: discovered, then ``--pod-env``/``--iec`` on top."""
    from mlcc_constructs.core.adapter_deployment import LiveState

    urls: list[str] = []
    live = LiveState()
    if args.discover:
        urls, live = _discover(args)
    env = parse_assignments(args.pod_env, "--pod-env")
    iec = live.iec
    if args.iec:
        import yaml

        with open(args.iec, encoding="utf-8") as handle:
            iec = yaml.safe_load(handle)
    if env or args.iec:
        live = LiveState(
            pod_env={**(live.pod_env or {}), **env} or None, iec=iec, s3_mount=live.s3_mount
        )
    return [*urls, *args.pod_url], live


def _discover(args: argparse.Namespace) -> tuple[list[str], LiveState]:
    from mlcc_constructs.cli._common import registry_from
    from mlcc_constructs.ops.kubectl import discover

    if not args.deployment_name and not args.selector:
        raise fail("--discover needs --deployment-name or --selector", where="--discover")
    return discover(
        target=args.target,
        namespace=args.namespace,
        selector=args.selector or f"app.kubernetes.io/name={args.deployment_name}",
        port=registry_from(args).get(args.engine).launch.get("port"),
        iec_name=args.deployment_name,
    )


# --- add / update / plan / remove -------------------------------------------------------


def run_deliver(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.delivery import apply_delivery, plan_delivery
    from mlcc_constructs.ops.pods import PodClient, roll_out

    deployment = _deployment(args)
    pods, live = _live(args)
    s3 = _s3(args)
    operation: Literal["add", "update"] = "update" if args.action == "update" else "add"
    plan = plan_delivery(
        s3,
        operation=operation,
        deployment=deployment,
        live=live,
        name=args.name,
        source=args.source,
        core_bucket=_core_bucket(args),
        base_model=args.base_model,
    )
    if args.action == "plan" or args.dry_run:
        _print({**plan.to_json(), "pods": pods})
        return 0
    client = PodClient(deployment.adapter_api, timeout=args.timeout)
    applied = apply_delivery(s3, plan, deployment, base_model=args.base_model)
    results = roll_out(
        client, pods, name=args.name, path=applied.path, unload_first=operation == "update"
    )
    return _report(applied.to_json(), pods, results)


def run_remove(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.delivery import remove_serving_copies
    from mlcc_constructs.ops.pods import PodClient, roll_out

    deployment = _deployment(args)
    pods, _ = _live(args)
    s3 = _s3(args)
    if args.dry_run:
        deleted = remove_serving_copies(s3, deployment, args.name, dry_run=True)
        _print({"lora_name": args.name, "pods": pods, "delete": deleted})
        return 0
    client = PodClient(deployment.adapter_api, timeout=args.timeout)
    results = roll_out(client, pods, name=args.name, path=None, unload_first=True)
    if any(not r.ok for r in results):
        # keep the files while a pod may still serve them
        return _report({"lora_name": args.name, "deleted": []}, pods, results)
    deleted = remove_serving_copies(s3, deployment, args.name)
    return _report({"lora_name": args.name, "deleted": deleted}, pods, results)


def _report(document: dict[str, Any], pods: list[str], results: list[PodResult]) -> int:
    failed = sorted({r.pod for r in results if not r.ok})
    _print({**document, "pods": [r.to_json() for r in results], "failed_pods": failed})
    if not pods:
        print(
            "mlcc: warning: no pods given (--pod-url or --discover): nothing loaded or unloaded",
            file=sys.stderr,
        )
    for pod in failed:
        print(f"mlcc: error: pod {pod} failed", file=sys.stderr)
    return 1 if failed else 0
