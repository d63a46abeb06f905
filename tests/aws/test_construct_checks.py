"""The checks a team composing the constructs gets (they used to live in the app only):
``ServedModel`` refuses a deployment whose NetworkPolicy would not admit the cluster's load
balancers, or whose instance families the cluster's GPU pool does not offer; ``HyperPodCluster``
refuses deployments its instance groups cannot hold and says the surge headroom; several
``ServedModel``s share one namespace in one stack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core.platform.load_balancing import REFERENCE_CIDRS
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import serving_on
from tests._flat import flat_spec
from tests.core.serving.test_readiness_template import _cluster as _kubectl_cluster, _team_stack

ACCOUNT, REGION = "123456789012", "us-east-1"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def _stack() -> Any:
    return _team_stack()


def _cluster(stack: Any, id: str = "TeamCluster") -> Any:
    return _kubectl_cluster(stack, id, full=False)


def _prepared(
    name: str = "chat",
    *,
    target: str = "eks",
    instance_type: str = "ml.g5.12xlarge",
    cidrs: dict[str, list[str]] | None = None,
    **fields: Any,
) -> Any:
    from mlcc_constructs import RenderContext, prepare

    return prepare(
        flat_spec(
            engine="vllm",
            model="org/model",
            instance_type=instance_type,
            name=name,
            namespace="team-a",
            target=target,
            **fields,
        ),
        context=RenderContext(
            account=ACCOUNT, region=REGION, profile="dev", load_balancer_cidrs=cidrs
        ),
    )


def _served(stack: Any, id: str, deployment: Any, cluster: Any, **props: Any) -> Any:
    from mlcc_constructs import ServedModel, ServedModelProps

    return ServedModel(
        stack,
        id,
        props=ServedModelProps(
            deployment=deployment, cluster=cluster, wait_for_ready=False, **props
        ),
    )


def _messages(build: Any) -> list[str]:
    with pytest.raises(MlccError) as caught:
        build()
    return [str(p) for p in caught.value.problems]


def _imported(stack: Any, cidrs: dict[str, list[str]]) -> Any:
    from aws_cdk import aws_iam as iam

    from mlcc_constructs import ServingCluster

    oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        stack, "Oidc", f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.example.com/id/TEAM"
    )
    return ServingCluster.from_cluster_attributes(
        stack, "Serving", cluster=_cluster(stack), oidc_provider=oidc, load_balancer_cidrs=cidrs
    )


# -- load balancer subnets ---------------------------------------------------------------------

BARE = (
    "Team/Chat:/cluster: deployment team-a/chat has an internal load balancer, and an "
    "eks.ICluster does not say which subnets its load balancers live in: the NetworkPolicy "
    "would admit 10.0.16.0/24, 10.0.17.0/24, 10.0.18.0/24, which may not be them (allowed: an "
    "IServingCluster (ServingCluster, or ServingCluster.from_cluster_attributes(..., "
    "load_balancer_cidrs=...)); fix: pass the cluster as an IServingCluster with its load "
    "balancer subnets' CIDRs, or give the deployment endpoint.scheme: none)"
)
NONE_KNOWN = (
    "Team/Chat:/cluster: deployment team-a/chat has an internal load balancer, and the cluster "
    "knows no internal load balancer subnets: its NetworkPolicy could admit none (got "
    "'internal'; allowed: none; fix: give the cluster's internal load balancer subnets' CIDRs "
    "(ServingCluster.from_cluster_attributes(load_balancer_cidrs=...)), or change the "
    "deployment's endpoint.scheme)"
)
OTHER_SUBNETS = (
    "Team/Chat:/deployment: deployment team-a/chat's NetworkPolicy would admit its internal load "
    "balancers from 10.0.16.0/24, 10.0.17.0/24, 10.0.18.0/24, and the cluster's internal load "
    "balancer subnets are 10.9.1.0/24, 10.9.2.0/24: the load balancer could not reach the pods "
    "(got '10.0.16.0/24, 10.0.17.0/24, 10.0.18.0/24'; allowed: 10.9.1.0/24, 10.9.2.0/24; fix: "
    "prepare the deployment with the cluster's CIDRs: RenderContext(load_balancer_cidrs="
    "<cluster>.load_balancer_cidrs, ...))"
)
TEAM = {"internal": ["10.9.1.0/24", "10.9.2.0/24"]}


@pytest.mark.parametrize(
    ("cluster", "prepared_with", "messages"),
    [
        pytest.param("bare", None, [BARE], id="a bare eks.ICluster cannot say"),
        pytest.param({}, None, [NONE_KNOWN], id="an imported cluster without CIDRs"),
        pytest.param(TEAM, None, [OTHER_SUBNETS], id="prepared with the library's defaults"),
        pytest.param(TEAM, TEAM, [], id="prepared with the cluster's CIDRs"),
    ],
)
def test_a_served_model_admits_the_clusters_load_balancers_or_is_refused(
    cluster: Any, prepared_with: dict[str, list[str]] | None, messages: list[str]
) -> None:
    stack = _stack()
    target = _cluster(stack) if cluster == "bare" else _imported(stack, cluster)
    deployment = _prepared(cidrs=prepared_with)
    build = lambda: _served(stack, "Chat", deployment, target)  # noqa: E731
    if messages:
        assert _messages(build) == messages
        assert stack.node.find_child("Chat").node.children == []  # nothing half-made
    else:
        policy = next(o.object for o in deployment.objects if o.id == "NetworkPolicy")
        blocks = [b["ipBlock"]["cidr"] for b in policy["spec"]["ingress"][0]["from"]]
        assert blocks == TEAM["internal"]
        build()


def test_a_bare_cluster_serves_a_deployment_without_a_load_balancer() -> None:
    stack = _stack()
    deployment = _prepared(endpoint=_no_endpoint())
    served = _served(stack, "Chat", deployment, _cluster(stack))
    assert served.objects.manifests


# -- the GPU node pool ---------------------------------------------------------------------------


def test_a_served_model_needs_the_clusters_gpu_pool_to_offer_its_family() -> None:
    from aws_cdk import aws_ec2 as ec2

    from mlcc_constructs import ServingCluster, ServingClusterProps

    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    serving = ServingCluster(
        stack,
        "Serving",
        props=ServingClusterProps(vpc=vpc, gpu_instance_families=["g6"], load_balancer_groups={}),
    )
    assert serving.gpu_instance_families == ("g6",)
    deployment = _prepared(endpoint=_no_endpoint())
    assert _messages(lambda: _served(stack, "Chat", deployment, serving)) == [
        "Team/Chat:/cluster: deployment team-a/chat runs on ml.g5.12xlarge, and the cluster's GPU "
        "node pool offers g6: its pods would stay Pending (got 'ml.g5.12xlarge'; allowed: g6; "
        "fix: add the instance families to the cluster's pool "
        "(ServingClusterProps.gpu_instance_families), or change the deployment's instance_type)"
    ]
    _served(
        stack,
        "OnG6",
        _prepared("on-g6", instance_type="ml.g6.12xlarge", endpoint=_no_endpoint()),
        serving,
    )


def _no_endpoint() -> Any:
    from mlcc_constructs.core.serving.spec.endpoint import Endpoint

    return Endpoint(scheme="none")


# -- one namespace, several models ---------------------------------------------------------------


def test_several_served_models_of_one_namespace_share_its_namespace_object() -> None:
    import aws_cdk as cdk

    stack = _stack()
    cluster = serving_on(_cluster(stack))
    first = _served(stack, "Chat", _prepared("chat"), cluster)
    second = _served(stack, "Code", _prepared("code"), cluster)
    assert first.namespace is second.namespace is not None
    app = stack.node.root
    assert isinstance(app, cdk.App)
    resources = app.synth().get_stack_by_name("Team").template["Resources"]
    kinds = [
        json.loads(r["Properties"]["Manifest"])[0]["kind"]
        for r in resources.values()
        if r["Type"] == MANIFEST and isinstance(r["Properties"]["Manifest"], str)
    ]
    assert kinds.count("Namespace") == 1
    assert kinds.count("Deployment") == 2


# -- the rules that span deployments, on one cluster -----------------------------------------------


def _grouped(name: str, hostname: str | None) -> Any:
    from mlcc_constructs import DeploymentSpec, RenderContext, prepare

    return prepare(
        DeploymentSpec(
            name=name,
            namespace="team-a",
            engine={"name": "vllm"},
            model={"uri": "org/model"},
            compute={"instance_type": "ml.g5.12xlarge"},
            endpoint={"group": "shared", "hostname": hostname},
        ),
        context=RenderContext(account=ACCOUNT, region=REGION, profile="dev"),
    )


def test_served_models_of_one_cluster_may_not_claim_one_host_of_a_shared_load_balancer() -> None:
    import aws_cdk as cdk

    stack = _stack()
    cluster = serving_on(_cluster(stack))
    _served(stack, "Chat", _grouped("chat", "llm.example.com"), cluster)
    _served(stack, "Code", _grouped("code", "code.example.com"), cluster)  # its own host
    # In another stack of the app, on the same cluster: still one load balancer group.
    other = cdk.Stack(stack.node.root, "Other")
    (message,) = _messages(
        lambda: _served(other, "Docs", _grouped("docs", "llm.example.com"), cluster)
    )
    assert message.startswith(
        "Other/Docs:/endpoint/hostname: shares load balancer group 'shared' (internal), "
        "llm.example.com and the paths /v1"
    )
    assert "with Team/Chat (chat): the load balancer cannot tell their requests apart" in message


def test_served_models_of_one_cluster_may_not_repeat_a_deployment() -> None:
    stack = _stack()
    cluster = serving_on(_cluster(stack))
    _served(stack, "Chat", _prepared("chat"), cluster)
    (message,) = _messages(lambda: _served(stack, "ChatAgain", _prepared("chat"), cluster))
    assert message.startswith(
        "Team/ChatAgain:/name: deployment team-a/chat on eks is declared twice: this entry is a "
        "copy of Team/Chat; one would overwrite the other's objects"
    )
    # Another cluster holds its own deployments.
    _served(stack, "Elsewhere", _prepared("chat"), serving_on(_cluster(stack, "OtherCluster")))


# -- HyperPod ------------------------------------------------------------------------------------


def _hyperpod(stack: Any, count: int = 1, kubernetes_version: str | None = None) -> Any:
    from aws_cdk import aws_ec2 as ec2, aws_s3 as s3

    from mlcc_constructs import (
        HyperPodCluster,
        HyperPodClusterProps,
        HyperPodInferenceOperator,
        HyperPodInferenceOperatorProps,
        InstanceGroup,
        ServingCluster,
        ServingClusterProps,
    )

    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    tls = s3.Bucket.from_bucket_name(stack, "Tls", "acme-tls")
    serving = ServingCluster(
        stack,
        "Serving",
        props=ServingClusterProps(vpc=vpc, tls_bucket=tls, load_balancer_groups={}),
    )
    hyperpod = HyperPodCluster(
        stack,
        "HyperPod",
        props=HyperPodClusterProps(
            cluster=serving.cluster,
            eks_cluster_arn=serving.cluster.cluster_arn,
            cluster_name="team-hyperpod",
            groups=[InstanceGroup(name="inference", instance_type="ml.g5.12xlarge", count=count)],
            subnet_ids=["subnet-1"],
            security_group_ids=["sg-1"],
            artifacts_bucket=s3.Bucket.from_bucket_name(stack, "Artifacts", "acme-artifacts"),
            kubernetes_version=kubernetes_version,
        ),
    )
    operator = HyperPodInferenceOperator(
        stack,
        "Operator",
        props=HyperPodInferenceOperatorProps(
            cluster=serving.cluster,
            oidc_provider=serving.oidc_provider,
            hyperpod_cluster=hyperpod,
            role_name="SageMakerHyperPodInference-team",
            tls_bucket=tls,
            install_keda=False,
        ),
    )
    return serving, hyperpod, operator


def test_a_hyperpod_deployment_its_groups_cannot_hold_is_refused_where_it_is_served() -> None:
    stack = _stack()
    serving, hyperpod, operator = _hyperpod(stack)
    one = _prepared("one", target="hyperpod-eks")
    _served(stack, "One", one, serving, operator=operator)  # 4 of the group's 4 GPUs
    two = _prepared("two", target="hyperpod-eks")
    assert _messages(lambda: _served(stack, "Two", two, serving, operator=operator)) == [
        "HyperPodClusterProps:/groups/0/count: the ml.g5.12xlarge instance groups have 4 GPUs "
        "(1 x 4), and the deployments on them ask for 8 at most (one 1 x 4, two 1 x 4): a "
        "replica beyond the capacity stays Pending (got 1; allowed: at least 2 for this group; "
        "fix: raise inference's count, or lower the deployments' replicas or max_replicas)"
    ]
    other = _prepared("other", target="hyperpod-eks", instance_type="ml.g6e.xlarge")
    assert _messages(lambda: _served(stack, "Other", other, serving, operator=operator)) == [
        "Team/Other:/compute/instance_type: no instance group of HyperPodClusterProps.groups runs "
        "ml.g6e.xlarge, so the deployment's pods could never schedule (got 'ml.g6e.xlarge'; "
        "allowed: ml.g5.12xlarge; fix: add an instance group of ml.g6e.xlarge to "
        "HyperPodClusterProps.groups, or change the deployment's instance_type)"
    ]
    assert list(hyperpod.hosted.demands) == [_key(one)]


def _key(prepared: Any) -> Any:
    from mlcc_constructs.core.serving.identity import declared

    return declared("", prepared).key


def test_the_hyperpod_cluster_says_its_surge_headroom_and_version_at_synth() -> None:
    import aws_cdk as cdk

    stack = _stack()
    serving, hyperpod, operator = _hyperpod(stack, count=2, kubernetes_version="1.99")
    _served(stack, "One", _prepared("one", target="hyperpod-eks"), serving, operator=operator)
    app = stack.node.root
    assert isinstance(app, cdk.App)
    app.synth()
    metadata = [(m.type, str(m.data)) for m in hyperpod.node.metadata]
    infos = [data for kind, data in metadata if kind == "aws:cdk:info"]
    assert infos == [
        "HyperPod ml.g5.12xlarge: 4 GPUs free at the deployments' most, room for a rollout's "
        "surge pod"
    ]
    warnings = [data for kind, data in metadata if kind == "aws:cdk:warning"]
    assert len(warnings) == 1 and "Kubernetes 1.99" in warnings[0]


def test_the_operator_takes_its_hyperpod_cluster_once() -> None:
    from mlcc_constructs import HyperPodInferenceOperatorProps

    stack = _stack()
    serving, hyperpod, _ = _hyperpod(stack)
    for both_or_neither in ({"hyperpod_cluster": hyperpod, "hyperpod_cluster_arn": "arn"}, {}):
        assert _messages(
            lambda kw=both_or_neither: HyperPodInferenceOperatorProps(
                cluster=serving.cluster,
                oidc_provider=serving.oidc_provider,
                role_name="SageMakerHyperPodInference-team",
                tls_bucket=serving.s3_csi.tls_bucket,
                **kw,
            )
        )[0].startswith(
            "HyperPodInferenceOperatorProps:/hyperpod_cluster: give the HyperPod cluster the "
            "operator serves on once"
        )


def test_the_reference_cidrs_are_the_default_render_contexts() -> None:
    """What :func:`serving_on` (the tests' imported clusters) relies on."""
    deployment = _prepared()
    assert deployment.load_balancer_cidrs == REFERENCE_CIDRS["internal"]
