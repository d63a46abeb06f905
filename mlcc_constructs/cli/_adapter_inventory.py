"""``mlcc adapter list`` and ``mlcc adapter clean``: what a project has on S3 and in pods, and
its removal (registered by :mod:`mlcc_constructs.cli.adapter`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from mlcc_constructs.cli._adapter_checks import (
    Inputs,
    check,
    live_state,
    pod_client,
    s3_client,
)
from mlcc_constructs.cli._parser import ReportedError, emit
from mlcc_constructs.core.support.errors import Problem

if TYPE_CHECKING:  # the handlers import these lazily: keep `mlcc` start-up small
    from mlcc_constructs.core.adapters.inventory import LoadedAdapter
    from mlcc_constructs.ops.clean import CleanFacts
    from mlcc_constructs.ops.pods import PodModels


def pod_answers(args: argparse.Namespace, inputs: Inputs) -> list[PodModels]:
    """Each given or discovered pod's model list (none asked: empty)."""
    if not args.pod_url and not args.discover:
        return []
    pods, _ = live_state(args, inputs)
    client = pod_client(inputs)
    return [client.models(pod) for pod in pods]


def no_pods(args: argparse.Namespace) -> str:
    """Why no pod was called: none given, or none Running where --discover looked."""
    if args.discover:
        return f"--discover found no Running pods in namespace {args.namespace}"
    return "no pods given (--pod-url or --discover)"


def _pods_json(answers: list[PodModels], loaded: list[LoadedAdapter]) -> list[dict[str, Any]]:
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


def run_list(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.adapters import s3_layout as layout
    from mlcc_constructs.core.adapters.integrity import damage_problems
    from mlcc_constructs.core.adapters.inventory import damaged_versions, inventory_table
    from mlcc_constructs.core.platform.targets import load_target
    from mlcc_constructs.ops.inventory import canonical_models, pods_loaded, read_inventory

    inputs = check(args)
    s3 = s3_client(args)
    if args.base_model is not None:
        models = [
            layout.base_model_location(inputs.core_bucket, layout.base_model(args.base_model))
        ]
    else:
        models = canonical_models(s3, inputs.core_bucket)
    models += [m for m in inputs.models if m not in models]
    answers = pod_answers(args, inputs)
    loaded = pods_loaded(load_target(args.target).adapter_delivery, answers)
    entries = read_inventory(
        s3, models=models, project=args.project, loaded=loaded, verify=args.verify
    )
    failed = [a for a in answers if not a.ok]
    bad = damaged_versions(entries)
    emit(
        args,
        {
            "bucket": inputs.core_bucket,
            "project": args.project,
            "models": [m.uri for m in models],
            "adapters": [e.to_json() for e in entries],
            "pods": _pods_json(answers, loaded),
            "failed_pods": [a.pod for a in failed],
            "damaged": [v.keys.adapter.location.uri for v in bad],
        },
        ok=not (failed or bad),
        table=lambda: inventory_table(entries),
    )
    for version in bad:
        uri = version.keys.adapter.location.uri
        lines = version.errors or [str(p) for p in damage_problems(uri, version.damage)]
        for line in lines:
            print(f"mlcc: error: {line}", file=sys.stderr)
    for answer in failed:
        print(f"mlcc: error: pod {answer.pod} failed: {answer.detail}", file=sys.stderr)
    return 1 if failed or bad else 0


def run_clean(args: argparse.Namespace) -> int:
    from mlcc_constructs.core.adapters.clean import (
        conflict_problems,
        mounted_problems,
        serving_conflicts,
    )
    from mlcc_constructs.core.platform.targets import load_target
    from mlcc_constructs.ops.clean import (
        execute_clean,
        plan_project_clean,
        project_models,
        purge_noncurrent,
    )
    from mlcc_constructs.ops.inventory import pods_loaded

    inputs = check(args)
    s3 = s3_client(args)
    models = project_models(s3, inputs.core_bucket, inputs.models)
    facts = plan_project_clean(
        s3, core_bucket=inputs.core_bucket, project=args.project, models=models
    )
    plan = facts.plan
    answers = pod_answers(args, inputs)
    loaded = pods_loaded(load_target(args.target).adapter_delivery, answers)
    conflicts = serving_conflicts(args.project, loaded)
    mounts = []
    if args.discover:  # the whole cluster: a deployment may serve a fine-tune as its model
        from mlcc_constructs.ops.kubectl import cluster_model_mounts

        mounts = cluster_model_mounts()
    report: dict[str, Any] = {
        "project": args.project,
        "plan": plan.to_json(),
        "bucket_versioning": facts.to_json(),
        "pods": _pods_json(answers, loaded),
        "model_mounts": [{"object": m.what, "uri": m.location.uri} for m in mounts],
        "dry_run": args.dry_run,
        "deleted": [],
        "purged": None,
    }
    purge = args.delete_noncurrent and facts.versioning != "Off"
    if not plan.units and not (purge and facts.noncurrent_versions + facts.delete_markers):
        emit(args, {**report, "status": "nothing to delete"})
        return 0
    problems = (
        conflict_problems(conflicts)
        + mounted_problems(plan, mounts)
        + [
            Problem(
                message=f"pod {a.pod} did not list its adapters ({a.detail}): cannot check that it "
                "serves none of this project's",
                where="--force",
                fix="check the pod, or pass --force",
            )
            for a in answers
            if not a.ok
        ]
    )
    if problems and not args.force:
        raise ReportedError(problems, {**report, "status": "refused"})
    if not answers:
        print(
            f"mlcc: warning: {no_pods(args)}: not checked that no pod serves these adapters",
            file=sys.stderr,
        )
    _summary(facts, purge=purge)
    if args.dry_run:
        emit(args, {**report, "status": "dry-run"})
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
    emit(args, {**report, "status": "deleted"})
    return 0


def _summary(facts: CleanFacts, *, purge: bool) -> None:
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
