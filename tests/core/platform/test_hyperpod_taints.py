"""HyperPod instance groups' taints and labels: the context's ``taints`` and ``labels`` (parsed
and validated with JSON pointers), the GPU taint by default, the tolerations IEC workers get
from ``ExtendedResourceToleration``, the synth check that they tolerate their groups, and the
hyperpod-cluster template carrying the taints. Table-driven."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.platform.gpu_capacity import gpu_toleration
from mlcc_constructs.core.platform.hyperpod import (
    HyperPodSettings,
    InstanceGroup,
    hyperpod_settings,
)
from mlcc_constructs.core.platform.hyperpod_capacity import HyperPodDemand
from mlcc_constructs.core.platform.hyperpod_taints import (
    GPU_TAINT,
    Taint,
    Toleration,
    blocking_taints,
    default_taints,
    extended_resource_tolerations,
    is_extended_resource,
)
from mlcc_constructs.core.platform.hyperpod_tolerations import toleration_problems
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import HYPERPOD_STACK, build, synthesised

WHERE = "CDK context (cdk.json or -c):/hyperpod_instance_groups/0"
FIX = "edit hyperpod_instance_groups in cdk.json (or pass -c hyperpod_instance_groups='[...]')"
G12 = "ml.g5.12xlarge"
KEY_RULE = (
    "1-317 characters: an optional DNS prefix and '/', then letters, digits, '-', '_' and '.', "
    "starting and ending with a letter or digit"
)
VALUE_RULE = "1-63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


def _group(**overrides: Any) -> dict[str, Any]:
    return {"name": "inference", "instance_type": G12, "count": 1, **overrides}


def _only(**overrides: Any) -> InstanceGroup:
    settings = hyperpod_settings([_group(**overrides)], None, profile="dev")
    assert settings is not None
    (group,) = settings.groups
    return group


# --- parsing ---------------------------------------------------------------------------------

GOOD = [
    ({}, (GPU_TAINT,), {}),  # a GPU type's default
    ({"taints": []}, (), {}),  # explicitly untainted
    (
        {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        (Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),),
        {},
    ),
    (
        {
            "taints": [
                {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "effect": "PreferNoSchedule"},
                {"key": "team", "value": "a", "effect": "PreferNoSchedule"},
            ]
        },
        (
            GPU_TAINT,
            Taint(key="nvidia.com/gpu", effect="PreferNoSchedule"),
            Taint(key="team", value="a", effect="PreferNoSchedule"),
        ),
        {},
    ),
    (
        {"labels": {"team": "inference", "example.com/tier": "gold"}},
        (GPU_TAINT,),
        {"example.com/tier": "gold", "team": "inference"},
    ),
]


@pytest.mark.parametrize(("extra", "taints", "labels"), GOOD)
def test_taints_and_labels_of_the_context(
    extra: dict[str, Any], taints: tuple[Taint, ...], labels: dict[str, str]
) -> None:
    group = _only(**extra)
    assert group.node_taints == taints
    assert dict(group.labels) == labels


BAD = [
    (
        {"taints": "nvidia.com/gpu:NoSchedule"},
        [
            f"{WHERE}/taints: taints must be a list of at most 50 taints (got "
            '\'nvidia.com/gpu:NoSchedule\'; allowed: [{"key": "nvidia.com/gpu", "effect": '
            f'"NoSchedule"}}], or [] for none; fix: {FIX})'
        ],
    ),
    (
        {"taints": [{"key": "k", "effect": "NoSchedule"}] * 51},
        [
            f"{WHERE}/taints: taints must be a list of at most 50 taints (got "
            f'{[{"key": "k", "effect": "NoSchedule"}] * 51!r}; allowed: [{{"key": '
            f'"nvidia.com/gpu", "effect": "NoSchedule"}}], or [] for none; fix: {FIX})'
        ],
    ),
    (
        {"taints": [{"key": "nvidia.com/gpu", "effect": "noschedule"}]},
        [
            f"{WHERE}/taints/0/effect: not a taint effect (got 'noschedule'; allowed: "
            f"NoSchedule, PreferNoSchedule, NoExecute; fix: {FIX})"
        ],
    ),
    (
        {"taints": [{"key": "-gpu", "value": "a b", "effect": "NoSchedule"}]},
        [
            f"{WHERE}/taints/0/key: not a taint key (got '-gpu'; allowed: {KEY_RULE}; fix: {FIX})",
            f"{WHERE}/taints/0/value: not a taint value (got 'a b'; allowed: {VALUE_RULE}; "
            f"fix: {FIX})",
        ],
    ),
    (
        {"taints": [{"key": "k" * 318, "effect": "NoSchedule"}]},
        [
            f"{WHERE}/taints/0/key: not a taint key (got {'k' * 318!r}; allowed: {KEY_RULE}; "
            f"fix: {FIX})"
        ],
    ),
    (
        {"taints": [{"effect": "NoSchedule", "operator": "Exists"}]},
        [
            f"{WHERE}/taints/0/operator: unknown key 'operator' (got 'Exists'; allowed: key, "
            f"value, effect; fix: {FIX})",
            f"{WHERE}/taints/0: missing 'key' (got {{'effect': 'NoSchedule', 'operator': "
            f"'Exists'}}; allowed: key; fix: {FIX})",
        ],
    ),
    (
        {"taints": ["nvidia.com/gpu:NoSchedule"]},
        [
            f"{WHERE}/taints/0: a taint must be an object (got 'nvidia.com/gpu:NoSchedule'; "
            f"allowed: key, effect and optionally value; fix: {FIX})"
        ],
    ),
    (
        {
            "taints": [
                {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"},
            ]
        },
        [
            f"{WHERE}/taints/1: taint nvidia.com/gpu:NoSchedule is given twice (also at index 0) "
            "(got {'key': 'nvidia.com/gpu', 'value': 'x', 'effect': 'NoSchedule'}; allowed: one "
            f"taint per key and effect; fix: {FIX})"
        ],
    ),
    (
        {"labels": ["team=a"]},
        [
            f"{WHERE}/labels: labels must be an object of at most 50 labels (got ['team=a']; "
            f'allowed: {{"team": "inference"}}; fix: {FIX})'
        ],
    ),
    (
        {"labels": {"example.com/tier": "", "bad key": "x"}},
        [
            f"{WHERE}/labels/bad key: not a label name (got 'bad key'; allowed: {KEY_RULE}; "
            f"fix: {FIX})",
            f"{WHERE}/labels/example.com~1tier: not a label value (got ''; allowed: "
            f"{VALUE_RULE}; fix: {FIX})",
        ],
    ),
]


@pytest.mark.parametrize(("extra", "messages"), BAD)
def test_bad_taints_and_labels_are_clear_errors(extra: dict[str, Any], messages: list[str]) -> None:
    with pytest.raises(MlccError) as caught:
        hyperpod_settings([_group(**extra)], None, profile="dev")
    assert [str(p) for p in caught.value.problems] == messages


# --- tolerations as data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("vpc.amazonaws.com/efa", True),
        ("cpu", False),
        ("memory", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/foo", False),
        ("requests.nvidia.com/gpu", False),
    ],
)
def test_extended_resources(name: str, extended: bool) -> None:
    assert is_extended_resource(name) is extended


def test_a_gpu_request_gets_the_toleration_of_the_gpu_taint() -> None:
    assert extended_resource_tolerations(["memory", "nvidia.com/gpu", "cpu"]) == (
        Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"),
    )
    assert extended_resource_tolerations(["cpu", "memory"]) == ()
    # What other HyperPod pods copy into their specs is the same toleration.
    (toleration,) = extended_resource_tolerations(["nvidia.com/gpu"])
    assert gpu_toleration() == {
        "key": toleration.key,
        "operator": toleration.operator,
        "effect": toleration.effect,
    }
    assert toleration.tolerates(GPU_TAINT)


GPU = extended_resource_tolerations(["nvidia.com/gpu"])

BLOCKING = [
    (GPU_TAINT, GPU, False),
    (Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"), GPU, False),
    (Taint(key="nvidia.com/gpu", effect="NoExecute"), GPU, True),  # the plugin adds NoSchedule
    (Taint(key="nvidia.com/gpu", effect="PreferNoSchedule"), GPU, False),  # never blocks
    (Taint(key="dedicated", value="inference", effect="NoSchedule"), GPU, True),
    (Taint(key="dedicated", effect="PreferNoSchedule"), (), False),
    (GPU_TAINT, (), True),
    (GPU_TAINT, (Toleration(key="", operator="Exists", effect=""),), False),  # tolerate all
    (
        Taint(key="team", value="a", effect="NoSchedule"),
        (Toleration(key="team", operator="Equal", value="b", effect="NoSchedule"),),
        True,
    ),
    (
        Taint(key="team", value="a", effect="NoSchedule"),
        (Toleration(key="team", operator="Equal", value="a", effect="NoSchedule"),),
        False,
    ),
]


@pytest.mark.parametrize(("taint", "tolerations", "blocks"), BLOCKING)
def test_which_taints_block_a_pod(
    taint: Taint, tolerations: tuple[Toleration, ...], blocks: bool
) -> None:
    assert (blocking_taints([taint], tolerations) == [taint]) is blocks


def test_the_default_taint_follows_the_catalog() -> None:
    assert default_taints(lookup(G12)) == (GPU_TAINT,)
    assert default_taints(lookup("g6e.xlarge")) == (GPU_TAINT,)
    no_gpu = dataclasses.replace(lookup(G12), name="ml.c5.xlarge", gpus=0)
    assert default_taints(no_gpu) == ()
    # A group carries its type's catalog entry, looked up once when it is built.
    group = InstanceGroup(name="g", instance_type="g6e.xlarge", count=1)
    assert group.instance is lookup("g6e.xlarge") and group.node_taints == (GPU_TAINT,)
    with pytest.raises(MlccError) as raised:
        InstanceGroup(name="g", instance_type="ml.g5.13xlarge", count=1)
    assert str(raised.value).startswith(
        "InstanceGroup:/instance_type: unknown instance type (got 'ml.g5.13xlarge'"
    )
    assert str(GPU_TAINT) == "nvidia.com/gpu:NoSchedule"


# --- the synth check -------------------------------------------------------------------------


def _settings(*groups: InstanceGroup, imported: bool = False) -> HyperPodSettings:
    return HyperPodSettings(cluster_name="c", groups=groups, imported=imported)


def _demand(name: str, instance_type: str = G12, resources: tuple[str, ...] | None = None) -> Any:
    return HyperPodDemand(
        where=f"cdk.json:/context/reference_deployments/{name}",
        name=name,
        instance_type=instance_type,
        max_replicas=1,
        gpus_per_pod=4,
        resources=("cpu", "memory", "nvidia.com/gpu") if resources is None else resources,
    )


DEDICATED = Taint(key="dedicated", value="inference", effect="NoSchedule")
TOLERATED = [
    ((InstanceGroup(name="a", instance_type=G12, count=1),), True),  # default GPU taint
    ((InstanceGroup(name="a", instance_type=G12, count=1, taints=()),), True),
    ((InstanceGroup(name="a", instance_type=G12, count=1, taints=(DEDICATED,)),), False),
    (
        (
            InstanceGroup(
                name="a",
                instance_type=G12,
                count=1,
                taints=(Taint(key="dedicated", effect="PreferNoSchedule"),),
            ),
        ),
        True,
    ),
    (
        (
            InstanceGroup(
                name="a",
                instance_type=G12,
                count=1,
                taints=(Taint(key="nvidia.com/gpu", effect="NoExecute"),),
            ),
        ),
        False,
    ),
    # A group of another type hosts none of the deployment's pods: its taints do not matter.
    ((InstanceGroup(name="b", instance_type="ml.g5.2xlarge", count=1, taints=(DEDICATED,)),), True),
]


@pytest.mark.parametrize(("groups", "tolerated"), TOLERATED)
def test_the_workers_must_tolerate_their_groups(
    groups: tuple[InstanceGroup, ...], tolerated: bool
) -> None:
    assert (toleration_problems(_settings(*groups), [_demand("x")]) == []) is tolerated


def test_nothing_is_checked_without_a_created_cluster() -> None:
    tainted = InstanceGroup(name="a", instance_type=G12, count=1, taints=(DEDICATED,))
    assert toleration_problems(None, [_demand("x")]) == []
    assert toleration_problems(_settings(tainted, imported=True), [_demand("x")]) == []
    assert toleration_problems(_settings(tainted), []) == []


def test_the_problem_names_the_group_the_taint_the_deployments_and_the_fix() -> None:
    group = InstanceGroup(name="gpu", instance_type=G12, count=2, taints=(GPU_TAINT, DEDICATED))
    (problem,) = toleration_problems(_settings(group), [_demand("x"), _demand("y")])
    assert str(problem) == (
        "cdk.json:/context/hyperpod_instance_groups/0/taints/1: instance group 'gpu' is tainted "
        "dedicated=inference:NoSchedule, and the pods of x, y (ml.g5.12xlarge, so they run on "
        "it) cannot tolerate it: an InferenceEndpointConfig has no tolerations, its workers "
        "tolerate only what ExtendedResourceToleration adds for the extended resources they "
        "request (nvidia.com/gpu:NoSchedule), so they would stay Pending (got "
        "'dedicated=inference:NoSchedule'; allowed: nvidia.com/gpu:NoSchedule, any "
        "PreferNoSchedule taint, no taint; fix: remove the taint from gpu's taints (or make it "
        "PreferNoSchedule), or put x, y on a group of ml.g5.12xlarge without it)"
    )


def test_a_default_taint_the_pods_cannot_tolerate_points_at_the_group() -> None:
    # A worker requesting no extended resource holds no toleration, not even the GPU one.
    (problem,) = toleration_problems(
        _settings(InstanceGroup(name="a", instance_type=G12, count=1)),
        [_demand("x", resources=("cpu", "memory"))],
    )
    assert problem.pointer == "/context/hyperpod_instance_groups/0"
    assert "tainted nvidia.com/gpu:NoSchedule (the default of its instance type)" in problem.message
    assert "request (none)" in problem.message


def test_the_app_refuses_a_taint_its_iecs_cannot_tolerate() -> None:
    groups = [_group(count=2, taints=[{"key": "dedicated", "effect": "NoExecute"}])]
    with pytest.raises(MlccError) as caught:
        build(hyperpod_instance_groups=groups)
    (problem,) = caught.value.problems
    assert problem.where == "cdk.json"
    assert problem.pointer == "/context/hyperpod_instance_groups/0/taints/0"
    assert "the pods of llama-vllm, llama-sglang" in problem.message


# --- the template ----------------------------------------------------------------------------


def test_the_reference_gpu_group_carries_the_gpu_taint() -> None:
    import json

    template = json.loads(synthesised()[1][HYPERPOD_STACK])
    (cluster,) = (
        r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster"
    )
    (group,) = cluster["Properties"]["InstanceGroups"]
    assert group["InstanceType"] == G12
    assert group["KubernetesConfig"] == {
        "Labels": {},
        "Taints": [{"Effect": "NoSchedule", "Key": "nvidia.com/gpu"}],
    }
