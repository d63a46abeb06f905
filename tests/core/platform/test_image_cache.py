"""Images through the ECR pull through cache and the VPC's egress: the pure rules
(core/platform/image_cache.py, core/platform/vpc_network.py) and what the eks-cluster and
serving stacks emit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlcc_constructs.core.platform.image_cache import (
    cached_image,
    cluster_upstreams,
    direct_pull_warning,
    ecr_registry,
    not_cached,
    parse_pull_through_secrets,
    upstream_of,
)
from mlcc_constructs.core.platform.versions import pinned
from mlcc_constructs.core.platform.vpc_network import (
    INTERFACE_ENDPOINTS,
    default_nat_gateways,
    nat_gateway_problems,
)
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.core.support.image_reference import parse_image
from tests._cdk_app import EKS_STACK, build, manifest_object, template
from tests._flat import flat_spec

REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
WHERE = "CDK context (cdk.json or -c)"
DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("image", "host", "repository", "tag", "digest"),
    [
        ("vllm/vllm-openai:v0.31.0", "docker.io", "vllm/vllm-openai", "v0.31.0", None),
        ("ubuntu", "docker.io", "ubuntu", None, None),
        ("docker.io/library/ubuntu:24.04", "docker.io", "library/ubuntu", "24.04", None),
        ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0", "nvcr.io", "nvidia/tensorrt-llm/release",
         "1.0.0", None),
        ("localhost:5000/team/app:1", "localhost:5000", "team/app", "1", None),
        (f"lmsysorg/sglang@{DIGEST}", "docker.io", "lmsysorg/sglang", None, DIGEST),
    ],
)  # fmt: skip
def test_image_references_split_as_containerd_reads_them(
    image: str, host: str, repository: str, tag: str | None, digest: str | None
) -> None:
    reference = parse_image(image)
    assert (reference.host, reference.repository, reference.tag, reference.digest) == (
        host,
        repository,
        tag,
        digest,
    )


@pytest.mark.parametrize(
    ("image", "registry", "digests", "expected"),
    [
        # A cached upstream through the registry, with its namespace.
        ("vllm/vllm-openai:v0.31.0", REGISTRY, {},
         f"{REGISTRY}/docker-hub/vllm/vllm-openai:v0.31.0"),
        ("docker.io/lmsysorg/sglang:v0.5.21", REGISTRY, {},
         f"{REGISTRY}/docker-hub/lmsysorg/sglang:v0.5.21"),
        # Docker Hub's official images live under library/ in the cache.
        ("ubuntu:24.04", REGISTRY, {}, f"{REGISTRY}/docker-hub/library/ubuntu:24.04"),
        # A recorded digest pins the image, through the cache or not.
        ("vllm/vllm-openai:v0.31.0", REGISTRY, {"vllm/vllm-openai:v0.31.0": DIGEST},
         f"{REGISTRY}/docker-hub/vllm/vllm-openai:v0.31.0@{DIGEST}"),
        ("vllm/vllm-openai:v0.31.0", None, {"vllm/vllm-openai:v0.31.0": DIGEST},
         f"vllm/vllm-openai:v0.31.0@{DIGEST}"),
        (f"vllm/vllm-openai@{DIGEST}", REGISTRY, {},
         f"{REGISTRY}/docker-hub/vllm/vllm-openai@{DIGEST}"),
        # No registry (dist/ without an account): as given.
        ("vllm/vllm-openai:v0.31.0", None, {}, "vllm/vllm-openai:v0.31.0"),
        # Registries the cache has no rule for: as given.
        ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0", REGISTRY, {},
         "nvcr.io/nvidia/tensorrt-llm/release:1.0.0"),
        ("quay.io/team/engine:1", REGISTRY, {}, "quay.io/team/engine:1"),
        ("763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0", REGISTRY, {},
         "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0"),
    ],
)  # fmt: skip
def test_images_of_a_cached_upstream_name_the_cache(
    image: str, registry: str | None, digests: dict[str, str], expected: str
) -> None:
    assert cached_image(image, registry=registry, digests=digests) == expected


def test_a_recorded_digest_that_is_not_sha256_is_refused() -> None:
    with pytest.raises(MlccError) as caught:
        cached_image("vllm/vllm-openai:v0.31.0", registry=None, digests={
            "vllm/vllm-openai:v0.31.0": "sha256:abc"
        })  # fmt: skip
    (problem,) = caught.value.problems
    assert problem.pointer == "/engine_image_digests/vllm~1vllm-openai:v0.31.0"
    assert "not a sha256 digest" in str(problem)


def test_every_pinned_image_is_cached_from_ecr_or_named_as_not_cacheable() -> None:
    for image in pinned().engine_images.values():
        host = parse_image(image).host
        assert (
            upstream_of(image) is not None
            or host.endswith(".amazonaws.com")
            or (host in not_cached())
        ), image
    assert [u.name for u in cluster_upstreams()] == ["docker-hub"]


def test_an_uncacheable_registry_is_warned_about_only_with_a_registry() -> None:
    image = pinned().engine_images["tensorrt-llm"]
    warning = direct_pull_warning(image, registry=REGISTRY)
    assert warning is not None and "pulled from nvcr.io directly" in warning
    assert direct_pull_warning(image, registry=None) is None
    assert direct_pull_warning(pinned().engine_images["vllm"], registry=REGISTRY) is None


@pytest.mark.parametrize(
    ("account", "region", "registry"),
    [
        ("123456789012", "us-east-1", REGISTRY),
        ("123456789012", "cn-north-1", "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn"),
    ],
)
def test_the_registry_of_an_account_and_region(account: str, region: str, registry: str) -> None:
    assert ecr_registry(account, region) == registry
    assert RenderContext(image_registry=registry).image_registry == registry


@pytest.mark.parametrize("registry", ["docker.io", "123.dkr.ecr.us-east-1.amazonaws.com", ""])
def test_a_render_context_refuses_a_registry_that_is_not_ecr(registry: str) -> None:
    with pytest.raises(MlccError) as caught:
        RenderContext(image_registry=registry)
    assert caught.value.problems[0].pointer == "/image_registry"


SECRET = "ecr-pullthroughcache/docker-hub"
ARN = f"arn:aws:secretsmanager:us-east-1:123456789012:secret:{SECRET}-AbCdEf"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"docker-hub": SECRET}, {"docker-hub": SECRET}),
        (f"docker-hub={SECRET}", {"docker-hub": SECRET}),
        ({"docker-hub": ARN}, {"docker-hub": ARN}),
    ],
)
def test_pull_through_secrets(value: object, expected: dict[str, str]) -> None:
    assert parse_pull_through_secrets(
        value, account="123456789012", region="us-east-1", where=WHERE
    ) == (expected, [])


@pytest.mark.parametrize(
    ("value", "pointer", "message"),
    [
        (None, "/ecr_pull_through_secrets/docker-hub", "needs credentials and names no secret"),
        ({}, "/ecr_pull_through_secrets/docker-hub", "needs credentials and names no secret"),
        ({"docker-hub": "dockerhub-creds"}, "/ecr_pull_through_secrets/docker-hub",
         "only secrets whose name begins with ecr-pullthroughcache/"),
        ({"docker-hub": ARN.replace("us-east-1", "eu-west-1")},
         "/ecr_pull_through_secrets/docker-hub", "in the pull through cache rule's account"),
        ({"docker-hub": SECRET, "quay": "ecr-pullthroughcache/quay"},
         "/ecr_pull_through_secrets/quay", "has no pull through cache rule for this upstream"),
    ],
)  # fmt: skip
def test_pull_through_secret_problems(value: object, pointer: str, message: str) -> None:
    _, problems = parse_pull_through_secrets(
        value, account="123456789012", region="us-east-1", where=WHERE
    )
    assert [p.pointer for p in problems] == [pointer]
    assert message in str(problems[0])
    if "no secret" in message:  # the fix says how to create it and where to name it
        assert "aws secretsmanager create-secret --name ecr-pullthroughcache/docker-hub" in str(
            problems[0]
        )
        assert "username and accessToken" in str(problems[0])


@pytest.mark.parametrize(
    ("profile", "zones", "expected"),
    [("dev", 3, 1), ("prod", 3, 3), ("prod", 2, 2), ("staging", None, None), ("dev", None, 1)],
)
def test_default_nat_gateways(profile: str, zones: int | None, expected: int | None) -> None:
    assert default_nat_gateways(profile, zones) == expected


def test_a_secrets_value_that_is_no_mapping_is_named_with_the_missing_secret() -> None:
    _, problems = parse_pull_through_secrets(
        ["docker-hub"], account="123456789012", region="us-east-1", where=WHERE
    )
    assert [p.pointer for p in problems] == [
        "/ecr_pull_through_secrets",
        "/ecr_pull_through_secrets/docker-hub",
    ]
    assert "maps upstream registries to Secrets Manager secrets" in str(problems[0])


@pytest.mark.parametrize(
    ("value", "zones", "message"),
    [
        (1, 2, None),
        (2, 2, None),
        ("3", 3, None),
        (3, 2, "more NAT gateways than the VPC's 2 availability zones"),
        (0, 2, "not a NAT gateway count"),
        ("two", 2, "not a NAT gateway count"),
        (True, 2, "not a NAT gateway count"),
    ],
)
def test_nat_gateway_bounds(value: object, zones: int, message: str | None) -> None:
    problems = nat_gateway_problems(value, zones=zones, where=WHERE)
    assert [message in str(p) for p in problems] == ([] if message is None else [True])
    if message:
        assert problems[0].pointer == "/nat_gateways"
        assert f"an integer from 1 to {zones}" in str(problems[0])


def test_the_renderer_pulls_through_the_context_registry() -> None:
    spec = flat_spec(
        name="m",
        target="eks",
        engine="vllm",
        model="s3://mlcc-models-dev-123456789012-us-east-1/models/m/",
        instance_type="ml.g5.2xlarge",
    )
    images = {
        registry: [
            obj["spec"]["template"]["spec"]["containers"][0]["image"]
            for obj in render(spec, context=RenderContext(image_registry=registry)).objects
            if obj["kind"] == "Deployment"
        ]
        for registry in (None, REGISTRY)
    }
    assert images == {
        None: ["vllm/vllm-openai:v0.31.0"],
        REGISTRY: [f"{REGISTRY}/docker-hub/vllm/vllm-openai:v0.31.0"],
    }


# -- what the stacks emit --------------------------------------------------------------------


def _resources(resource_type: str, tmpl: dict[str, Any] | None = None) -> dict[str, Any]:
    resources = (tmpl or template(EKS_STACK))["Resources"]
    return {k: v for k, v in resources.items() if v["Type"] == resource_type}


def test_the_cluster_has_a_pull_through_cache_rule_per_cached_upstream() -> None:
    rules = _resources("AWS::ECR::PullThroughCacheRule")
    assert list(rules) == ["PullThroughCacheDockerHub"]
    properties = rules["PullThroughCacheDockerHub"]["Properties"]
    assert properties["EcrRepositoryPrefix"] == "docker-hub"
    assert properties["UpstreamRegistry"] == "docker-hub"
    assert properties["UpstreamRegistryUrl"] == "registry-1.docker.io"
    assert json.dumps(properties["CredentialArn"]).endswith(
        ':secretsmanager:us-east-1:123456789012:secret:ecr-pullthroughcache/docker-hub"]]}'
    )
    assert _resources("AWS::SecretsManager::Secret") == {}  # named, never created


def test_the_node_role_may_pull_through_the_cache_only() -> None:
    (policy,) = (
        p for k, p in _resources("AWS::IAM::Policy").items() if k.startswith("ImageCachePull")
    )
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]
    assert json.dumps(statement["Resource"]).endswith(
        ':ecr:us-east-1:123456789012:repository/docker-hub/*"]]}'
    )
    assert policy["Properties"]["Roles"] == [{"Ref": "ClusterClusternodePoolRole69276141"}]


def test_the_vpc_has_interface_endpoints_in_its_private_subnets() -> None:
    endpoints = _resources("AWS::EC2::VPCEndpoint")
    interface = [
        v["Properties"]
        for v in endpoints.values()
        if v["Properties"]["VpcEndpointType"] == "Interface"
    ]
    assert sorted(p["ServiceName"].removeprefix("com.amazonaws.us-east-1.") for p in interface) == (
        sorted(name for _, name in INTERFACE_ENDPOINTS)
    )
    groups = _resources("AWS::EC2::SecurityGroup")
    (group_id,) = (k for k in groups if k.startswith("VpcEndpointSecurityGroup"))
    ingress = groups[group_id]["Properties"]["SecurityGroupIngress"]
    assert [(r["CidrIp"], r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in ingress] == [
        ("10.0.0.0/16", "tcp", 443, 443)
    ]
    assert template(EKS_STACK)["Resources"]["Vpc8378EB38"]["Properties"]["CidrBlock"] == (
        "10.0.0.0/16"
    )
    private = [{"Ref": k} for k in _resources("AWS::EC2::Subnet") if k.startswith("VpcPrivate")]
    for properties in interface:
        assert properties["PrivateDnsEnabled"] is True
        assert properties["SubnetIds"] == private
        assert properties["SecurityGroupIds"] == [{"Fn::GetAtt": [group_id, "GroupId"]}]
    gateways = [v for v in endpoints.values() if v["Properties"]["VpcEndpointType"] == "Gateway"]
    assert len(gateways) == 1  # S3, as before


@pytest.mark.parametrize(
    ("context", "count"),
    [
        ({}, 1),  # dev
        ({"nat_gateways": 2}, 2),
        ({"nat_gateways": "2"}, 2),
        ({"profile": "prod"}, 2),  # one per zone
        ({"profile": "prod", "nat_gateways": 1}, 1),
    ],
)
def test_the_vpc_nat_gateway_count(context: dict[str, Any], count: int) -> None:
    name = f"mlcc-{context.get('profile', 'dev')}-eks-cluster"
    synthesized = build(**context).synth().get_stack_by_name(name).template
    assert len(_resources("AWS::EC2::NatGateway", synthesized)) == count


@pytest.mark.parametrize(
    ("context", "pointer"),
    [
        ({"nat_gateways": 3}, "/nat_gateways"),
        ({"ecr_pull_through_secrets": {}}, "/ecr_pull_through_secrets/docker-hub"),
        ({"ecr_pull_through_secrets": {"docker-hub": "creds"}},
         "/ecr_pull_through_secrets/docker-hub"),
    ],
)  # fmt: skip
def test_bad_egress_context_is_a_clear_error(context: dict[str, Any], pointer: str) -> None:
    with pytest.raises(MlccError) as caught:
        build(**context)
    assert [(p.where, p.pointer) for p in caught.value.problems] == [(WHERE, pointer)]


def test_without_the_secrets_setting_the_app_makes_no_cache_and_says_so() -> None:
    """The default app (cdk.json alone) needs no secret: no pull through cache, images as
    given, and the cluster stack says how to turn the cache on."""
    import aws_cdk as cdk

    from app import build_app
    from mlcc_constructs.core.platform.image_cache import NO_CACHE_NOTE
    from tests._cdk_app import default_context

    app = build_app(cdk.App(context=default_context()))
    assembly = app.synth()
    cluster = assembly.get_stack_by_name("mlcc-dev-eks-cluster")
    types = {r["Type"] for r in cluster.template["Resources"].values()}
    assert "AWS::ECR::PullThroughCacheRule" not in types
    infos = [m.data for m in app.node.find_child("mlcc-dev-eks-cluster").node.metadata]
    assert NO_CACHE_NOTE in infos
    serving = assembly.get_stack_by_name("mlcc-dev-serving-eks-inference-qwen3-8b")
    assert "dkr.ecr" not in json.dumps(serving.template)
    assert "vllm/vllm-openai:" in json.dumps(serving.template)


def test_the_serving_stacks_pull_the_engine_images_through_the_cache() -> None:
    from tests._cdk_app import synthesised

    _, texts = synthesised()
    images = set()
    for name, text in texts.items():
        if not name.startswith("mlcc-dev-serving-eks-"):
            continue
        for resource in json.loads(text)["Resources"].values():
            if resource["Type"] != "Custom::AWSCDK-EKS-KubernetesResource":
                continue
            obj = manifest_object(resource)
            if obj["kind"] == "Deployment":
                images |= {c["image"] for c in obj["spec"]["template"]["spec"]["containers"]}
    assert f"{REGISTRY}/docker-hub/vllm/vllm-openai:v0.31.0" in images
    assert not any(image.startswith("vllm/") for image in images)


RENDER = [
    "render",
    "--engine",
    "vllm",
    "--target",
    "eks",
    "--model",
    "s3://mlcc-models-dev-123456789012-us-east-1/models/m/",
    "--instance-type",
    "ml.g5.2xlarge",
    "--name",
    "m",
]


@pytest.mark.parametrize(
    ("registry", "code", "expected"),
    [
        (REGISTRY, 0, f"image: {REGISTRY}/docker-hub/vllm/vllm-openai:v0.31.0"),
        ("docker.io", 1, "--image-registry: not an ECR private registry (got 'docker.io'"),
    ],
)
def test_mlcc_render_image_registry(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    registry: str,
    code: int,
    expected: str,
) -> None:
    from mlcc_constructs import cli

    monkeypatch.chdir(tmp_path)  # no cdk.json context
    assert cli.main([*RENDER, "--image-registry", registry]) == code
    captured = capsys.readouterr()
    assert expected in captured.out + captured.err
