"""The cluster side of the deployments' endpoints (issue 21): the pure rules
(core/platform/load_balancing.py, endpoint_components.py, gpu_capacity.py's NodeClass, the app's
groups and CIDR check), what the app's eks-cluster stack emits (load balancer subnets,
IngressClasses, the network policy ConfigMap, the Secrets Store CSI add-on, the GPU NodeClass),
an internet-facing group, a team's own VPC, and every bad input with its exact error."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from mlcc_constructs.core.platform.endpoint_components import (
    network_policy_config_map,
    secrets_store_addon_configuration,
)
from mlcc_constructs.core.platform.gpu_capacity import (
    gpu_node_class,
    gpu_node_pool,
    gpu_toleration,
)
from mlcc_constructs.core.platform.load_balancing import (
    REFERENCE_CIDRS,
    group_problems,
    ingress_classes,
    overlap_problems,
    reference_cidrs,
)
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import EKS_STACK, cdk_context, manifest_object, reference_entries, template
from tests.aws.test_cdk_nag import _findings

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
ACCOUNT = "123456789012"
REGION = "us-east-1"
CERTIFICATE = f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/0123abcd-0123-4567-89ab-0123456789ab"


def _resources(tmpl: dict[str, Any], resource_type: str) -> dict[str, Any]:
    return {k: v for k, v in tmpl["Resources"].items() if v["Type"] == resource_type}


def _objects(tmpl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``<kind> <name>`` -> the object of every manifest resource of a template."""
    found = {}
    for resource in _resources(tmpl, MANIFEST).values():
        obj = manifest_object(resource)
        found[f"{obj['kind']} {obj['metadata']['name']}"] = obj
    return found


# -- pure rules ------------------------------------------------------------------------------


def test_reference_cidrs_are_one_subnet_per_zone() -> None:
    assert reference_cidrs(2) == {
        "internal": ("10.0.16.0/24", "10.0.17.0/24"),
        "internet-facing": ("10.0.20.0/24", "10.0.21.0/24"),
    }
    assert reference_cidrs(3, ["internal"]) == {"internal": REFERENCE_CIDRS["internal"]}
    with pytest.raises(ValueError, match="load balancer subnets exist for 1-3 zones, not 4"):
        reference_cidrs(4)


def test_reference_cidrs_stay_clear_of_the_vpc_cdk_allocates() -> None:
    # A ServingCluster's VPC: public /24s from 10.0.0.0, private /19s from 10.0.32.0 (six zones).
    others = [f"10.0.{i}.0/24" for i in range(6)] + [f"10.0.{32 * i}.0/19" for i in range(1, 7)]
    assert (
        overlap_problems(
            REFERENCE_CIDRS, vpc_cidr="10.0.0.0/16", subnet_cidrs=others, where="w", pointer="/c"
        )
        == []
    )


def test_an_overlapping_or_outside_subnet_is_named() -> None:
    problems = overlap_problems(
        {"internal": ["10.0.16.0/24", "10.1.0.0/24"]},
        vpc_cidr="10.0.0.0/16",
        subnet_cidrs=["10.0.16.0/20"],
        where="Vpc",
        pointer="/load_balancer_cidrs",
    )
    assert [str(p) for p in problems] == [
        "Vpc:/load_balancer_cidrs/internal/0: a load balancer subnet must lie in its VPC and hold "
        "nothing else: the NetworkPolicies admit its whole CIDR, and it overlaps 10.0.16.0/20 "
        "(got '10.0.16.0/24'; allowed: a range of the VPC that no other subnet uses; fix: give "
        "the VPC's other subnets addresses outside the load balancer subnets (REFERENCE_CIDRS in "
        "core/platform/load_balancing.py))",
        "Vpc:/load_balancer_cidrs/internal/1: a load balancer subnet must lie in its VPC and hold "
        "nothing else: the NetworkPolicies admit its whole CIDR, and it is outside the VPC's "
        "10.0.0.0/16 (got '10.1.0.0/24'; allowed: a range of the VPC that no other subnet uses; "
        "fix: give the VPC's other subnets addresses outside the load balancer subnets "
        "(REFERENCE_CIDRS in core/platform/load_balancing.py))",
    ]


def test_ingress_classes_per_scheme_then_group() -> None:
    objects = ingress_classes(
        {"internet-facing": ["b", "a"], "internal": []},
        {"internal": ["subnet-i1", "subnet-i2"], "internet-facing": ["subnet-p1", "subnet-p2"]},
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("IngressClassParams", "mlcc-internal"),
        ("IngressClass", "mlcc-internal"),
        ("IngressClassParams", "mlcc-internet-facing"),
        ("IngressClass", "mlcc-internet-facing"),
        ("IngressClassParams", "mlcc-internet-facing-a"),
        ("IngressClass", "mlcc-internet-facing-a"),
        ("IngressClassParams", "mlcc-internet-facing-b"),
        ("IngressClass", "mlcc-internet-facing-b"),
    ]
    params = objects[4]["spec"]
    assert params["scheme"] == "internet-facing"
    assert params["subnets"] == {"ids": ["subnet-p1", "subnet-p2"]}
    assert params["group"] == {"name": "mlcc-internet-facing-a"}
    assert "tags" not in params  # custom tags need IAM the cluster role lacks
    assert "group" not in objects[0]["spec"]


BAD_GROUPS = [
    (
        {"public": []},
        "/g/public: not a load balancer scheme (got 'public'; allowed: internal, "
        "internet-facing; fix: key the groups by scheme, e.g. {'internal': ['shared']})",
    ),
    (
        {"internal": "shared"},
        "/g/internal: a scheme's groups are a list of names (got 'shared'; fix: pass ['shared'] "
        "(or [] for the scheme's own class only))",
    ),
    (
        {"internal": ["ok", "Not_OK"]},
        "/g/internal/1: not a load balancer group name (got 'Not_OK'; allowed: 1-43 lower-case "
        "letters, digits and '-' (it names the IngressClass mlcc-<scheme>-<group>))",
    ),
]


@pytest.mark.parametrize(("groups", "message"), BAD_GROUPS)
def test_bad_groups(groups: dict[str, Any], message: str) -> None:
    assert [str(p) for p in group_problems(groups, pointer="/g")] == [message]


def test_network_policy_config_map_and_addon_configuration() -> None:
    assert network_policy_config_map() == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "amazon-vpc-cni",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/managed-by": "mlcc-constructs"},
        },
        "data": {"enable-network-policy-controller": "true"},
    }
    assert secrets_store_addon_configuration() == {
        "tolerations": [gpu_toleration()],
        "secrets-store-csi-driver": {"syncSecret": {"enabled": True}},
    }


def test_the_node_class_mirrors_the_default_one_with_network_policy_and_storage() -> None:
    node_class = gpu_node_class(role="r", subnet_ids=["s1", "s2"], security_group_ids=["sg"])
    assert node_class["apiVersion"] == "eks.amazonaws.com/v1"
    assert node_class["metadata"]["name"] == "mlcc-gpu"
    assert node_class["spec"] == {
        "role": "r",
        "subnetSelectorTerms": [{"id": "s1"}, {"id": "s2"}],
        "securityGroupSelectorTerms": [{"id": "sg"}],
        "networkPolicy": "DefaultAllow",
        "ephemeralStorage": {"size": "200Gi"},
    }
    assert gpu_node_pool(["g5"])["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "default"


# -- the app's eks-cluster stack -------------------------------------------------------------


def test_internal_load_balancer_subnets_hold_nothing_but_load_balancers() -> None:
    tmpl = template(EKS_STACK)
    subnets = _resources(tmpl, "AWS::EC2::Subnet")
    mine = {k: v["Properties"] for k, v in subnets.items() if k.startswith("LoadBalancerSubnets")}
    assert [(p["AvailabilityZone"], p["CidrBlock"]) for p in mine.values()] == [
        ("us-east-1a", "10.0.16.0/24"),
        ("us-east-1b", "10.0.17.0/24"),
    ]
    for properties in mine.values():
        assert properties["MapPublicIpOnLaunch"] is False
        assert {"Key": "kubernetes.io/role/internal-elb", "Value": "1"} in properties["Tags"]
    # Private: their route tables have no route at all (only the VPC's local one).
    tables = {k for k in _resources(tmpl, "AWS::EC2::RouteTable") if k.startswith("LoadBalancer")}
    assert len(tables) == 2
    routed = {
        r["Properties"]["RouteTableId"]["Ref"] for r in _resources(tmpl, "AWS::EC2::Route").values()
    }
    assert not tables & routed
    # No subnet of the VPC overlaps another, and the cluster's nodes are not in these.
    networks = [ipaddress.IPv4Network(s["Properties"]["CidrBlock"]) for s in subnets.values()]
    assert not [(a, b) for i, a in enumerate(networks) for b in networks[i + 1 :] if a.overlaps(b)]
    (cluster,) = _resources(tmpl, "AWS::EKS::Cluster").values()
    node_subnets = {s["Ref"] for s in cluster["Properties"]["ResourcesVpcConfig"]["SubnetIds"]}
    assert not node_subnets & set(mine)


def test_the_cluster_reports_the_cidrs_the_deployments_admit() -> None:
    from tests._cdk_app import stack

    serving = stack(EKS_STACK).serving_cluster
    assert dict(serving.load_balancer_cidrs) == {"internal": ("10.0.16.0/24", "10.0.17.0/24")}
    from stacks.deployments import app_deployments
    from tests._cdk_app import synthesised

    for deployment in app_deployments(synthesised()[0]):
        assert deployment.context.load_balancer_cidrs == reference_cidrs(2)


def test_the_internal_ingress_class_places_its_albs_in_those_subnets() -> None:
    objects = _objects(template(EKS_STACK))
    params = objects["IngressClassParams mlcc-internal"]["spec"]
    assert params == {
        "scheme": "internal",
        "subnets": {
            "ids": [
                "<LoadBalancerSubnetsInternal1Subnet2603192C>",
                "<LoadBalancerSubnetsInternal2SubnetAD0EEE22>",
            ]
        },
        "loadBalancerAttributes": [{"key": "idle_timeout.timeout_seconds", "value": "600"}],
    }
    assert objects["IngressClass mlcc-internal"]["spec"] == {
        "controller": "eks.amazonaws.com/alb",
        "parameters": {
            "apiGroup": "eks.amazonaws.com",
            "kind": "IngressClassParams",
            "name": "mlcc-internal",
        },
    }
    # cdk.json's deployments are all internal and ungrouped: no other class.
    assert sorted(k for k in objects if k.startswith("Ingress")) == [
        "IngressClass mlcc-internal",
        "IngressClassParams mlcc-internal",
    ]


def test_network_policies_are_enforced() -> None:
    objects = _objects(template(EKS_STACK))
    assert objects["ConfigMap amazon-vpc-cni"] == network_policy_config_map()


def test_the_secrets_store_addon_is_pinned_syncs_and_tolerates_the_gpu_taint() -> None:
    addon = template(EKS_STACK)["Resources"]["SecretsStoreCsiAddon"]
    assert addon["Type"] == "AWS::EKS::Addon"
    properties = addon["Properties"]
    assert properties["AddonName"] == "aws-secrets-store-csi-driver-provider"
    assert properties["AddonVersion"] == pinned().addon("aws-secrets-store-csi-driver-provider")
    assert properties["AddonVersion"] == "v3.1.3-eksbuild.1"
    assert json.loads(properties["ConfigurationValues"]) == secrets_store_addon_configuration()
    assert "ServiceAccountRoleArn" not in properties  # the pods' own identities read secrets


def test_the_gpu_pool_runs_on_its_own_node_class_of_the_clusters_role_subnets_and_group() -> None:
    tmpl = template(EKS_STACK)
    objects = _objects(tmpl)
    (cluster_id,) = _resources(tmpl, "AWS::EKS::Cluster")
    cluster = tmpl["Resources"][cluster_id]["Properties"]
    (node_role,) = [k for k in _resources(tmpl, "AWS::IAM::Role") if "nodePoolRole" in k]
    assert cluster["ComputeConfig"]["NodeRoleArn"] == {"Fn::GetAtt": [node_role, "Arn"]}
    spec = objects["NodeClass mlcc-gpu"]["spec"]
    assert spec["role"] == f"<{node_role}>"  # the role's name, as the NodeClass takes it
    subnets = [f"<{s['Ref']}>" for s in cluster["ResourcesVpcConfig"]["SubnetIds"]]
    assert spec["subnetSelectorTerms"] == [{"id": s} for s in subnets]
    assert spec["securityGroupSelectorTerms"] == [{"id": f"<{cluster_id}.ClusterSecurityGroupId>"}]
    assert spec["networkPolicy"] == "DefaultAllow"
    pool = objects["NodePool mlcc-gpu"]
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "eks.amazonaws.com",
        "kind": "NodeClass",
        "name": "mlcc-gpu",
    }
    (pool_id,) = [k for k in _resources(tmpl, MANIFEST) if k.startswith("NodePool")]
    (class_id,) = [k for k in _resources(tmpl, MANIFEST) if k.startswith("NodeClass")]
    assert class_id in tmpl["Resources"][pool_id]["DependsOn"]
    # The cluster's own node role: EKS made its access entry with the cluster; none is added.
    entries = [e["Properties"] for e in _resources(tmpl, "AWS::EKS::AccessEntry").values()]
    assert {e.get("Type", "STANDARD") for e in entries} == {"STANDARD"}
    assert {"Fn::GetAtt": [node_role, "Arn"]} not in [e["PrincipalArn"] for e in entries]


# -- an internet-facing group ----------------------------------------------------------------


@cache
def _internet_facing() -> dict[str, Any]:
    """The app with one more eks deployment: internet-facing, in group ``public-api``."""
    import aws_cdk as cdk

    from app import build_app

    deployments = reference_entries()
    deployments.append(
        {
            "name": "open-llama",
            "target": "eks",
            "engine": {"name": "vllm"},
            "model": {"uri": "org/model"},
            "compute": {"instance_type": "ml.g5.2xlarge"},
            "namespace": "inference",
            "endpoint": {
                "scheme": "internet-facing",
                "certificate_arn": CERTIFICATE,
                "group": "public-api",
                "api_key_secret": "open-llama-api-key",
            },
        }
    )
    app = build_app(
        cdk.App(
            context={
                **cdk_context(),
                "deployments_file": None,
                "reference_deployments": deployments,
            },
            builtin_cloud_formation_validation=False,
        )
    )
    return app.synth().get_stack_by_name(EKS_STACK).template  # type: ignore[no-any-return]


def test_an_internet_facing_group_gets_public_subnets_and_its_classes() -> None:
    tmpl = _internet_facing()
    subnets = {
        k: v["Properties"]
        for k, v in _resources(tmpl, "AWS::EC2::Subnet").items()
        if k.startswith("LoadBalancerSubnetsInternetFacing")
    }
    assert [p["CidrBlock"] for p in subnets.values()] == ["10.0.20.0/24", "10.0.21.0/24"]
    for properties in subnets.values():
        assert {"Key": "kubernetes.io/role/elb", "Value": "1"} in properties["Tags"]
        assert properties["MapPublicIpOnLaunch"] is False
    routes = [
        r["Properties"]
        for r in _resources(tmpl, "AWS::EC2::Route").values()
        if r["Properties"]["RouteTableId"]["Ref"].startswith("LoadBalancerSubnetsInternetFacing")
    ]
    assert len(routes) == 2
    for route in routes:
        assert route["DestinationCidrBlock"] == "0.0.0.0/0"
        assert route["GatewayId"] == {"Ref": "VpcIGWD7BA715C"}
    objects = _objects(tmpl)
    assert sorted(k for k in objects if k.startswith("IngressClassParams")) == [
        "IngressClassParams mlcc-internal",
        "IngressClassParams mlcc-internet-facing",
        "IngressClassParams mlcc-internet-facing-public-api",
    ]
    grouped = objects["IngressClassParams mlcc-internet-facing-public-api"]["spec"]
    assert grouped["group"] == {"name": "mlcc-internet-facing-public-api"}
    assert grouped["subnets"]["ids"] == [f"<{k}>" for k in subnets]


def test_the_reference_deployments_admit_the_clusters_subnets_and_no_other() -> None:
    from mlcc_constructs.core.serving.cluster_fit import load_balancer_problems
    from mlcc_constructs.core.serving.spec.app_deployments import served_load_balancers
    from stacks.deployments import app_deployments
    from tests._cdk_app import synthesised

    deployments = app_deployments(synthesised()[0])
    assert served_load_balancers(deployments) == {"internal": ()}

    def problems(cidrs: dict[str, tuple[str, ...]]) -> list[str]:
        return [
            str(p)
            for d in deployments
            for p in load_balancer_problems(d.prepared, cidrs, where=d.where, cidrs_field="f")
        ]

    assert problems({"internal": reference_cidrs(2)["internal"]}) == []
    assert problems({"internal": ("10.0.16.0/24",)}) == [
        f"examples/reference.yaml#{i}:/deployment: deployment inference/{name}'s NetworkPolicy "
        "would admit its internal load balancers from 10.0.16.0/24, 10.0.17.0/24, and the "
        "cluster's internal load balancer subnets are 10.0.16.0/24: the load balancer could not "
        "reach the pods (got '10.0.16.0/24, 10.0.17.0/24'; allowed: 10.0.16.0/24; fix: prepare "
        "the deployment with the cluster's CIDRs: RenderContext(load_balancer_cidrs=<cluster>."
        "load_balancer_cidrs, ...))"
        # the eks deployments; HyperPod's operator makes its own ALBs
        for i, name in ((0, "llama-vllm"), (3, "mistral-vllm-args"), (4, "llama-405b-vllm"))
    ]


def test_more_zones_than_load_balancer_subnets_is_a_context_error() -> None:
    from tests._cdk_app import build

    with pytest.raises(MlccError) as caught:
        build(availability_zones="us-east-1a,us-east-1b,us-east-1c,us-east-1d")
    assert [str(p) for p in caught.value.problems] == [
        "CDK context (cdk.json or -c):/availability_zones: the cluster's VPC has load balancer "
        "subnets for 3 zones at most (REFERENCE_CIDRS) (got 'us-east-1a,us-east-1b,us-east-1c,"
        "us-east-1d'; allowed: 2 to 3 zones of region us-east-1; fix: name 3 zones or fewer: -c "
        "availability_zones=us-east-1a,us-east-1b,us-east-1c)"
    ]


# -- a team's own VPC ------------------------------------------------------------------------


def _stack() -> Any:
    import aws_cdk as cdk

    app = cdk.App()
    stack = cdk.Stack(app, "Team", env=cdk.Environment(account=ACCOUNT, region=REGION))
    stack.node.set_context(
        f"availability-zones:account={ACCOUNT}:region={REGION}", ["us-east-1a", "us-east-1b"]
    )
    return stack


@cache
def _team_scope() -> Any:
    """A stack holding a team VPC with load balancer subnets of each kind (none synthesised)."""
    from aws_cdk import aws_ec2 as ec2

    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-1",
        availability_zones=["us-east-1a", "us-east-1b"],
        private_subnet_ids=["subnet-p1", "subnet-p2"],
    )
    for name, zone, cidr in (
        ("A", "us-east-1a", "10.9.1.0/24"),
        ("B", "us-east-1b", "10.9.2.0/24"),
        ("AlsoA", "us-east-1a", "10.9.3.0/24"),
    ):
        ec2.Subnet.from_subnet_attributes(
            stack, name, subnet_id=f"subnet-{name.lower()}", availability_zone=zone,
            ipv4_cidr_block=cidr,
        )  # fmt: skip
    ec2.Subnet.from_subnet_attributes(stack, "NoCidr", subnet_id="subnet-x")
    del vpc
    return stack


def _s(name: str) -> Any:
    return _team_scope().node.find_child(name)


def _vpc() -> Any:
    return _s("Vpc")


NO_SUBNETS = (
    "ServingClusterProps:/load_balancer_subnets: the team's VPC has no load balancer subnets for "
    "scheme internal: ServingCluster creates them only in a VPC of its own (allowed: a mapping "
    "of scheme to two or more ec2.ISubnet (one per zone) that hold nothing but load balancers; "
    "fix: pass load_balancer_subnets={'internal': [subnet_a, subnet_b]}, or "
    "load_balancer_groups={} for no IngressClass (the deployments' endpoint scheme must then be "
    "none))"
)

BAD_ENDPOINT_PROPS = [
    (lambda: {"vpc": _vpc()}, [NO_SUBNETS]),
    (
        lambda: {"load_balancer_subnets": {"internal": [_s("A"), _s("B")]}},
        [
            "ServingClusterProps:/load_balancer_subnets: load_balancer_subnets apply only to the "
            "team's VPC: ServingCluster creates the load balancer subnets of the VPC it creates "
            "(fix: pass vpc= (the subnets' VPC), or leave load_balancer_subnets unset)"
        ],
    ),
    (
        lambda: {"vpc": _vpc(), "load_balancer_subnets": {"internal": ["subnet-a", _s("B")]}},
        [
            "ServingClusterProps:/load_balancer_subnets/internal/0: a subnet id is not a subnet "
            "(got 'subnet-a'; allowed: ec2.ISubnet; fix: pass ec2.Subnet.from_subnet_attributes("
            "scope, id, subnet_id=..., ipv4_cidr_block=..., availability_zone=...) for a subnet "
            "the app does not create)"
        ],
    ),
    (
        lambda: {"vpc": _vpc(), "load_balancer_subnets": {"internal": [_s("A")]}},
        [
            "ServingClusterProps:/load_balancer_subnets/internal: a load balancer spans two "
            "availability zones or more: give one subnet per zone (got 1; allowed: two or more "
            "ec2.ISubnet in distinct zones; fix: pass ec2.Subnet.from_subnet_attributes(scope, "
            "id, subnet_id=..., ipv4_cidr_block=..., availability_zone=...) for a subnet the app "
            "does not create)"
        ],
    ),
    (
        lambda: {
            "vpc": _vpc(),
            "load_balancer_subnets": {"internal": [_s("A"), _s("NoCidr"), _s("AlsoA")]},
        },
        [
            "ServingClusterProps:/load_balancer_subnets/internal/1: the subnet's IPv4 CIDR is not "
            "known at synth: the deployments' NetworkPolicies admit the load balancers by it (got "
            "'Team/NoCidr'; fix: import it with its CIDR: ec2.Subnet.from_subnet_attributes("
            "scope, id, subnet_id=..., ipv4_cidr_block='10.0.16.0/24', availability_zone=...))",
            "ServingClusterProps:/load_balancer_subnets/internal/2: two of the scheme's subnets "
            "are in us-east-1a (subnet 0 too): a load balancer takes one subnet per zone (got "
            "'Team/AlsoA'; fix: give one subnet per availability zone)",
        ],
    ),
    (
        lambda: {
            "vpc": _vpc(),
            "load_balancer_subnets": {
                "internal": [_s("A"), _s("B")],
                "internet-facing": [_s("A"), _s("B")],
                "public": [],
            },
        },
        [
            "ServingClusterProps:/load_balancer_subnets/internet-facing: subnets for a scheme "
            "load_balancer_groups does not list (it would get no IngressClass) (got "
            "'internet-facing'; allowed: internal; fix: add 'internet-facing' to "
            "load_balancer_groups, or drop its subnets)",
            "ServingClusterProps:/load_balancer_subnets/public: not a load balancer scheme (got "
            "'public'; allowed: internal, internet-facing; fix: key the subnets by scheme)",
        ],
    ),
    (
        lambda: {
            "vpc": _vpc(),
            "load_balancer_groups": {"internal": [], "internet-facing": ["Bad"]},
            "load_balancer_subnets": {"internal": [_s("A"), _s("B")]},
        },
        [
            "ServingClusterProps:/load_balancer_groups/internet-facing/0: not a load balancer "
            "group name (got 'Bad'; allowed: 1-43 lower-case letters, digits and '-' (it names "
            "the IngressClass mlcc-<scheme>-<group>))",
            "ServingClusterProps:/load_balancer_subnets/internet-facing: scheme internet-facing "
            "has an IngressClass and no load balancer subnets (allowed: internal; fix: add two or "
            "more subnets for internet-facing, or remove it from load_balancer_groups)",
        ],
    ),
    (
        lambda: {"availability_zones": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]},
        [
            "ServingClusterProps:/availability_zones: the VPC ServingCluster creates has load "
            "balancer subnets for 3 zones (REFERENCE_CIDRS) (got ['us-east-1a', 'us-east-1b', "
            "'us-east-1c', 'us-east-1d']; allowed: 2 to 3 zones; fix: name at most 3 zones, or "
            "pass the team's vpc= with its load_balancer_subnets)"
        ],
    ),
]


@pytest.mark.parametrize(("values", "messages"), BAD_ENDPOINT_PROPS)
def test_bad_endpoint_props(values: Callable[[], dict[str, Any]], messages: list[str]) -> None:
    from mlcc_constructs import ServingClusterProps

    with pytest.raises(MlccError) as caught:
        ServingClusterProps(**values())
    assert [str(p) for p in caught.value.problems] == messages


def test_a_team_vpc_without_endpoints_opts_out() -> None:
    from mlcc_constructs import ServingClusterProps

    props = ServingClusterProps(vpc=_vpc(), load_balancer_groups={})
    assert props.load_balancer_subnets is None


def test_team_subnets_that_overlap_the_vpcs_nodes_are_refused() -> None:
    from aws_cdk import aws_ec2 as ec2

    from mlcc_constructs import ServingCluster, ServingClusterProps

    stack = _stack()
    vpc = ec2.Vpc(stack, "TeamVpc", max_azs=2, nat_gateways=1)
    private = vpc.private_subnets  # the nodes' subnets: never the load balancers'
    with pytest.raises(MlccError) as caught:
        ServingCluster(
            stack,
            "Serving",
            props=ServingClusterProps(vpc=vpc, load_balancer_subnets={"internal": private}),
        )
    assert [str(p) for p in caught.value.problems] == [
        f"ServingClusterProps:/load_balancer_subnets/internal/{i}: the cluster's nodes and pods "
        "run in this subnet: a NetworkPolicy admitting it would admit every pod (got "
        f"'{subnet.node.path}'; fix: give the load balancers subnets of their own)"
        for i, subnet in enumerate(private)
    ]


def test_team_subnets_that_overlap_another_subnet_are_refused() -> None:
    from aws_cdk import aws_ec2 as ec2

    from mlcc_constructs import ServingCluster, ServingClusterProps

    stack = _stack()
    vpc = ec2.Vpc(stack, "TeamVpc", max_azs=2, nat_gateways=1)
    public = vpc.public_subnets  # load balancers' CIDRs inside the public subnets' ranges
    inside = [
        ec2.Subnet.from_subnet_attributes(
            stack, f"Inside{i}", subnet_id=f"subnet-in{i}", ipv4_cidr_block=s.ipv4_cidr_block,
            availability_zone=s.availability_zone,
        )
        for i, s in enumerate(public)
    ]  # fmt: skip
    with pytest.raises(MlccError) as caught:
        ServingCluster(
            stack,
            "Serving",
            props=ServingClusterProps(vpc=vpc, load_balancer_subnets={"internal": inside}),
        )
    cidrs = [s.ipv4_cidr_block for s in public]
    assert [str(p) for p in caught.value.problems] == [
        f"ServingClusterProps:/load_balancer_subnets/internal/{i}: a load balancer subnet must "
        "lie in its VPC and hold nothing else: the NetworkPolicies admit its whole CIDR, and it "
        f"overlaps {cidr} (got '{cidr}'; allowed: a range of the VPC that no other subnet uses; "
        "fix: give the VPC's other subnets addresses outside the load balancer subnets "
        "(REFERENCE_CIDRS in core/platform/load_balancing.py))"
        for i, cidr in enumerate(cidrs)
    ]


def test_a_teams_isolated_subnets_carry_its_internal_albs() -> None:
    from tests._team_app import build

    app, stack = build()
    tmpl = app.synth().get_stack_by_name("AcmeServing").template
    isolated = [k for k in _resources(tmpl, "AWS::EC2::Subnet") if "LoadBalancers" in k]
    assert len(isolated) == 2
    for key in isolated:  # tagged for Auto Mode, no route out
        assert {"Key": "kubernetes.io/role/internal-elb", "Value": "1"} in tmpl["Resources"][key][
            "Properties"
        ]["Tags"]
    params = _objects(tmpl)["IngressClassParams mlcc-internal"]["spec"]
    assert params["subnets"]["ids"] == [f"<{k}>" for k in isolated]
    assert dict(stack.serving.load_balancer_cidrs) == {
        "internal": tuple(s.ipv4_cidr_block for s in stack.vpc.isolated_subnets)
    }
    assert not [k for k in _resources(tmpl, "AWS::EC2::Subnet") if k.startswith("Serving")]
    assert _findings(stack) == []


BAD_NODE_CLASS = [
    (
        lambda: {"role": "KubeNode"},
        [
            "GpuNodeClass:/role: a role name or ARN is not a role (got 'KubeNode'; allowed: "
            "iam.IRole; fix: pass iam.Role.from_role_arn(scope, id, arn))"
        ],
    ),
    (
        lambda: {"subnets": [], "security_groups": ["sg-1"], "name": "default"},
        [
            "GpuNodeClass:/subnets: a NodeClass selects its subnets by object, at least one (got "
            "[]; allowed: ec2.ISubnet objects; fix: pass the cluster's private subnets and its "
            "cluster security group)",
            "GpuNodeClass:/security_groups: a NodeClass selects its security groups by object, at "
            "least one (got ['sg-1']; allowed: ec2.ISecurityGroup objects; fix: pass the "
            "cluster's private subnets and its cluster security group)",
            "GpuNodeClass:/name: the built-in NodeClass is named default (got 'default'; fix: "
            "name it otherwise, e.g. mlcc-gpu)",
        ],
    ),
]


@pytest.mark.parametrize(("values", "messages"), BAD_NODE_CLASS)
def test_bad_node_class(values: Callable[[], dict[str, Any]], messages: list[str]) -> None:
    from aws_cdk import aws_ec2 as ec2, aws_iam as iam

    from mlcc_constructs import GpuNodeClass

    stack = _stack()
    good = {
        "role": iam.Role.from_role_arn(stack, "R", f"arn:aws:iam::{ACCOUNT}:role/node"),
        "subnets": [_s("A")],
        "security_groups": [ec2.SecurityGroup.from_security_group_id(stack, "Sg", "sg-1")],
    }
    with pytest.raises(MlccError) as caught:
        GpuNodeClass(**{**good, **values()})
    assert [str(p) for p in caught.value.problems] == messages


def test_an_imported_serving_cluster_reports_its_load_balancer_cidrs() -> None:
    from aws_cdk import aws_eks_v2 as eks

    from mlcc_constructs import ImportedServingClusterProps, ServingCluster

    stack = _stack()
    cluster = eks.Cluster.from_cluster_attributes(stack, "C", cluster_name="team")
    oidc = eks.OidcProviderNative(stack, "Oidc", url="https://oidc.example.com/id/X")
    team = ServingCluster.from_cluster_attributes(
        stack,
        "Team",
        cluster=cluster,
        oidc_provider=oidc,
        load_balancer_cidrs={"internal": ["10.9.1.0/24", "10.9.2.0/24"]},
    )
    assert dict(team.load_balancer_cidrs) == {"internal": ("10.9.1.0/24", "10.9.2.0/24")}
    with pytest.raises(MlccError) as caught:
        ImportedServingClusterProps(
            cluster=cluster, oidc_provider=oidc, load_balancer_cidrs={"internal": ["10.9.1.0/24"]}
        )
    assert [str(p) for p in caught.value.problems] == [
        "ImportedServingClusterProps:/load_balancer_cidrs/internal: a load balancer spans two "
        "availability zones or more: name a subnet CIDR for each (got ['10.9.1.0/24']; allowed: "
        "a list of two or more IPv4 CIDRs)"
    ]
