"""The GPU NodePool's limit, disruption budgets and node lifetime: the pure rules
(core/platform/gpu_disruption.py), their context values and what the eks-cluster stack emits."""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.platform.gpu_capacity import gpu_node_pool
from mlcc_constructs.core.platform.gpu_disruption import (
    EXPIRE_AFTER,
    TERMINATION_GRACE_PERIOD,
    MaintenanceWindow,
    default_gpu_limit,
    disruption_budgets,
    gpu_limit_problems,
    lifetime_problems,
    parse_maintenance_window,
)
from mlcc_constructs.core.serving.kinds.registry import object_problems
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import EKS_STACK, build, manifest_object, template
from tests._flat import flat_spec

WHERE = "CDK context (cdk.json or -c)"


def test_the_limit_counts_an_autoscaled_deployment_at_its_max_replicas() -> None:
    from types import SimpleNamespace

    from mlcc_constructs.core.serving.prepared import prepare
    from mlcc_constructs.core.serving.spec.app_deployments import gpu_demand
    from mlcc_constructs.core.serving.spec.autoscaling import Autoscaling
    from mlcc_constructs.core.serving.spec.context import RenderContext

    context = RenderContext(
        region="us-east-1",
        prometheus_query_url="https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1",
    )
    base = {"engine": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct", "name": "chat"}
    fixed = prepare(flat_spec(**base, instance_type="ml.g5.12xlarge", replicas=2), context=context)
    scaled = prepare(
        flat_spec(
            **base,
            instance_type="ml.g5.2xlarge",
            autoscaling=Autoscaling(min_replicas=1, max_replicas=3),
        ),
        context=context,
    )
    apps = tuple(SimpleNamespace(prepared=p) for p in (fixed, scaled))
    assert gpu_demand(apps) == ((2, 4), (3, 1))  # type: ignore[arg-type]
    assert default_gpu_limit(gpu_demand(apps)) == 11  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pairs", "limit"), [([], 0), ([(1, 4)], 4), ([(1, 4), (1, 1)], 5), ([(3, 8), (2, 1)], 26)]
)
def test_default_limit_is_max_replicas_times_gpus_summed(
    pairs: list[tuple[int, int]], limit: int
) -> None:
    assert default_gpu_limit(pairs) == limit


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (
            3,
            "T:/gpu_limit: the GPU NodePool's limit is below one replica's GPUs (4): that "
            "deployment could never start (got 3; allowed: 4 or more; fix: raise gpu_limit to "
            "at least 4)",
        ),
        (
            0,
            "T:/gpu_limit: the GPU NodePool's limit must be a whole number of GPUs, at least 1 "
            "(got 0; allowed: 1, 2, ...; fix: set the GPUs the pool may hold, or leave it unset "
            "(the deployments' max replicas x GPUs per pod))",
        ),
        (True, None),
    ],
)
def test_a_limit_below_one_replica_is_refused(limit: object, message: str | None) -> None:
    problems = [str(p) for p in gpu_limit_problems(limit, [(1, 4), (2, 1)], where="T")]
    if message is not None:
        assert problems == [message]
    else:
        assert len(problems) == 1
    assert gpu_limit_problems(4, [(1, 4), (2, 1)], where="T") == []


def test_without_a_window_drift_and_repacking_never_disrupt() -> None:
    assert disruption_budgets(None) == [
        {"nodes": "0", "reasons": ["Underutilized"]},
        {"nodes": "0", "reasons": ["Drifted"]},
    ]


@pytest.mark.parametrize(
    ("text", "window", "start", "end", "rest"),
    [
        ("sun 02:00 4h", MaintenanceWindow(day=0, hour=2, minute=0, hours=4), "0 2 * * 0",
         "0 6 * * 0", "164h"),
        ("sat 22:30 4h", MaintenanceWindow(day=6, hour=22, minute=30, hours=4), "30 22 * * 6",
         "30 2 * * 0", "164h"),
        ("daily 03:00 2h", MaintenanceWindow(day=None, hour=3, minute=0, hours=2), "0 3 * * *",
         "0 5 * * *", "22h"),
        ("daily 23:15 3h", MaintenanceWindow(day=None, hour=23, minute=15, hours=3),
         "15 23 * * *", "15 2 * * *", "21h"),
    ],
)  # fmt: skip
def test_a_window_allows_one_drifted_node_inside_and_none_outside(
    text: str, window: MaintenanceWindow, start: str, end: str, rest: str
) -> None:
    parsed = parse_maintenance_window(text, where="T")
    assert parsed == window
    budgets = disruption_budgets(parsed)
    assert budgets[1:] == [
        {"nodes": "1", "reasons": ["Drifted"], "schedule": start, "duration": f"{window.hours}h"},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": end, "duration": rest},
    ]
    # The two schedules cover the whole period, once.
    assert window.hours + int(rest[:-1]) == window.period_hours


@pytest.mark.parametrize(
    "text", ["sunday 02:00 4h", "sun 2:00 4h", "daily 02:00 24h", "sun 25:00 1h", "sun 02:00 0h", 4]
)
def test_a_bad_window_is_named(text: object) -> None:
    with pytest.raises(MlccError) as caught:
        parse_maintenance_window(text, where="T")
    assert str(caught.value).startswith(
        f"T:/gpu_maintenance_window: not a maintenance window (got {text!r}"
    )


def test_lifetimes_are_durations_within_auto_modes_maximum() -> None:
    assert lifetime_problems(expire_after="504h", termination_grace_period="90m", where="T") == []
    assert [
        str(p)
        for p in lifetime_problems(expire_after="505h", termination_grace_period="0s", where="T")
    ] == [
        "T:/expire_after: not a node lifetime Auto Mode honours (got '505h'; allowed: a duration "
        "such as 336h, at most 504h (21 days); fix: use e.g. 336h)",
        "T:/termination_grace_period: not a positive duration (got '0s'; allowed: a duration "
        "such as 2h or 90m; fix: use e.g. 2h)",
    ]


def test_the_pool_with_limit_window_and_lifetime_is_valid_against_the_rules() -> None:
    pool = gpu_node_pool(
        ["g5"], gpu_limit=8, maintenance_window=parse_maintenance_window("sun 02:00 4h", where="T")
    )
    assert object_problems(pool) == []
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "8"}
    template_spec = pool["spec"]["template"]["spec"]
    assert (template_spec["expireAfter"], template_spec["terminationGracePeriod"]) == (
        EXPIRE_AFTER,
        TERMINATION_GRACE_PERIOD,
    )
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    bad = gpu_node_pool(["g5"])
    bad["spec"]["disruption"]["budgets"][0]["reasons"] = ["Expired"]
    assert [str(p) for p in object_problems(bad)] == [
        "NodePool/mlcc-gpu:/spec/disruption/budgets/0/reasons/0: 'Expired' is not one of "
        "['Underutilized', 'Empty', 'Drifted'] (NodePool v1 CRD rules) (fix: use one of the "
        "values the NodePool CRD allows)"
    ]


def _pool(app: Any) -> dict[str, Any]:
    from aws_cdk.assertions import Template

    resources = Template.from_stack(app.node.find_child(EKS_STACK)).to_json()["Resources"]
    (manifest,) = [r for k, r in resources.items() if k.startswith("NodePool")]
    return manifest_object(manifest)  # type: ignore[no-any-return]


def test_the_stack_pool_has_the_default_limit_and_no_drift() -> None:
    resources = template(EKS_STACK)["Resources"]
    (manifest,) = [r for k, r in resources.items() if k.startswith("NodePool")]
    pool = manifest_object(manifest)
    # 1 x 4 + 3 x 1 + one 2-node group of 8 GPUs each (cdk.json)
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "23"}
    assert pool["spec"]["disruption"]["budgets"] == disruption_budgets(None)


def test_context_sets_the_limit_and_the_window() -> None:
    pool = _pool(build(gpu_limit="24", gpu_maintenance_window="daily 03:00 2h"))
    assert pool["spec"]["limits"] == {"nvidia.com/gpu": "24"}
    assert pool["spec"]["disruption"]["budgets"][1]["schedule"] == "0 3 * * *"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"gpu_limit": "3"},  # below the 2-node group's 16 GPUs (llama-405b-vllm)
            f"{WHERE}:/gpu_limit: the GPU NodePool's limit is below one replica's GPUs (16): "
            "that deployment could never start (got 3; allowed: 16 or more; fix: raise gpu_limit "
            "to at least 16)",
        ),
        (
            {"gpu_limit": "many"},
            f"{WHERE}:/gpu_limit: the GPU NodePool's limit must be a whole number of GPUs (got "
            "'many'; allowed: 1, 2, ...; fix: pass -c gpu_limit=8 or set a number in cdk.json)",
        ),
    ],
)
def test_bad_context_is_named(context: dict[str, str], message: str) -> None:
    with pytest.raises(MlccError) as caught:
        build(**context)
    assert [str(p) for p in caught.value.problems] == [message]


def test_bad_pool_and_log_props_are_named() -> None:
    from mlcc_constructs.aws.serving_cluster_props import ServingClusterProps

    with pytest.raises(MlccError) as caught:
        ServingClusterProps(
            gpu_limit=0, gpu_maintenance_window="sunday 2am", control_plane_log_days=45
        )
    assert [p.pointer for p in caught.value.problems] == [
        "/gpu_limit",
        "/gpu_maintenance_window",
        "/control_plane_log_days",
    ]
    assert all(p.where == "ServingClusterProps" for p in caught.value.problems)


def test_bad_node_pool_lifetime_is_named() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs.aws.gpu_node_pool import GpuNodePoolProps

    stack = cdk.Stack(cdk.App())
    cluster = eks.Cluster.from_cluster_attributes(stack, "C", cluster_name="c")
    with pytest.raises(MlccError) as caught:
        GpuNodePoolProps(
            cluster=cluster, instance_families=["g5"], expire_after="30d", maintenance_window="x"
        )
    assert [(p.where, p.pointer) for p in caught.value.problems] == [
        ("GpuNodePoolProps", "/expire_after"),
        ("GpuNodePoolProps", "/maintenance_window"),
    ]
