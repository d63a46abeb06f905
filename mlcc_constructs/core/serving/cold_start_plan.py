"""What ``mlcc plan`` prints for a prepared deployment: its cold start (the phases with their
assumptions and sources, the physical limit, the budgets the probes and the deploy use) and its
price (:func:`~mlcc_constructs.core.serving.deployment_bill.deployment_bill`: its instances,
Auto Mode fees and load balancer per hour and per 30 days, unpriced items named), as a JSON
document or a table. The numbers are the deployment's own
(:attr:`~mlcc_constructs.core.serving.prepare.facts.DeploymentFacts.cold_start`, the object its
probes and ready timeout come from); nothing is computed again here. They are estimates, and
the output says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.platform.bill import PriceReport, format_footnotes, format_report
from mlcc_constructs.core.serving.deployment_bill import deployment_bill
from mlcc_constructs.core.serving.prepared import PreparedDeployment

NOTE = (
    "estimates from documented assumptions (mlcc_constructs/data/cold_start.json and the "
    "instance catalog's network column), not measurements of your cluster"
)
_LABELS = {
    "node_start": "node start",
    "image_pull": "image pull",
    "weight_load": "weight load",
    "group_init": "group init",
    "engine_warmup": "engine warm-up",
}


def plan_document(
    prepared: PreparedDeployment, *, price: PriceReport | None = None
) -> dict[str, Any]:
    """The plan of one deployment: who it is, its cold start and its ready timeout (no
    do-not-disrupt window where the platform makes the pods: the HyperPod operator's), and its
    ``price`` (default: :func:`deployment_bill` of it)."""
    spec = prepared.spec
    timeout = prepared.ready_timeout
    cold = prepared.cold_start.to_json()
    budget = cold["budget"]
    if prepared.pod_template is None:  # the platform makes the pods: no annotation of ours
        budget["do_not_disrupt_seconds"] = None
    budget["ready_timeout_seconds"] = timeout.seconds
    budget["ready_timeout_source"] = timeout.source
    return {
        "name": prepared.names.base,
        "namespace": spec.namespace,
        "target": spec.target,
        "engine": prepared.resolution.manifest.engine,
        "model": spec.model.uri,
        **cold,
        "price": (price or deployment_bill(prepared)).to_json(),
    }


def plan_report(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The whole ``mlcc plan`` output: every deployment's plan, labelled as estimates."""
    return {"command": "plan", "ok": True, "estimate": True, "note": NOTE, "plans": list(documents)}


def plan_table(
    documents: Sequence[Mapping[str, Any]], *, prices: Sequence[PriceReport] = ()
) -> str:
    """The plans as text: one block per deployment, a row per phase (its seconds and
    assumption, the source under it), then the total, the physical limit and the budgets, and
    the deployment's price table when ``prices`` gives one per document."""
    blocks = [f"All figures are {NOTE}."]
    for index, doc in enumerate(documents):
        size = doc["model_bytes"]
        network = doc["network"]
        head = (
            f"{doc['namespace']}/{doc['name']} ({doc['target']}, {doc['engine']}, "
            f"{doc['instance_type']}, load path {doc['load_path']}, model "
            + (f"{size:,} bytes from {doc['model_bytes_source']})" if size else "size unknown)")
        )
        rows = [("phase", "seconds", "assumption / source")]
        for name, phase in doc["phases"].items():
            seconds = phase["seconds"]
            rows.append(
                (_LABELS[name], "?" if seconds is None else str(seconds), phase["assumption"])
            )
            rows.append(("", "", "source: " + phase["source"]))
        expected = doc["expected_seconds"]
        rows.append(
            ("expected", "?" if expected is None else str(expected), _minutes(expected) or "")
        )
        limit = doc["physical_limit"]["seconds"]
        burst = network["burst_gbps"]
        rows.append(
            (
                "physical limit",
                "?" if limit is None else str(limit),
                f"model bytes / {network['baseline_gbps']:g} Gbps baseline network"
                + (f" (up to {burst:g} Gbps burst, not planned on)" if burst else ""),
            )
        )
        group = doc["nodes"]
        if group["count"] > 1:
            total = group["bytes_read_total"]
            node_s = group["node_seconds"]
            rows.append(
                (
                    "nodes",
                    str(group["count"]),
                    "each reads the whole checkpoint in parallel"
                    + (f": {total:,} bytes from S3" if total is not None else "")
                    + (f"; {node_s} node seconds per cold start" if node_s is not None else "")
                    + " (again on a group restart)",
                )
            )
        width = max(len(row[0]) for row in rows)
        lines = [head]
        lines += [f"  {a.ljust(width)}  {b.rjust(7)}  {c}".rstrip() for a, b, c in rows]
        budget = doc["budget"]
        window = budget["do_not_disrupt_seconds"]
        lines.append(
            f"  budget: startup probe {budget['startup_probe_seconds']} s "
            f"(failureThreshold {budget['startup_probe_failure_threshold']}), do-not-disrupt "
            + ("none (the platform makes the pods)" if window is None else f"{window} s")
            + f", ready timeout {budget['ready_timeout_seconds']} s "
            f"({budget['ready_timeout_source']})"
        )
        if index < len(prices):
            price = format_report(prices[index], title="price", footnotes=False)
            lines += ["  " + line if line else line for line in price.splitlines()]
        blocks.append("\n".join(lines))
    footnotes = format_footnotes(prices[0]) if prices else ""
    if footnotes:  # the same for every deployment: once, after them
        blocks.append("Prices leave out:\n" + footnotes.rstrip("\n"))
    return "\n\n".join(blocks) + "\n"


def _minutes(seconds: int | None) -> str | None:
    return None if seconds is None else f"~{seconds / 60:.1f} min"
