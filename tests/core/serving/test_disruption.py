"""Disruption, rollout and instance fallback: the PodDisruptionBudget rule, the single-replica
warning, the preStop drain and its grace period, the do-not-disrupt window, the rollout
strategy, and the fallback instance types (their checks, the pod's affinity and resources, the
IEC's ``instanceTypes``, the GPU NodePool's families); every rendered object valid."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

import pytest

from mlcc_constructs.core.platform.gpu_capacity import instance_families
from mlcc_constructs.core.platform.load_balancing import IDLE_TIMEOUT_SECONDS
from mlcc_constructs.core.serving.kinds.registry import validate_objects
from mlcc_constructs.core.serving.prepare.disruption import (
    DRAIN_SCRIPT,
    disruption_budget,
    min_replicas,
    needs_disruption_budget,
    rollout_strategy,
    termination_grace_seconds,
)
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import MAX_REQUEST_SECONDS
from mlcc_constructs.core.serving.spec.files import spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

BUCKET = "mlcc-models-dev-123456789012-us-east-1"
MODEL = f"s3://{BUCKET}/models/meta-llama/Llama-3.1-8B-Instruct/"
DEV = RenderContext(account="123456789012", region="us-east-1", profile="dev")
PROD = RenderContext(account="123456789012", region="us-east-1", profile="prod")


def _prepare(context: RenderContext = DEV, **fields: Any) -> PreparedDeployment:
    values: dict[str, Any] = {
        "name": "chat",
        "engine": "vllm",
        # the context's own model bucket (another profile's is refused); none: MODEL's
        "model": MODEL.replace(BUCKET, "${model_bucket}") if context.profile else MODEL,
        "instance_type": "ml.g5.12xlarge",
        **fields,
    }
    prepared = prepare(flat_spec(**values), context=context)
    validate_objects(entry.object for entry in prepared.objects)  # Kubernetes schemas, CRD rules
    return prepared


def _object(prepared: PreparedDeployment, kind: str) -> Mapping[str, Any]:
    (found,) = (e.object for e in prepared.objects if e.object["kind"] == kind)
    return found


def _pod(prepared: PreparedDeployment) -> Mapping[str, Any]:
    return _object(prepared, "Deployment")["spec"]["template"]


def _kinds(prepared: PreparedDeployment) -> list[str]:
    return [e.object["kind"] for e in prepared.objects]


# -- the rules as plain functions ------------------------------------------------------


@pytest.mark.parametrize(("minimum", "budget"), [(1, False), (2, True), (3, True)])
def test_a_budget_follows_the_minimum_replicas(minimum: int, budget: bool) -> None:
    assert needs_disruption_budget(minimum) is budget


def test_min_replicas_is_the_fixed_replicas_today() -> None:
    spec = flat_spec(engine="vllm", model=MODEL, instance_type="g5.xlarge", replicas=3)
    assert min_replicas(spec) == 3


def test_the_budget_evicts_one_pod_at_a_time_and_never_waits_for_an_unready_one() -> None:
    assert disruption_budget({"app": "x"}) == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"app": "x"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }


@pytest.mark.parametrize(("rollout", "surge", "unavailable"), [("surge", 1, 0), ("replace", 0, 1)])
def test_the_rollout_strategy(rollout: Any, surge: int, unavailable: int) -> None:
    assert rollout_strategy(rollout) == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }


def test_the_default_drain_is_the_load_balancers_idle_timeout() -> None:
    assert MAX_REQUEST_SECONDS == IDLE_TIMEOUT_SECONDS == 600
    assert termination_grace_seconds(600) == 15 + 600 + 30


# -- rendered objects ------------------------------------------------------------------


@pytest.mark.parametrize(("replicas", "budgets"), [(1, 0), (2, 1), (4, 1)])
def test_a_pod_disruption_budget_for_two_replicas_or_more(replicas: int, budgets: int) -> None:
    prepared = _prepare(replicas=replicas)
    assert _kinds(prepared).count("PodDisruptionBudget") == budgets
    if budgets:
        budget = _object(prepared, "PodDisruptionBudget")
        assert budget["apiVersion"] == "policy/v1"
        selector = _object(prepared, "Deployment")["spec"]["selector"]
        assert budget["spec"]["selector"] == selector
        kinds = _kinds(prepared)
        assert kinds.index("PodDisruptionBudget") < kinds.index("Deployment")


def test_hyperpod_renders_no_budget() -> None:
    prepared = _prepare(target="hyperpod-eks", replicas=2)
    assert _kinds(prepared) == ["InferenceEndpointConfig"]


@pytest.mark.parametrize(
    ("context", "replicas", "target", "warned"),
    [
        (PROD, 1, "eks", True),
        (PROD, 2, "eks", False),
        (DEV, 1, "eks", False),
        (RenderContext(), 1, "eks", False),  # no profile: nothing to judge
        (PROD, 1, "hyperpod-eks", False),  # HyperPod's instance groups do not expire
    ],
)
def test_one_replica_outside_dev_is_warned_about_node_expiry(
    context: RenderContext, replicas: int, target: str, warned: bool
) -> None:
    prepared = _prepare(context, replicas=replicas, target=target)
    notes = [w for w in prepared.warnings if "PodDisruptionBudget" in w]
    if not warned:
        assert notes == []
        return
    assert notes == [
        "chat: one replica and no PodDisruptionBudget in profile 'prod': EKS Auto Mode replaces "
        "every node within 21 days (and on AMI drift), expiry waits for no budget, and each "
        "replacement stops serving for the drain and the cold start on a new node (up to the "
        f"ready timeout, {prepared.ready_timeout.seconds} s); set scaling.replicas: 2 or more to "
        "keep "
        "serving through it"
    ]


@pytest.mark.parametrize(
    ("fields", "grace", "handler"),
    [
        ({}, 645, "exec"),
        ({"max_request_seconds": 60}, 105, "exec"),
        ({"max_request_seconds": 3600}, 3645, "exec"),
        ({"engine": "lmi", "model": "org/model"}, 645, "sleep"),  # Model-B: no python3 promised
    ],
)
def test_the_drain_and_its_grace_period_follow_max_request_seconds(
    fields: dict[str, Any], grace: int, handler: str
) -> None:
    pod = _pod(_prepare(**fields))
    assert pod["spec"]["terminationGracePeriodSeconds"] == grace
    (engine,) = (c for c in pod["spec"]["containers"] if c["name"] == "engine")
    pre_stop = engine["lifecycle"]["preStop"]
    assert list(pre_stop) == [handler]
    longest = fields.get("max_request_seconds", 600)
    if handler == "sleep":
        assert pre_stop["sleep"] == {"seconds": 15 + longest}
    else:
        command = pre_stop["exec"]["command"]
        assert command[:3] == ["python3", "-c", DRAIN_SCRIPT]
        assert command[3:] == [str(engine["ports"][0]["containerPort"]), "15", "2", str(longest)]


def test_a_starting_pod_is_protected_from_voluntary_disruption_for_its_start_only() -> None:
    annotations = _pod(_prepare())["metadata"]["annotations"]
    # 300 s of image pull and the startup probe's 180 x 10 s, from the pod's start time
    assert annotations["karpenter.sh/do-not-disrupt"] == "2100s"


@pytest.mark.parametrize(
    ("fields", "surge", "unavailable"),
    [
        ({}, 1, 0),
        ({"rollout": "replace", "replicas": 2}, 0, 1),
        ({"rollout": "replace", "accept_downtime": True}, 0, 1),
    ],
)
def test_the_deployment_rolls_as_the_spec_says(
    fields: dict[str, Any], surge: int, unavailable: int
) -> None:
    strategy = _object(_prepare(**fields), "Deployment")["spec"]["strategy"]
    assert strategy["rollingUpdate"] == {"maxSurge": surge, "maxUnavailable": unavailable}


def test_fields_the_hyperpod_operator_owns_are_ignored_with_a_note() -> None:
    prepared = _prepare(target="hyperpod-eks", rollout="replace", max_request_seconds=60)
    assert [w for w in prepared.warnings if "ignored" in w] == [
        "rollout is ignored on hyperpod-eks: the inference operator replaces the pods itself: "
        "the InferenceEndpointConfig v1 has no update strategy",
        "max_request_seconds is ignored on hyperpod-eks: the InferenceEndpointConfig v1 worker "
        "takes no preStop hook or termination grace period: the operator's pods stop as it "
        "decides",
    ]


# -- instance fallback -----------------------------------------------------------------


def test_fallback_types_are_allowed_preferred_in_order_and_fit_the_smallest() -> None:
    prepared = _prepare(instance_types=("ml.g6.12xlarge", "g5.24xlarge"))
    spec = _pod(prepared)["spec"]
    assert "nodeSelector" not in spec
    affinity = spec["affinity"]["nodeAffinity"]
    required = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    key = "node.kubernetes.io/instance-type"
    names = ["g5.12xlarge", "g6.12xlarge", "g5.24xlarge"]
    assert required == [{"matchExpressions": [{"key": key, "operator": "In", "values": names}]}]
    preferred = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert [(p["weight"], p["preference"]["matchExpressions"][0]["values"]) for p in preferred] == [
        (100, ["g5.12xlarge"]),
        (99, ["g6.12xlarge"]),
        (98, ["g5.24xlarge"]),
    ]
    # g5.12xlarge and g6.12xlarge: 48 vCPUs, 192 GiB; g5.24xlarge is larger: the smallest wins
    (engine,) = spec["containers"]
    assert engine["resources"]["requests"] == {
        "cpu": "43",
        "memory": "172Gi",
        "nvidia.com/gpu": "4",
    }
    assert [i.name for i in prepared.instance_types] == [
        "ml.g5.12xlarge",
        "ml.g6.12xlarge",
        "ml.g5.24xlarge",
    ]


def test_one_instance_type_keeps_its_node_selector() -> None:
    spec = _pod(_prepare())["spec"]
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "g5.12xlarge"}
    assert "affinity" not in spec


def test_an_iec_lists_the_fallbacks_as_its_instance_types() -> None:
    iec = _object(
        _prepare(target="hyperpod-eks", instance_types=("ml.g6.12xlarge",)),
        "InferenceEndpointConfig",
    )
    assert "instanceType" not in iec["spec"]
    assert iec["spec"]["instanceTypes"] == ["ml.g5.12xlarge", "ml.g6.12xlarge"]
    plain = _object(_prepare(target="hyperpod-eks"), "InferenceEndpointConfig")
    assert (
        plain["spec"]["instanceType"] == "ml.g5.12xlarge" and "instanceTypes" not in plain["spec"]
    )


def test_the_gpu_node_pool_offers_the_fallback_families() -> None:
    from mlcc_constructs.core.serving.spec.app_deployments import AppDeployment, gpu_instance_types

    prepared = _prepare(instance_types=("g6e.12xlarge",))
    deployment = AppDeployment(where="here", context=DEV, prepared=prepared)
    assert instance_families(gpu_instance_types((deployment,))) == ("g5", "g6e")


# -- bad input: each names the field, the value, what is allowed and the fix ----------------

BAD: list[tuple[dict[str, Any], str]] = [
    (
        {"rollout": "replace"},
        "/rollout/strategy: rollout replace with one replica stops serving for every update: the "
        "old pod "
        "drains and exits before the new one starts its cold start (got 'replace'; allowed: "
        "surge, or replace with scaling.replicas >= 2 or rollout.accept_downtime: true; fix: keep "
        "rollout.strategy: "
        "surge (needs one spare GPU node), run 2 replicas, or set rollout.accept_downtime: true to "
        "accept the outage)",
    ),
    (
        {"max_request_seconds": 0},
        "/endpoint/max_request_seconds: not a request duration the drain can wait for (got 0; "
        "allowed: "
        "1..3600; fix: give the longest request's seconds (default 600, the load balancer's "
        "idle timeout))",
    ),
    (
        {"max_request_seconds": 3601},
        "/endpoint/max_request_seconds: not a request duration the drain can wait for (got 3601; "
        "allowed: 1..3600; fix: give the longest request's seconds (default 600, the load "
        "balancer's idle timeout))",
    ),
    (
        {"instance_types": ("g5.13xlarge",)},
        "/compute/instance_types/0: unknown instance type (got 'g5.13xlarge'; allowed: the types "
        "in "
        "mlcc_constructs/data/instance_catalog.json; fix: did you mean g5.16xlarge or "
        "g5.12xlarge or g5.xlarge?)",
    ),
    (
        {"instance_types": ("ml.g6.12xlarge", "ml.g5.2xlarge")},
        "/compute/instance_types/1: ml.g5.2xlarge has 1 GPU(s), fewer than the tensor-parallel "
        "degree 4 "
        "(got 'ml.g5.2xlarge'; allowed: a type with 4 GPUs or more; fix: pick a type with "
        "enough GPUs, or set tensor_parallel_degree to what every type has)",
    ),
    (
        {"instance_types": ("g5.12xlarge",)},
        "/compute/instance_types/0: listed twice: instance_type and instance_types name each type "
        "once "
        "(got 'g5.12xlarge'; fix: remove the repeated type)",
    ),
    (
        {"compute": {"instance_type": "ml.g6e.12xlarge", "instance_types": ("ml.g5.12xlarge",)}},
        "/compute/instance_types/0: ml.g5.12xlarge has 24 GiB per GPU, less than "
        "ml.g6e.12xlarge's 48 "
        "GiB the engine settings (memory cap, GPU memory share) were computed for (got "
        "'ml.g5.12xlarge'; allowed: a type with 48 GiB per GPU or more; fix: pick a type with "
        "as much GPU memory, or make the smaller type the instance_type)",
    ),
]


@pytest.mark.parametrize(("fields", "message"), BAD)
def test_bad_input_is_refused_naming_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(MlccError) as caught:
        _prepare(**fields)
    assert str(caught.value) == message


def test_spec_files_carry_the_new_fields_and_the_schema_checks_them() -> None:
    document = {
        "engine": {"name": "vllm"},
        "model": {"uri": MODEL},
        "compute": {"instance_type": "ml.g5.12xlarge", "instance_types": ["ml.g6.12xlarge"]},
        "name": "chat",
        "endpoint": {"max_request_seconds": 120},
        "rollout": {"strategy": "replace", "accept_downtime": True},
    }
    spec = spec_from_mapping(document, where="spec.yaml").spec
    assert spec.compute.instance_types == ("ml.g6.12xlarge",)
    assert (
        spec.endpoint.max_request_seconds,
        spec.rollout.strategy,
        spec.rollout.accept_downtime,
    ) == (120, "replace", True)
    with pytest.raises(MlccError) as caught:
        spec_from_mapping({**document, "rollout": {"strategy": "recreate"}}, where="spec.yaml")
    assert str(caught.value).startswith("spec.yaml:/rollout/strategy: 'recreate' is not one of")


# -- the drain script itself (stdlib; run here against a real socket) ----------------------


def _drain(port: int, limit: int) -> float:
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", DRAIN_SCRIPT, str(port), "0", "2", str(limit)],
        check=True,
        timeout=30,
    )
    return time.monotonic() - start


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net/tcp")
def test_the_drain_waits_for_open_connections_and_no_longer_than_its_limit() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert _drain(port, 10) < 5  # nothing in flight: two quiet polls
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = server.accept()
            with accepted:
                elapsed = _drain(port, 4)  # a request still open: waits until the limit
        assert 4 <= elapsed < 8


# -- the flags of mlcc render are one more layer of the same fields -----------------------


def test_mlcc_render_takes_the_fields_as_flags(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from mlcc_constructs import cli

    base = ["render", "--engine", "vllm", "--model", "org/model", "--name", "chat"]
    base += ["--instance-type", "g5.12xlarge"]
    code = cli.main(
        [
            *base,
            *["--instance-types", "g6.12xlarge", "--max-request-seconds", "120"],
            *["--rollout", "replace", "--accept-downtime"],
        ]
    )
    assert code == 0
    (deployment,) = (
        d for d in yaml.safe_load_all(capsys.readouterr().out) if d["kind"] == "Deployment"
    )
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 165
    assert "affinity" in pod
    assert cli.main([*base, "--rollout", "replace"]) == 1
    assert (
        "--rollout:/rollout/strategy: rollout replace with one replica" in capsys.readouterr().err
    )


def test_the_load_balancer_lets_a_draining_pod_finish_as_long_as_the_drain_waits() -> None:
    for longest in (120, 600):
        ingress = _object(_prepare(max_request_seconds=longest), "Ingress")
        attributes = ingress["metadata"]["annotations"][
            "alb.ingress.kubernetes.io/target-group-attributes"
        ]
        assert attributes == f"deregistration_delay.timeout_seconds={longest}"
