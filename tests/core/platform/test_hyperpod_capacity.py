"""HyperPod capacity at synth: the deployments' most GPUs per instance type against the created
instance groups', with the rollout's surge headroom; table-driven."""

from __future__ import annotations

import pytest

from mlcc_constructs.core.platform.hyperpod import HyperPodSettings, InstanceGroup
from mlcc_constructs.core.platform.hyperpod_capacity import (
    HyperPodDemand,
    capacity_problems,
    surge_headroom,
)


def _settings(*groups: tuple[str, str, int], imported: bool = False) -> HyperPodSettings:
    return HyperPodSettings(
        cluster_name="c",
        groups=tuple(InstanceGroup(name=n, instance_type=t, count=c) for n, t, c in groups),
        imported=imported,
    )


def _demand(name: str, instance_type: str, replicas: int, gpus: int) -> HyperPodDemand:
    return HyperPodDemand(
        where=f"cdk.json:/context/reference_deployments/{name}",
        name=name,
        instance_type=instance_type,
        max_replicas=replicas,
        gpus_per_pod=gpus,
    )


G12 = "ml.g5.12xlarge"  # 4 GPUs
G48 = "ml.g5.48xlarge"  # 8 GPUs


@pytest.mark.parametrize(
    ("groups", "demands", "fits"),
    [
        ([("a", G12, 1)], [("x", G12, 1, 4)], True),
        ([("a", G12, 1)], [("x", G12, 1, 4), ("y", G12, 1, 4)], False),
        ([("a", G12, 2)], [("x", G12, 1, 4), ("y", G12, 1, 4)], True),
        ([("a", G12, 1), ("b", G12, 1)], [("x", G12, 2, 4)], True),  # two groups of one type
        ([("a", G12, 1)], [("x", G12, 3, 1)], True),
        ([("a", G12, 1)], [("x", G12, 5, 1)], False),  # max_replicas counts
        ([("a", G12, 1), ("b", G48, 1)], [("x", G48, 1, 8), ("y", G12, 1, 4)], True),
    ],
)
def test_capacity(
    groups: list[tuple[str, str, int]], demands: list[tuple[str, str, int, int]], fits: bool
) -> None:
    problems = capacity_problems(_settings(*groups), [_demand(*d) for d in demands])
    assert (problems == []) is fits


def test_the_problem_names_the_deployments_and_the_numbers() -> None:
    (problem,) = capacity_problems(
        _settings(("inference", G12, 1)), [_demand("x", G12, 1, 4), _demand("y", G12, 2, 4)]
    )
    assert str(problem) == (
        "cdk.json:/context/hyperpod_instance_groups/0/count: the ml.g5.12xlarge instance groups "
        "have 4 GPUs (1 x 4), and the deployments on them ask for 12 at most (x 1 x 4, y 2 x 4): "
        "a replica beyond the capacity stays Pending (got 1; allowed: at least 3 for this group; "
        "fix: raise inference's count, or lower the deployments' replicas or max_replicas)"
    )


def test_an_imported_cluster_or_none_is_not_checked() -> None:
    demand = [_demand("x", G12, 9, 4)]
    assert capacity_problems(_settings(imported=True), demand) == []
    assert capacity_problems(None, demand) == []
    assert surge_headroom(_settings(imported=True), demand) == []


def test_surge_headroom() -> None:
    full = surge_headroom(_settings(("a", G12, 2)), [_demand("x", G12, 2, 4)])
    assert full == [
        "HyperPod ml.g5.12xlarge: 0 GPUs free at the deployments' most, fewer than a pod's 4: "
        "a rollout waits for a node; roll out with `mlcc rollout apply -f SPEC --cluster NAME "
        "--surge-node`"
    ]
    room = surge_headroom(_settings(("a", G12, 3)), [_demand("x", G12, 2, 4)])
    assert room == [
        "HyperPod ml.g5.12xlarge: 4 GPUs free at the deployments' most, room for a rollout's "
        "surge pod"
    ]


def test_the_reference_app_fits_and_says_its_headroom() -> None:
    import aws_cdk as cdk

    from tests._cdk_app import HYPERPOD_STACK, synthesised

    app = synthesised()[0]
    stack = app.node.find_child(HYPERPOD_STACK)
    cluster = stack.node.find_child("HyperPodCluster")  # the construct says it, for teams too
    infos = [m.data for m in cluster.node.metadata if m.type == "aws:cdk:info"]
    assert infos == [
        "HyperPod ml.g5.12xlarge: 0 GPUs free at the deployments' most, fewer than a pod's 4: "
        "a rollout waits for a node; roll out with `mlcc rollout apply -f SPEC --cluster NAME "
        "--surge-node`"
    ]
    assert isinstance(stack, cdk.Stack)
