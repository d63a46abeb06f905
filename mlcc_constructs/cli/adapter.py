"""``mlcc adapter promote|plan|add|update|remove|pack|list|clean``: LoRA adapters on S3 and in
pods.

- ``promote NAME --from SRC``: copy a source prefix, ``.tar.gz`` or Hugging Face repository
  (``hf://<org>/<repo>[@revision]``) to its canonical version (identical content: nothing
  copied). Prints the promotion as JSON.
- ``plan NAME --from SRC``: the delivery plan as JSON, nothing written (= ``add --dry-run``).
- ``add NAME --from SRC``: refusals, rank pre-check, promote/copy, then load on every pod.
- ``update NAME --from SRC``: the same delivery, then unload + load on every pod.
- ``remove NAME``: unload from every pod, delete only this deployment's serving copies.
- ``pack VERSION``: the version as ``<home>/v<hash12>.tar.gz``, the ``ArtifactUrl`` a SageMaker
  adapter inference component needs (target ``realtime-inference``).
- ``list``: every adapter of a project (or of every project) under every staged base, its
  versions newest first, and which version each pod has loaded (``--format json|table``).
  Each recorded version is checked against its record by its sizes (``--verify``: every
  file's sha256); a damaged version, or one whose record cannot be read, is listed so (the
  others still are) and the command exits 1.
- ``clean``: delete the project's adapters under every base and its full fine-tunes, after a
  confirmation (``--yes``; ``--dry-run`` only lists); refused while a pod serves one of them, or
  (``--discover``) a PersistentVolume or InferenceEndpointConfig of the cluster mounts one of
  the fine-tunes as its model (``--force``). ``--delete-noncurrent`` also purges a versioned
  bucket's old versions.

Pods are given as ``--pod-url http://IP:PORT`` (repeatable), or discovered with ``--discover``:
``kubectl get pods -l <selector>`` (Running pods only; URL = pod IP + the engine's port), the
pod env (container env + envFrom ConfigMaps) for the live rank limit, and for hyperpod-eks the
live ``InferenceEndpointConfig`` named ``--deployment-name``. Without discovery the live state
can be given with ``--pod-env KEY=VALUE`` and ``--iec FILE``. A pod given twice (or given and
discovered) is called once, with a warning. ``--timeout`` bounds each pod call in all
(connect and every read); a redirect is never followed, it fails the call; a failing pod's
``mlcc: error:`` line says why (status and answer, redirect, timeout or connection error;
a load refused with 404 or 400 names its cause and the fix).

Every value is checked before anything is written or any pod is called; the report is JSON
on stdout, on failure too (``{"command", "ok": false, "errors"}``), with one ``mlcc: error:``
line per problem on stderr and exit 1 (also when any pod failed).

S3: boto3's usual credentials and region; ``--endpoint-url`` (or ``AWS_ENDPOINT_URL``) for an
S3-compatible endpoint. The core bucket name comes from ``stacks/buckets.json`` for
``--account``/``--region``/``--profile``. Hugging Face: ``HF_TOKEN`` and ``HF_ENDPOINT``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Literal

from mlcc_constructs.cli._adapter_checks import (
    add_bucket_options,
    add_promotion_options,
    check,
    deployment_of,
    live_state,
    promotion_request,
    s3_client,
)
from mlcc_constructs.cli._adapter_inventory import no_pods, run_clean, run_list
from mlcc_constructs.cli._api_key import add_api_key_options
from mlcc_constructs.cli._common import add_registry_options
from mlcc_constructs.cli._parser import (
    Once,
    ReportingParser,
    add_format_option,
    emit,
)

if TYPE_CHECKING:  # the handlers import these lazily: keep `mlcc` start-up small
    from mlcc_constructs.ops.pods import PodResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("adapter", help="promote, deliver, list and clean LoRA adapters")
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=ReportingParser
    )

    promote = actions.add_parser("promote", help="promote a source to its canonical version")
    _add_adapter(promote)
    add_bucket_options(promote)
    add_promotion_options(promote, source_help=_FROM)
    promote.set_defaults(func=run_promote)

    for action, text in (
        ("plan", "print the delivery plan as JSON; write and call nothing"),
        ("add", "deliver an adapter and load it on every pod"),
        ("update", "deliver a new version and swap it in on every pod"),
    ):
        sub = actions.add_parser(action, help=text)
        _add_adapter(sub)
        add_bucket_options(sub)
        _add_deployment(sub)
        sub.add_argument(
            "--from", action=Once, dest="source", required=True, metavar="SRC", help=_FROM
        )
        if action != "plan":
            sub.add_argument("--dry-run", action="store_true", help="print the plan only")
        sub.set_defaults(func=run_deliver)

    remove = actions.add_parser("remove", help="unload from every pod, delete serving copies")
    _add_adapter(remove)
    remove.add_argument("--region", default=None, help="AWS region (default: boto3's)")
    _add_deployment(remove)
    remove.add_argument("--dry-run", action="store_true", help="report only")
    remove.set_defaults(func=run_remove)

    pack = actions.add_parser(
        "pack",
        help="pack a canonical version into <home>/v<hash12>.tar.gz (the ArtifactUrl of a "
        "SageMaker adapter inference component)",
    )
    pack.add_argument(
        "version", metavar="VERSION", help="the canonical version: s3://.../<name>/v<hash12>/"
    )
    pack.add_argument("--region", default=None, help="AWS region (default: boto3's)")
    pack.add_argument("--endpoint-url", default=None, help="S3 endpoint (default: AWS)")
    pack.add_argument("--dry-run", action="store_true", help="report what would be packed")
    pack.set_defaults(func=run_pack)

    listing = actions.add_parser("list", help="list adapters, their versions and what pods load")
    listing.add_argument("--project", default=None, help="only this project (default: every one)")
    listing.add_argument("--base-model", default=None, help="only this base (Hugging Face id)")
    add_bucket_options(listing)
    _add_models(listing)
    _add_pods(listing)
    listing.add_argument(
        "--verify",
        action="store_true",
        help="read every file of each recorded version and check its sha256 against the record "
        "(default: sizes only, from the listing)",
    )
    listing.set_defaults(func=run_list)

    clean = actions.add_parser(
        "clean", help="delete a project's adapters (every base) and full fine-tunes"
    )
    clean.add_argument("--project", required=True, help="the project to delete")
    add_bucket_options(clean)
    _add_models(clean)
    _add_pods(clean)
    clean.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    clean.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
    clean.add_argument(
        "--force",
        action="store_true",
        help="delete even while a pod serves one of the adapters, or (with --discover) a "
        "deployment in the cluster serves one of the fine-tunes as its model",
    )
    clean.add_argument(
        "--delete-noncurrent",
        action="store_true",
        help="versioned bucket: also delete every old version and delete marker under the "
        "project's prefixes, permanently",
    )
    clean.set_defaults(func=run_clean)
    for sub in actions.choices.values():
        add_format_option(sub, default="json")


_FROM = (
    "s3://bucket/prefix/, s3://bucket/adapter.tar.gz, a canonical adapter or hf://org/repo[@rev]"
)


def _add_adapter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="adapter name (the engine's lora_name)")
    parser.add_argument("--project", required=True, help="project the adapter belongs to")
    parser.add_argument(
        "--base-model", default=None, help="Hugging Face id of the base (default: derived)"
    )
    parser.add_argument("--base-revision", default=None, help="base model revision, if known")
    parser.add_argument("--endpoint-url", default=None, help="S3 endpoint (default: AWS)")


def _add_models(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        dest="models",
        action="append",
        default=[],
        metavar="S3_PREFIX",
        help="also look under this staged model prefix (serving copies); repeatable",
    )


def _add_pods(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", default="vllm", help="engine name (default: vllm)")
    parser.add_argument("--target", default="eks", help="eks or hyperpod-eks (default: eks)")
    parser.add_argument(
        "--pod-url", action="append", default=[], metavar="URL", help="a serving pod; repeatable"
    )
    parser.add_argument(
        "--discover", action="store_true", help="find the Running pods with kubectl"
    )
    parser.add_argument("--namespace", default="default", help="Kubernetes namespace")
    parser.add_argument(
        "--deployment-name",
        default=None,
        help="the serving Deployment/IEC name (--discover selects its pods by the target's "
        "pod name label: app.kubernetes.io/name=NAME on eks, app=NAME on hyperpod-eks)",
    )
    parser.add_argument("--selector", default=None, help="pod label selector for --discover")
    parser.add_argument(
        "--timeout",
        default="60",
        help="seconds for each pod call in all: connect and every read (default: 60)",
    )
    add_api_key_options(parser)
    add_registry_options(parser)


def _add_deployment(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, help="the deployment's model: s3://bucket/prefix/"
    )
    parser.add_argument(
        "--pod-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="live pod env (e.g. VLLM_MAX_LORA_RANK=64); repeatable",
    )
    parser.add_argument("--iec", default=None, metavar="FILE", help="live IEC as JSON or YAML")
    _add_pods(parser)


# --- promote / add / update / plan / remove ---------------------------------------------


def run_promote(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.promotion import promote

    inputs = check(args)
    promotion = promote(s3_client(args), **promotion_request(args, inputs))
    emit(args, promotion.to_json())
    return 0


def run_deliver(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.delivery import apply_delivery, plan_delivery
    from mlcc_constructs.ops.pods import PodClient, roll_out

    inputs = check(args)
    assert inputs.manifest is not None
    deployment = deployment_of(args, inputs.manifest)
    pods, live = live_state(args, inputs)
    s3 = s3_client(args)
    operation: Literal["add", "update"] = "update" if args.action == "update" else "add"
    plan = plan_delivery(
        s3,
        operation=operation,
        deployment=deployment,
        live=live,
        name=args.name,
        source=args.source,
        core_bucket=inputs.core_bucket,
        base_model=args.base_model,
    )
    if args.action == "plan" or args.dry_run:
        emit(args, {**plan.to_json(), "pods": pods})
        return 0
    client = PodClient(
        deployment.adapter_api,
        timeout=inputs.timeout,
        api_key=inputs.api_key,
        runtime_env=deployment.runtime_env,
    )
    applied = apply_delivery(s3, plan, deployment, base_model=args.base_model)
    results = roll_out(
        client, pods, name=args.name, path=applied.path, unload_first=operation == "update"
    )
    return _report(args, applied.to_json(), pods, results)


def run_remove(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.delivery import remove_serving_copies
    from mlcc_constructs.ops.pods import PodClient, roll_out

    inputs = check(args)
    assert inputs.manifest is not None
    deployment = deployment_of(args, inputs.manifest)
    pods, _ = live_state(args, inputs)
    s3 = s3_client(args)
    if args.dry_run:
        deleted = remove_serving_copies(s3, deployment, args.name, dry_run=True)
        emit(args, {"lora_name": args.name, "pods": pods, "delete": deleted})
        return 0
    client = PodClient(deployment.adapter_api, timeout=inputs.timeout, api_key=inputs.api_key)
    results = roll_out(client, pods, name=args.name, path=None, unload_first=True)
    if any(not r.ok for r in results):
        # keep the files while a pod may still serve them
        return _report(args, {"lora_name": args.name, "deleted": []}, pods, results)
    deleted = remove_serving_copies(s3, deployment, args.name)
    return _report(args, {"lora_name": args.name, "deleted": deleted}, pods, results)


def _report(
    args: argparse.Namespace, document: dict[str, Any], pods: list[str], results: list[PodResult]
) -> int:
    failed = sorted({r.pod for r in results if not r.ok})
    report = {**document, "pods": [r.to_json() for r in results], "failed_pods": failed}
    emit(args, report, ok=not failed)
    if not pods:
        print(f"mlcc: warning: {no_pods(args)}: nothing loaded or unloaded", file=sys.stderr)
    for result in results:
        if not result.ok:
            print(
                f"mlcc: error: pod {result.pod} failed: {result.action}: {result.reason}",
                file=sys.stderr,
            )
    return 1 if failed else 0


def run_pack(args: argparse.Namespace) -> int:
    from mlcc_constructs.cli._inputs import checked, url_problems
    from mlcc_constructs.core.adapters import s3_layout as layout
    from mlcc_constructs.core.support.errors import MlccError
    from mlcc_constructs.ops.adapter_pack import pack_version

    problems = url_problems("--endpoint-url", args.endpoint_url, path=True)
    problems += checked("VERSION", lambda: layout.parse_adapter_version(args.version))[1]
    if problems:
        raise MlccError(problems)
    emit(args, pack_version(s3_client(args), args.version, dry_run=args.dry_run).to_json())
    return 0
