"""Every pod's flows, checked: what a deployment's pods need and must not reach, derived from
its features (``core/serving/flows/derive.py``) and evaluated against the rendered
NetworkPolicies (``core/serving/flows/check.py``, with the evaluator of
``tests/core/platform/test_network_policy_eval.py``), for every cell of the pipeline matrix, the
app's reference set and a few feature specs; and a policy that misses a needed flow is caught."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from mlcc_constructs.core.serving.flows.check import check_flows, flow_failures, rendered_pods
from mlcc_constructs.core.serving.flows.derive import (
    OWN_PODS,
    Flow,
    address_representatives,
    derive_flows,
    vpc_address,
)
from mlcc_constructs.core.serving.kinds.registry import RenderedObject
from mlcc_constructs.core.serving.prepared import PreparedDeployment, prepare
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.files import spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import reference_deployments
from tests._flat import sectioned_doc
from tests.core.cache.test_cache_admission import seed_safe_spec
from tests.core.serving.test_pipeline_matrix import CONTEXT, MATRIX, _spec

S3 = "s3://mlcc-models-dev-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
MONITORED = dataclasses.replace(CONTEXT, prometheus_operator_namespace="monitoring")
CALLER = "app.kubernetes.io/name=mlcc-flows-caller"
LB = ("10.0.16.4", "10.0.16.254", "10.0.17.4", "10.0.17.254", "10.0.18.4", "10.0.18.254")
DNS = [
    ("egress", "UDP", 53, "10.100.0.10"),
    ("egress", "TCP", 53, "10.100.0.10"),
    ("egress", "UDP", 53, "172.20.0.10"),
    ("egress", "TCP", 53, "172.20.0.10"),
]
AGENT = [("egress", "TCP", 80, "169.254.170.23"), ("egress", "TCP", 80, "fd00:ec2::23")]
S3_OUT = [("egress", "TCP", 443, "203.0.113.7")]


def engine_port_from_subnets(port: int) -> list[tuple[str, str, int, str]]:
    """The engine port from both ends of each internal load balancer subnet, then the same for
    the scraper (the matrix's context: the scraper lives in the internal load balancer subnets)."""
    return [("ingress", "TCP", port, a) for a in LB] * 2


def common_denied(port: int) -> list[tuple[str, str, int, str]]:
    return [
        ("ingress", "TCP", port, "10.0.40.17"),
        ("egress", "TCP", 5432, "10.0.40.17"),
        ("egress", "TCP", 80, "169.254.169.254"),
        ("egress", "TCP", 80, "203.0.113.7"),
        ("ingress", "TCP", port, f"mlcc-flows-elsewhere/{CALLER}"),
        ("ingress", "TCP", port, f"inference/{CALLER}"),
        ("egress", "TCP", port, f"inference/{CALLER}"),
    ]


def shape(flows: tuple[Flow, ...]) -> list[tuple[str, str, int, str]]:
    return [(f.direction, f.protocol, f.port, _peer(f)) for f in flows]


def _peer(flow: Flow) -> str:
    peer = flow.peer
    if peer is OWN_PODS:
        return "own pods"
    return peer if isinstance(peer, str) else peer.label()  # type: ignore[union-attr]


def prepared(context: RenderContext = CONTEXT, **fields: Any) -> PreparedDeployment:
    document = {"namespace": "inference", "instance_type": "ml.g5.12xlarge", "target": "eks"}
    flat = {**document, **fields}  # written flat for short tables; read in sections
    return prepare(spec_from_mapping(sectioned_doc(flat), where="t").spec, context=context)


# -- the derivation, exactly --------------------------------------------------------------


def test_a_streamed_model_needs_the_pod_identity_agent_and_s3() -> None:
    plan = derive_flows(prepared(name="llama", engine="vllm", model=S3))
    assert plan.enforced
    assert shape(plan.needed) == DNS + AGENT + S3_OUT + engine_port_from_subnets(8000)
    assert [f.reason for f in plan.needed[4:7]] == [
        "the EKS Pod Identity agent: the pod's own AWS credentials",
        "the EKS Pod Identity agent: the pod's own AWS credentials",
        "S3: the engine streams its model (S3's addresses, through the VPC's gateway endpoint)",
    ]
    assert [f.serving_only for f in plan.needed] == [False] * 7 + [True] * 12
    assert shape(plan.denied) == [*common_denied(8000), ("egress", "TCP", 8080, "169.254.170.23")]


def test_a_mounted_model_with_synced_secrets_gets_no_agent_and_no_https() -> None:
    plan = derive_flows(
        prepared(
            name="sg",
            engine="sglang",
            model=S3,
            secret_env={"HF_TOKEN": {"secrets_manager": "mlcc/hf-token"}},
        )
    )
    assert shape(plan.needed) == DNS + engine_port_from_subnets(30000)
    assert shape(plan.denied) == common_denied(30000) + AGENT + [
        ("egress", "TCP", 443, "203.0.113.7")
    ]
    assert plan.denied[-2].reason == (
        "Pod Identity agent: the pod calls no AWS API itself (its synced secrets are read by "
        "the CSI driver's provider, from its own pod)"
    )
    assert plan.denied[-1].reason == (
        "HTTPS out: nothing in the pod needs it (a mounted model is read by Mountpoint in the "
        "S3 CSI driver's pods)"
    )


def test_a_hub_model_with_callers_and_a_service_monitor() -> None:
    plan = derive_flows(
        prepared(
            MONITORED,
            name="mistral",
            engine="vllm",
            model="mistralai/Mistral-7B-Instruct-v0.3",
            lora=True,
            allow_from=["gateway"],
            endpoint={"scheme": "none"},
        )
    )
    # No load balancer (scheme none); the scraper still reads /metrics from its subnets.
    assert shape(plan.needed) == [
        *DNS,
        ("egress", "TCP", 443, "203.0.113.7"),
        ("egress", "TCP", 443, "2001:db8::7"),
        *[("ingress", "TCP", 8000, a) for a in LB],
        ("ingress", "TCP", 8000, f"gateway/{CALLER}"),
        ("ingress", "TCP", 8000, "monitoring/app.kubernetes.io/name=prometheus"),
    ]
    assert plan.needed[-2].reason == (
        "a caller in allow_from namespace gateway and mlcc adapter's admin API calls; the pod "
        "serves the API"
    )
    assert shape(plan.denied) == common_denied(8000) + AGENT


def test_a_group_over_two_nodes_reaches_its_own_ranks_only() -> None:
    plan = derive_flows(
        prepared(
            name="big",
            engine="vllm",
            model=S3,
            instance_type="ml.p5.48xlarge",
            nodes=2,
            tensor_parallel_degree=8,
            pipeline_parallel_degree=2,
        )
    )
    group = [
        ("egress", "TCP", 29500, "own pods"),
        ("ingress", "TCP", 29500, "own pods"),
        ("egress", "TCP", 43217, "own pods"),
        ("ingress", "TCP", 43217, "own pods"),
    ]
    assert shape(plan.needed) == DNS + AGENT + S3_OUT + group + engine_port_from_subnets(8000)
    assert shape(plan.denied) == [
        *common_denied(8000),
        ("egress", "TCP", 8080, "169.254.170.23"),
        ("ingress", "TCP", 29500, f"inference/{CALLER}"),
    ]


def test_a_cache_backend_reaches_its_sidecar_and_its_redis() -> None:
    cache = seed_safe_spec()
    cache["remoteStorage"] = {
        "provider": "Redis",
        "ownership": "External",
        "endpoint": "redis.cache.svc:5432",
    }
    plan = derive_flows(prepared(name="cached", engine="vllm", model=S3, cache_backend=cache))
    assert shape(plan.needed)[7:9] == [
        ("egress", "TCP", 5555, "127.0.0.1"),
        ("egress", "TCP", 5432, "10.0.40.17"),  # a name: an address of the VPC stands for it
    ]
    # The database port the pod must not reach moves off the Redis port it needs.
    assert ("egress", "TCP", 5433, "10.0.40.17") in shape(plan.denied)
    assert (
        flow_failures([prepared(name="cached", engine="vllm", model=S3, cache_backend=cache)]) == []
    )


def test_a_target_without_network_policy_denies_nothing_and_renders_no_pod() -> None:
    deployment = prepared(name="hp", engine="vllm", model=S3, target="hyperpod-eks")
    plan = derive_flows(deployment)
    assert (plan.enforced, plan.denied) == (False, ())
    assert rendered_pods(deployment) == ()


def test_representatives_are_the_ends_of_a_subnet_hosts_can_have() -> None:
    assert address_representatives("10.0.16.0/24") == ("10.0.16.4", "10.0.16.254")
    assert address_representatives("2600:1f18::/64") == (
        "2600:1f18::4",
        "2600:1f18::ffff:ffff:ffff:fffe",
    )
    assert address_representatives("169.254.170.23/32") == ("169.254.170.23",)
    assert vpc_address(["10.0.0.0/16"]) == "172.31.40.17"
    with pytest.raises(ValueError, match="every private candidate address is admitted"):
        vpc_address(["0.0.0.0/0"])


# -- every flow of every pod, against the rendered policies --------------------------------


def _matrix_deployments() -> list[PreparedDeployment]:
    found = []
    for cell in MATRIX:
        try:
            found.append(render(_spec(*cell), context=CONTEXT).prepared)
        except MlccError:
            continue  # refused cells render nothing (test_pipeline_matrix checks the refusals)
    return found


def test_every_flow_of_every_pipeline_matrix_pod() -> None:
    """Each cell alone (one deployment per cluster): every needed flow allowed, every flow
    that must be denied denied."""
    deployments = _matrix_deployments()
    failures = [message for d in deployments for message in flow_failures([d])]
    assert failures == []
    results = [r for d in deployments for r in check_flows([d])]
    streamed = {r.deployment for r in results if r.needed and r.flow.port == 80}
    assert len(deployments) > 40 and len(results) > 1000  # the check is not vacuous
    assert (
        streamed
        == {
            f"inference/{d.names.base} on eks"
            for d in deployments
            if d.resolution.model_load == "stream"
        }
        != set()
    )


def test_every_flow_of_every_reference_pod() -> None:
    """The reference set, applied together: every pod against every policy of the set."""
    deployments = reference_deployments()
    assert flow_failures(deployments) == []
    results = check_flows(deployments)
    checked = {(r.deployment, r.role) for r in results}
    assert checked == {
        ("inference/llama-vllm on eks", "pod"),
        ("inference/mistral-vllm-args on eks", "pod"),
        ("inference/llama-405b-vllm on eks", "leader"),
        ("inference/llama-405b-vllm on eks", "worker"),
    }
    agent = {
        (r.deployment, r.role, r.needed)
        for r in results
        if r.flow.port == 80 and r.flow.peer == "169.254.170.23"
    }
    assert agent == {
        ("inference/llama-vllm on eks", "pod", True),
        ("inference/llama-405b-vllm on eks", "leader", True),
        ("inference/llama-405b-vllm on eks", "worker", True),
        ("inference/mistral-vllm-args on eks", "pod", False),  # a Hub model: secrets only
    }
    # The platform makes the HyperPod deployments' pods: none of ours to check.
    assert {d.names.base for d in deployments if not rendered_pods(d)} == {
        "llama-vllm",
        "llama-sglang",
    }
    # A worker serves no HTTP (the Service selects the leader): the engine port's callers
    # concern the leader only.
    big = next(d for d in deployments if d.names.base == "llama-405b-vllm")
    assert [(p.role, p.serves) for p in rendered_pods(big)] == [("leader", True), ("worker", False)]
    assert {r.role for r in results if r.flow.serving_only and "405b" in r.deployment} == {"leader"}


def test_every_flow_of_the_default_apps_pod() -> None:
    """The first deploy (cdk.json alone): a Hub model, so HTTPS out and no Pod Identity flow."""
    import aws_cdk as cdk

    from stacks.deployments import app_deployments
    from tests._cdk_app import default_context

    (deployment,) = (d.prepared for d in app_deployments(cdk.App(context=default_context())))
    assert flow_failures([deployment]) == []
    needed = {(r.flow.peer, r.flow.port) for r in check_flows([deployment]) if r.needed}
    assert ("169.254.170.23", 80) not in needed
    assert any(port == 443 for _, port in needed)


def _without_agent_rule(deployment: PreparedDeployment) -> PreparedDeployment:
    """The deployment as the NetworkPolicy rendered it before the Pod Identity rule."""
    objects = []
    for entry in deployment.objects:
        obj = copy.deepcopy(entry.object)
        if obj["kind"] == "NetworkPolicy":
            egress = obj["spec"]["egress"]
            obj["spec"]["egress"] = [
                r for r in egress if not any("ipBlock" in p for p in r.get("to", []))
            ]
        objects.append(RenderedObject(entry.id, obj))
    return dataclasses.replace(deployment, objects=tuple(objects))


def test_the_old_policy_without_the_pod_identity_rule_fails_the_check() -> None:
    streamed = next(
        d
        for d in reference_deployments()
        if d.names.base == "llama-vllm" and d.target.name == "eks"
    )
    failures = flow_failures([_without_agent_rule(streamed)])
    assert failures == [
        f"inference/llama-vllm on eks pod: egress TCP 80 to {address} (the EKS Pod Identity "
        "agent: the pod's own AWS credentials): needed, denied: egress of "
        "inference/llama-vllm-pod: isolated by llama-vllm, and no rule admits TCP 80 to "
        f"{address}"
        for address in ("169.254.170.23", "fd00:ec2::23")
    ]


def test_a_policy_that_admits_too_much_fails_the_check() -> None:
    """Egress to everything (the rule a quick fix for Pod Identity would add) breaks the
    must-deny flows: the instance metadata service first among them."""
    streamed = render(_spec("vllm", "eks", False, "env", False, "s3"), context=CONTEXT).prepared
    objects = []
    for entry in streamed.objects:
        obj = copy.deepcopy(entry.object)
        if obj["kind"] == "NetworkPolicy":
            obj["spec"]["egress"].append({})
        objects.append(RenderedObject(entry.id, obj))
    failures = flow_failures([dataclasses.replace(streamed, objects=tuple(objects))])
    assert [f.split(": must be denied")[0].split(" pod: ")[1] for f in failures] == [
        "egress TCP 5432 to 10.0.40.17 (a database in the VPC: nothing of the pod's)",
        "egress TCP 80 to 169.254.169.254 (the instance metadata service: the node's credentials)",
        "egress TCP 80 to 203.0.113.7 (plain HTTP out)",
        f"egress TCP 8000 to inference/{CALLER} (another pod of the namespace on its engine port)",
        "egress TCP 8080 to 169.254.170.23 (the Pod Identity agent's address on another port "
        "than its own)",
    ]


@pytest.mark.parametrize(
    "fields",
    [
        {"allow_from": ["gateway", "inference"], "lora": True},
        {
            "endpoint": {"scheme": "none"},
            "secret_env": {"HF_TOKEN": {"secrets_manager": "mlcc/hf"}},
        },
        {"model": "mistralai/Mistral-7B-Instruct-v0.3", "allow_from": ["monitoring"]},
    ],
    ids=["callers-and-own-namespace", "no-load-balancer-secrets", "hub-and-monitoring"],
)
def test_every_flow_of_feature_specs(fields: dict[str, Any]) -> None:
    deployment = prepared(MONITORED, **{"name": "feat", "engine": "vllm", "model": S3, **fields})
    assert flow_failures([deployment]) == []
    assert check_flows([deployment]) != []
