"""The deploy that waits, as CloudFormation gets it: the readiness custom resource, its
ServiceTimeout and the provider's total timeout, least-privilege IAM, the access entry and the
Role it maps to, the network path; one waiter per cluster (in the cluster's stack) for the
app, one per stack for a team's ServedModels without it; what a team's cluster must give."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core.serving.prepare.ready_timeout import (
    PROVIDER_TOTAL_TIMEOUT_S,
    QUERY_INTERVAL_S,
    waiter_timing,
)
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import assertions_template, serving_on, synthesised, template
from tests._flat import flat_spec

CLUSTER_STACK = "mlcc-dev-eks-cluster"
EKS_STACK = "mlcc-dev-serving-eks-inference-llama-vllm"
IEC_STACK = "mlcc-dev-serving-hyperpod-eks-inference-llama-vllm"
READINESS = "Custom::MlccWorkloadReadiness"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
ACCOUNT, REGION = "123456789012", "us-east-1"


def _of_type(stack: str, type_: str) -> dict[str, Any]:
    return {k: r for k, r in template(stack)["Resources"].items() if r["Type"] == type_}


def _manifest(stack: str, kind: str) -> tuple[str, dict[str, Any]]:
    for logical_id, resource in _of_type(stack, MANIFEST).items():
        (obj,) = json.loads(resource["Properties"]["Manifest"])
        if obj["kind"] == kind:
            return logical_id, obj
    raise AssertionError(f"no {kind} in {stack}")


@pytest.mark.parametrize(
    ("stack", "kind", "path"),
    [
        (EKS_STACK, "Deployment", "/apis/apps/v1/namespaces/inference/deployments/llama-vllm"),
        (
            IEC_STACK,
            "InferenceEndpointConfig",
            "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/inference/"
            "inferenceendpointconfigs/llama-vllm",
        ),
    ],
)
def test_the_wait_follows_the_workload_with_its_timeouts(stack: str, kind: str, path: str) -> None:
    ((logical_id, wait),) = _of_type(stack, READINESS).items()
    # Model/Readiness/ClusterWait: a contract; the cluster stack's waiter serves it.
    assert logical_id.startswith("ModelReadinessClusterWait")
    props = wait["Properties"]
    assert props["ServiceToken"] == {
        "Fn::ImportValue": "mlcc-dev-eks-cluster:ExportsOutputFnGetAttMlccReadinessProvider"
        "frameworkonEventDBB2F0AFArnD20537F4"
    }
    workload_id, workload = _manifest(stack, kind)
    deadline_field = "progressDeadlineSeconds" if kind == "Deployment" else "maxDeployTimeInSeconds"
    timeout = workload["spec"][deadline_field]
    timing = waiter_timing(timeout)
    assert (props["Kind"], props["Namespace"], props["Name"], props["Path"]) == (
        kind,
        "inference",
        "llama-vllm",
        path,
    )
    assert int(props["ReadyTimeoutSeconds"]) == timeout
    assert int(props["DeadlineSeconds"]) == timing.deadline_s
    assert int(props["ServiceTimeout"]) == timing.service_timeout_s <= 3600
    assert workload_id in wait["DependsOn"]  # applied first, deleted after
    # The cluster's API and CA, from the cluster stack.
    assert props["Endpoint"] == {
        "Fn::ImportValue": "mlcc-dev-eks-cluster:ExportsOutputFnGetAttClusterEB0386A7"
        "Endpoint48674F7C"
    }
    assert "CertificateAuthorityData" in props["CertificateAuthority"]["Fn::ImportValue"]


def test_the_provider_waits_past_every_deadline_within_the_hour() -> None:
    ((_, machine),) = _of_type(CLUSTER_STACK, "AWS::StepFunctions::StateMachine").items()
    definition = json.dumps(machine["Properties"]["DefinitionString"])
    # The waiter retries isComplete every QUERY_INTERVAL_S, total_timeout / interval times.
    assert f'\\"IntervalSeconds\\":{QUERY_INTERVAL_S}' in definition
    assert f'\\"MaxAttempts\\":{PROVIDER_TOTAL_TIMEOUT_S // QUERY_INTERVAL_S}' in definition
    longest = max(
        int(r["Properties"]["DeadlineSeconds"])
        for stack in synthesised()[1]
        if stack.startswith("mlcc-dev-serving-")
        for r in _of_type(stack, READINESS).values()
    )
    assert longest < PROVIDER_TOTAL_TIMEOUT_S <= 3600


def _policies(stack: str) -> list[dict[str, Any]]:
    return [
        s
        for r in _of_type(stack, "AWS::IAM::Policy").values()
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_iam_is_least_privilege() -> None:
    handler_role = "MlccReadinessRoleDefaultPolicy727AB45D"
    statements = _of_type(CLUSTER_STACK, "AWS::IAM::Policy")[handler_role]["Properties"][
        "PolicyDocument"
    ]["Statement"]
    assert [(s["Sid"], s["Action"]) for s in statements] == [
        ("WriteOwnLogs", ["logs:CreateLogStream", "logs:PutLogEvents"]),
        (
            "VpcNetworkInterfaces",
            [
                "ec2:CreateNetworkInterface",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSubnets",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
        ),
    ]
    assert statements[0]["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": ["MlccReadinessLogs60F5107D", "Arn"]}, ":*"]]
    }
    # No statement of the waiter (framework's included) has a wildcard action, and nothing
    # reads EKS or STS: the token is signed locally.
    waiter = [
        statement
        for logical_id, policy in _of_type(CLUSTER_STACK, "AWS::IAM::Policy").items()
        if logical_id.startswith("MlccReadiness")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert len(waiter) > 2  # the handlers' two and the framework's
    for statement in waiter:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]
        ]  # fmt: skip
        assert not any("*" in a for a in actions), statement
        assert not any(a.startswith(("eks:", "sts:")) for a in actions), statement
    # The handlers' role carries no AWS-managed policy.
    role = template(CLUSTER_STACK)["Resources"]["MlccReadinessRoleAD17EBCB"]["Properties"]
    assert "ManagedPolicyArns" not in role
    # A serving stack holds no waiter of its own: only the deployment's pod role's policy.
    assert [s["Sid"] for s in _policies(EKS_STACK)] == ["ReadModelObjects", "ListModelPrefix"]


def test_the_access_entry_maps_only_the_waiters_group_and_the_role_reads_only_it() -> None:
    assertions_template(CLUSTER_STACK).has_resource_properties(
        "AWS::EKS::AccessEntry",
        {
            "KubernetesGroups": ["mlcc-readiness"],
            "PrincipalArn": {"Fn::GetAtt": ["MlccReadinessRoleAD17EBCB", "Arn"]},
            "Type": "STANDARD",
        },
    )
    entry = template(CLUSTER_STACK)["Resources"]["MlccReadinessAccessDE45EAB8"]
    assert "AccessPolicies" not in entry["Properties"]  # no cluster- or namespace-wide policy
    _, role = _manifest(EKS_STACK, "Role")
    assert role["metadata"]["namespace"] == "inference"
    assert role["rules"] == [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "resourceNames": ["llama-vllm"],
            "verbs": ["get"],
        },
        {  # the Ingress, whose status says the load balancer's address (EndpointUrl)
            "apiGroups": ["networking.k8s.io"],
            "resources": ["ingresses"],
            "resourceNames": ["llama-vllm"],
            "verbs": ["get"],
        },
        {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["list"]},
    ]
    _, iec_role = _manifest(IEC_STACK, "Role")
    assert iec_role["rules"][0] == {
        "apiGroups": ["inference.sagemaker.aws.amazon.com"],
        "resources": ["inferenceendpointconfigs"],
        "resourceNames": ["llama-vllm"],
        "verbs": ["get"],
    }
    _, binding = _manifest(EKS_STACK, "RoleBinding")
    assert binding["subjects"] == [
        {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": "mlcc-readiness",
        }
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    # Waits after its Role and RoleBinding; the access entry is the cluster stack's, which
    # deploys first.
    ((_, wait),) = _of_type(EKS_STACK, READINESS).items()
    access = {_manifest(EKS_STACK, kind)[0] for kind in ("Role", "RoleBinding")}
    assert access <= set(wait["DependsOn"])
    assert not _of_type(EKS_STACK, "AWS::EKS::AccessEntry")


def test_the_network_path_is_https_to_the_cluster_security_group_only() -> None:
    resources = template(CLUSTER_STACK)["Resources"]
    group = resources["MlccReadinessSecurityGroupE2734247"]
    cluster_sg = {"Fn::GetAtt": ["ClusterEB0386A7", "ClusterSecurityGroupId"]}
    assert [
        (e["IpProtocol"], e["FromPort"], e["ToPort"], e["DestinationSecurityGroupId"])
        for e in group["Properties"]["SecurityGroupEgress"]
    ] == [("tcp", 443, 443, cluster_sg)]
    ingress = resources["MlccReadinessApiIngressA28601EE"]
    assert (ingress["Properties"]["GroupId"], ingress["Properties"]["FromPort"]) == (
        cluster_sg,
        443,
    )
    for function in ("MlccReadinessOnEventBD4A0302", "MlccReadinessIsCompleteC1A84947"):
        props = resources[function]["Properties"]
        assert props["VpcConfig"]["SecurityGroupIds"] == [
            {"Fn::GetAtt": ["MlccReadinessSecurityGroupE2734247", "GroupId"]}
        ]
        assert props["Runtime"] == "python3.14"


# -- a team's stack ------------------------------------------------------------------------


def _team_stack() -> Any:
    import aws_cdk as cdk

    app = cdk.App()
    stack = cdk.Stack(app, "Team", env=cdk.Environment(account=ACCOUNT, region=REGION))
    stack.node.set_context(
        f"availability-zones:account={ACCOUNT}:region={REGION}", ["us-east-1a", "us-east-1b"]
    )
    return stack


def _prepared(name: str, namespace: str = "team-a") -> Any:
    from mlcc_constructs import RenderContext, prepare

    return prepare(
        flat_spec(
            engine="vllm",
            model="org/model",
            instance_type="ml.g5.2xlarge",
            name=name,
            namespace=namespace,
            ready_timeout_seconds=900,
        ),
        context=RenderContext(account=ACCOUNT, region=REGION, profile="dev"),
    )


def _cluster(stack: Any, id: str = "Cluster", **attributes: Any) -> Any:
    from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks, aws_iam as iam

    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        stack,
        f"{id}Kubectl",
        service_token=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:team-kubectl",
        role=iam.Role.from_role_arn(stack, f"{id}Role", f"arn:aws:iam::{ACCOUNT}:role/kubectl"),
    )
    if attributes.pop("full", True):
        vpc = ec2.Vpc.from_vpc_attributes(
            stack,
            f"{id}Vpc",
            vpc_id="vpc-0123456789abcdef0",
            availability_zones=["us-east-1a", "us-east-1b"],
            private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        )
        attributes |= {
            "vpc": vpc,
            "cluster_security_group_id": "sg-0123456789abcdef0",
            "cluster_endpoint": "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
            "cluster_certificate_authority_data": "LS0tLS1CRUdJTi==",
        }
    return eks.Cluster.from_cluster_attributes(
        stack, id, cluster_name="team", kubectl_provider=provider, **attributes
    )


def _served(stack: Any, id: str, cluster: Any, name: str, **props: Any) -> Any:
    from mlcc_constructs import ServedModel, ServedModelProps

    return ServedModel(
        stack,
        id,
        props=ServedModelProps(deployment=_prepared(name), cluster=serving_on(cluster), **props),
    )


def _resources(stack: Any) -> dict[str, Any]:
    return stack.node.root.synth().get_stack_by_name(stack.stack_name).template["Resources"]


def test_one_waiter_per_stack_for_every_served_model() -> None:
    stack = _team_stack()
    cluster = _cluster(stack)
    first = _served(stack, "Chat", cluster, "chat")
    second = _served(stack, "Code", cluster, "code", create_namespace=False)
    resources = _resources(stack)
    types = [r["Type"] for r in resources.values()]
    assert types.count("AWS::StepFunctions::StateMachine") == 1
    assert types.count("AWS::EKS::AccessEntry") == 1
    assert types.count(READINESS) == 2
    (entry,) = [r for r in resources.values() if r["Type"] == "AWS::EKS::AccessEntry"]
    assert entry["Properties"]["KubernetesGroups"] == ["mlcc-readiness"]
    assert first.readiness is not None and second.readiness is not None
    wait = first.readiness.resource.node.default_child
    props = stack.resolve(wait._cfn_properties)  # the spec's own timeout
    assert (props["ReadyTimeoutSeconds"], props["ServiceTimeout"]) == ("900", "1080")
    assert props["Endpoint"] == "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com"


def test_without_waiting_there_is_no_waiter() -> None:
    stack = _team_stack()
    served = _served(stack, "Chat", _cluster(stack, full=False), "chat", wait_for_ready=False)
    assert served.readiness is None
    assert not [r for r in _resources(stack).values() if r["Type"] != MANIFEST]


def test_a_cluster_without_what_the_waiter_needs_is_refused_naming_the_fix() -> None:
    stack = _team_stack()
    with pytest.raises(MlccError) as caught:
        _served(stack, "Chat", _cluster(stack, full=False), "chat")
    (problem,) = caught.value.problems
    assert problem.where == "Team/MlccReadiness"
    assert "lacks an attribute it needs" in problem.message
    assert '"vpc" is not defined' in str(problem.value)
    assert problem.fix == (
        "pass those to eks.Cluster.from_cluster_attributes, or set wait_for_ready=False in "
        "ServedModelProps"
    )


def test_a_second_cluster_in_one_stack_is_refused() -> None:
    stack = _team_stack()
    _served(stack, "Chat", _cluster(stack), "chat")
    with pytest.raises(MlccError) as caught:
        _served(stack, "Code", _cluster(stack, "Other"), "code")
    (problem,) = caught.value.problems
    assert problem.where == "Team/Code/Readiness"
    assert "one cluster" in problem.message


def test_the_lambda_asset_is_the_same_wherever_it_is_staged(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    keys = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / folder))
        stack = _team_stack()
        _served(stack, "Chat", _cluster(stack), "chat")
        (function,) = [
            r
            for k, r in _resources(stack).items()
            if r["Type"] == "AWS::Lambda::Function" and k.startswith("MlccReadinessIsComplete")
        ]
        keys.append(function["Properties"]["Code"]["S3Key"])
        assert list((tmp_path / folder).glob("mlcc-readiness-*"))  # staged there
    assert keys[0] == keys[1]


def test_a_clusters_waiter_serves_models_in_other_stacks() -> None:
    import aws_cdk as cdk

    from mlcc_constructs.aws.readiness import ReadinessProvider

    cluster_stack = _team_stack()
    cluster = _cluster(cluster_stack)
    waiter = ReadinessProvider(
        cluster_stack, "MlccReadiness", cluster=cluster, subnets=_private_subnets()
    )
    app = cluster_stack.node.root
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    models = [cdk.Stack(app, f"Model{i}", env=env) for i in (1, 2)]
    for index, stack in enumerate(models):
        _served(stack, "Chat", cluster, f"chat-{index}", readiness=waiter)
    assembly = app.synth()
    for stack in models:
        resources = assembly.get_stack_by_name(stack.stack_name).template["Resources"]
        types = sorted({r["Type"] for r in resources.values()})
        # Its objects, its pod role and its wait: no Lambda, state machine or access entry.
        assert "AWS::Lambda::Function" not in types and "AWS::EKS::AccessEntry" not in types
        ((logical_id, wait),) = [(k, r) for k, r in resources.items() if r["Type"] == READINESS]
        assert logical_id.startswith("ChatReadinessClusterWait")
        assert "Fn::ImportValue" in wait["Properties"]["ServiceToken"]
    shared = assembly.get_stack_by_name("Team").template["Resources"]
    assert [r["Type"] for r in shared.values()].count("AWS::StepFunctions::StateMachine") == 1


def test_another_clusters_waiter_is_refused_naming_the_fix() -> None:
    from mlcc_constructs.aws.readiness import ReadinessProvider

    stack = _team_stack()
    other = ReadinessProvider(
        stack, "OtherWaiter", cluster=_cluster(stack, "Other"), subnets=_private_subnets()
    )
    with pytest.raises(MlccError) as caught:
        _served(stack, "Chat", _cluster(stack), "chat", readiness=other)
    (problem,) = caught.value.problems
    assert (problem.where, problem.value) == ("Team/Chat/Readiness", "Team/OtherWaiter")
    assert problem.fix is not None and "ServingCluster.readiness" in problem.fix


def _private_subnets() -> Any:
    from aws_cdk import aws_ec2 as ec2

    return ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
