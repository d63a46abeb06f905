"""``mlcc adapter promote|plan|add|update|remove|list|clean``: LoRA adapters on S3 and in pods.

- ``promote NAME --from SRC``: copy a source prefix, ``.tar.gz`` or Hugging Face repository
  (``hf://<org>/<repo>[@revision]``) to its canonical version (identical content: nothing
  copied). Prints the promotion as JSON.
- ``plan NAME --from SRC``: the delivery plan as JSON, nothing written (= ``add --dry-run``).
- ``add NAME --from SRC``: refusals, rank pre-check, promote/copy, then load on every pod.
- ``update NAME --from SRC``: the same delivery, then unload + load on every pod.
- ``remove NAME``: unload from every pod, delete only this deployment's serving copies.
- ``list``: every adapter of a project (or of every project) under every staged base, its
  versions newest first, and which version each pod has loaded (``--format json|table``).
- ``clean``: delete the project's adapters under every base and its full fine-tunes, after a
  confirmation (``--yes``; ``--dry-run`` only lists); refused while a pod serves one of them
  (``--force``). ``--delete-noncurrent`` also purges a versioned bucket's old versions.

Pods are given as ``--pod-url http://IP:PORT`` (repeatable), or discovered with ``--discover``:
``kubectl get pods -l <selector>`` (Running pods only; URL = pod IP + the engine's port), the
pod env (container env + envFrom ConfigMaps) for the live rank limit, and for hyperpod-eks the
live ``InferenceEndpointConfig`` named ``--deployment-name``. Without discovery the live state
can be given with ``--pod-env KEY=VALUE`` and ``--iec FILE``.

Every value is checked before anything is written or any pod is called; the report is JSON
on stdout, on failure too (``{"command", "ok": false, "errors"}``), with one ``mlcc: error:``
line per problem on stderr and exit 1 (also when any pod failed).

S3: boto3's usual credentials and region; ``--endpoint-url`` (or ``AWS_ENDPOINT_URL``) for an
S3-compatible endpoint. The core bucket name comes from ``stacks/buckets.json`` for
``--account``/``--region``/``--profile``. Hugging Face: ``HF_TOKEN`` and ``HF_ENDPOINT``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mlcc_constructs.cli._common import ReportingParser, add_registry_options, parse_assignments
from mlcc_constructs.cli._inputs import (
    at_flag,
    checked,
    dns_problems,
    failure_report,
    text_problems,
    timeout_problems,
    url_problems,
)
from mlcc_constructs.core.errors import MlccError, Problem, fail

if TYPE_CHECKING:  # the handlers import these lazily: keep `mlcc` start-up small
    from mlcc_constructs.core.adapter_deployment import Deployment, LiveState
    from mlcc_constructs.core.manifests import EngineManifest
    from mlcc_constructs.core.s3_layout import S3Location
    from mlcc_constructs.ops.pods import PodModels, PodResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("adapter", help="promote, deliver, list and clean LoRA adapters")
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=ReportingParser
    )

    promote = actions.add_parser("promote", help="promote a source to its canonical version")
    _add_adapter(promote)
    _add_buckets(promote)
    promote.add_argument("--from", dest="source", required=True, metavar="SRC", help=_FROM)
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
        _add_adapter(sub)
        _add_buckets(sub)
        _add_deployment(sub)
        sub.add_argument("--from", dest="source", required=True, metavar="SRC", help=_FROM)
        if action != "plan":
            sub.add_argument("--dry-run", action="store_true", help="print the plan only")
        sub.set_defaults(func=run_deliver)

    remove = actions.add_parser("remove", help="unload from every pod, delete serving copies")
    _add_adapter(remove)
    remove.add_argument("--region", default=None, help="AWS region (default: boto3's)")
    _add_deployment(remove)
    remove.add_argument("--dry-run", action="store_true", help="report only")
    remove.set_defaults(func=run_remove)

    listing = actions.add_parser("list", help="list adapters, their versions and what pods load")
    listing.add_argument("--project", default=None, help="only this project (default: every one)")
    listing.add_argument("--base-model", default=None, help="only this base (Hugging Face id)")
    _add_buckets(listing)
    _add_models(listing)
    _add_pods(listing)
    listing.add_argument(
        "--format", choices=("json", "table"), default="json", help="json (default) or table"
    )
    listing.set_defaults(func=run_list)

    clean = actions.add_parser(
        "clean", help="delete a project's adapters (every base) and full fine-tunes"
    )
    clean.add_argument("--project", required=True, help="the project to delete")
    _add_buckets(clean)
    _add_models(clean)
    _add_pods(clean)
    clean.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    clean.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")
    clean.add_argument(
        "--force", action="store_true", help="delete even while a pod serves one of the adapters"
    )
    clean.add_argument(
        "--delete-noncurrent",
        action="store_true",
        help="versioned bucket: also delete every old version and delete marker under the "
        "project's prefixes, permanently",
    )
    clean.set_defaults(func=run_clean)


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


def _add_buckets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--account", required=True, help="AWS account id (bucket names)")
    parser.add_argument("--region", required=True, help="AWS region (bucket names)")
    parser.add_argument("--profile", required=True, help="mlcc profile, e.g. dev")
    if not any(a.dest == "endpoint_url" for a in parser._actions):
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
        help="the serving Deployment/IEC name (default selector app.kubernetes.io/name=NAME)",
    )
    parser.add_argument("--selector", default=None, help="pod label selector for --discover")
    parser.add_argument("--timeout", default="60", help="seconds per pod call (default: 60)")
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


# --- reporting and input checks ---------------------------------------------------------


def _print(document: Any) -> None:
    print(json.dumps(document, indent=2))


def _reported(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Print the command's JSON failure report for any bad input or S3 error, then let
    ``mlcc`` print the ``mlcc: error:`` lines (a bug keeps its traceback)."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from mlcc_constructs.cli import error_lines

        try:
            return handler(args)
        except ReportedError as error:
            _print({**error.document, "ok": False, "errors": [str(p) for p in error.problems]})
            raise
        except Exception as error:
            lines = error_lines(error)
            if lines is not None:
                _print(failure_report(f"adapter {args.action}", lines))
            raise

    return run


class ReportedError(MlccError):
    """A failure whose JSON report the command built itself (it is printed instead of the
    generic one)."""

    def __init__(self, problems: list[Problem], document: dict[str, Any]) -> None:
        super().__init__(problems)
        self.document = document


@dataclass
class _Inputs:
    """Checked values of the command line."""

    core_bucket: str = ""
    timeout: float = 60.0
    pod_env: dict[str, str] = field(default_factory=dict)
    iec: Any = None
    manifest: EngineManifest | None = None
    models: list[S3Location] = field(default_factory=list)


def _check(args: argparse.Namespace) -> _Inputs:
    """Every value of the command line, all problems at once, before any side effect."""
    from mlcc_constructs.core import s3_layout as layout

    problems: list[Problem] = []
    inputs = _Inputs()
    name = getattr(args, "name", None)
    if name is not None:
        problems += at_flag("NAME", filter(None, [layout.component_problem(name)]))
    if args.project is not None:
        problems += at_flag("--project", filter(None, [layout.component_problem(args.project)]))
    problems += _bucket_problems(args, inputs)
    problems += url_problems("--endpoint-url", args.endpoint_url, path=True)
    if getattr(args, "base_model", None) is not None:
        problems += checked("--base-model", lambda: layout.base_model(args.base_model))[1]
    problems += text_problems(
        "--base-revision", getattr(args, "base_revision", None), what="revision"
    )
    if getattr(args, "technique", None) is not None:
        problems += at_flag("--technique", filter(None, [layout.component_problem(args.technique)]))
    problems += text_problems("--source-job", getattr(args, "source_job", None), what="job name")
    if getattr(args, "source", None) is not None:
        problems += _source_problems(args)
    for uri in getattr(args, "models", []):
        model, found = checked("--model", functools.partial(_model, uri))
        problems += found
        if model is not None:
            inputs.models.append(model)
    if hasattr(args, "pod_url"):
        problems += _pod_problems(args, inputs)
    if hasattr(args, "pod_env"):
        problems += _live_input_problems(args, inputs)
        if not problems:  # the deployment is whole: its own refusals (pure, from config)
            problems += _deployment_problems(args, inputs)
    if problems:
        raise MlccError(problems)
    return inputs


def _model(uri: str) -> S3Location:
    from mlcc_constructs.core import s3_layout as layout

    location = layout.parse_s3_uri(uri, pointer="")
    return layout.model_location(location.bucket, location.key)


def _bucket_problems(args: argparse.Namespace, inputs: _Inputs) -> list[Problem]:
    from mlcc_constructs.core.buckets import bucket_name, environment_problems

    if getattr(args, "account", None) is None:  # remove: the region is boto3's only
        found = environment_problems(region=args.region) if args.region is not None else []
        return [replace_flag(p) for p in found]
    found = environment_problems(account=args.account, region=args.region, profile=args.profile)
    if found:
        return [replace_flag(p) for p in found]
    inputs.core_bucket = bucket_name(
        "core", account=args.account, region=args.region, profile=args.profile
    )
    return []


def replace_flag(problem: Problem) -> Problem:
    """A problem at ``/account`` (a field) as one at ``--account`` (the flag holding it)."""
    return at_flag("--" + problem.pointer.lstrip("/").replace("_", "-"), [problem])[0]


def _source_problems(args: argparse.Namespace) -> list[Problem]:
    from mlcc_constructs.core import s3_layout as layout
    from mlcc_constructs.core.adapter_plan import canonical_source
    from mlcc_constructs.core.hf_source import is_hf_source

    source = args.source
    if is_hf_source(source) or not source.startswith("s3://"):
        return checked(
            "--from", lambda: canonical_source(source, project=args.project, name=args.name)
        )[1]
    problems = checked("--from", lambda: layout.parse_s3_uri(source, pointer=""))[1]
    if problems:
        return problems
    if layout.parse_canonical_adapter(source) is not None:
        return checked(
            "--from", lambda: canonical_source(source, project=args.project, name=args.name)
        )[1]
    return []


def _pod_problems(args: argparse.Namespace, inputs: _Inputs) -> list[Problem]:
    from mlcc_constructs.cli._common import registry_from
    from mlcc_constructs.core.targets import load_target

    problems: list[Problem] = []
    for url in args.pod_url:
        problems += url_problems("--pod-url", url, path=False)
    inputs.timeout, found = timeout_problems("--timeout", args.timeout)
    problems += found
    registry, found = checked("--plugin-dir", lambda: registry_from(args))
    problems += found
    if registry is not None:
        inputs.manifest, found = checked("--engine", lambda: registry.get(args.engine))
        problems += found
    problems += checked("--target", lambda: load_target(args.target))[1]
    problems += dns_problems("--namespace", args.namespace, label=True)
    problems += dns_problems("--deployment-name", args.deployment_name, label=False)
    if args.selector is not None and not args.selector.strip():
        problems.append(Problem(message="an empty selector", where="--selector", value=""))
    if args.discover and not args.deployment_name and not args.selector:
        problems.append(
            Problem(
                message="--discover needs --deployment-name or --selector",
                where="--discover",
                fix="name the serving Deployment (--deployment-name) or pass --selector",
            )
        )
    if (args.pod_url or args.discover) and inputs.manifest and not inputs.manifest.adapter_api:
        problems.append(
            Problem(
                message=f"engine {args.engine} declares no dynamic LoRA API",
                where="--engine",
                value=args.engine,
                fix="use an engine whose manifest has adapter_api",
            )
        )
    return problems


def _live_input_problems(args: argparse.Namespace, inputs: _Inputs) -> list[Problem]:
    env, problems = checked("--pod-env", lambda: parse_assignments(args.pod_env, "--pod-env"))
    inputs.pod_env = env or {}
    if args.iec is not None:
        inputs.iec, found = checked("--iec", lambda: _read_iec(args.iec))
        problems += found
    return problems


def _deployment_problems(args: argparse.Namespace, inputs: _Inputs) -> list[Problem]:
    from mlcc_constructs.core.adapter_deployment import LiveState, deployment_refusals

    assert inputs.manifest is not None
    model, problems = checked("--model", lambda: _model(args.model))
    if model is None and args.model.startswith("s3://"):
        return problems  # a malformed S3 URI: the refusals below would only repeat it
    deployment = _deployment(args, inputs.manifest)
    return deployment_refusals(deployment, LiveState()) or problems


def _read_iec(path: str) -> Any:
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except OSError as error:
        from mlcc_constructs.cli import os_error_text

        raise fail(os_error_text(error)) from error
    except yaml.YAMLError as error:
        raise fail(f"not valid YAML or JSON: {error}", value=path) from error
    if not isinstance(document, dict):
        raise fail("not an InferenceEndpointConfig object", value=path)
    return document


# --- clients ----------------------------------------------------------------------------


def _s3(args: argparse.Namespace) -> Any:
    import boto3  # type: ignore[import-untyped]

    return boto3.client("s3", endpoint_url=args.endpoint_url, region_name=args.region)


def _deployment(args: argparse.Namespace, manifest: EngineManifest) -> Deployment:
    from mlcc_constructs.core.adapter_deployment import Deployment

    return Deployment.for_engine(
        manifest,
        target=args.target,
        model=args.model,
        project=args.project,
        base_model=args.base_model,
        base_revision=args.base_revision,
    )


def _live(args: argparse.Namespace, inputs: _Inputs) -> tuple[list[str], LiveState]:
    """Pod URLs and the live state: discovered, then ``--pod-env``/``--iec`` on top."""
    from mlcc_constructs.core.adapter_deployment import LiveState

    urls: list[str] = []
    live = LiveState()
    if args.discover:
        urls, live = _discover(args, inputs)
    env = getattr(inputs, "pod_env", {})
    iec = inputs.iec if inputs.iec is not None else live.iec
    if env or inputs.iec is not None:
        live = LiveState(
            pod_env={**(live.pod_env or {}), **env} or None, iec=iec, s3_mount=live.s3_mount
        )
    return [*urls, *args.pod_url], live


def _discover(args: argparse.Namespace, inputs: _Inputs) -> tuple[list[str], LiveState]:
    from mlcc_constructs.ops.kubectl import discover

    assert inputs.manifest is not None
    return discover(
        target=args.target,
        namespace=args.namespace,
        selector=args.selector or f"app.kubernetes.io/name={args.deployment_name}",
        port=inputs.manifest.launch.get("port"),
        iec_name=args.deployment_name,
    )


def _pod_client(inputs: _Inputs) -> Any:
    from mlcc_constructs.core.adapter_deployment import MODEL_LIST_PATH
    from mlcc_constructs.ops.pods import PodClient

    assert inputs.manifest is not None
    api = dict(inputs.manifest.adapter_api or {})
    return PodClient({"list": MODEL_LIST_PATH, **api}, timeout=inputs.timeout)


# --- promote / add / update / plan / remove ---------------------------------------------


@_reported
def run_promote(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.promotion import promote

    inputs = _check(args)
    promotion = promote(
        _s3(args),
        source_uri=args.source,
        core_bucket=inputs.core_bucket,
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


@_reported
def run_deliver(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.delivery import apply_delivery, plan_delivery
    from mlcc_constructs.ops.pods import PodClient, roll_out

    inputs = _check(args)
    assert inputs.manifest is not None
    deployment = _deployment(args, inputs.manifest)
    pods, live = _live(args, inputs)
    s3 = _s3(args)
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
        _print({**plan.to_json(), "pods": pods})
        return 0
    client = PodClient(deployment.adapter_api, timeout=inputs.timeout)
    applied = apply_delivery(s3, plan, deployment, base_model=args.base_model)
    results = roll_out(
        client, pods, name=args.name, path=applied.path, unload_first=operation == "update"
    )
    return _report(applied.to_json(), pods, results)


@_reported
def run_remove(args: argparse.Namespace) -> int:
    from mlcc_constructs.ops.delivery import remove_serving_copies
    from mlcc_constructs.ops.pods import PodClient, roll_out

    inputs = _check(args)
    assert inputs.manifest is not None
    deployment = _deployment(args, inputs.manifest)
    pods, _ = _live(args, inputs)
    s3 = _s3(args)
    if args.dry_run:
        deleted = remove_serving_copies(s3, deployment, args.name, dry_run=True)
        _print({"lora_name": args.name, "pods": pods, "delete": deleted})
        return 0
    client = PodClient(deployment.adapter_api, timeout=inputs.timeout)
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


# --- list / clean -----------------------------------------------------------------------


def _pod_answers(args: argparse.Namespace, inputs: _Inputs) -> list[PodModels]:
    """Each given or discovered pod's model list (none asked: empty)."""
    if not args.pod_url and not args.discover:
        return []
    pods, _ = _live(args, inputs)
    client = _pod_client(inputs)
    return [client.models(pod) for pod in pods]


def _pods_json(answers: list[PodModels], loaded: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "pod": a.pod,
            "ok": a.ok,
            "status": a.status,
            "detail": a.detail,
            "loaded": [
                {
                    "lora_name": x.lora_name,
                    "path": x.path,
                    "project": x.project,
                    "name": x.name,
                    "version": x.version,
                }
                for x in loaded
                if x.pod == a.pod
            ],
        }
        for a in answers
    ]


@_reported
def run_list(args: argparse.Namespace) -> int:
    from mlcc_constructs.core import s3_layout as layout
    from mlcc_constructs.core.adapter_inventory import inventory_table
    from mlcc_constructs.core.targets import load_target
    from mlcc_constructs.ops.inventory import canonical_models, pods_loaded, read_inventory

    inputs = _check(args)
    s3 = _s3(args)
    if args.base_model is not None:
        models = [
            layout.base_model_location(inputs.core_bucket, layout.base_model(args.base_model))
        ]
    else:
        models = canonical_models(s3, inputs.core_bucket)
    models += [m for m in inputs.models if m not in models]
    answers = _pod_answers(args, inputs)
    loaded = pods_loaded(load_target(args.target).adapter_delivery, answers)
    entries = read_inventory(s3, models=models, project=args.project, loaded=loaded)
    failed = [a for a in answers if not a.ok]
    if args.format == "table":
        sys.stdout.write(inventory_table(entries))
    else:
        _print(
            {
                "bucket": inputs.core_bucket,
                "project": args.project,
                "models": [m.uri for m in models],
                "adapters": [e.to_json() for e in entries],
                "pods": _pods_json(answers, loaded),
                "failed_pods": [a.pod for a in failed],
            }
        )
    for answer in failed:
        print(f"mlcc: error: pod {answer.pod} failed: {answer.detail}", file=sys.stderr)
    return 1 if failed else 0


@_reported
def run_clean(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.adapter_clean import conflict_problems, serving_conflicts
    from mlcc_constructs.core.targets import load_target
    from mlcc_constructs.ops.clean import (
        execute_clean,
        plan_project_clean,
        project_models,
        purge_noncurrent,
    )
    from mlcc_constructs.ops.inventory import pods_loaded

    inputs = _check(args)
    s3 = _s3(args)
    models = project_models(s3, inputs.core_bucket, inputs.models)
    facts = plan_project_clean(
        s3, core_bucket=inputs.core_bucket, project=args.project, models=models
    )
    plan = facts.plan
    answers = _pod_answers(args, inputs)
    loaded = pods_loaded(load_target(args.target).adapter_delivery, answers)
    conflicts = serving_conflicts(args.project, loaded)
    report: dict[str, Any] = {
        "project": args.project,
        "plan": plan.to_json(),
        "bucket_versioning": facts.to_json(),
        "pods": _pods_json(answers, loaded),
        "dry_run": args.dry_run,
        "deleted": [],
        "purged": None,
    }
    purge = args.delete_noncurrent and facts.versioning != "Off"
    if not plan.units and not (purge and facts.noncurrent_versions + facts.delete_markers):
        _print({**report, "status": "nothing to delete"})
        return 0
    problems = conflict_problems(conflicts) + [
        Problem(
            message=f"pod {a.pod} did not list its adapters ({a.detail}): cannot check that it "
            "serves none of this project's",
            where="--force",
            fix="check the pod, or pass --force",
        )
        for a in answers
        if not a.ok
    ]
    if problems and not args.force:
        raise ReportedError(problems, {**report, "status": "refused"})
    if not answers:
        print(
            "mlcc: warning: no pods given (--pod-url or --discover): not checked that no pod "
            "serves these adapters",
            file=sys.stderr,
        )
    _summary(facts, purge=purge)
    if args.dry_run:
        _print({**report, "status": "dry-run"})
        return 0
    if not args.yes:
        print("Delete them? [y/N] ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            problem = Problem(
                message="clean not confirmed: nothing deleted",
                where="--yes",
                value=answer,
                fix="answer y, or pass --yes in scripts",
            )
            raise ReportedError([problem], {**report, "status": "not confirmed"})
    report["deleted"] = execute_clean(s3, plan)
    if purge:
        versions, markers = purge_noncurrent(s3, plan)
        report["purged"] = {"versions": versions, "delete_markers": markers}
    _print({**report, "status": "deleted"})
    return 0


def _summary(facts: Any, *, purge: bool) -> None:
    plan = facts.plan
    lines = [
        f"mlcc adapter clean: project {plan.project} in s3://{plan.bucket}/: "
        f"{plan.objects} objects ({plan.bytes} bytes) in {len(plan.units)} units"
    ]
    lines += [f"  {u.kind:16} {u.uri} ({len(u.ordered_keys)} objects)" for u in plan.units]
    if facts.versioning != "Off":
        if purge:
            lines.append(
                f"  versioned bucket ({facts.versioning}): also deleting permanently the "
                f"{facts.noncurrent_versions} noncurrent versions and {facts.delete_markers} "
                "delete markers under these prefixes, and the versions this clean leaves"
            )
        else:
            lines.append(
                f"  versioned bucket ({facts.versioning}): the deleted objects stay as noncurrent "
                "versions (restorable, still billed), as do the "
                f"{facts.noncurrent_versions} already there; --delete-noncurrent deletes them "
                "permanently"
            )
    print("\n".join(lines), file=sys.stderr)
