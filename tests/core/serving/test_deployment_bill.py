"""The bill of a prepared deployment and of the app: what is counted (instances x replicas x
nodes on a target that launches its own nodes, Auto Mode's fee beside them, one load balancer
per exposed deployment or per group), what is not (a HyperPod deployment's nodes, a
``scheme: none`` endpoint), the 720-hour month, the ranges, the unpriced items named, and the
text table byte for byte."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from mlcc_constructs.core.platform.bill import BillItem, format_report, price_bill
from mlcc_constructs.core.serving.deployment_bill import app_bill, deployment_bill
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.endpoint import Endpoint
from tests._flat import flat_spec

AMP = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123abcd-4567-89ef-0123-456789abcdef"
CONTEXT = RenderContext(
    account="123456789012", region="us-east-1", profile="dev", prometheus_query_url=AMP
)
BUCKET = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama"
AUTO_MODE = (
    "EKS Auto Mode bills a management fee per instance it manages, priced per instance type on "
    "https://aws.amazon.com/eks/pricing/; no per-type figure is on record offline"
)


def _prepared(context: RenderContext = CONTEXT, **fields: Any) -> PreparedDeployment:
    values: dict[str, Any] = {
        "engine": {"name": "vllm"},
        "model": {"uri": f"{BUCKET}/Llama-3.1-8B-Instruct/"},
        "compute": {"instance_type": "ml.g6.xlarge"},
        "name": "chat",
        "namespace": "inference",
    }
    return prepare(flat_spec(**(values | fields)), context=context)


def _rows(prepared: PreparedDeployment | None = None, **fields: Any) -> list[tuple[Any, ...]]:
    report = deployment_bill(prepared or _prepared(**fields))
    return [
        (
            line.item.owner,
            line.item.kind,
            line.item.item,
            (line.item.low, line.item.high),
            None if line.price is None else line.price.usd_per_hour,
        )
        for line in report.lines
    ]


def test_one_gpu_instance_its_auto_mode_fee_and_its_load_balancer() -> None:
    report = deployment_bill(_prepared())
    owner = "eks inference/chat"
    assert _rows(_prepared()) == [
        (owner, "ec2_instance", "g6.xlarge", (1, 1), Decimal("0.8048")),
        (owner, "auto_mode_fee", "g6.xlarge", (1, 1), None),
        (owner, "load_balancer", "application", (1, 1), Decimal("0.0225")),
    ]
    assert report.region == "us-east-1"
    assert report.per_hour == (Decimal("0.8273"), Decimal("0.8273"))
    assert report.per_30_days == (Decimal("595.66"), Decimal("595.66"))  # 720 h
    assert report.unpriced == (f"Auto Mode fee g6.xlarge x 1 ({owner}): {AUTO_MODE}",)
    assert report.notes == ()


def test_an_autoscaled_deployment_is_a_range_of_its_replicas() -> None:
    prepared = _prepared(
        instance_type="ml.g5.2xlarge", autoscaling=Autoscaling(min_replicas=2, max_replicas=3)
    )
    report = deployment_bill(prepared)
    ec2, fee, alb = report.lines
    assert (ec2.item.low, ec2.item.high, ec2.item.note) == (2, 3, "2..3 replicas, autoscaled")
    assert (fee.item.low, fee.item.high) == (2, 3)
    assert (alb.item.low, alb.item.high) == (1, 1)
    assert report.per_hour == (Decimal("2.4465"), Decimal("3.6585"))
    assert report.per_30_days == (Decimal("1761.48"), Decimal("2634.12"))
    assert report.unpriced[0].startswith("Auto Mode fee g5.2xlarge x 2..3 (eks inference/chat)")


def test_scale_to_zero_runs_no_instance_while_idle_and_keeps_its_load_balancer() -> None:
    prepared = _prepared(autoscaling=Autoscaling(max_replicas=2, scale_to_zero=True))
    report = deployment_bill(prepared)
    assert [(line.item.kind, line.item.low, line.item.high) for line in report.lines] == [
        ("ec2_instance", 0, 2),
        ("auto_mode_fee", 0, 2),
        ("load_balancer", 1, 1),
    ]
    assert report.lines[0].item.note == "0..2 replicas, autoscaled, to zero when idle"
    assert report.per_hour == (Decimal("0.0225"), Decimal("1.6321"))


def test_a_model_over_two_p5_nodes_bills_both_nodes_of_its_copy() -> None:
    prepared = _prepared(
        model=f"{BUCKET}/Llama-3.1-405B-Instruct/",
        instance_type="ml.p5.48xlarge",
        nodes=2,
        tensor_parallel_degree=8,
        pipeline_parallel_degree=2,
    )
    report = deployment_bill(prepared)
    ec2 = report.lines[0]
    assert (ec2.item.item, ec2.item.low, ec2.item.high, ec2.item.note) == (
        "p5.48xlarge",
        2,
        2,
        "1 replica x 2 nodes",
    )
    assert report.per_hour == (Decimal("110.1025"), Decimal("110.1025"))
    assert report.per_30_days == (Decimal("79273.80"), Decimal("79273.80"))


def test_a_hyperpod_deployment_counts_no_instance_only_the_operators_load_balancer() -> None:
    prepared = _prepared(target="hyperpod-eks", instance_type="ml.g5.12xlarge")
    report = deployment_bill(prepared)
    assert _rows(prepared) == [
        ("hyperpod-eks inference/chat", "load_balancer", "application", (1, 1), Decimal("0.0225"))
    ]
    assert report.unpriced == ()
    assert report.notes == (
        "hyperpod-eks inference/chat runs on nodes the hyperpod-eks platform provides (the "
        "HyperPod cluster's instance groups): they are priced with that cluster, not per "
        "deployment",
    )


def test_no_load_balancer_without_an_endpoint() -> None:
    kinds = [row[1] for row in _rows(endpoint=Endpoint(scheme="none"))]
    assert kinds == ["ec2_instance", "auto_mode_fee"]


def test_the_app_counts_the_cluster_once_and_a_groups_load_balancer_once() -> None:
    shared = Endpoint(scheme="internal", group="shared")
    deployments = [
        _prepared(name="a", endpoint=shared),
        _prepared(name="b", endpoint=shared, instance_type="ml.g5.xlarge"),
        _prepared(name="alone"),
        _prepared(name="quiet", endpoint=Endpoint(scheme="none")),
        _prepared(name="hp", target="hyperpod-eks", instance_type="ml.g5.12xlarge"),
    ]
    report = app_bill(
        deployments,
        nat_gateways=1,
        region="us-east-1",
        hyperpod_instance_groups=[("ml.g5.12xlarge", 2)],
        vpc_interface_endpoints=8,
    )
    load_balancers = [
        (line.item.owner, line.item.note)
        for line in report.lines
        if line.item.kind == "load_balancer"
    ]
    assert load_balancers == [
        ("eks inference/alone", "internal"),
        ("hyperpod-eks inference/hp", "internal"),
        (
            "load balancer group internal/shared",
            "internal, shared by eks inference/a, eks inference/b",
        ),
    ]
    assert [(line.item.owner, line.item.kind, line.item.low) for line in report.lines[:4]] == [
        ("cluster", "eks_cluster", 1),
        ("cluster", "nat_gateway", 1),
        ("cluster", "vpc_interface_endpoint", 8),
        ("hyperpod cluster", "hyperpod_instance", 2),
    ]
    # EKS 0.10 + NAT 0.045 + g6.xlarge 0.8048 x 3 (a, alone, quiet) + g5.xlarge 1.006 (b)
    # + 3 ALBs x 0.0225 (alone, hp, the group)
    assert report.per_hour == (Decimal("3.6329"), Decimal("3.6329"))
    assert report.per_30_days == (Decimal("2615.69"), Decimal("2615.69"))
    unpriced = [u.split(":", 1)[0] for u in report.unpriced]
    assert unpriced == [
        "interface endpoint x 8 (cluster)",
        "HyperPod instance ml.g5.12xlarge x 2 (hyperpod cluster)",
        "Auto Mode fee g6.xlarge x 1 (eks inference/a)",
        "Auto Mode fee g5.xlarge x 1 (eks inference/b)",
        "Auto Mode fee g6.xlarge x 1 (eks inference/alone)",
        "Auto Mode fee g6.xlarge x 1 (eks inference/quiet)",
    ]


def test_a_hyperpod_deployment_without_the_clusters_groups_says_the_cluster_is_unpriced() -> None:
    report = app_bill(
        [_prepared(name="hp", target="hyperpod-eks", instance_type="ml.g5.12xlarge")],
        nat_gateways=0,
        region="us-east-1",
    )
    assert [line.item.kind for line in report.lines] == ["eks_cluster", "load_balancer"]
    assert report.notes[-1] == (
        "no HyperPod instance groups were given: the HyperPod cluster is not priced"
    )


def test_an_unknown_region_prices_nothing_and_says_why() -> None:
    report = app_bill([_prepared()], nat_gateways=1, region=None)
    assert report.per_hour == (Decimal(0), Decimal(0))
    assert all(line.price is None for line in report.lines)
    assert report.unpriced[0] == (
        "EKS cluster x 1 (cluster): the region is unknown: give the deployment's region (--region)"
    )


def test_a_bill_count_runs_low_to_high() -> None:
    with pytest.raises(ValueError, match=r"a bill count runs from low to high: 3\.\.2"):
        BillItem(kind="nat_gateway", item="nat-gateway", owner="cluster", low=3, high=2)
    with pytest.raises(ValueError, match="0 or more NAT gateways"):
        app_bill([], nat_gateways=-1, region="us-east-1")


TABLE = """\
App: us-east-1, on-demand list prices in USD from mlcc_constructs/data/prices.json (checked 2026-02-24..2026-09-20); 30 days = 720 h
  item                                                                      count  USD/h each           USD/h         USD/30 days
  cluster: EKS cluster                                                          1        0.10          0.1000               72.00
  cluster: NAT gateway                                                          1       0.045          0.0450               32.40
  eks inference/chat: EC2 instance g5.2xlarge (2..3 replicas, autoscaled)    2..3       1.212  2.4240..3.6360  1,745.28..2,617.92
  eks inference/chat: Auto Mode fee g5.2xlarge (2..3 replicas, autoscaled)   2..3    unpriced               -                   -
  eks inference/chat: load balancer (internal)                                  1      0.0225          0.0225               16.20
  total (priced lines only)                                                                    2.5915..3.8035  1,865.88..2,738.52
  unpriced (named, never guessed):
    - EKS Auto Mode bills a management fee per instance it manages, priced per instance type on https://aws.amazon.com/eks/pricing/; no per-type figure is on record offline:
        Auto Mode fee g5.2xlarge x 2..3 (eks inference/chat)
"""  # noqa: E501 (the table is as wide as its rows)


def test_the_table_byte_for_byte() -> None:
    prepared = _prepared(
        instance_type="ml.g5.2xlarge", autoscaling=Autoscaling(min_replicas=2, max_replicas=3)
    )
    report = app_bill([prepared], nat_gateways=1, region="us-east-1")
    text = format_report(report, title="App", footnotes=False)
    assert text == TABLE
    assert text == format_report(report, title="App", footnotes=False)  # stable
    full = format_report(report, title="App")
    assert full.startswith(TABLE)
    assert "  usage-billed, not priced:\n    - NAT gateway data processing (per GB)\n" in full
    assert "  not counted:\n    - the nodes EKS Auto Mode starts for cluster add-ons" in full


def test_the_json_of_a_report() -> None:
    document = deployment_bill(_prepared()).to_json()
    assert {k: document[k] for k in ("region", "currency", "hours_per_30_days")} == {
        "region": "us-east-1",
        "currency": "USD",
        "hours_per_30_days": 720,
    }
    assert document["usd_per_hour"] == {"min": 0.8273, "max": 0.8273}
    assert document["usd_per_30_days"] == {"min": 595.66, "max": 595.66}
    assert document["totals_cover"] == "priced lines only"
    assert document["prices_checked"] == {"oldest": "2026-07-20", "newest": "2026-09-20"}
    ec2, fee, alb = document["lines"]
    assert ec2 | {"source": None} == {
        "owner": "eks inference/chat",
        "what": "EC2 instance g6.xlarge",
        "kind": "ec2_instance",
        "item": "g6.xlarge",
        "count": {"min": 1, "max": 1},
        "note": "1 replica",
        "usd_per_hour_each": 0.8048,
        "usd_per_hour": {"min": 0.8048, "max": 0.8048},
        "usd_per_30_days": {"min": 579.46, "max": 579.46},
        "source": None,
        "checked": "2026-07-20",
        "unpriced": None,
    }
    assert ec2["source"]["url"].startswith("https://github.com/aws/karpenter-provider-aws/")
    assert (fee["usd_per_hour"], fee["source"], fee["unpriced"]) == (None, None, AUTO_MODE)
    assert alb["usd_per_hour_each"] == 0.0225


def test_price_bill_takes_any_items() -> None:
    items = [BillItem(kind="ec2_instance", item="p5e.48xlarge", owner="x", low=1, high=1)]
    report = price_bill(items, region="us-east-1")
    assert report.per_hour == (Decimal(0), Decimal(0))
    assert report.unpriced[0].startswith("EC2 instance p5e.48xlarge x 1 (x): no on-demand price")
