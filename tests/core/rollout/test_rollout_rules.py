"""The pure rollout rules (core/rollout/rules.py): is there a rollout, can its surge pod schedule,
which node goes after a surge. Table-driven, with exact texts."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mlcc_constructs.core.rollout.cluster_state import (
    ClusterView,
    InstanceGroup,
    cluster_view,
    instance_groups,
    parse_selector,
    pod_gpus,
)
from mlcc_constructs.core.rollout.rules import (
    LAST_APPLIED,
    check_rollout,
    new_node,
    node_to_remove,
    pick_group,
    require_rendered_iec,
    rollout_done,
    stop_problem,
    surge_problems,
    template_changes,
)
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")
TYPE = "ml.g5.12xlarge"
SELECTOR = {"app": "llama"}


def rendered_iec(**changes: Any) -> dict[str, Any]:
    spec = flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type=TYPE,
        name="llama",
        namespace="inference",
        target="hyperpod-eks",
        **changes,
    )
    return copy.deepcopy(render(spec, context=CONTEXT).objects[0])


RENDERED = rendered_iec()


def node(
    name: str,
    *,
    gpus: int = 4,
    ready: bool = True,
    instance_type: str = TYPE,
    health: str | None = None,
    cordoned: bool = False,
) -> dict[str, Any]:
    labels = {"node.kubernetes.io/instance-type": instance_type}
    if health is not None:
        labels["sagemaker.amazonaws.com/node-health-status"] = health
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "48"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    on: str | None,
    *,
    gpus: int = 4,
    ready: bool = True,
    namespace: str = "inference",
    app: str = "llama",
    phase: str = "Running",
    terminating: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {"app": app}}
    if terminating:
        meta["deletionTimestamp"] = "2026-10-23T10:00:00Z"
    spec: dict[str, Any] = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    if on:
        spec["nodeName"] = on
    return {
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def view(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> ClusterView:
    return cluster_view({"items": nodes}, {"items": pods}, namespace="inference", selector=SELECTOR)


GROUP = InstanceGroup(
    name="workers",
    instance_type=TYPE,
    target_count=1,
    current_count=1,
    status="InService",
    scaling=False,
)
FULL = view([node("hyperpod-i-0aaa")], [pod("llama-old", "hyperpod-i-0aaa")])


def changed(image: str = "vllm/vllm-openai:v0.30.0") -> dict[str, Any]:
    live = copy.deepcopy(RENDERED)
    live["spec"]["worker"]["image"] = image
    return live


# -- reading the cluster ---------------------------------------------------------------------


def test_cluster_view_counts_gpus_of_bound_pods_only() -> None:
    seen = view(
        [node("hyperpod-i-0aaa", gpus=8), node("ip-10-0-0-1", gpus=0, instance_type="m5.large")],
        [
            pod("llama-old", "hyperpod-i-0aaa", gpus=4),
            pod("other", "hyperpod-i-0aaa", gpus=2, namespace="team", app="x"),
            pod("done", "hyperpod-i-0aaa", gpus=2, phase="Succeeded"),
            pod("failed", "hyperpod-i-0aaa", gpus=2, phase="Failed"),
            pod("pending", None, gpus=4, ready=False),
        ],
    )
    first = seen.node("hyperpod-i-0aaa")
    assert first is not None
    assert (first.instance_id, first.gpus, first.gpus_requested, first.free_gpus) == (
        "i-0aaa",
        8,
        6,
        2,
    )
    assert [p.name for p in first.serving] == ["llama-old"]
    assert [p.name for p in seen.serving] == ["llama-old", "pending"]  # any node, or none
    other = seen.node("ip-10-0-0-1")
    assert other is not None and other.instance_id is None


def test_a_node_not_named_after_its_instance_is_matched_by_provider_id() -> None:
    named = node("ip-10-0-0-2")
    named["spec"]["providerID"] = "aws:///us-east-1a/i-0123456789abcdef0"
    (seen,) = view([named], []).nodes
    assert seen.instance_id == "i-0123456789abcdef0"


@pytest.mark.parametrize(
    ("kwargs", "ready", "schedulable"),
    [
        ({}, True, True),
        ({"ready": False}, False, True),
        ({"cordoned": True}, True, False),
        ({"health": "Schedulable"}, True, True),
        ({"health": "UnschedulablePendingReplacement"}, True, False),
    ],
)
def test_node_readiness_and_hyperpod_health(
    kwargs: dict[str, Any], ready: bool, schedulable: bool
) -> None:
    (seen,) = view([node("hyperpod-i-0aaa", **kwargs)], []).nodes
    assert (seen.ready, seen.schedulable) == (ready, schedulable)


@pytest.mark.parametrize(
    ("spec", "gpus"),
    [
        ({"containers": [{"resources": {"requests": {"nvidia.com/gpu": "2"}}}]}, 2),
        ({"containers": [{"resources": {"limits": {"nvidia.com/gpu": 4}}}, {}]}, 4),
        (
            {
                "containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}],
                "initContainers": [
                    {"restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": 1}}},
                    {"resources": {"limits": {"nvidia.com/gpu": 4}}},
                ],
            },
            4,  # the plain init container needs more than the running set (1 + 1)
        ),
        ({"containers": [{"resources": {"limits": {"cpu": "4"}}}]}, 0),
    ],
)
def test_pod_gpus(spec: dict[str, Any], gpus: int) -> None:
    assert pod_gpus({"spec": spec}) == gpus


@pytest.mark.parametrize(
    ("text", "labels"),
    [("app=llama", {"app": "llama"}), ("a=b, c.io/d=e", {"a": "b", "c.io/d": "e"})],
)
def test_parse_selector(text: str, labels: dict[str, str]) -> None:
    assert parse_selector(text) == labels


@pytest.mark.parametrize("text", ["app", "app!=x", "app in (a)", ""])
def test_parse_selector_refuses_what_the_rules_cannot_match(text: str) -> None:
    with pytest.raises(MlccError) as caught:
        parse_selector(text)
    assert str(caught.value) == (
        f"--selector: not an equality label selector (got {text!r}; allowed: "
        "KEY=VALUE[,KEY=VALUE...]; fix: name each label and its value, e.g. "
        "app=my-model,tier=gpu)"
    )


# -- is there a rollout? ---------------------------------------------------------------------


def _annotated(applied: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    live = copy.deepcopy(live)
    live["metadata"].setdefault("annotations", {})[LAST_APPLIED] = json.dumps(applied)
    return live


def _with_server_defaults(iec: dict[str, Any]) -> dict[str, Any]:
    live = copy.deepcopy(iec)
    live["spec"]["loadBalancer"]["routingAlgorithm"] = "least_outstanding_requests"
    live["spec"]["metrics"]["metricsScrapeIntervalSeconds"] = 15
    live["status"] = {"state": "DeploymentComplete"}
    return live


def _dropped_probes() -> tuple[dict[str, Any], dict[str, Any]]:
    before = copy.deepcopy(RENDERED)
    rendered = copy.deepcopy(RENDERED)
    del rendered["spec"]["worker"]["probes"]
    return rendered, _annotated(before, before)


def _scaled() -> dict[str, Any]:
    live = copy.deepcopy(RENDERED)
    live["spec"]["replicas"] = 3
    return live


@pytest.mark.parametrize(
    ("rendered", "live", "changes"),
    [
        (RENDERED, RENDERED, ()),
        (RENDERED, _with_server_defaults(RENDERED), ()),  # defaults the render does not name
        (RENDERED, changed(), ("/spec/worker/image",)),
        (RENDERED, _scaled(), ()),  # a scale is not a rollout
        (RENDERED, _annotated(RENDERED, _with_server_defaults(RENDERED)), ()),
        (*_dropped_probes(), ("/spec/worker/probes",)),  # last-applied: a dropped field counts
        (
            rendered_iec(env={"NCCL_DEBUG": "WARN"}),
            RENDERED,
            ("/spec/worker/environmentVariables",),
        ),
    ],
    ids=["same", "defaults", "image", "replicas", "applied", "dropped", "env"],
)
def test_template_changes(
    rendered: dict[str, Any], live: dict[str, Any], changes: tuple[str, ...]
) -> None:
    assert template_changes(rendered, live) == changes


# -- can the surge pod schedule? -------------------------------------------------------------

WORKERS = instance_groups(
    {
        "InstanceGroups": [
            {
                "InstanceGroupName": "workers",
                "InstanceType": TYPE,
                "TargetCount": 1,
                "CurrentCount": 1,
                "Status": "InService",
            },
            {
                "InstanceGroupName": "system",
                "InstanceType": "ml.m5.xlarge",
                "TargetCount": 2,
                "CurrentCount": 2,
                "Status": "InService",
            },
        ]
    }
)
SUBJECT = "InferenceEndpointConfig inference/llama"


@pytest.mark.parametrize(
    ("live", "seen", "action", "detail"),
    [
        (None, FULL, "create", "does not exist yet: applying creates it (no rollout)"),
        (RENDERED, FULL, "none", "the pod template is unchanged: no rollout"),
        (
            changed(),
            view(
                [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")],
                [pod("llama-old", "hyperpod-i-0aaa")],
            ),
            "fits",
            "the pod template changed (/spec/worker/image); node hyperpod-i-0bbb has 4 free "
            "nvidia.com/gpu for the surge pod (4 needed)",
        ),
        (
            changed(),
            FULL,
            "surge",
            "the pod template changed (/spec/worker/image) and no Ready node of instance type "
            "ml.g5.12xlarge has 4 free nvidia.com/gpu for the surge pod (hyperpod-i-0aaa: 0 of "
            "4 free)",
        ),
        (
            changed(),
            view(  # a free node that is not Ready, or of another type, does not count
                [
                    node("hyperpod-i-0aaa"),
                    node("hyperpod-i-0bbb", ready=False),
                    node("hyperpod-i-0ccc", instance_type="ml.g5.48xlarge", gpus=8),
                    node("hyperpod-i-0ddd", health="Unschedulable"),
                ],
                [pod("llama-old", "hyperpod-i-0aaa")],
            ),
            "surge",
            "the pod template changed (/spec/worker/image) and no Ready node of instance type "
            "ml.g5.12xlarge has 4 free nvidia.com/gpu for the surge pod (hyperpod-i-0aaa: 0 of "
            "4 free)",
        ),
        (
            changed(),
            view(
                [node("hyperpod-i-0aaa", gpus=8)],
                [
                    pod("llama-old", "hyperpod-i-0aaa"),
                    pod("train", "hyperpod-i-0aaa", gpus=2, namespace="t", app="t"),
                ],
            ),
            "surge",
            "the pod template changed (/spec/worker/image) and no Ready node of instance type "
            "ml.g5.12xlarge has 4 free nvidia.com/gpu for the surge pod (hyperpod-i-0aaa: 2 of "
            "8 free)",
        ),
    ],
    ids=["create", "unchanged", "fits", "full", "only-unusable-room", "shared-node"],
)
def test_check_rollout(
    live: dict[str, Any] | None, seen: ClusterView, action: str, detail: str
) -> None:
    result = check_rollout(rendered=RENDERED, live=live, view=seen, groups=WORKERS, cluster="hp")
    assert (result.action, result.subject, result.detail) == (action, SUBJECT, detail)
    assert result.summary == f"{SUBJECT}: {detail}"
    assert (result.group is not None) == (action == "surge")


def test_the_stop_names_the_command_and_the_cost() -> None:
    result = check_rollout(
        rendered=RENDERED, live=changed(), view=FULL, groups=WORKERS, cluster="hp"
    )
    problem = stop_problem(
        result, cluster="hp", surge_command="mlcc rollout apply --file d.yaml --surge-node"
    )
    assert str(problem) == (
        "InferenceEndpointConfig inference/llama: the pod template changed (/spec/worker/image) "
        "and no Ready node of instance type ml.g5.12xlarge has 4 free nvidia.com/gpu for the "
        "surge pod (hyperpod-i-0aaa: 0 of 4 free); nothing was applied (fix: run `mlcc rollout "
        "apply --file d.yaml --surge-node`; cost: one more ml.g5.12xlarge node in instance group "
        "'workers' of cluster 'hp' (1 node now) for the rollout's duration, until the new pod is "
        "Ready and the old pod is gone; the vacated node is then removed)"
    )


def _group(name: str, instance_type: str = TYPE) -> InstanceGroup:
    return InstanceGroup(
        name=name,
        instance_type=instance_type,
        target_count=1,
        current_count=1,
        status="InService",
        scaling=False,
    )


@pytest.mark.parametrize(
    ("groups", "requested", "message"),
    [
        (
            [_group("system", "ml.m5.xlarge")],
            None,
            "--cluster: cluster 'hp' has no instance group of instance type ml.g5.12xlarge (got "
            "'hp'; allowed: system (ml.m5.xlarge); fix: deploy to an instance type the cluster "
            "runs, or add an instance group of it)",
        ),
        (
            [_group("a"), _group("b")],
            None,
            "--instance-group: several instance groups of cluster 'hp' run ml.g5.12xlarge "
            "(allowed: a, b; fix: pass --instance-group to say which one takes the surge node)",
        ),
        (
            [_group("a")],
            "c",
            "--instance-group: cluster 'hp' has no instance group 'c' (got 'c'; allowed: a; fix: "
            "pass one of the cluster's instance groups)",
        ),
        (
            [_group("a"), _group("cpu", "ml.m5.xlarge")],
            "cpu",
            "--instance-group: instance group 'cpu' runs ml.m5.xlarge, the IEC ml.g5.12xlarge "
            "(got 'cpu'; fix: pass the instance group that runs the IEC's instance type)",
        ),
    ],
    ids=["none", "several", "unknown", "other-type"],
)
def test_pick_group_refusals(
    groups: list[InstanceGroup], requested: str | None, message: str
) -> None:
    with pytest.raises(MlccError) as caught:
        pick_group(groups, instance_type=TYPE, requested=requested, cluster="hp")
    assert str(caught.value) == message


def test_pick_group_takes_the_requested_or_the_only_group() -> None:
    groups = [_group("a"), _group("b"), _group("cpu", "ml.m5.xlarge")]
    assert pick_group(groups, instance_type=TYPE, requested="b", cluster="hp").name == "b"
    assert pick_group(groups[1:], instance_type=TYPE, requested=None, cluster="hp").name == "b"


def test_a_target_without_an_iec_is_refused() -> None:
    with pytest.raises(MlccError) as caught:
        require_rendered_iec([{"kind": "Deployment"}], target="eks")
    assert str(caught.value) == (
        "--target: mlcc rollout rolls out an InferenceEndpointConfig on a HyperPod cluster; this "
        "target renders none (got 'eks'; allowed: hyperpod-eks; fix: pass --target hyperpod-eks)"
    )


# -- the surge -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "status", "ids", "messages"),
    [
        (GROUP, "InService", {"i-0aaa"}, []),
        (
            InstanceGroup(
                name="workers",
                instance_type=TYPE,
                target_count=2,
                current_count=1,
                status="Updating",
                scaling=True,
            ),
            "Updating",
            {"i-0aaa", "i-0bbb"},
            [
                "instance group 'workers': the cluster is not InService (got 'Updating'; fix: "
                "wait until DescribeCluster reports InService, then re-run)",
                "instance group 'workers': the group is busy (Updating, 1 of 2 instances) (fix: "
                "wait until the group is InService at its target count, then re-run)",
                "instance group 'workers': instances of the group have no Kubernetes node named "
                "hyperpod-<id> (got ['i-0bbb']; fix: wait until every instance has joined the "
                "cluster, then re-run)",
            ],
        ),
        (
            InstanceGroup(
                name="workers",
                instance_type=TYPE,
                target_count=0,
                current_count=0,
                status="InService",
                scaling=False,
            ),
            "InService",
            set(),
            [
                "instance group 'workers': the group has no instances to serve from (got 0; fix: "
                "scale the group up before rolling out to it)"
            ],
        ),
    ],
    ids=["ready", "busy", "empty"],
)
def test_surge_problems(
    group: InstanceGroup, status: str, ids: set[str], messages: list[str]
) -> None:
    found = surge_problems(group, cluster_status=status, group_ids=ids, view=FULL)
    assert [str(p) for p in found] == messages


def test_new_node_is_a_ready_node_that_joined_the_group() -> None:
    joining = view([node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb", ready=False)], [])
    assert new_node(joining, group_ids={"i-0aaa", "i-0bbb"}, before={"i-0aaa"}) is None
    joined = view([node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")], [])
    found = new_node(joined, group_ids={"i-0aaa", "i-0bbb"}, before={"i-0aaa"})
    assert found is not None and found.name == "hyperpod-i-0bbb"
    assert new_node(joined, group_ids={"i-0aaa"}, before={"i-0aaa"}) is None  # another group


@pytest.mark.parametrize(
    ("pods", "done"),
    [
        ([pod("llama-old", "a"), pod("llama-new", "b", ready=False)], False),
        ([pod("llama-old", "a", terminating=True), pod("llama-new", "b")], False),
        ([pod("llama-new", "b", ready=False)], False),
        ([pod("llama-new", "b")], True),
    ],
)
def test_rollout_done(pods: list[dict[str, Any]], done: bool) -> None:
    assert rollout_done(view([], pods), old_pods={"llama-old"}, replicas=1) is done


TWO = {"i-0aaa", "i-0bbb"}


@pytest.mark.parametrize(
    ("nodes", "pods", "ids", "new", "expected"),
    [
        (  # success: the old node is vacated
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")],
            [pod("llama-new", "hyperpod-i-0bbb")],
            TWO,
            {"i-0bbb"},
            ("i-0aaa", "hyperpod-i-0aaa", "it hosts no serving pod"),
        ),
        (  # the new pod never became Ready: the old one keeps serving, the new node goes
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")],
            [pod("llama-old", "hyperpod-i-0aaa"), pod("llama-new", "hyperpod-i-0bbb", ready=False)],
            TWO,
            {"i-0bbb"},
            ("i-0bbb", "hyperpod-i-0bbb", "it hosts no Ready serving pod"),
        ),
        (  # the new instance never joined
            [node("hyperpod-i-0aaa")],
            [pod("llama-old", "hyperpod-i-0aaa")],
            TWO,
            {"i-0bbb"},
            ("i-0bbb", None, "it never joined the Kubernetes cluster"),
        ),
        (  # the new node joined but is not Ready: it goes, not the serving one
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb", ready=False)],
            [pod("llama-old", "hyperpod-i-0aaa")],
            TWO,
            {"i-0bbb"},
            ("i-0bbb", "hyperpod-i-0bbb", "it hosts no serving pod"),
        ),
        (  # both empty: prefer the node the surge added
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")],
            [],
            TWO,
            {"i-0bbb"},
            ("i-0bbb", "hyperpod-i-0bbb", "it hosts no serving pod"),
        ),
        (  # no pod Ready anywhere: keep the node where the new pod is starting
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")],
            [pod("llama-new", "hyperpod-i-0bbb", ready=False)],
            TWO,
            {"i-0bbb"},
            ("i-0aaa", "hyperpod-i-0aaa", "it hosts no serving pod"),
        ),
        (  # never the last Ready node, even an empty one
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb", ready=False)],
            [pod("llama-new", "hyperpod-i-0bbb", ready=False)],
            TWO,
            {"i-0bbb"},
            ("i-0bbb", "hyperpod-i-0bbb", "it hosts no Ready serving pod"),
        ),
        (  # every node serves: nothing can go
            [node("hyperpod-i-0aaa"), node("hyperpod-i-0bbb")],
            [pod("llama-a", "hyperpod-i-0aaa"), pod("llama-b", "hyperpod-i-0bbb")],
            TWO,
            {"i-0bbb"},
            None,
        ),
        (  # one Ready node only, and it is empty: it stays
            [node("hyperpod-i-0aaa")],
            [],
            {"i-0aaa"},
            set(),
            None,
        ),
    ],
    ids=[
        "vacated",
        "new-pod-not-ready",
        "never-joined",
        "joined-not-ready",
        "both-empty",
        "nothing-ready",
        "last-ready",
        "all-serving",
        "only-node",
    ],
)
def test_node_to_remove(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    ids: set[str],
    new: set[str],
    expected: tuple[str, str | None, str] | None,
) -> None:
    removal = node_to_remove(view(nodes, pods), group_ids=ids, new_ids=new)
    got = None if removal is None else (removal.instance_id, removal.node, removal.reason)
    assert got == expected
