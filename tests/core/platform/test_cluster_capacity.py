"""The eks-cluster stack's GPU capacity, cluster access and versions: the pure rules
(core/platform/gpu_capacity.py, core/platform/cluster_access.py, core/platform/versions.py) and
what the stack emits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core.platform.catalog import lookup
from mlcc_constructs.core.platform.cluster_access import (
    admin_access_id,
    admin_role_arns,
    endpoint_cidrs,
)
from mlcc_constructs.core.platform.gpu_capacity import (
    gpu_node_pool,
    gpu_toleration,
    instance_families,
    pool_families,
    s3_csi_addon_configuration,
)
from mlcc_constructs.core.platform.versions import check_kubectl_layer, pinned
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import EKS_STACK, REPO, build, manifest_object, template
from tests._flat import flat_spec

WHERE = "CDK context (cdk.json or -c)"


def _resources(resource_type: str) -> dict[str, Any]:
    return {k: v for k, v in template(EKS_STACK)["Resources"].items() if v["Type"] == resource_type}


@pytest.mark.parametrize(
    ("types", "families"),
    [
        (["ml.g5.12xlarge", "g5.2xlarge", "ml.p5.48xlarge"], ("g5", "p5")),
        (["ml.g6e.xlarge", "ml.p4de.24xlarge", "ml.p4d.24xlarge"], ("g6e", "p4d", "p4de")),
        ([], ()),
    ],
)
def test_instance_families_come_from_the_catalog(types: list[str], families: tuple[str]) -> None:
    assert instance_families([lookup(name) for name in types]) == families
    # A pool's props read the names once: the families and every problem in one pass.
    assert pool_families(["p5"], types, where="GpuNodePoolProps") == (
        tuple(sorted({"p5", *families})),
        [],
    )


def test_unknown_instance_type_is_the_catalog_error() -> None:
    found, problems = pool_families(
        ["g5"], ["ml.g5.2xlarge", "ml.g5.13xlarge"], where="GpuNodePoolProps"
    )
    assert found == ("g5",)
    assert [str(p) for p in problems] == [
        "GpuNodePoolProps:/instance_types/1: unknown instance type (got 'ml.g5.13xlarge'; "
        "allowed: the types in mlcc_constructs/data/instance_catalog.json; fix: did you mean "
        "ml.g5.16xlarge or ml.g5.12xlarge or ml.g5.xlarge?)"
    ]


def test_node_pool_is_tainted_for_the_pods_that_tolerate_it() -> None:
    pool = gpu_node_pool(["p5", "g5", "g5"])
    spec = pool["spec"]["template"]["spec"]
    assert pool["apiVersion"] == "karpenter.sh/v1" and pool["kind"] == "NodePool"
    assert spec["nodeClassRef"] == {
        "group": "eks.amazonaws.com",
        "kind": "NodeClass",
        "name": "default",
    }
    assert spec["requirements"][0] == {
        "key": "eks.amazonaws.com/instance-family",
        "operator": "In",
        "values": ["g5", "p5"],
    }
    (taint,) = spec["taints"]
    # The rendered Deployment's toleration matches the taint, so its pods (only) land there.
    deployment = next(
        o
        for o in render(
            flat_spec(engine="vllm", model="org/m", instance_type="ml.g5.2xlarge", name="x")
        ).objects
        if o["kind"] == "Deployment"
    )
    (toleration,) = deployment["spec"]["template"]["spec"]["tolerations"]
    assert toleration == gpu_toleration()
    assert (toleration["key"], toleration["effect"]) == (taint["key"], taint["effect"])
    assert toleration["operator"] == "Exists"
    # ... and so does the S3 CSI driver's node pod (the model volume).
    assert s3_csi_addon_configuration() == {"node": {"tolerations": [gpu_toleration()]}}


def test_stack_applies_the_node_pool_for_the_eks_deployments_families() -> None:
    (manifest,) = [
        r
        for k, r in _resources("Custom::AWSCDK-EKS-KubernetesResource").items()
        if k.startswith("NodePool")
    ]
    pool = manifest_object(manifest)
    # cdk.json: eks deployments on ml.g5.12xlarge, ml.g5.2xlarge and ml.p5.48xlarge; the
    # hyperpod-eks ones run on HyperPod instance groups, not on this pool. Its NodeClass is the
    # pool's own. Its limit: llama-vllm 1 x 4 GPUs (ml.g5.12xlarge, TP 4) + mistral-vllm-args at
    # its autoscaling max_replicas, 3 x 1 + llama-405b-vllm, one group of 2 nodes x 8.
    assert pool == gpu_node_pool(["g5", "p5"], node_class="mlcc-gpu", gpu_limit=23)
    assert manifest["Properties"]["Overwrite"] is True


def test_s3_csi_addon_tolerates_the_gpu_taint() -> None:
    addon = template(EKS_STACK)["Resources"]["S3CsiDriverAddon"]["Properties"]
    assert json.loads(addon["ConfigurationValues"]) == s3_csi_addon_configuration()
    assert addon["AddonVersion"] == pinned().addon("aws-mountpoint-s3-csi-driver")


def test_admin_roles_get_cluster_admin_access_entries() -> None:
    entries = {
        v["Properties"]["PrincipalArn"]: (k, v["Properties"])
        for k, v in _resources("AWS::EKS::AccessEntry").items()
        if isinstance(v["Properties"]["PrincipalArn"], str)
    }
    assert list(entries) == ["arn:aws:iam::123456789012:role/mlcc-admin"]
    logical_id, props = entries["arn:aws:iam::123456789012:role/mlcc-admin"]
    assert logical_id.startswith(
        "Cluster" + admin_access_id("arn:aws:iam::123456789012:role/mlcc-admin")
    )
    (policy,) = props["AccessPolicies"]
    assert policy["AccessScope"] == {"Type": "cluster"}
    assert policy["PolicyArn"]["Fn::Join"][1][-1].endswith(
        ":eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )


def test_private_endpoint_without_cidrs_and_limited_public_with_them() -> None:
    (cluster,) = _resources("AWS::EKS::Cluster").values()
    config = cluster["Properties"]["ResourcesVpcConfig"]
    assert (config["EndpointPublicAccess"], config["EndpointPrivateAccess"]) == (False, True)
    app = build(endpoint_public_cidrs="203.0.113.0/24,198.51.100.7/32", admin_role_arns="")
    stack = app.node.find_child(EKS_STACK)
    from aws_cdk.assertions import Template

    synthesised = Template.from_stack(stack).to_json()
    (cluster,) = [r for r in synthesised["Resources"].values() if r["Type"] == "AWS::EKS::Cluster"]
    config = cluster["Properties"]["ResourcesVpcConfig"]
    assert config["EndpointPublicAccess"] is True and config["EndpointPrivateAccess"] is True
    assert config["PublicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]
    principals = [
        r["Properties"]["PrincipalArn"]
        for r in synthesised["Resources"].values()
        if r["Type"] == "AWS::EKS::AccessEntry"
    ]
    assert all(not isinstance(p, str) for p in principals)  # only the kubectl provider's role


def test_access_ids_are_stable_per_role() -> None:
    a, b = "arn:aws:iam::123456789012:role/a", "arn:aws:iam::123456789012:role/ops/b"
    assert admin_role_arns(f"{a}, {b},{a}", where=WHERE) == (a, b)
    assert admin_role_arns([b], where=WHERE) == (b,)
    assert admin_access_id(b) == admin_access_id(b) != admin_access_id(a)
    assert admin_access_id(b).startswith("AdminAccessB")


BAD_ARNS = [
    (
        "arn:aws:sts::123456789012:assumed-role/Admin/alice",
        "CDK context (cdk.json or -c):/admin_role_arns/0: not an IAM role ARN (got "
        "'arn:aws:sts::123456789012:assumed-role/Admin/alice'; allowed: arn:aws:iam::<12-digit "
        "account>:role/[<path>/]<name>; fix: use the role itself: "
        "arn:aws:iam::123456789012:role/Admin)",
    ),
    (
        "arn:aws:iam::123456789012:user/alice",
        "CDK context (cdk.json or -c):/admin_role_arns/0: not an IAM role ARN (got "
        "'arn:aws:iam::123456789012:user/alice'; allowed: arn:aws:iam::<12-digit "
        "account>:role/[<path>/]<name>; fix: pass -c admin_role_arns=arn:aws:iam::<account>:"
        "role/<name>[,...] or edit cdk.json)",
    ),
    (
        "Admin",
        "CDK context (cdk.json or -c):/admin_role_arns/0: not an IAM role ARN (got 'Admin'; "
        "allowed: arn:aws:iam::<12-digit account>:role/[<path>/]<name>; fix: pass "
        "-c admin_role_arns=arn:aws:iam::<account>:role/<name>[,...] or edit cdk.json)",
    ),
]


@pytest.mark.parametrize(("value", "message"), BAD_ARNS)
def test_malformed_admin_arn_is_a_clear_error(value: str, message: str) -> None:
    with pytest.raises(MlccError) as caught:
        admin_role_arns(value, where=WHERE)
    assert [str(p) for p in caught.value.problems] == [message]


BAD_CIDRS = [
    (
        "203.0.113.7/24",
        "CDK context (cdk.json or -c):/endpoint_public_cidrs/0: not an IPv4 CIDR block "
        "(203.0.113.7/24 has host bits set) (got '203.0.113.7/24'; allowed: a network such as "
        "203.0.113.0/24 or one address as 198.51.100.7/32; fix: pass "
        "-c endpoint_public_cidrs=203.0.113.0/24[,...] or edit cdk.json)",
    ),
    (
        "0.0.0.0/0",
        "CDK context (cdk.json or -c):/endpoint_public_cidrs/0: 0.0.0.0/0 would open the "
        "cluster's API endpoint to the internet (got '0.0.0.0/0'; allowed: the networks your "
        "administrators and CI reach the cluster from; fix: name those networks, or leave "
        "endpoint_public_cidrs empty for a private endpoint)",
    ),
]


@pytest.mark.parametrize(("value", "message"), BAD_CIDRS)
def test_bad_cidr_is_a_clear_error(value: str, message: str) -> None:
    with pytest.raises(MlccError) as caught:
        endpoint_cidrs(value, where=WHERE)
    assert [str(p) for p in caught.value.problems] == [message]


def test_bad_access_context_is_reported_with_the_rest() -> None:
    with pytest.raises(MlccError) as caught:
        build(
            account="1",
            admin_role_arns="x,arn:aws:iam::123456789012:role/ok,y",
            endpoint_public_cidrs="10.0.0.0/8,nope",
        )
    assert [p.pointer for p in caught.value.problems] == [
        "/account",
        "/admin_role_arns/0",
        "/admin_role_arns/2",
        "/endpoint_public_cidrs/1",
    ]


def test_kubectl_layer_matches_the_kubernetes_version() -> None:
    versions = pinned()
    assert versions.kubectl_layer == f"aws-cdk.lambda-layer-kubectl-v{versions.kubernetes[2:]}"
    import importlib

    module = importlib.import_module(versions.kubectl_layer_module)
    assert hasattr(module, versions.kubectl_layer_class)
    lock = (REPO / "requirements.lock").read_text(encoding="utf-8")
    assert any(line.startswith(versions.kubectl_layer + "==") for line in lock.splitlines())
    with pytest.raises(MlccError) as caught:
        check_kubectl_layer("1.35", "aws-cdk.lambda-layer-kubectl-v34")
    assert str(caught.value) == (
        "mlcc_constructs/data/versions.json:/kubectl_layer: the kubectl layer does not match the "
        "Kubernetes version (got 'aws-cdk.lambda-layer-kubectl-v34'; allowed: "
        "aws-cdk.lambda-layer-kubectl-v35 (Kubernetes 1.35); fix: pin the layer package of the "
        "cluster's minor version in versions.json, pyproject.toml and requirements.lock)"
    )
