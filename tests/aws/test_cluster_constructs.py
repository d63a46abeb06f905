"""ServingCluster, ServedModel, GpuNodePool and the bucket props of the S3 CSI driver and the
HyperPod constructs: bad input (exact errors), a team's HyperPod composition on its own buckets
(created, imported, a literal name: cdk-nag and cfn-lint clean), ServedModel's operator
dependency, and a team's own cluster through ServingCluster.from_cluster_attributes."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import serving_on
from tests._flat import flat_spec
from tests.aws.test_cdk_nag import _findings
from tests.aws.test_cfn_lint import IGNORED

ACCOUNT = "123456789012"
REGION = "us-east-1"
ENV = {"account": ACCOUNT, "region": REGION}
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
BUCKET_ALLOWED = (
    "allowed: s3.IBucket (from aws_cdk import aws_s3 as s3); fix: pass the bucket object "
    "(s3.Bucket.from_bucket_name(scope, id, name) for a bucket the app does not create)"
)
KEY_ALLOWED = (
    "allowed: s3.IBucket (from aws_cdk import aws_s3 as s3); fix: pass the bucket object: "
    "ModelBuckets.bucket(key) of the buckets the app creates, or s3.Bucket.from_bucket_name("
    "scope, id, bucket_names(account=..., region=..., profile=...)[key]) (from "
    "mlcc_constructs.core.platform.buckets import bucket_names)"
)


def _stack(name: str = "Team") -> Any:
    import aws_cdk as cdk

    app = cdk.App()
    stack = cdk.Stack(app, name, env=cdk.Environment(**ENV))
    stack.node.set_context(
        f"availability-zones:account={ACCOUNT}:region={REGION}", ["us-east-1a", "us-east-1b"]
    )
    return stack


@cache
def _scope() -> Any:
    """A stack with the resources the bad-input cases pass (none is synthesised)."""
    from aws_cdk import aws_ec2 as ec2, aws_eks_v2 as eks

    stack = _stack()
    ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-1",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-1"],
    )
    eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="c")
    return stack


def _child(name: str) -> Any:
    return _scope().node.find_child(name)


def _prepared(target: str = "eks", namespace: str = "team-a") -> Any:
    from mlcc_constructs import RenderContext, prepare

    return prepare(
        flat_spec(
            engine="vllm",
            model="org/model",
            instance_type="ml.g5.12xlarge",
            name="m",
            namespace=namespace,
            target=target,
        ),
        context=RenderContext(account=ACCOUNT, region=REGION, profile="dev"),
    )


def _messages(build: Callable[[], object]) -> list[str]:
    with pytest.raises(MlccError) as caught:
        build()
    return [str(problem) for problem in caught.value.problems]


# -- bad input -------------------------------------------------------------------------------

BAD_SERVING_CLUSTER = [
    (
        lambda: {"vpc": "vpc-123"},
        [
            "ServingClusterProps:/vpc: a VPC id is not a VPC (got 'vpc-123'; fix: pass the VPC "
            "object (ec2.Vpc.from_vpc_attributes(scope, id, ...) for a VPC the app does not "
            "create))"
        ],
    ),
    (
        lambda: {
            "vpc": _child("Vpc"),
            "availability_zones": ["us-east-1a", "us-east-1b"],
            "load_balancer_groups": {},
        },
        [
            "ServingClusterProps:/availability_zones: availability_zones apply only to the VPC "
            "ServingCluster creates (got ['us-east-1a', 'us-east-1b']; fix: leave "
            "availability_zones empty (the team's VPC has its subnets), or pass no vpc)"
        ],
    ),
    (
        lambda: {"availability_zones": ["us-east-1a", "us-east-1a"]},
        [
            "ServingClusterProps:/availability_zones: EKS needs at least 2 distinct availability "
            "zones (got ['us-east-1a', 'us-east-1a']; allowed: distinct zones of the stack's "
            "region, e.g. ['us-east-1a', 'us-east-1b']; fix: name two zones or more, each once "
            "(or none: the stack's zones))"
        ],
    ),
    (
        lambda: {"admin_roles": ["arn:aws:iam::123456789012:role/admin"]},
        [
            "ServingClusterProps:/admin_roles/0: an ARN is not a role (got "
            "'arn:aws:iam::123456789012:role/admin'; allowed: iam.IRole; fix: pass "
            "iam.Role.from_role_arn(scope, id, arn))"
        ],
    ),
    (
        lambda: {"endpoint_public_cidrs": ["0.0.0.0/0", "nope"]},
        [
            "ServingClusterProps:/endpoint_public_cidrs/0: 0.0.0.0/0 would open the cluster's API "
            "endpoint to the internet (got '0.0.0.0/0'; allowed: the networks your administrators "
            "and CI reach the cluster from; fix: name those networks, or leave "
            "endpoint_public_cidrs empty for a private endpoint)",
            "ServingClusterProps:/endpoint_public_cidrs/1: not an IPv4 CIDR block (Expected 4 "
            "octets in 'nope') (got 'nope'; allowed: a network such as 203.0.113.0/24 or one "
            "address as 198.51.100.7/32; fix: pass networks such as ['203.0.113.0/24'] (or none: "
            "a private endpoint))",
        ],
    ),
    (
        lambda: {"gpu_instance_families": ["G5"], "gpu_instance_types": ["ml.g5.13xlarge"]},
        [
            "ServingClusterProps:/gpu_instance_families/0: not an instance family of the "
            "instance catalog (got 'G5'; allowed: g5, g6, g6e, p4d, p4de, p5, p5e, p5en, p6-b200; "
            "fix: name the family of a catalog instance type (ml.g5.12xlarge: g5))",
            "ServingClusterProps:/gpu_instance_types/0: unknown instance type (got "
            "'ml.g5.13xlarge'; allowed: the types in mlcc_constructs/data/instance_catalog.json; "
            "fix: did you mean ml.g5.16xlarge or ml.g5.12xlarge or ml.g5.xlarge?)",
        ],
    ),
    (
        lambda: {"read_buckets": ["arn:aws:s3:::acme-models"], "tls_bucket": "Acme_TLS"},
        [
            "ServingClusterProps:/read_buckets/0: an ARN is not a bucket (got "
            f"'arn:aws:s3:::acme-models'; {BUCKET_ALLOWED})",
            "ServingClusterProps:/tls_bucket: a bucket name is not a bucket (got 'Acme_TLS'; "
            f"{BUCKET_ALLOWED})",
        ],
    ),
    (
        lambda: {"kubernetes_version": "1.34"},
        [
            "ServingClusterProps:/kubernetes_version: Kubernetes 1.34 needs a kubectl layer of "
            "that minor version (the pinned layer is aws-cdk.lambda-layer-kubectl-v35, for 1.35) "
            "(got '1.34'; fix: pass kubectl_layer=KubectlV34Layer(scope, id) (PyPI "
            "aws-cdk.lambda-layer-kubectl-v34), or leave kubernetes_version unset)"
        ],
    ),
    (
        lambda: {"kubernetes_version": "v1.35"},
        [
            "ServingClusterProps:/kubernetes_version: not a Kubernetes minor version (got "
            "'v1.35'; allowed: 1.<minor>, e.g. 1.35; fix: pass the minor version only, e.g. 1.35)"
        ],
    ),
    (
        lambda: {"cluster_name": "acme serving"},
        [
            "ServingClusterProps:/cluster_name: not an EKS cluster name (got 'acme serving'; "
            "allowed: 1-100 letters, digits, '-' and '_', starting with a letter or digit; fix: "
            "rename the cluster, e.g. team-serving)"
        ],
    ),
    (
        lambda: {"kubectl_layer": "arn:aws:lambda:us-east-1:123456789012:layer:kubectl:1"},
        [
            "ServingClusterProps:/kubectl_layer: an ARN is not a layer (got "
            "'arn:aws:lambda:us-east-1:123456789012:layer:kubectl:1'; allowed: "
            "lambda.ILayerVersion; fix: pass the layer object (e.g. KubectlV35Layer(scope, id)))"
        ],
    ),
    (
        lambda: {"nat_gateways": "2", "leader_worker_set": "yes"},
        [
            "/nat_gateways: wrong type for ServingClusterProps.nat_gateways (got '2'; allowed: "
            "int or None; fix: pass int or None)",
            "/leader_worker_set: wrong type for ServingClusterProps.leader_worker_set (got "
            "'yes'; allowed: bool; fix: pass bool)",
        ],
    ),
]


@pytest.mark.parametrize(("values", "messages"), BAD_SERVING_CLUSTER)
def test_bad_serving_cluster_props(
    values: Callable[[], dict[str, Any]], messages: list[str]
) -> None:
    from mlcc_constructs import ServingClusterProps

    assert _messages(lambda: ServingClusterProps(**values())) == messages


BAD_SERVED_MODEL = [
    (
        lambda: {"deployment": _prepared().spec},
        [
            "ServedModelProps:/deployment: a DeploymentSpec is not a prepared deployment "
            "(allowed: PreparedDeployment; fix: pass prepare(spec, context=RenderContext("
            "account=..., region=..., profile=...)))"
        ],
    ),
    (
        lambda: {"cluster": "mlcc-dev-eks"},
        [
            "ServedModelProps:/cluster: a cluster name is not a cluster (got 'mlcc-dev-eks'; "
            "allowed: eks.ICluster; fix: pass the cluster (ServingCluster.cluster, or "
            "eks.Cluster.from_cluster_attributes(scope, id, cluster_name=..., "
            "kubectl_provider=...)))"
        ],
    ),
    (
        lambda: {"operator": "amazon-sagemaker-hyperpod-inference"},
        [
            "ServedModelProps:/operator: an add-on name is not an operator (got "
            "'amazon-sagemaker-hyperpod-inference'; allowed: HyperPodInferenceOperator or an "
            "IDependable (its add-on); fix: pass the HyperPodInferenceOperator construct)"
        ],
    ),
    (
        lambda: {"create_namespace": "yes"},
        [
            "ServedModelProps:/create_namespace: wrong type for ServedModelProps.create_namespace "
            "(got 'yes'; allowed: bool; fix: pass bool)"
        ],
    ),
]


@pytest.mark.parametrize(("values", "messages"), BAD_SERVED_MODEL)
def test_bad_served_model_props(values: Callable[[], dict[str, Any]], messages: list[str]) -> None:
    from mlcc_constructs import ServedModelProps

    props = {"deployment": _prepared(), "cluster": _child("Cluster"), **values()}
    assert _messages(lambda: ServedModelProps(**props)) == messages


BAD_GPU_NODE_POOL = [
    (
        {},
        [
            "GpuNodePoolProps: a GPU node pool needs instance families or instance types (fix: "
            "pass instance_families=['g5', ...] or instance_types=['ml.g5.12xlarge', ...] (or "
            "create no pool))"
        ],
    ),
    (
        {"instance_families": ["g5", "x"], "instance_types": ["g5.13xlarge"]},
        [
            "GpuNodePoolProps:/instance_families/1: not an instance family of the instance "
            "catalog (got 'x'; allowed: g5, g6, g6e, p4d, p4de, p5, p5e, p5en, p6-b200; fix: name "
            "the family of a catalog instance type (ml.g5.12xlarge: g5))",
            "GpuNodePoolProps:/instance_types/0: unknown instance type (got 'g5.13xlarge'; "
            "allowed: the types in mlcc_constructs/data/instance_catalog.json; fix: did you mean "
            "g5.16xlarge or g5.12xlarge or g5.xlarge?)",
        ],
    ),
]


@pytest.mark.parametrize(("values", "messages"), BAD_GPU_NODE_POOL)
def test_bad_gpu_node_pool_props(values: dict[str, Any], messages: list[str]) -> None:
    from mlcc_constructs import GpuNodePoolProps

    cluster = _child("Cluster")
    assert _messages(lambda: GpuNodePoolProps(cluster=cluster, **values)) == messages


def _oidc() -> Any:
    from aws_cdk import aws_eks_v2 as eks

    found = _scope().node.try_find_child("Oidc")
    return found or eks.OidcProviderNative(_scope(), "Oidc", url="https://oidc.example.com/id/X")


BAD_BUCKETS = [
    (
        lambda: ("S3CsiDriverProps", {"read_buckets": ["core", "arn:aws:s3:::m"]}),
        [f"S3CsiDriverProps:/read_buckets/0: a key of stacks/buckets.json is not a bucket (its "
         f"name needs the app's profile) (got 'core'; {KEY_ALLOWED})",
         f"S3CsiDriverProps:/read_buckets/1: an ARN is not a bucket (got 'arn:aws:s3:::m'; "
         f"{BUCKET_ALLOWED})"],
    ),
    (
        lambda: ("S3CsiDriverProps", {"tls_bucket": "s3://acme-tls"}),
        [f"S3CsiDriverProps:/tls_bucket: a bucket name is not a bucket (got 's3://acme-tls'; "
         f"{BUCKET_ALLOWED})"],
    ),
    (
        lambda: ("HyperPodClusterProps", {"artifacts_bucket": "artifacts"}),
        [f"HyperPodClusterProps:/artifacts_bucket: a key of stacks/buckets.json is not a bucket "
         f"(its name needs the app's profile) (got 'artifacts'; {KEY_ALLOWED})"],
    ),
    (
        lambda: ("HyperPodInferenceOperatorProps", {"tls_bucket": "acme-tls"}),
        [f"HyperPodInferenceOperatorProps:/tls_bucket: a bucket name is not a bucket (got "
         f"'acme-tls'; {BUCKET_ALLOWED})"],
    ),
]  # fmt: skip


def _bucket_props(name: str, values: dict[str, Any]) -> Any:
    import mlcc_constructs

    required: dict[str, Any] = {
        "S3CsiDriverProps": {"cluster": _child("Cluster"), "oidc_provider": _oidc()},
        "HyperPodClusterProps": {
            "cluster": _child("Cluster"),
            "eks_cluster_arn": "arn:aws:eks:us-east-1:123456789012:cluster/c",
            "cluster_name": "h",
            "groups": [],
            "subnet_ids": ["subnet-1"],
            "security_group_ids": ["sg-1"],
        },
        "HyperPodInferenceOperatorProps": {
            "cluster": _child("Cluster"),
            "oidc_provider": _oidc(),
            "hyperpod_cluster_arn": "arn:aws:sagemaker:us-east-1:123456789012:cluster/x",
            "role_name": "SageMakerHyperPodInference-team",
        },
    }
    return getattr(mlcc_constructs, name)(**required[name], **values)


@pytest.mark.parametrize(("case", "messages"), BAD_BUCKETS)
def test_a_bucket_given_as_bad_text_is_refused(
    case: Callable[[], tuple[str, dict[str, Any]]], messages: list[str]
) -> None:
    name, values = case()
    assert _messages(lambda: _bucket_props(name, values)) == messages


def test_a_deploy_time_bucket_name_is_refused() -> None:
    from aws_cdk import aws_s3 as s3

    token = s3.Bucket(_stack(), "Created").bucket_name
    (message,) = _messages(lambda: _bucket_props("S3CsiDriverProps", {"read_buckets": [token]}))
    assert message.startswith(
        "S3CsiDriverProps:/read_buckets/0: a bucket name known only at deploy time is not a "
        "bucket (got '${Token["
    )


# -- ServedModel -----------------------------------------------------------------------------


def _imported_cluster(stack: Any) -> Any:
    from aws_cdk import aws_eks_v2 as eks, aws_iam as iam

    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        stack,
        "Kubectl",
        service_token=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:team-kubectl",
        role=iam.Role.from_role_arn(stack, "KubectlRole", f"arn:aws:iam::{ACCOUNT}:role/kubectl"),
    )
    return eks.Cluster.from_cluster_attributes(
        stack, "TeamCluster", cluster_name="team", kubectl_provider=provider
    )


def _template(stack: Any) -> dict[str, Any]:
    import aws_cdk as cdk

    app = stack.node.root
    assert isinstance(app, cdk.App)
    return app.synth().get_stack_by_name(stack.stack_name).template  # type: ignore[no-any-return]


def test_an_operator_kind_without_an_operator_is_refused_before_anything_is_created() -> None:
    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    props = ServedModelProps(deployment=_prepared("hyperpod-eks"), cluster=_imported_cluster(stack))
    assert _messages(lambda: ServedModel(stack, "Model", props=props)) == [
        "Team/Model: the deployment's InferenceEndpointConfig team-a/m needs the CRD of the EKS "
        "add-on amazon-sagemaker-hyperpod-inference, and no operator is given (fix: pass "
        "operator=<the cluster's HyperPodInferenceOperator> in ServedModelProps)"
    ]
    assert stack.node.find_child("Model").node.children == []


def test_served_model_on_a_teams_own_cluster_waits_for_the_operator() -> None:
    import aws_cdk as cdk

    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    operator = cdk.CfnWaitConditionHandle(stack, "Operator")  # any IDependable
    served = ServedModel(
        stack,
        "Model",
        props=ServedModelProps(
            deployment=_prepared("hyperpod-eks"),
            cluster=_imported_cluster(stack),
            operator=operator,
            wait_for_ready=False,  # the waiter reads the API from the VPC: tests/test_readiness
        ),
    )
    resources = _template(stack)["Resources"]
    manifests = {k: v for k, v in resources.items() if v["Type"] == MANIFEST}
    assert served.namespace is not None
    (namespace_id,) = served.namespace.manifests
    (iec_id,) = served.objects.manifests
    assert set(manifests) == {namespace_id, iec_id}
    assert sorted(manifests[iec_id]["DependsOn"]) == sorted([namespace_id, "Operator"])
    service_token = manifests[iec_id]["Properties"]["ServiceToken"]
    assert service_token == f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:team-kubectl"


@pytest.mark.parametrize(
    ("namespace", "create", "created"),
    [("team-a", False, False), ("default", True, False), ("team-a", True, True)],
)
def test_the_namespace_is_created_unless_told_or_built_in(
    namespace: str, create: bool, created: bool
) -> None:
    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    served = ServedModel(
        stack,
        "Model",
        props=ServedModelProps(
            deployment=_prepared(namespace=namespace),
            cluster=serving_on(_imported_cluster(stack)),
            create_namespace=create,
            wait_for_ready=False,
        ),
    )
    assert (served.namespace is not None) is created
    kinds = [json.loads(m)[0]["kind"] for m in _manifests(_template(stack))]
    assert ("Namespace" in kinds) is created


def _manifests(template: dict[str, Any]) -> list[str]:
    return [
        r["Properties"]["Manifest"] for r in template["Resources"].values() if r["Type"] == MANIFEST
    ]


def test_a_cluster_without_a_kubectl_provider_is_refused() -> None:
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs import ServedModel, ServedModelProps

    stack = _stack()
    cluster = eks.Cluster.from_cluster_attributes(stack, "Bare", cluster_name="bare")
    props = ServedModelProps(deployment=_prepared(), cluster=serving_on(cluster))
    assert _messages(lambda: ServedModel(stack, "Model", props=props)) == [
        "Team/Model/Namespace: the cluster has no kubectl provider to apply Kubernetes objects "
        "with (fix: create the cluster with kubectl_provider_options=..., or import it with "
        "eks.Cluster.from_cluster_attributes(..., kubectl_provider="
        "eks.KubectlProvider.from_kubectl_provider_attributes(...)))"
    ]


# -- a team's own cluster --------------------------------------------------------------------


def test_an_imported_serving_cluster_grants_its_s3_csi_role() -> None:
    from aws_cdk import aws_eks_v2 as eks, aws_iam as iam, aws_s3 as s3

    from mlcc_constructs import ServingCluster

    stack = _stack()
    cluster = _imported_cluster(stack)
    oidc = eks.OidcProviderNative(stack, "Oidc", url="https://oidc.example.com/id/X")
    bare = ServingCluster.from_cluster_attributes(
        stack, "Bare", cluster=cluster, oidc_provider=oidc
    )
    assert bare.cluster_name == "team"
    models = s3.Bucket.from_bucket_name(stack, "Models", "acme-models")
    assert _messages(lambda: bare.grant_model_read("acme-models")) == [
        "ImportedServingCluster.grant_model_read:/bucket: a bucket name is not a bucket (got "
        f"'acme-models'; {BUCKET_ALLOWED})"
    ]
    assert _messages(lambda: bare.grant_model_read(models)) == [
        "Team/Bare: the imported cluster has no S3 CSI role to grant to (fix: pass s3_csi_role= "
        "to ServingCluster.from_cluster_attributes)"
    ]
    assert _messages(lambda: bare.vpc) == [
        "Team/Bare: the imported cluster has no VPC (fix: pass vpc= to "
        "ServingCluster.from_cluster_attributes)"
    ]
    role = iam.Role.from_role_arn(stack, "Csi", f"arn:aws:iam::{ACCOUNT}:role/team-s3-csi")
    team = ServingCluster.from_cluster_attributes(
        stack, "Serving", cluster=cluster, oidc_provider=oidc, s3_csi_role=role
    )
    team.grant_model_read(models)
    (policy,) = [
        r for r in _template(stack)["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
    ]
    assert policy["Properties"]["Roles"] == ["team-s3-csi"]
    resources = [s["Resource"] for s in policy["Properties"]["PolicyDocument"]["Statement"]]
    assert [r["Fn::Join"][1][-1] for r in resources] == [
        ":s3:::acme-models",
        ":s3:::acme-models/*",
    ]
    assert _findings(stack) == []


def test_an_imported_cluster_refuses_a_cluster_name() -> None:
    from mlcc_constructs import ImportedServingClusterProps

    assert _messages(
        lambda: ImportedServingClusterProps(cluster="team", oidc_provider=_oidc())
    ) == [
        "ImportedServingClusterProps:/cluster: a cluster name is not a cluster (got 'team'; fix: "
        "pass eks.Cluster.from_cluster_attributes(scope, id, cluster_name=..., "
        "kubectl_provider=...))"
    ]


# -- HyperPod on a team's buckets ------------------------------------------------------------


@cache
def _hyperpod_team() -> tuple[Any, dict[str, Any]]:
    """A team stack: its VPC, a ServingCluster with a TLS bucket imported by name, HyperPod with a
    bucket the team creates for the lifecycle scripts, the operator with an imported TLS
    bucket, a model served through it; (stack, template)."""
    from aws_cdk import aws_ec2 as ec2, aws_s3 as s3

    from mlcc_constructs import (
        HyperPodCluster,
        HyperPodClusterProps,
        HyperPodInferenceOperator,
        HyperPodInferenceOperatorProps,
        InstanceGroup,
        ServedModel,
        ServedModelProps,
        ServingCluster,
        ServingClusterProps,
    )

    stack = _stack("TeamHyperPod")
    vpc = ec2.Vpc(stack, "TeamVpc", max_azs=2, flow_logs={"FlowLog": ec2.FlowLogOptions()})
    artifacts = s3.Bucket(
        stack,
        "TeamArtifacts",
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
    )
    import aws_cdk as cdk

    cdk.Validations.of(artifacts).acknowledge(
        cdk.Acknowledgment(id="AwsSolutions-S1", reason="a test bucket: logs are the team's")
    )
    tls = s3.Bucket.from_bucket_name(stack, "TeamTls", "acme-tls-certs")
    serving = ServingCluster(
        stack,
        "Serving",
        props=ServingClusterProps(
            cluster_name="team-serving",
            vpc=vpc,
            tls_bucket=tls,
            load_balancer_groups={},  # HyperPod's operator makes its own load balancers
        ),
    )
    serving.grant_model_read(s3.Bucket.from_bucket_name(stack, "Extra", "acme-extra-weights"))
    private = vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    hyperpod = HyperPodCluster(
        stack,
        "HyperPod",
        props=HyperPodClusterProps(
            cluster=serving.cluster,
            eks_cluster_arn=serving.cluster.cluster_arn,
            cluster_name="team-hyperpod",
            groups=[InstanceGroup(name="inference", instance_type="ml.g5.12xlarge", count=1)],
            subnet_ids=private.subnet_ids,
            security_group_ids=[serving.cluster.cluster_security_group_id],
            artifacts_bucket=artifacts,
            eks_cluster_name=serving.cluster_name,
        ),
    )
    operator = HyperPodInferenceOperator(
        stack,
        "Operator",
        props=HyperPodInferenceOperatorProps(
            cluster=serving.cluster,
            oidc_provider=serving.oidc_provider,
            hyperpod_cluster_arn=hyperpod.cluster_arn,
            role_name="SageMakerHyperPodInference-team",
            tls_bucket=tls,
            eks_cluster_name=serving.cluster_name,
            install_keda=False,  # the ServingCluster installs KEDA: one per cluster
        ),
    )
    ServedModel(
        stack,
        "Model",
        props=ServedModelProps(
            deployment=_prepared("hyperpod-eks"), cluster=serving.cluster, operator=operator
        ),
    )
    return stack, _template(stack)


def _policy_resources(template: dict[str, Any], prefix: str) -> list[Any]:
    found = []
    for key, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::Policy" and key.startswith(prefix):
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                value = statement["Resource"]
                found += value if isinstance(value, list) else [value]
    return found


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_hyperpod_on_the_teams_buckets() -> None:
    _, template = _hyperpod_team()
    resources = template["Resources"]
    (cluster,) = [r for r in resources.values() if r["Type"] == "AWS::SageMaker::Cluster"]
    (group,) = cluster["Properties"]["InstanceGroups"]
    uri = group["LifeCycleConfig"]["SourceS3Uri"]
    artifacts = next(k for k in resources if k.startswith("TeamArtifacts"))
    assert uri["Fn::Join"][1][:2] == ["s3://", {"Ref": artifacts}]
    assert uri["Fn::Join"][1][2].startswith("/.mlcc-hyperpod/lifecycle/v")
    scripts = _text(_policy_resources(template, "HyperPodRole"))
    assert _text({"Ref": artifacts}) in scripts
    tls = _text(_policy_resources(template, "OperatorExecutionRole"))
    assert "acme-tls-certs" in tls and "mlcc-tls" not in tls
    (addon,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::EKS::Addon"
        and r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"
    ]
    assert "acme-tls-certs" in _text(addon["Properties"]["ConfigurationValues"])
    csi = _text(_policy_resources(template, "ServingS3CsiRole"))
    assert "acme-tls-certs" in csi and "acme-extra-weights" in csi


def test_the_iec_waits_for_the_operator_add_on() -> None:
    _, template = _hyperpod_team()
    resources = template["Resources"]
    (addon,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::EKS::Addon"
        and r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"
    ]
    (iec,) = [
        r
        for r in resources.values()
        if r["Type"] == MANIFEST and "InferenceEndpointConfig" in r["Properties"]["Manifest"]
    ]
    assert addon in iec["DependsOn"]


def test_hyperpod_on_the_teams_buckets_is_cdk_nag_and_cfn_lint_clean() -> None:
    from cfnlint.api import ManualArgs, lint

    stack, template = _hyperpod_team()
    assert _findings(stack) == []
    matches = lint(json.dumps(template), config=ManualArgs(regions=[REGION], ignore_checks=IGNORED))
    assert [str(m) for m in matches] == []
