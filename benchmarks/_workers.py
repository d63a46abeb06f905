"""Workloads the benchmark times, each run in a fresh process (``python _workers.py NAME ...``).

Kept separate from ``run.py`` so every measured process pays exactly its own import and jsii
start-up cost, the same way ``cdk synth`` (``python app.py``) pays it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _context(count: int | None, targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """The reference app's context (cdk.json's with ``examples/reference-context.json``, what
    ``make synth REFERENCE=1`` passes); with ``count``, that many generated deployments (on
    ``targets`` in turn, else the default target) instead of the reference ones."""
    context: dict[str, Any] = json.loads((REPO / "cdk.json").read_text())["context"]
    context |= json.loads((REPO / "examples" / "reference-context.json").read_text())
    if count is not None:
        from benchmarks.specs import deployment_entries

        context["deployments_file"] = None  # the generated list, inline
        context["reference_deployments"] = deployment_entries(count, targets=targets)
    return context


def floor() -> None:
    """The unavoidable cost of a CDK app in this process model: Python, jsii and an app with
    one empty Stack, synthesised."""
    import aws_cdk as cdk

    with tempfile.TemporaryDirectory() as out:
        app = cdk.App(outdir=out)
        cdk.Stack(app, "Empty", env=cdk.Environment(account="123456789012", region="us-east-1"))
        app.synth()


def app(count: int | None = None) -> None:
    """``python app.py`` as ``cdk synth`` runs it: every stack, the gates and dist/."""
    with tempfile.TemporaryDirectory() as out:
        fleet(count, out)


def fleet(count: int | None, out: str, selection: str = "", changed: str = "") -> None:
    """``python app.py`` with ``count`` generated deployments (``None``: the reference set), written
    to ``<out>/cdk.out`` and ``<out>/dist``; ``selection``: the ``deployments`` context;
    ``changed``: the deployment whose ``env`` is changed (the reviewer's loop's edit)."""
    import aws_cdk as cdk

    import app as cdk_app

    context = _context(count)
    for entry in context["reference_deployments"]:
        if entry.get("name") == changed:
            entry["env"] = {**entry.get("env", {}), "VLLM_MAX_NUM_SEQS": "128"}
    if selection:
        context["deployments"] = selection
    built = cdk_app.build_app(cdk.App(outdir=f"{out}/cdk.out", context=context))
    cdk_app.add_gates(built)
    cdk_app.write_reference_manifests(built, outdir=f"{out}/dist")
    built.synth()


def peer_objects(count: int, path: str) -> None:
    """The plain-CDK peer's input for ``count`` generated deployments: each serving stack's
    name, objects, pods' role and readiness wait, as the app prepares them (written once,
    before timing)."""
    import aws_cdk as cdk

    import app as cdk_app
    from benchmarks.plain_cdk_peer import write_objects
    from stacks.app_context import environment_from_context
    from stacks.deployments import app_deployments

    scratch = cdk.App(context=_context(count))
    environment = environment_from_context(scratch)
    plan = cdk_app.serving_plan(scratch)
    write_objects(
        Path(path),
        [
            {
                "stack": environment.stack_name(unit.suffix),
                "objects": [e.object for e in d.prepared.objects],
                "pod_role": _pod_role(d.prepared),
                "readiness": _readiness(d.prepared),
            }
            for unit, d in zip(plan.units, app_deployments(scratch), strict=True)
        ],
    )


def _pod_role(prepared: Any) -> dict[str, Any] | None:
    """What the peer's hand-written pod role needs: the ServiceAccount and the model's prefix."""
    from mlcc_constructs.core.serving.prepare.aws_calls import pod_role_uses, pods_call_aws

    uses = pod_role_uses(prepared)
    if not uses:
        return None
    if prepared.secrets.synced or not pods_call_aws(prepared):
        raise SystemExit("bench: the peer covers a streamed model's role only, not secrets")
    source = prepared.resolution.source
    namespace, account = prepared.spec.namespace, prepared.names.base
    return {
        "namespace": namespace,
        "service_account": account,
        "description": f"mlcc: the pods of {namespace}/{account} " + " and ".join(uses),
        "bucket": source.bucket,
        "prefix": source.prefix,
    }


def _readiness(prepared: Any) -> dict[str, Any] | None:
    """What the peer's readiness wait needs: the waiter's access objects and its properties."""
    from mlcc_constructs.core.serving.readiness import readiness_target

    target = readiness_target(prepared)
    address = target.address
    return {
        "access": [entry.object for entry in target.access],
        "service_timeout_s": target.timing.service_timeout_s,
        "properties": {
            "Kind": target.kind,
            "Namespace": target.namespace,
            "Name": target.name,
            "Path": target.path,
            "DeadlineSeconds": str(target.timing.deadline_s),
            "ReadyTimeoutSeconds": str(target.timeout_s),
            "Digest": target.digest,
            **(
                {
                    "AddressKind": address.kind,
                    "AddressName": address.name,
                    "AddressPath": address.path,
                }
                if address is not None
                else {}
            ),
        },
    }


def peer(path: str, out: str) -> None:
    """The plain-CDK peer app (``benchmarks/plain_cdk_peer.py``) of ``path``'s objects."""
    from benchmarks.plain_cdk_peer import synth_peer

    synth_peer(Path(path), Path(out))


def dist(count: int, out: str, targets: tuple[str, ...] = ()) -> None:
    """``make synth``'s dist/ for ``count`` deployments, alone (the part that competes with
    ``helm template``): prepared from the entries and written by the one render path
    (``prepare_deployments`` and ``renderer.list_files``, as app.py does)."""
    from mlcc_constructs.core.serving.renderer import list_files
    from mlcc_constructs.core.serving.spec.app_deployments import prepare_deployments

    context = _context(count, targets)
    deployments = prepare_deployments(
        context["reference_deployments"],
        defaults={k: context.get(k) for k in ("account", "region", "profile")},
    )
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in list_files([d.rendered for d in deployments]).items():
        (folder / name).write_text(text)


def library(count: int, out: str, report: str = "", calls: int = 1) -> None:
    """The persistent render: one :class:`Renderer` (registry loaded, schemas compiled once)
    rendering ``count`` deployments in this process and writing their files as ``mlcc render
    -f LIST --out`` does, ``calls`` times (the first makes the renderer and finds every cache
    cold; the later ones keep it: a long-lived process). With ``report``, one JSON line is
    appended there: the in-process CPU seconds of the first call and of each later one."""
    import time

    from benchmarks.specs import deployment_entries
    from mlcc_constructs.core.serving.renderer import RenderEntry, Renderer, list_files
    from mlcc_constructs.core.serving.spec.context import RenderContext
    from mlcc_constructs.core.serving.spec.files import spec_from_mapping

    renderer: Renderer | None = None

    def call(folder: Path) -> float:
        nonlocal renderer
        started = time.process_time()
        renderer = renderer or Renderer()
        entries = []
        for index, raw in enumerate(deployment_entries(count)):
            loaded = spec_from_mapping(raw, where=f"list#{index}")
            context = RenderContext(profile=loaded.context.profile)
            entries.append(RenderEntry(where=loaded.where, spec=loaded.spec, context=context))
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in list_files(renderer.render_list(entries)).items():
            (folder / name).write_text(text)
        return time.process_time() - started

    first = call(Path(out))
    later = [call(Path(out)) for _ in range(calls - 1)]
    if report:
        line = {"n": count, "first_s": first, "later_s": later}
        with Path(report).open("a") as handle:  # one line per run: the section's samples
            handle.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    name, *args = sys.argv[1:]
    if name == "floor":
        floor()
    elif name == "app":
        app(int(args[0]) if args else None)
    elif name == "fleet":  # COUNT OUT [SELECTION [CHANGED]]
        fleet(int(args[0]), args[1], *args[2:4])
    elif name == "peer-objects":
        peer_objects(int(args[0]), args[1])
    elif name == "peer":
        peer(args[0], args[1])
    elif name == "dist":
        dist(int(args[0]), args[1], tuple(args[2].split(",")) if len(args) > 2 else ())
    elif name == "library":
        library(
            int(args[0]),
            args[1],
            args[2] if len(args) > 2 else "",
            int(args[3:4][0]) if len(args) > 3 else 1,
        )
    else:
        raise SystemExit(f"unknown worker {name!r}")
