"""Input checks, clients and failure reports shared by ``mlcc adapter`` and ``mlcc model``.

:func:`check` collects the problem of every value of an adapter command line (each located at
its flag) and raises them at once, before the command's first side effect (``mlcc`` prints
the command's failure report: :func:`mlcc_constructs.cli._parser.failure_document`).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlcc_constructs.cli._common import parse_assignments
from mlcc_constructs.cli._inputs import (
    at_flag,
    checked,
    dns_problems,
    text_problems,
    timeout_problems,
    unique_pods,
    url_problems,
)
from mlcc_constructs.cli._parser import Once
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

if TYPE_CHECKING:
    from mlcc_constructs.core.adapters.deployment import Deployment, LiveState
    from mlcc_constructs.core.adapters.s3_layout import S3Location
    from mlcc_constructs.core.engines.manifests import EngineManifest


@dataclass
class Inputs:
    """Checked values of the command line."""

    core_bucket: str = ""
    timeout: float = 60.0
    api_key: str | None = None
    pod_env: dict[str, str] = field(default_factory=dict)
    iec: Any = None
    manifest: EngineManifest | None = None
    models: list[S3Location] = field(default_factory=list)


def add_bucket_options(parser: argparse.ArgumentParser) -> None:
    """``--account --region --profile`` (the bucket names) and ``--endpoint-url``."""
    parser.add_argument("--account", required=True, help="AWS account id (bucket names)")
    parser.add_argument("--region", required=True, help="AWS region (bucket names)")
    parser.add_argument("--profile", required=True, help="mlcc profile, e.g. dev")
    if not any(a.dest == "endpoint_url" for a in parser._actions):
        parser.add_argument("--endpoint-url", default=None, help="S3 endpoint (default: AWS)")


def add_promotion_options(parser: argparse.ArgumentParser, *, source_help: str) -> None:
    """What every promotion takes beside its name, project and base model: where from, how it
    was made (the record's provenance) and ``--dry-run``."""
    parser.add_argument(
        "--from", action=Once, dest="source", required=True, metavar="SRC", help=source_help
    )
    parser.add_argument("--technique", default=None, help="e.g. sft, dpo")
    parser.add_argument("--source-job", default=None, help="the job that produced it")
    parser.add_argument("--dry-run", action="store_true", help="hash and report; write nothing")


def promotion_request(args: argparse.Namespace, inputs: Inputs) -> dict[str, Any]:
    """The keyword arguments both promotions (``promote``, ``promote_model``) take from a
    checked command line."""
    return {
        "source_uri": args.source,
        "core_bucket": inputs.core_bucket,
        "project": args.project,
        "name": args.name,
        "base_model": args.base_model,
        "base_revision": args.base_revision,
        "technique": args.technique,
        "source_job": args.source_job,
        "dry_run": args.dry_run,
    }


def check(
    args: argparse.Namespace,
    *,
    source_problems: Callable[[argparse.Namespace], list[Problem]] | None = None,
) -> Inputs:
    """Every value of the command line, all problems at once, before any side effect.
    ``source_problems`` checks ``--from`` (default: an adapter source)."""
    from mlcc_constructs.core.adapters import path_names, s3_layout as layout

    problems: list[Problem] = []
    inputs = Inputs()
    name = getattr(args, "name", None)
    if name is not None:
        problems += at_flag("NAME", filter(None, [path_names.component_problem(name)]))
    if args.project is not None:
        problems += at_flag("--project", filter(None, [path_names.component_problem(args.project)]))
    problems += _bucket_problems(args, inputs)
    problems += url_problems("--endpoint-url", args.endpoint_url, path=True)
    if getattr(args, "base_model", None) is not None:
        problems += checked("--base-model", lambda: layout.base_model(args.base_model))[1]
    problems += text_problems(
        "--base-revision", getattr(args, "base_revision", None), what="revision"
    )
    if getattr(args, "technique", None) is not None:
        problems += at_flag(
            "--technique", filter(None, [path_names.component_problem(args.technique)])
        )
    problems += text_problems("--source-job", getattr(args, "source_job", None), what="job name")
    if getattr(args, "source", None) is not None:
        problems += (source_problems or _source_problems)(args)
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
    from mlcc_constructs.core.adapters import s3_layout as layout

    location = layout.parse_s3_uri(uri, pointer="")
    return layout.model_location(location.bucket, location.key)


def _bucket_problems(args: argparse.Namespace, inputs: Inputs) -> list[Problem]:
    from mlcc_constructs.core.platform.buckets import bucket_name, environment_problems

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
    from mlcc_constructs.core.adapters import s3_layout as layout
    from mlcc_constructs.core.adapters.hf_source import is_hf_source
    from mlcc_constructs.core.adapters.plan import canonical_source

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


def _pod_problems(args: argparse.Namespace, inputs: Inputs) -> list[Problem]:
    from mlcc_constructs.cli._common import registry_from
    from mlcc_constructs.core.platform.targets import load_target

    problems: list[Problem] = []
    for url in args.pod_url:
        problems += url_problems("--pod-url", url, path=False)
    inputs.timeout, found = timeout_problems("--timeout", args.timeout)
    problems += found
    from mlcc_constructs.cli._api_key import api_key_problems

    inputs.api_key, found = api_key_problems(args)
    problems += found
    registry, found = checked("--plugin-dir", lambda: registry_from(args))
    problems += found
    if registry is not None:
        inputs.manifest, found = checked("--engine", lambda: registry.get(args.engine))
        problems += found
    target, found = checked("--target", lambda: load_target(args.target))
    problems += found
    if target is not None and args.discover and args.deployment_name and not args.selector:
        problems += checked("--discover", lambda: target.pod_selector(args.deployment_name))[1]
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


def _live_input_problems(args: argparse.Namespace, inputs: Inputs) -> list[Problem]:
    env, problems = checked("--pod-env", lambda: parse_assignments(args.pod_env, "--pod-env"))
    inputs.pod_env = env or {}
    if args.iec is not None:
        inputs.iec, found = checked("--iec", lambda: _read_iec(args.iec))
        problems += found
    return problems


def _deployment_problems(args: argparse.Namespace, inputs: Inputs) -> list[Problem]:
    from mlcc_constructs.core.adapters.deployment import LiveState, deployment_refusals

    assert inputs.manifest is not None
    model, problems = checked("--model", lambda: _model(args.model))
    if model is None and args.model.startswith("s3://"):
        return problems  # a malformed S3 URI: the refusals below would only repeat it
    deployment = deployment_of(args, inputs.manifest)
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


def s3_client(args: argparse.Namespace) -> Any:
    import boto3  # type: ignore[import-untyped]

    return boto3.client("s3", endpoint_url=args.endpoint_url, region_name=args.region)


def deployment_of(args: argparse.Namespace, manifest: EngineManifest) -> Deployment:
    from mlcc_constructs.core.adapters.deployment import Deployment

    return Deployment.for_engine(
        manifest,
        target=args.target,
        model=args.model,
        project=args.project,
        base_model=args.base_model,
        base_revision=args.base_revision,
    )


def live_state(args: argparse.Namespace, inputs: Inputs) -> tuple[list[str], LiveState]:
    """Pod URLs (discovered, then ``--pod-url``; each pod once, a repeat warned about) and the
    live state: discovered, then ``--pod-env``/``--iec`` on top."""
    from mlcc_constructs.core.adapters.deployment import LiveState

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
    pods, warnings = unique_pods([*urls, *args.pod_url])
    for warning in warnings:
        print(f"mlcc: warning: {warning}", file=sys.stderr)
    return pods, live


def _discover(args: argparse.Namespace, inputs: Inputs) -> tuple[list[str], LiveState]:
    from mlcc_constructs.core.platform.targets import load_target
    from mlcc_constructs.ops.kubectl import discover

    assert inputs.manifest is not None
    return discover(
        target=args.target,
        namespace=args.namespace,
        selector=args.selector or load_target(args.target).pod_selector(args.deployment_name),
        port=inputs.manifest.launch.get("port"),
        iec_name=args.deployment_name,
    )


def pod_client(inputs: Inputs) -> Any:
    from mlcc_constructs.core.adapters.deployment import MODEL_LIST_PATH
    from mlcc_constructs.ops.pods import PodClient

    assert inputs.manifest is not None
    api = dict(inputs.manifest.adapter_api or {})
    return PodClient(
        {"list": MODEL_LIST_PATH, **api}, timeout=inputs.timeout, api_key=inputs.api_key
    )
