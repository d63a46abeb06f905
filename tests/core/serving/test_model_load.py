"""Streaming load (``model_load``): the default, the refusals, the rendered pod, the engine's
argv against its recorded parser, and the pods' IAM role.

The streaming test itself (the real Run:ai streamer reading loopback S3 with the pod's own
environment) is ``tests/ops/test_model_stream.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.engines.manifest_checks import manifest_problems
from mlcc_constructs.core.engines.manifests import builtin_engines
from mlcc_constructs.core.platform.model_stream_iam import model_read_statements
from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.serving.prepared import prepare
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.resolve.model_load import stream_blockers
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec, parse_model_source
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import serving_on
from tests._flat import flat_spec
from tests.core.engines.test_engine_parsers import parse

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = f"mlcc-models-dev-{ACCOUNT}-{REGION}"
PREFIX = "models/meta-llama/Llama-3.1-8B-Instruct/"
S3_MODEL = f"s3://{BUCKET}/{PREFIX}"
HF_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
CONTEXT = RenderContext(account=ACCOUNT, region=REGION, profile="dev")
MANIFESTS = {m.engine: m for m in builtin_engines()}


def _spec(**values: Any) -> DeploymentSpec:
    fields: dict[str, Any] = {
        "engine": "vllm",
        "model": S3_MODEL,
        "instance_type": "ml.g5.12xlarge",
        "name": "llm",
        "namespace": "inference",
        **values,
    }
    return flat_spec(**fields)


def _objects(spec: DeploymentSpec) -> dict[str, dict[str, Any]]:
    """The rendered objects by kind (the engine config's ConfigMap as ``ConfigMap``)."""
    objects = render(spec, context=CONTEXT).objects
    by_kind = {o["kind"]: o for o in objects if o["kind"] != "ConfigMap"}
    by_kind["ConfigMap"] = next(o for o in objects if o["metadata"]["name"] == "llm-config")
    return by_kind


# -- the default -----------------------------------------------------------------------------

DEFAULTS = [
    # (spec fields, model_load, mounts the model prefix)
    ({}, "stream", False),
    ({"lora": True}, "stream", True),  # the adapters still come through the mount
    ({"config_delivery": "args"}, "stream", False),
    ({"model": HF_MODEL}, "mount", False),  # a Hub id: the engine downloads it as before
    ({"target": "hyperpod-eks"}, "mount", True),  # the operator owns the model source
    ({"engine": "sglang"}, "mount", True),  # SGLang declares no streaming load format
    ({"image": "vllm/vllm-openai:v0.33.0"}, "stream", False),  # the other recorded release
    ({"env": {"VLLM_LOAD_FORMAT": "safetensors"}}, "mount", True),  # the user's load format
    ({"model_load": "mount"}, "mount", True),
    ({"model_load": "stream", "lora": True}, "stream", True),
]


@pytest.mark.parametrize(("values", "mode", "mounts"), DEFAULTS)
def test_model_load_defaults_to_stream_where_everything_supports_it(
    values: dict[str, Any], mode: str, mounts: bool
) -> None:
    prepared = prepare(_spec(**values), context=CONTEXT)
    assert prepared.resolution.model_load == mode
    assert prepared.resolution.mounts_model is mounts
    keys = dict(prepared.resolution.tier1)
    if mode == "stream":
        assert keys["VLLM_MODEL"] == S3_MODEL
        assert keys["VLLM_LOAD_FORMAT"] == "runai_streamer"
    else:
        assert "VLLM_LOAD_FORMAT" not in keys


# -- refusals ------------------------------------------------------------------------------

REFUSALS = [
    (
        {"model": HF_MODEL},
        "the model 'meta-llama/Llama-3.1-8B-Instruct' is a huggingface model; vllm streams "
        "from s3:// only",
    ),
    (
        {"target": "hyperpod-eks"},
        "target 'hyperpod-eks' cannot stream: the inference operator owns the model source",
    ),
    ({"engine": "sglang"}, "sglang declares no streaming load format"),
]


@pytest.mark.parametrize(("version", "reasons"), [((0, 6, 5), 1), ((0, 6, 6), 0), (None, 0)])
def test_a_release_before_the_streaming_format_cannot_stream(
    version: tuple[int, int, int] | None, reasons: int
) -> None:
    """The manifest's ``since`` gate (a vLLM release this old has no recorded parser facts, so
    a spec naming it is refused before the load is decided: the gate is checked here)."""
    found = stream_blockers(
        manifest=MANIFESTS["vllm"],
        version=version,
        target=load_target("eks"),
        source=parse_model_source(S3_MODEL),
        user_keys=frozenset(),
    )
    assert found == ["vllm streams (--load-format runai_streamer) from 0.6.6"][:reasons]


@pytest.mark.parametrize(("values", "reason"), REFUSALS)
def test_an_explicit_stream_that_cannot_stream_is_refused(
    values: dict[str, Any], reason: str
) -> None:
    with pytest.raises(MlccError) as caught:
        prepare(_spec(model_load="stream", **values), context=CONTEXT)
    (problem,) = [p for p in caught.value.problems if p.pointer == "/model/load"]
    assert problem.value == "stream"
    assert problem.message.startswith("model.load 'stream' is not possible here: ")
    assert reason in problem.message
    assert problem.allowed is not None and problem.allowed.startswith("mount")
    assert problem.fix is not None and "model.load: mount" in problem.fix


def test_the_hub_refusal_reads_in_full() -> None:
    with pytest.raises(MlccError) as caught:
        prepare(_spec(model_load="stream", model=HF_MODEL), context=CONTEXT)
    assert [str(p) for p in caught.value.problems] == [
        "/model/load: model.load 'stream' is not possible here: the model "
        "'meta-llama/Llama-3.1-8B-Instruct' is a huggingface model; vllm streams from s3:// "
        "only (got 'stream'; allowed: mount; fix: set model.load: mount (or drop it), or "
        "stream an s3:// model with an engine that declares model_load.stream on a target "
        "with model_streaming)"
    ]


def test_a_model_load_that_is_neither_is_refused() -> None:
    with pytest.raises(MlccError) as caught:
        _spec(model_load="prefetch")
    assert str(caught.value).startswith(
        "/model/load: wrong type for ModelSpec.load (got 'prefetch'"
    )


# -- the rendered pod ----------------------------------------------------------------------


def _pod(objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = objects["Deployment"]["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("lora", [False, True])
def test_a_streamed_pod_mounts_the_model_only_for_its_adapters(lora: bool) -> None:
    objects = _objects(_spec(lora=lora))
    pod = _pod(objects)
    (engine,) = pod["containers"]
    volumes = {v["name"] for v in pod["volumes"]}
    mounts = {m["mountPath"] for m in engine["volumeMounts"]}
    assert ("model-weights" in volumes) is lora
    assert ("/opt/ml/model" in mounts) is lora
    assert ("PersistentVolume" in objects) is lora
    assert ("PersistentVolumeClaim" in objects) is lora
    env = {e["name"]: e.get("value") for e in engine["env"]}
    assert env["AWS_REGION"] == REGION and env["AWS_DEFAULT_REGION"] == REGION
    config = objects["ConfigMap"]["data"] if "ConfigMap" in objects else {}
    assert config.get("VLLM_MODEL") == S3_MODEL
    assert config.get("VLLM_LOAD_FORMAT") == "runai_streamer"
    # The pod reads S3 itself: HTTPS out (S3's addresses are AWS's prefix list), with the
    # credentials the EKS Pod Identity agent serves on its link-local addresses.
    egress = objects["NetworkPolicy"]["spec"]["egress"]
    assert {"ports": [{"protocol": "TCP", "port": 443}]} in egress
    agent = [r for r in egress if "to" in r]
    assert agent == [
        {
            "to": [
                {"ipBlock": {"cidr": "169.254.170.23/32"}},
                {"ipBlock": {"cidr": "fd00:ec2::23/128"}},
            ],
            "ports": [{"protocol": "TCP", "port": 80}],
        }
    ]


def test_a_mounted_pod_keeps_its_mount_and_no_https_egress() -> None:
    objects = _objects(_spec(model_load="mount"))
    pod = _pod(objects)
    assert "model-weights" in {v["name"] for v in pod["volumes"]}
    assert "AWS_REGION" not in {e["name"] for e in pod["containers"][0]["env"]}
    egress = objects["NetworkPolicy"]["spec"]["egress"]
    assert {"ports": [{"protocol": "TCP", "port": 443}]} not in egress
    assert [r for r in egress if "to" in r] == []  # no Pod Identity agent: no AWS call


STREAM_OWNED = [
    # (spec fields, the refusal): what streaming sets is Tier 1 closed while it streams
    (
        {"model_load": "stream", "env": {"VLLM_LOAD_FORMAT": "pt"}},
        "/engine/env/VLLM_LOAD_FORMAT: VLLM_LOAD_FORMAT sets --load-format, which is Tier 1: the "
        "library passes --load-format runai_streamer while it streams the model (model.load "
        "stream; manifest model_load.stream) (got 'pt'; fix: remove it, or set model.load "
        "(--model-load; DeploymentSpec.model.load) to mount to choose the load format yourself)",
    ),
    (
        {"env": {"AWS_REGION": "us-west-2"}},
        "/engine/env/AWS_REGION: AWS_REGION sets the model bucket's region, which is Tier 1: the "
        "library sets it while it streams the model (manifest model_load.stream.env: "
        "model_region) (got 'us-west-2'; fix: remove it; set region (--region; "
        "DeploymentSpec.region), or model.load: mount)",
    ),
    (
        {"env": {"AWS_DEFAULT_REGION": "us-east-1"}},  # the same value too: the library's
        "/engine/env/AWS_DEFAULT_REGION: AWS_DEFAULT_REGION sets the model bucket's region, which "
        "is "
        "Tier 1: the library sets it while it streams the model (manifest "
        "model_load.stream.env: model_region) (got 'us-east-1'; fix: remove it; set region "
        "(--region; DeploymentSpec.region), or model.load: mount)",
    ),
]


@pytest.mark.parametrize(("values", "refusal"), STREAM_OWNED)
def test_what_streaming_sets_is_not_set_by_hand(values: dict[str, Any], refusal: str) -> None:
    with pytest.raises(MlccError) as caught:
        prepare(_spec(**values), context=CONTEXT)
    assert [str(p) for p in caught.value.problems] == [refusal]


def test_the_users_region_variable_stays_with_a_mounted_model() -> None:
    # not streamed: the library sets no region, the variable is the user's plain env
    prepared = prepare(_spec(model_load="mount", env={"AWS_REGION": "us-west-2"}), context=CONTEXT)
    assert dict(prepared.resolution.plain)["AWS_REGION"] == "us-west-2"


def test_the_pod_keeps_no_api_token_and_gets_its_identity_from_the_webhook() -> None:
    # automountServiceAccountToken: false hides only the Kubernetes API token; the EKS
    # webhooks add their own projected token volume (Pod Identity, IRSA).
    objects = _objects(_spec())
    assert _pod(objects)["automountServiceAccountToken"] is False
    assert objects["ServiceAccount"]["automountServiceAccountToken"] is False


# -- the engine's argv against the recorded vLLM 0.31.0 parser -----------------------------


@pytest.mark.parametrize("delivery", ["env", "args"])
@pytest.mark.parametrize("lora", [False, True])
def test_the_streaming_argv_parses(tmp_path: Any, delivery: str, lora: bool) -> None:
    from tests.engine_process import engine_process

    spec = _spec(lora=lora, config_delivery=delivery)
    argv, env = engine_process(list(render(spec, context=CONTEXT).objects), tmp_path)
    namespace = parse("vllm", argv)
    assert namespace.model_tag == S3_MODEL
    assert namespace.load_format == "runai_streamer"
    assert namespace.enable_lora is (True if lora else None)
    assert env["AWS_REGION"] == REGION
    assert "VLLM_LOAD_FORMAT" not in env  # it became the flag


# -- the manifest rules --------------------------------------------------------------------


def _vllm_with(stream: dict[str, Any], **changes: Any) -> dict[str, Any]:
    document = dict(MANIFESTS["vllm"].raw)
    document["model_load"] = {"stream": stream}
    document.update(changes)
    return document


STREAM = {"flag": "--load-format", "value": "runai_streamer", "sources": ["s3"], "source": "doc"}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            _vllm_with({**STREAM, "flag": "--load_format"}),
            "the flag is not in the engine's flag_style",
        ),
        (
            _vllm_with(STREAM, engine_env=["LOAD_FORMAT"]),
            "the flag's env suffix LOAD_FORMAT is a capability's or engine_env's",
        ),
        (
            _vllm_with({**STREAM, "sources": ["hf"]}),
            "sources/0: value not allowed (got 'hf'; allowed: s3)",
        ),
        (
            _vllm_with({**STREAM, "env": {"AWS_REGION": "cluster"}}),
            "env/AWS_REGION: value not allowed (got 'cluster'",
        ),
    ],
)
def test_a_bad_stream_declaration_is_refused(document: dict[str, Any], message: str) -> None:
    problems = manifest_problems(document, "plugin/manifest.json")
    assert any(message in str(p) for p in problems), [str(p) for p in problems]


def test_only_vllm_declares_streaming() -> None:
    # SGLang documents runai_streamer (docs.sglang.io object_storage) but its version floor and
    # its 0.5.21 parser's --load-format are not on record: nothing is declared for it yet.
    assert sorted(e for e, m in MANIFESTS.items() if m.stream_load is not None) == ["vllm"]


# -- IAM: exactly the model prefix -----------------------------------------------------------


def test_the_model_read_statements_are_exactly_the_prefix() -> None:
    read, listing = model_read_statements(bucket_name=BUCKET, prefix=PREFIX, partition="aws")
    assert (read.sid, read.actions, read.resources, dict(read.conditions)) == (
        "ReadModelObjects",
        ("s3:GetObject",),
        (f"arn:aws:s3:::{BUCKET}/{PREFIX}*",),
        {},
    )
    assert (listing.sid, listing.actions, listing.resources, dict(listing.conditions)) == (
        "ListModelPrefix",
        ("s3:ListBucket",),
        (f"arn:aws:s3:::{BUCKET}",),
        {"StringLike": {"s3:prefix": [f"{PREFIX}*"]}},
    )


@pytest.mark.parametrize("prefix", ["models/a", "/models/a/"])
def test_a_prefix_that_is_not_a_folder_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="a model prefix is a folder"):
        model_read_statements(bucket_name=BUCKET, prefix=prefix, partition="aws")


def _served_stream(**values: Any) -> tuple[Any, Any, dict[str, Any]]:
    """(stack, ServedModel, template) of a streamed deployment on a team's cluster."""
    from mlcc_constructs import ServedModel, ServedModelProps
    from tests.core.platform.test_pod_identity import _cluster, _stack

    stack = _stack()
    model = ServedModel(
        stack,
        "Llama",
        props=ServedModelProps(
            deployment=prepare(_spec(**values), context=CONTEXT),
            cluster=serving_on(_cluster(stack)),
            wait_for_ready=False,
        ),
    )
    return stack, model, stack.node.root.synth().get_stack_by_name("Team").template


def _of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_a_streamed_deployment_gets_a_role_reading_exactly_its_prefix() -> None:
    from tests.aws.test_cdk_nag import _findings

    stack, model, template = _served_stream()
    ((role_id, role),) = _of_type(template, "AWS::IAM::Role").items()
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/eks-cluster-name": "team",
                    "aws:RequestTag/kubernetes-namespace": "inference",
                    "aws:RequestTag/kubernetes-service-account": "llm",
                }
            },
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
        }
    ]
    assert "ManagedPolicyArns" not in role["Properties"]
    (policy,) = _of_type(template, "AWS::IAM::Policy").values()
    partition = {"Ref": "AWS::Partition"}
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", ["arn:", partition, f":s3:::{BUCKET}/{PREFIX}*"]]},
            "Sid": "ReadModelObjects",
        },
        {
            "Action": "s3:ListBucket",
            "Condition": {"StringLike": {"s3:prefix": [f"{PREFIX}*"]}},
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", ["arn:", partition, f":s3:::{BUCKET}"]]},
            "Sid": "ListModelPrefix",
        },
    ]
    (association,) = _of_type(template, "AWS::EKS::PodIdentityAssociation").values()
    assert association["Properties"] == {
        "ClusterName": "team",
        "Namespace": "inference",
        "ServiceAccount": "llm",
        "RoleArn": {"Fn::GetAtt": [role_id, "Arn"]},
    }
    assert model.pod_role is not None and model.secrets_role is None
    assert _findings(stack) == []  # the prefix's '*' is acknowledged with its reason


def test_a_mounted_deployment_gets_no_role() -> None:
    _, model, template = _served_stream(model_load="mount")
    assert model.pod_role is None
    assert not _of_type(template, "AWS::IAM::Role")
