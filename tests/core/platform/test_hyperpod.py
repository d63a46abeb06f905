"""The HyperPod stacks: ``mlcc-dev-hyperpod-cluster`` (created from cdk.json's
``hyperpod_instance_groups``, or imported by ``hyperpod_cluster_name``),
``mlcc-dev-inference-operator`` (the operator add-on, its roles and dependencies), and the
serving stacks' IECs depending on the add-on. Context errors are table-driven with exact
texts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.adapters.s3_layout import hyperpod_lifecycle_prefix
from mlcc_constructs.core.platform.alb_controller_iam import alb_controller_statements
from mlcc_constructs.core.platform.buckets import bucket_names
from mlcc_constructs.core.platform.hyperpod import (
    DEFAULT_EBS_VOLUME_GIB,
    ON_CREATE,
    InstanceGroup,
    coverage_problems,
    hyperpod_settings,
    lifecycle_dir,
    lifecycle_hash,
)
from mlcc_constructs.core.platform.hyperpod_iam import (
    hyperpod_instance_statements,
    inference_operator_statements,
    keda_statements,
)
from mlcc_constructs.core.platform.iam_statement import Arns, wildcard_actions
from mlcc_constructs.core.platform.inference_operator import addon_configuration
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import (
    EKS_STACK,
    HYPERPOD_STACK,
    IMPORTED_HYPERPOD,
    OPERATOR_STACK,
    build,
    manifest_object,
    reference_entries,
    stack,
    synthesised,
    synthesised_import_mode,
    template,
)

NAMES = bucket_names(account="123456789012", region="us-east-1", profile="dev")
VERSIONS = json.loads(data_path("versions.json").read_text(encoding="utf-8"))
ADDON = "amazon-sagemaker-hyperpod-inference"
SCRIPTS = hyperpod_lifecycle_prefix(NAMES["artifacts"], lifecycle_hash())
SA = "system:serviceaccount:hyperpod-inference-system:"
WHERE = "CDK context (cdk.json or -c)"
FIX = "edit hyperpod_instance_groups in cdk.json (or pass -c hyperpod_instance_groups='[...]')"


def _resources(text: str, resource_type: str) -> dict[str, Any]:
    return {
        logical_id: resource
        for logical_id, resource in json.loads(text)["Resources"].items()
        if resource["Type"] == resource_type
    }


def _of(stack_name: str, resource_type: str) -> dict[str, Any]:
    return _resources(synthesised()[1][stack_name], resource_type)


def _export_value(import_value: dict[str, Any]) -> Any:
    """What the eks-cluster stack exports under the name an ``Fn::ImportValue`` reads."""
    stack_name, _, output = import_value["Fn::ImportValue"].partition(":")
    assert stack_name == EKS_STACK
    return template(EKS_STACK)["Outputs"][output]["Value"]


def _text(value: Any) -> str:
    """A resolved string (Fn::Join of literals, the partition shown as ``aws``)."""
    if isinstance(value, str):
        return value
    parts = value["Fn::Join"][1]
    return "".join("aws" if p == {"Ref": "AWS::Partition"} else str(p) for p in parts)


def _statements(text: str, policy_prefix: str) -> dict[str, dict[str, Any]]:
    (policy,) = (
        p
        for logical_id, p in _resources(text, "AWS::IAM::Policy").items()
        if logical_id.startswith(policy_prefix)
    )
    found = {}
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        actions = statement["Action"]
        resources = statement["Resource"]
        found[statement["Sid"]] = {
            "actions": sorted([actions] if isinstance(actions, str) else actions),
            "resources": [
                _text(r) for r in (resources if isinstance(resources, list) else [resources])
            ],
            "condition": statement.get("Condition"),
        }
    return found


# --- context -------------------------------------------------------------------------


def _group(**overrides: Any) -> dict[str, Any]:
    return {"name": "inference", "instance_type": "ml.g5.12xlarge", "count": 1, **overrides}


BAD_CONTEXT = [
    (
        [_group(instance_type="g5.12xlarge")],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0/instance_type: a HyperPod instance type is a "
            "SageMaker instance type (ml.<family>.<size>) (got 'g5.12xlarge'; allowed: the types "
            "in mlcc_constructs/data/instance_catalog.json; fix: use ml.g5.12xlarge)"
        ],
    ),
    (
        [_group(instance_type="ml.g5.13xlarge")],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0/instance_type: unknown instance type (got "
            "'ml.g5.13xlarge'; allowed: the types in mlcc_constructs/data/instance_catalog.json; "
            "fix: did you mean ml.g5.16xlarge or ml.g5.12xlarge or ml.g5.xlarge?)"
        ],
    ),
    (
        [_group(count=0)],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0/count: count must be a whole number from 1 to "
            f"6758 (got 0; allowed: 1-6758; fix: {FIX})"
        ],
    ),
    (
        [_group(count=True)],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0/count: count must be a whole number from 1 to "
            f"6758 (got True; allowed: 1-6758; fix: {FIX})"
        ],
    ),
    (
        [_group(name="in_ference", ebs_volume_gib=0)],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0/name: not an instance group name (got "
            "'in_ference'; allowed: 1-63 letters, digits and '-', starting and ending with a "
            f"letter or digit; fix: {FIX})",
            f"{WHERE}:/hyperpod_instance_groups/0/ebs_volume_gib: ebs_volume_gib must be a whole "
            f"number from 1 to 16384 (got 0; allowed: 1-16384; fix: {FIX})",
        ],
    ),
    (
        [_group(name="a"), _group(name="a", instance_type="ml.g5.2xlarge")],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/1/name: instance group name 'a' is used twice "
            f"(also at index 0) (got 'a'; allowed: a name unique in the cluster; fix: {FIX})"
        ],
    ),
    (
        [{"instance_type": "ml.g5.12xlarge", "count": 1, "size": 3}],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0/size: unknown key 'size' (got 3; allowed: "
            f"name, instance_type, count, ebs_volume_gib, taints, labels; fix: {FIX})",
            f"{WHERE}:/hyperpod_instance_groups/0: missing 'name' (got {{'instance_type': "
            f"'ml.g5.12xlarge', 'count': 1, 'size': 3}}; allowed: name; fix: {FIX})",
        ],
    ),
    (
        [],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups: must be a non-empty list of instance groups (got "
            '[]; allowed: [{"name": "inference", "instance_type": "ml.g5.12xlarge", "count": '
            f"1}}]; fix: {FIX})"
        ],
    ),
    (
        "[{",
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups: is not JSON (Expecting property name enclosed "
            'in double quotes) (got \'[{\'; allowed: [{"name": "inference", "instance_type": '
            f'"ml.g5.12xlarge", "count": 1}}]; fix: {FIX})'
        ],
    ),
    (
        ["x"],
        None,
        [
            f"{WHERE}:/hyperpod_instance_groups/0: an instance group must be an object (got 'x'; "
            "allowed: name, instance_type, count and optionally ebs_volume_gib, taints and "
            f"labels; fix: {FIX})"
        ],
    ),
    (
        [_group()],
        "existing",
        [
            f"{WHERE}:/hyperpod_cluster_name: hyperpod_instance_groups and hyperpod_cluster_name "
            "are both set: the app either creates a HyperPod cluster or imports one (got "
            "'existing'; fix: remove hyperpod_cluster_name to create the cluster, or remove "
            "hyperpod_instance_groups to import it)"
        ],
    ),
    (
        None,
        "bad_name",
        [
            f"{WHERE}:/hyperpod_cluster_name: not a HyperPod cluster name (got 'bad_name'; "
            "allowed: 1-63 letters, digits and '-', starting and ending with a letter or digit; "
            "fix: pass -c hyperpod_cluster_name=<name of the existing cluster> or edit cdk.json)"
        ],
    ),
]


@pytest.mark.parametrize(("groups", "imported", "messages"), BAD_CONTEXT)
def test_bad_context_is_a_clear_error(groups: Any, imported: Any, messages: list[str]) -> None:
    with pytest.raises(MlccError) as caught:
        hyperpod_settings(groups, imported, profile="dev")
    assert [str(p) for p in caught.value.problems] == messages


def test_context_settings() -> None:
    text = '[{"name": "a", "instance_type": "ml.g6e.xlarge", "count": 2, "ebs_volume_gib": 100}]'
    created = hyperpod_settings(text, None, profile="prod")  # -c passes the JSON as text
    assert created is not None and not created.imported
    assert created.cluster_name == "mlcc-prod-hyperpod"
    assert created.groups == (
        InstanceGroup(name="a", instance_type="ml.g6e.xlarge", count=2, ebs_volume_gib=100),
    )
    imported = hyperpod_settings(None, "team-cluster", profile="prod")
    assert imported is not None and imported.imported and imported.groups == ()
    assert imported.cluster_name == "team-cluster"
    assert hyperpod_settings(None, None, profile="prod") is None
    (default,) = hyperpod_settings([_group()], None, profile="dev").groups  # type: ignore[union-attr]
    assert default.ebs_volume_gib == DEFAULT_EBS_VOLUME_GIB


COVERAGE = [
    (
        "created",
        [
            "d:/compute/instance_type: no instance group of hyperpod_instance_groups runs "
            "ml.g5.12xlarge, "
            "so the deployment's pods could never schedule (got 'ml.g5.12xlarge'; allowed: "
            "ml.g5.2xlarge; fix: add an instance group of ml.g5.12xlarge to "
            "hyperpod_instance_groups, or change the deployment's instance_type)"
        ],
    ),
    (
        "none",
        [
            "d: the deployment runs on SageMaker HyperPod, but the app has no HyperPod cluster "
            "(fix: set hyperpod_instance_groups (the app creates the cluster) or "
            "hyperpod_cluster_name (an existing cluster) in cdk.json)"
        ],
    ),
    ("imported", []),  # an imported cluster's groups are not known offline
]


@pytest.mark.parametrize(("mode", "messages"), COVERAGE)
def test_deployments_need_an_instance_group_of_their_type(mode: str, messages: list[str]) -> None:
    settings = {
        "created": hyperpod_settings([_group(instance_type="ml.g5.2xlarge")], None, profile="dev"),
        "none": None,
        "imported": hyperpod_settings(None, "x", profile="dev"),
    }[mode]
    problems = coverage_problems(settings, [("d", "ml.g5.12xlarge")])
    assert [str(p) for p in problems] == messages
    assert coverage_problems(settings, []) == []


def test_the_app_refuses_hyperpod_deployments_it_cannot_serve() -> None:
    with pytest.raises(MlccError) as caught:
        build(hyperpod_instance_groups=[_group(instance_type="ml.g6e.xlarge")])
    assert [p.where for p in caught.value.problems] == [
        "examples/reference.yaml#1",
        "examples/reference.yaml#2",
    ]
    assert all("no instance group" in p.message for p in caught.value.problems)
    with pytest.raises(MlccError) as caught:
        build(hyperpod_instance_groups=None)
    assert len(caught.value.problems) == 2
    assert all("no HyperPod cluster" in p.message for p in caught.value.problems)


def test_an_app_without_hyperpod_deployments_has_no_hyperpod_stacks() -> None:
    eks_only = [d for d in reference_entries() if d["target"] == "eks"]
    app = build(hyperpod_instance_groups=None, reference_deployments=eks_only)
    names = {child.node.id for child in app.node.children}
    assert HYPERPOD_STACK not in names and OPERATOR_STACK not in names


# --- permissions as data ---------------------------------------------------------------------


def test_no_statement_has_a_wildcard_action() -> None:
    arns = Arns(partition="aws", region="us-east-1", account="123456789012")
    every = (
        *hyperpod_instance_statements(
            arns,
            eks_cluster_name="c",
            lifecycle_bucket="b",
            lifecycle_prefix="p/",
            subnet_ids=["subnet-1"],
            security_group_ids=["sg-1"],
        ),
        *inference_operator_statements(arns, tls_bucket="t", eks_cluster_name="c", role_name="r"),
        *alb_controller_statements(arns),
        *keda_statements(arns),
    )
    assert wildcard_actions(every) == []
    # Every wildcard resource says why (the cdk-nag acknowledgement's reason).
    assert [s.sid for s in every if any("*" in r for r in s.resources) and not s.why] == []


# --- the created cluster ---------------------------------------------------------------------


def _cluster() -> dict[str, Any]:
    (cluster,) = _of(HYPERPOD_STACK, "AWS::SageMaker::Cluster").values()
    return cluster  # type: ignore[no-any-return]


def test_the_cluster_is_orchestrated_by_the_apps_eks_cluster() -> None:
    properties = _cluster()["Properties"]
    assert properties["ClusterName"] == "mlcc-dev-hyperpod"
    arn = properties["Orchestrator"]["Eks"]["ClusterArn"]
    (eks_cluster,) = _resources(synthesised()[1][EKS_STACK], "AWS::EKS::Cluster")
    assert _export_value(arn) == {"Fn::GetAtt": [eks_cluster, "Arn"]}
    assert properties["NodeRecovery"] == "Automatic"


def test_instance_groups_come_from_context() -> None:
    role = next(iter(_of(HYPERPOD_STACK, "AWS::IAM::Role")))
    assert _cluster()["Properties"]["InstanceGroups"] == [
        {
            "ExecutionRole": {"Fn::GetAtt": [role, "Arn"]},
            "InstanceCount": 2,  # cdk.json: two IECs of 4 GPUs on ml.g5.12xlarge (4 GPUs each)
            "InstanceGroupName": "inference",
            "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
            "InstanceType": "ml.g5.12xlarge",
            "LifeCycleConfig": {"OnCreate": "on_create.sh", "SourceS3Uri": SCRIPTS.uri},
            # The GPU type's default taint (tests/core/platform/test_hyperpod_taints.py).
            "KubernetesConfig": {
                "Labels": {},
                "Taints": [{"Effect": "NoSchedule", "Key": "nvidia.com/gpu"}],
            },
        }
    ]
    assert role.startswith("HyperPodClusterRole")


def test_the_nodes_use_the_private_subnets_and_the_cluster_security_group() -> None:
    vpc = _cluster()["Properties"]["VpcConfig"]
    eks = template(EKS_STACK)["Resources"]
    private = sorted(
        k for k, r in eks.items() if k.startswith("VpcPrivate") and r["Type"] == "AWS::EC2::Subnet"
    )
    assert len(private) == 2  # one per availability zone of cdk.json
    assert [_export_value(s) for s in vpc["Subnets"]] == [{"Ref": k} for k in private]
    (cluster,) = _resources(synthesised()[1][EKS_STACK], "AWS::EKS::Cluster")
    assert [_export_value(g) for g in vpc["SecurityGroupIds"]] == [
        {"Fn::GetAtt": [cluster, "ClusterSecurityGroupId"]}
    ]


def test_the_cluster_waits_for_its_role_scripts_and_networking() -> None:
    depends = _cluster()["DependsOn"]
    addons = _of(HYPERPOD_STACK, "AWS::EKS::Addon")
    assert sorted(a["Properties"]["AddonName"] for a in addons.values()) == [
        "coredns",
        "kube-proxy",
        "vpc-cni",
    ]
    # The nodes' networking, not CoreDNS (the deploy order:
    # tests/core/platform/test_addon_order.py).
    waited = {a["Properties"]["AddonName"] for k, a in addons.items() if k in depends}
    assert waited == {"kube-proxy", "vpc-cni"}
    (scripts,) = _of(HYPERPOD_STACK, "Custom::CDKBucketDeployment")
    (policy,) = (k for k in _of(HYPERPOD_STACK, "AWS::IAM::Policy") if k.startswith("HyperPod"))
    assert {scripts, policy} <= set(depends)


def test_the_lifecycle_scripts_are_an_asset_in_the_artifacts_bucket() -> None:
    (deployment,) = _of(HYPERPOD_STACK, "Custom::CDKBucketDeployment").values()
    properties = deployment["Properties"]
    assert properties["DestinationBucketName"] == NAMES["artifacts"]
    assert properties["DestinationBucketKeyPrefix"] == SCRIPTS.key
    assert re.fullmatch(r"\.mlcc-hyperpod/lifecycle/v[0-9a-f]{12}/", SCRIPTS.key)
    (source,) = properties["SourceObjectKeys"]
    assert re.fullmatch(r"[0-9a-f]{64}\.zip", source)
    # The asset is staged at synth (offline): the shipped scripts, as they are.
    assembly = synthesised()[0].synth()
    manifest = Path(assembly.directory) / f"{HYPERPOD_STACK}.assets.json"
    files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    staged = Path(assembly.directory) / files[source.removesuffix(".zip")]["source"]["path"]
    assert sorted(p.name for p in staged.iterdir()) == [ON_CREATE]
    assert (staged / ON_CREATE).read_bytes() == (lifecycle_dir() / ON_CREATE).read_bytes()


def test_the_execution_role_is_least_privilege() -> None:
    (role,) = (
        r for k, r in _of(HYPERPOD_STACK, "AWS::IAM::Role").items() if k.startswith("HyperPod")
    )
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
        }
    ]
    assert "ManagedPolicyArns" not in role["Properties"]
    statements = _statements(synthesised()[1][HYPERPOD_STACK], "HyperPodClusterRole")
    assert [a for s in statements.values() for a in s["actions"] if "*" in a] == []
    base = f"arn:aws:s3:::{NAMES['artifacts']}"
    assert statements["LifecycleScriptsRead"]["resources"] == [f"{base}/{SCRIPTS.key}*"]
    assert statements["LifecycleScriptsList"] == {
        "actions": ["s3:ListBucket"],
        "resources": [base],
        "condition": {"StringLike": {"s3:prefix": SCRIPTS.key.rstrip("/") + "*"}},
    }
    assert statements["PodIdentity"]["resources"] == [
        "arn:aws:eks:us-east-1:123456789012:cluster/mlcc-dev-eks"
    ]
    # An image only HyperPod runs (llama-sglang) is first pulled through the cache by a
    # HyperPod node: the two pull-through actions, on the cache's own repositories only.
    assert statements["ImagePullThroughCache"] == {
        "actions": ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"],
        "resources": ["arn:aws:ecr:us-east-1:123456789012:repository/docker-hub/*"],
        "condition": None,
    }
    assert sorted(statements) == [
        "ClusterLogGroups",
        "ClusterLogStreams",
        "ClusterMetrics",
        "CniDescribe",
        "CniNetworkInterfaces",
        "CniTagNetworkInterfaces",
        "ImagePull",
        "ImagePullThroughCache",
        "ImagePullToken",
        "LifecycleScriptsList",
        "LifecycleScriptsRead",
        "PodIdentity",
        "SessionManager",
    ]


def test_only_aws_cdk_libs_asset_handler_holds_wildcard_actions() -> None:
    offenders = set()
    for stack_name in (HYPERPOD_STACK, OPERATOR_STACK):
        for logical_id, policy in _of(stack_name, "AWS::IAM::Policy").items():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                if any("*" in a for a in ([actions] if isinstance(actions, str) else actions)):
                    offenders.add(logical_id)
    assert [o for o in offenders if not o.startswith("CustomCDKBucketDeployment")] == []


# --- the inference operator ------------------------------------------------------------------


def _addon(name: str) -> tuple[str, dict[str, Any]]:
    (found,) = (
        (k, a)
        for k, a in _of(OPERATOR_STACK, "AWS::EKS::Addon").items()
        if a["Properties"]["AddonName"] == name
    )
    return found


def _configuration() -> dict[str, Any]:
    """The add-on's configuration with each token shown as its CloudFormation function."""
    parts = _addon(ADDON)[1]["Properties"]["ConfigurationValues"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else json.dumps(json.dumps(p))[1:-1] for p in parts)
    return json.loads(text)  # type: ignore[no-any-return]


def test_the_operator_addon_name_version_and_configuration() -> None:
    logical_id, addon = _addon(ADDON)
    assert (
        addon["Properties"]["AddonVersion"]
        == VERSIONS["eks_addons"][ADDON]
        == ("v2.0.0-eksbuild.2")
    )
    assert addon["Properties"]["ResolveConflicts"] == "OVERWRITE"
    roles = {
        k.removeprefix("InferenceOperator")[:8]: k for k in _of(OPERATOR_STACK, "AWS::IAM::Role")
    }
    hyperpod_arn = {
        "Fn::ImportValue": f"{HYPERPOD_STACK}:"
        + next(
            k
            for k, v in template(HYPERPOD_STACK)["Outputs"].items()
            if v["Value"]
            == {
                "Fn::GetAtt": [
                    next(iter(_of(HYPERPOD_STACK, "AWS::SageMaker::Cluster"))),
                    "ClusterArn",
                ]
            }
        )
    }
    assert _configuration() == {
        "alb": {
            "enabled": True,
            "serviceAccount": {
                "create": True,
                "roleArn": json.dumps({"Fn::GetAtt": [roles["AlbContr"], "Arn"]}),
            },
        },
        "executionRoleArn": json.dumps({"Fn::GetAtt": [roles["Executio"], "Arn"]}),
        "hyperpodClusterArn": json.dumps(hyperpod_arn),
        "inferenceGateway": {"enabled": False},
        "inferenceOperator": {"enabled": True},
        # The eks-cluster stack installs KEDA (one per cluster): the add-on's is off.
        "keda": {"enabled": False},
        "tlsCertificateS3Bucket": NAMES["tls"],
    }
    assert "KedaRole" not in roles
    assert logical_id.startswith("InferenceOperator")


def test_an_operator_on_a_cluster_without_keda_installs_its_own() -> None:
    configuration = addon_configuration(
        execution_role_arn="e",
        tls_bucket="t",
        hyperpod_cluster_arn="h",
        alb_role_arn="a",
        keda_role_arn="k",
    )
    assert configuration["keda"] == {
        "enabled": True,
        "auth": {"aws": {"irsa": {"enabled": True, "roleArn": "k"}}},
    }


def test_the_operator_addon_waits_for_its_dependencies() -> None:
    _, addon = _addon(ADDON)
    for name in ("aws-fsx-csi-driver", "metrics-server", "cert-manager"):
        logical_id, dependency = _addon(name)
        assert logical_id in addon["DependsOn"], name
        assert "AddonVersion" not in dependency["Properties"]  # EKS's default for 1.35
    namespaces = _of(OPERATOR_STACK, "Custom::AWSCDK-EKS-KubernetesResource")
    (namespace,) = namespaces
    assert namespace in addon["DependsOn"]
    assert json.loads(namespaces[namespace]["Properties"]["Manifest"])[0]["metadata"]["name"] == (
        "hyperpod-inference-system"
    )
    policies = _of(OPERATOR_STACK, "AWS::IAM::Policy")
    assert set(policies) <= set(addon["DependsOn"])


def _trust(role_prefix: str) -> tuple[dict[str, str], list[Any]]:
    """(the IRSA condition with the issuer shown as ISSUER, the other statements)."""
    resources = json.loads(synthesised()[1][OPERATOR_STACK])["Resources"]
    (role,) = (
        r
        for k, r in resources.items()
        if k.startswith(role_prefix) and r["Type"] == "AWS::IAM::Role"
    )
    statements = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    (web,) = (s for s in statements if s["Action"] == "sts:AssumeRoleWithWebIdentity")
    assert _export_value(web["Principal"]["Federated"]) == {
        "Ref": next(iter(_resources(synthesised()[1][EKS_STACK], "AWS::IAM::OIDCProvider")))
    }
    json_ref = web["Condition"]["StringEquals"]["Fn::GetAtt"]
    parts = resources[json_ref[0]]["Properties"]["Value"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "ISSUER" for p in parts)
    return json.loads(text), [s for s in statements if s is not web]


@pytest.mark.parametrize(
    ("role", "service_account", "others"),
    [
        (
            "InferenceOperatorExecutionRole",
            "hyperpod-inference-controller-manager",
            [
                {
                    "Action": "sts:AssumeRole",
                    "Effect": "Allow",
                    "Principal": {"Service": "sagemaker.amazonaws.com"},
                }
            ],
        ),
        ("InferenceOperatorAlbControllerRole", "aws-load-balancer-controller", []),
    ],
)
def test_trust_is_pinned_to_the_service_account(
    role: str, service_account: str, others: list[Any]
) -> None:
    condition, rest = _trust(role)
    assert condition == {"ISSUER:sub": SA + service_account, "ISSUER:aud": "sts.amazonaws.com"}
    assert rest == others


def test_the_execution_role_writes_and_tags_the_real_tls_bucket() -> None:
    statements = _statements(synthesised()[1][OPERATOR_STACK], "InferenceOperatorExecutionRole")
    tls = f"arn:aws:s3:::{NAMES['tls']}"
    assert statements["TlsObjectsWrite"]["actions"] == ["s3:PutObject", "s3:PutObjectTagging"]
    assert statements["TlsObjectsWrite"]["resources"] == [f"{tls}/*"]
    assert statements["TlsObjectsRead"]["resources"] == [f"{tls}/*"]
    assert statements["TlsObjectsDelete"]["resources"] == [f"{tls}/*"]
    assert statements["TlsBucketList"]["resources"] == [tls]
    assert statements["CertificateImport"]["actions"] == [
        "acm:AddTagsToCertificate",
        "acm:ImportCertificate",
    ]
    assert statements["PassOwnRoleToSageMaker"] == {
        "actions": ["iam:PassRole"],
        "resources": ["arn:aws:iam::123456789012:role/SageMakerHyperPodInference-dev-us-east-1"],
        "condition": {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    }
    assert not any("hyperpod-tls" in r for s in statements.values() for r in s["resources"])


# --- the serving stacks ---------------------------------------------------------------------


def test_iec_manifests_depend_on_the_operator_addon() -> None:
    import aws_cdk as cdk

    app = synthesised()[0]
    addon = stack(OPERATOR_STACK).operator.addon
    operator_stack = stack(OPERATOR_STACK)
    hyperpod_serving = [
        child
        for child in app.node.children
        if isinstance(child, cdk.Stack) and child.stack_name.startswith("mlcc-dev-serving-")
    ]
    checked = 0
    for serving in hyperpod_serving:
        needs = [m for m in serving.objects.manifests.values() if addon in m.node.dependencies]
        iecs = [
            m
            for m, obj in zip(
                serving.objects.manifests.values(), _unit_objects(serving), strict=True
            )
            if obj["kind"] == "InferenceEndpointConfig"
        ]
        assert needs == iecs, serving.stack_name
        assert (operator_stack in serving.dependencies) == bool(iecs), serving.stack_name
        checked += len(iecs)
    assert checked == 2  # the two hyperpod-eks deployments of cdk.json
    assembly = app.synth()
    for name in ("llama-vllm", "llama-sglang"):
        artifact = assembly.get_stack_by_name(f"mlcc-dev-serving-hyperpod-eks-inference-{name}")
        assert OPERATOR_STACK in [d.id for d in artifact.dependencies]


def _unit_objects(serving: Any) -> list[dict[str, Any]]:
    return [_manifest(m) for m in serving.objects.manifests.values()]


def _manifest(manifest: Any) -> dict[str, Any]:
    import aws_cdk as cdk

    resource = manifest.node.find_child("Resource").node.default_child
    properties = cdk.Stack.of(manifest).resolve(resource._cfn_properties)
    return manifest_object({"Properties": properties})


def test_the_deploy_order() -> None:
    app = synthesised()[0]
    order = {
        name: {d.stack_name for d in stack(name).dependencies}
        for name in (HYPERPOD_STACK, OPERATOR_STACK)
    }
    assert order[HYPERPOD_STACK] == {EKS_STACK, "mlcc-dev-buckets"}
    assert order[OPERATOR_STACK] == {EKS_STACK, HYPERPOD_STACK, "mlcc-dev-buckets"}
    assert app is not None


# --- import mode ----------------------------------------------------------------------------


def test_import_mode_creates_no_cluster() -> None:
    _, texts = synthesised_import_mode()
    assert [n for n, t in texts.items() if _resources(t, "AWS::SageMaker::Cluster")] == []
    hyperpod = json.loads(texts[HYPERPOD_STACK])["Resources"]
    assert sorted({r["Type"] for r in hyperpod.values()}) == [
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        "AWS::Lambda::Function",
        "Custom::AWS",
    ]
    (describe,) = (r for r in hyperpod.values() if r["Type"] == "Custom::AWS")
    call = json.loads(_text(describe["Properties"]["Create"]))
    assert call["action"] == "DescribeCluster"
    assert call["parameters"] == {"ClusterName": IMPORTED_HYPERPOD}
    assert call["outputPaths"] == ["ClusterArn"]
    (policy,) = (r for r in hyperpod.values() if r["Type"] == "AWS::IAM::Policy")
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "sagemaker:DescribeCluster"
    # The operator still installs, told the imported cluster's ARN.
    operator = json.loads(texts[OPERATOR_STACK])["Resources"]
    (addon,) = (a for a in operator.values() if a["Properties"].get("AddonName") == ADDON)
    parts = addon["Properties"]["ConfigurationValues"]["Fn::Join"][1]
    (imported,) = (
        p["Fn::ImportValue"]
        for p in parts
        if isinstance(p, dict) and "Fn::ImportValue" in p and HYPERPOD_STACK in p["Fn::ImportValue"]
    )
    describe_id = next(k for k, r in hyperpod.items() if r["Type"] == "Custom::AWS")
    assert describe_id in imported and "ClusterArn" in imported
