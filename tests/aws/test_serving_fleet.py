"""A serving fleet (issue 40): a 3-stage, 2-wave fleet over 2 accounts and 2 regions,
synthesised once for the module. The pipeline deploys the waves in order, each stage
between its preflight pre step and its endpoint-check post step; the templates pass cfn-lint
and cdk-nag; a stage pinned to another model version is refused naming the stage and the
field; the synth step's diff guard fails on an undeclared diff."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.platform.fleet import (
    FleetShape,
    internal_check_problems,
    shape_problems,
)
from mlcc_constructs.core.platform.fleet_pin import stage_pin_problems
from mlcc_constructs.core.rollout.fleet_model import stage_context
from mlcc_constructs.core.support.errors import MlccError
from tests._cdk_app import REPO
from tests._fleet import PIPELINE_ACCOUNT, PROD_ACCOUNT, build_fleet, pin, stages

needs_node = pytest.mark.skipif(
    shutil.which("node") is None
    or not (REPO / "node_modules" / "@aws-cdk" / "cloudformation-diff").is_dir(),
    reason="needs node and `npm ci` (@aws-cdk/cloudformation-diff)",
)
CONTEXT = {"@aws-cdk/core:defaultCrossStackReferences": "strong"}
PIPELINE_STACK = "mlcc-fleet-pipeline"
STAGE_STACKS = ("buckets", "eks-cluster", "serving", "serving-eks-inference-qwen3-8b")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fleet, synthesised once: (the ServingFleet, its cloud assembly)."""
    import aws_cdk as cdk

    app = cdk.App(context=CONTEXT, outdir=str(tmp_path_factory.mktemp("cdk.out")))
    built = build_fleet(app)
    return built, app.synth()


def _template(assembly: Any, artifact_id: str) -> dict[str, Any]:
    return json.loads(Path(assembly.get_stack_artifact(artifact_id).template_full_path).read_text())


def _pipeline(fleet: Any) -> dict[str, Any]:
    template = _template(fleet[1], PIPELINE_STACK)
    (found,) = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::CodePipeline::Pipeline"
    ]
    return found  # type: ignore[no-any-return]


def _project(fleet: Any, action: dict[str, Any]) -> dict[str, Any]:
    template = _template(fleet[1], PIPELINE_STACK)
    return template["Resources"][action["Configuration"]["ProjectName"]["Ref"]]  # type: ignore[no-any-return]


def _buildspec(project: dict[str, Any]) -> dict[str, Any]:
    return json.loads(project["Properties"]["Source"]["BuildSpec"])  # type: ignore[no-any-return]


def _stage_actions(fleet: Any, wave: str) -> list[dict[str, Any]]:
    (stage,) = [s for s in _pipeline(fleet)["Properties"]["Stages"] if s["Name"] == wave]
    return stage["Actions"]  # type: ignore[no-any-return]


def test_the_pipeline_runs_source_synth_then_the_waves_in_order(fleet: Any) -> None:
    names = [s["Name"] for s in _pipeline(fleet)["Properties"]["Stages"]]
    # CDK Pipelines names a wave of one stage after that stage: wave "test" is stage "dev".
    assert names == ["Source", "Build", "UpdatePipeline", "Assets", "dev", "prod"]
    first = [a for a in _stage_actions(fleet, "prod") if a["RunOrder"] == 1]
    assert [(a["Name"], a["ActionTypeId"]["Category"]) for a in first] == [
        ("Approve-prod", "Approval")
    ]
    assert all(a["ActionTypeId"]["Category"] != "Approval" for a in _stage_actions(fleet, "dev"))


@pytest.mark.parametrize(
    ("wave", "stage", "account", "region", "profile"),
    [
        ("dev", "dev", PIPELINE_ACCOUNT, "us-east-1", "dev"),
        ("prod", "prod-use1", PROD_ACCOUNT, "us-east-1", "prod"),
        ("prod", "prod-euw1", PROD_ACCOUNT, "eu-west-1", "prod"),
    ],
)
def test_each_stage_deploys_between_its_preflight_and_its_endpoint_check(
    fleet: Any, wave: str, stage: str, account: str, region: str, profile: str
) -> None:
    actions = {a["Name"]: a for a in _stage_actions(fleet, wave)}
    # A wave of several stages prefixes each action with its stage's name.
    prefix = "" if wave == stage else f"{stage}."
    pre = actions[f"{prefix}{stage}-Preflight"]
    post = actions[f"{prefix}{stage}-EndpointCheck"]
    deploys = [actions[f"{prefix}mlcc-{profile}-{suffix}.Deploy"] for suffix in STAGE_STACKS]
    orders = [a["RunOrder"] for a in deploys]
    assert pre["RunOrder"] < min(orders) and max(orders) < post["RunOrder"]
    # Each stack deploys into the stage's account and region, as its app stack name.
    for suffix, action in zip(STAGE_STACKS, deploys, strict=True):
        assert action["Configuration"]["StackName"] == f"mlcc-{profile}-{suffix}"
        assert action.get("Region", "us-east-1") == region  # absent: the pipeline's
        assert f"cdk-hnb659fds-deploy-role-{account}-{region}" in json.dumps(action["RoleArn"])

    preflight = _buildspec(_project(fleet, pre))["phases"]["build"]["commands"]
    assert preflight[-1] == (
        f"mlcc preflight --cdk-json mlcc-stage.cdk.json --cdk-out "
        f"assembly-mlcc-fleet-pipeline-Fleet-{stage} --strict"
    )
    assert f"--account {account} --region {region} --profile {profile}" in preflight[-3]
    variables = _project(fleet, pre)["Properties"]["Environment"]["EnvironmentVariables"]
    (context_variable,) = [v for v in variables if v["Name"] == "MLCC_STAGE_CONTEXT"]
    context = json.loads(context_variable["Value"])["context"]
    assert (context["account"], context["region"], context["profile"]) == (
        account,
        region,
        profile,
    )
    (deployment,) = context["reference_deployments"]
    assert deployment["model"]["uri"] == (
        f"s3://mlcc-models-{profile}-{account}-{region}/models/mlcc-chat/qwen3-8b-sft/"
    )
    assert deployment["engine"]["image"] == pin().engine_image

    check = _buildspec(_project(fleet, post))["phases"]["build"]["commands"]
    assert check[-1] == 'mlcc endpoint check --url "$MLCC_ENDPOINT_URL_0" --model qwen3-8b'
    (url,) = json.loads(post["Configuration"]["EnvironmentVariables"])
    assert url["name"] == "MLCC_ENDPOINT_URL_0"
    assert url["value"] == f"#{{{deploys[-1]['Namespace']}.EndpointUrl}}"


def test_the_steps_may_assume_only_their_stage_check_role(fleet: Any) -> None:
    template = _template(fleet[1], PIPELINE_STACK)
    assumed = set()
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            if "sts:AssumeRole" in actions and "Condition" not in statement:
                assumed.add(json.dumps(statement["Resource"]))
    roles = {json.dumps(s.check_role_arn) for s in stages()}
    # The steps' own statements name exactly the stage roles (CDK Pipelines adds its
    # tag-conditioned bootstrap role assumptions and action roles, which are not these).
    assert roles <= assumed
    assert not [r for r in assumed if "mlcc-fleet-check" in r and r not in roles]


def test_the_endpoint_check_joins_the_check_network(fleet: Any) -> None:
    template = _template(fleet[1], PIPELINE_STACK)
    projects = {
        key: r["Properties"]
        for key, r in template["Resources"].items()
        if r["Type"] == "AWS::CodeBuild::Project" and "EndpointCheck" in key
    }
    assert len(projects) == 3
    assert {p["VpcConfig"]["VpcId"] for p in projects.values()} == {"vpc-0123456789abcdef0"}


def test_the_artifacts_are_encrypted_with_rotated_keys_in_each_region(fleet: Any) -> None:
    assembly = fleet[1]
    keys = [
        r["Properties"]
        for r in _template(assembly, PIPELINE_STACK)["Resources"].values()
        if r["Type"] == "AWS::KMS::Key"
    ]
    assert keys and all(k["EnableKeyRotation"] for k in keys)
    support = [a.id for a in assembly.artifacts if a.id.startswith("cross-region-stack-")]
    assert support == [f"cross-region-stack-{PIPELINE_ACCOUNT}_eu-west-1"]


def test_a_stage_holds_the_same_stacks_as_the_single_environment_app(fleet: Any) -> None:
    """The dev stage's templates are the app's for the same context (one composition), but
    for the construct paths CDK writes into descriptions and Name tags (a stage's stacks are
    under the stage's path)."""
    import aws_cdk as cdk

    from app import build_app

    dev = fleet[0].stages["dev"]
    app = build_app(cdk.App(context={**CONTEXT, **_stage_context_of(dev)}))
    assembly = app.synth()
    stage_assembly = Path(fleet[1].directory) / f"assembly-{PIPELINE_STACK}-Fleet-dev"
    assert [s.stack_name for s in dev.stacks] == [f"mlcc-dev-{s}" for s in STAGE_STACKS]
    for stack in dev.stacks:
        ours = (stage_assembly / stack.template_file).read_text()
        apps = Path(assembly.get_stack_by_name(stack.stack_name).template_full_path).read_text()
        ours = ours.replace(f"{PIPELINE_STACK}/Fleet/dev/", "")
        assert json.loads(ours) == json.loads(apps), stack.stack_name


def _stage_context_of(stage: Any) -> dict[str, Any]:
    keys = ("profile", "account", "region", "availability_zones", "reference_deployments")
    return {key: stage.node.try_get_context(key) for key in keys}


def _every_template(fleet: Any) -> list[tuple[str, str, str]]:
    """(path, region, template text) of every stack: the pipeline's, the support stack's
    and every stage's."""
    import aws_cdk as cdk

    found = []
    for node in fleet[0].node.root.node.find_all():
        if isinstance(node, cdk.Stack):
            folder = Path(cdk.Stage.of(node).outdir)
            text = (folder / node.template_file).read_text()
            found.append((node.node.path, node.region, text))
    return found


def test_every_template_passes_cfn_lint(fleet: Any) -> None:
    from cfnlint.api import ManualArgs, lint

    templates = _every_template(fleet)
    assert len(templates) == 2 + 3 * len(STAGE_STACKS)
    found = {}
    for name, region, text in templates:
        matches = lint(text, config=ManualArgs(regions=[region], ignore_checks=["W3005", "W3010"]))
        found[name] = [str(m) for m in matches if not _cdk_role_arn_join(m)]
    assert {name: problems for name, problems in found.items() if problems} == {}


def _cdk_role_arn_join(match: Any) -> bool:
    """E3703's "prefer Fn::Sub" on a deploy action's ``RoleArn``: CDK Pipelines writes the
    bootstrap roles' ARNs as ``Fn::Join`` of the partition (a valid ARN; aws-cdk-lib's own
    rendering, not ours). Any other E3703 finding (a wrong action configuration) counts."""
    return (
        match.rule.id == "E3703"
        and match.message == "Prefer using Fn::Sub over Fn::Join with an empty delimiter"
        and list(match.path)[-1] == "RoleArn"
    )


def test_no_cdk_nag_finding_is_left_unacknowledged(fleet: Any) -> None:
    from cdk_nag import AwsSolutionsChecks

    from mlcc_constructs.aws.nag import MlccChecks

    built = fleet[0]
    app = built.node.root
    found = []
    scopes = [app, *built.stages.values()]
    for scope in scopes:
        for pack in (AwsSolutionsChecks(scope), MlccChecks(scope)):
            report = pack.validate_scope(scope)
            found += [
                f"{v.rule_name} at {r.construct_path}"
                for v in report.violations
                for r in v.violating_resources
            ]
    assert found == []


def test_a_stage_pinned_to_another_model_version_is_refused_naming_the_stage_and_field() -> None:
    import aws_cdk as cdk

    other = "public.ecr.aws/example/vllm:v0.31.0@sha256:" + "c" * 64
    with pytest.raises(MlccError) as raised:
        build_fleet(
            cdk.App(context=CONTEXT),
            stage_models={"prod-euw1": {"qwen3-8b": pin(engine_image=other)}},
        )
    assert [str(p) for p in raised.value.problems] == [
        "fleet:/stages/prod-euw1/models/qwen3-8b/engine_image: stage 'prod-euw1' would serve "
        "deployment 'qwen3-8b' with another engine_image than the fleet pins "
        "('public.ecr.aws/example/vllm:v0.33.0@sha256:"
        + "b" * 64
        + "') (got '"
        + other
        + "'; allowed: 'public.ecr.aws/example/vllm:v0.33.0@sha256:"
        + "b" * 64
        + "'; fix: serve the fleet's pinned version, or declare this stage the fleet's "
        "rollout stage (rollout_stage='prod-euw1'))"
    ]


def test_the_rollout_stage_may_serve_another_version_from_its_own_bucket() -> None:
    newer = pin(name="qwen3-8b-sft2", content_hash="d" * 64)
    assert (
        stage_pin_problems(pin(), newer, stage="dev", rollout_stage="dev", deployment="qwen3-8b")
        == []
    )
    (problem,) = stage_pin_problems(
        pin(), pin(content_hash="d" * 64), stage="prod-use1", rollout_stage="dev", deployment="m"
    )
    assert problem.pointer == "/stages/prod-use1/models/m/content_hash"
    assert problem.fix.endswith("; the rollout stage is 'dev'")
    dev = stages()[0]
    context = stage_context({}, [{"name": "qwen3-8b"}], {"qwen3-8b": newer}, dev)
    assert context["reference_deployments"][0]["model"]["uri"] == (
        f"s3://mlcc-models-dev-{PIPELINE_ACCOUNT}-us-east-1/models/mlcc-chat/qwen3-8b-sft2/"
    )


def test_a_stage_may_override_only_what_environments_legitimately_differ_in() -> None:
    import dataclasses

    dev = dataclasses.replace(
        stages()[0],
        overrides={
            "qwen3-8b": {"/compute/instance_type": "ml.g6e.xlarge", "/engine/env/VLLM_X": "1"}
        },
        context={"gpu_limit": 8, "reference_deployments": []},
    )
    shape = FleetShape(
        stages=(dev,),
        waves=("test",),
        pipeline_account=PIPELINE_ACCOUNT,
        pipeline_region="us-east-1",
    )
    assert [str(p).split(" (allowed")[0] for p in shape_problems(shape)] == [
        "fleet:/stages/dev/overrides/qwen3-8b/engine/env/VLLM_X: stage 'dev' may not set "
        "/engine/env/VLLM_X of deployment 'qwen3-8b': every stage serves the fleet's "
        "deployment as declared",
        "fleet:/stages/dev/context/reference_deployments: stage 'dev' may not set context "
        "'reference_deployments'",
    ]
    allowed = dataclasses.replace(dev, overrides={"qwen3-8b": {"/compute/instance_type": "x"}})
    context = stage_context({}, [{"name": "qwen3-8b"}], {"qwen3-8b": pin()}, allowed)
    assert context["reference_deployments"][0]["compute"] == {"instance_type": "x"}


def test_an_internal_endpoint_needs_a_check_network() -> None:
    import dataclasses

    prod = dataclasses.replace(stages()[1], check_network=None)
    (problem,) = internal_check_problems(
        prod, ["qwen3-8b"], pipeline_account=PIPELINE_ACCOUNT, pipeline_region="us-east-1"
    )
    assert str(problem) == (
        "fleet:/stages/prod-use1/check_network: stage 'prod-use1': deployment(s) qwen3-8b "
        "answer on an internal load balancer, and the endpoint check has no network that "
        "reaches it (fix: set check_network to a VPC of the pipeline's account "
        f"{PIPELINE_ACCOUNT} in us-east-1 that routes to the stage's VPC (peering or Transit "
        "Gateway), or make the endpoint internet-facing)"
    )
    assert (
        internal_check_problems(
            stages()[1],
            ["qwen3-8b"],
            pipeline_account=PIPELINE_ACCOUNT,
            pipeline_region="us-east-1",
        )
        == []
    )


@needs_node
def test_the_synth_steps_diff_guard_fails_on_an_undeclared_diff(
    fleet: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every stage stack's history is its template now (0001); the synth step's guards pass;
    one resource added to one stage's template fails that stage's guard, naming it."""
    from mlcc_constructs.cli import main

    (build,) = _stage_actions_named(fleet, "Build")
    commands = _buildspec(_project(fleet, build))["phases"]["build"]["commands"]
    guards = [shlex.split(c) for c in commands if c.startswith("mlcc diff-guard ")]
    assert len(guards) == 3 * len(STAGE_STACKS)
    shutil.copytree(fleet[1].directory, tmp_path / "cdk.out")
    for guard in guards:
        history, current = Path(guard[3]), Path(guard[5])
        assert history.parts[:3] == ("snapshots", "fleet", history.parts[2])
        (tmp_path / history).mkdir(parents=True)
        shutil.copy(tmp_path / current, tmp_path / history / "0001-baseline.template.json")
    monkeypatch.chdir(tmp_path)
    assert [main(g[1:]) for g in guards] == [0] * len(guards)

    changed = next(g for g in guards if g[3].endswith("prod-euw1/eks-cluster"))
    template = json.loads(Path(changed[5]).read_text())
    template["Resources"]["Undeclared"] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    Path(changed[5]).write_text(json.dumps(template))
    capsys.readouterr()
    assert main(changed[1:]) == 1
    assert "AWS::SQS::Queue Undeclared" in capsys.readouterr().err


def _stage_actions_named(fleet: Any, stage: str) -> list[dict[str, Any]]:
    return _stage_actions(fleet, stage)


def test_the_pre_steps_preflight_checks_the_stages_account_and_staged_model(
    fleet: Any,
    moto_s3: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The prod-euw1 pre step's ``mlcc preflight`` (its command and its stage context, as the
    CodeBuild project holds them) against moto: it checks the stage's account and region, and
    the pinned weights in the stage's own bucket, not staged yet."""
    import urllib.request

    from mlcc_constructs.cli import main

    urllib.request.urlopen(urllib.request.Request(f"{moto_s3}/moto-api/reset", method="POST"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    pre = {a["Name"]: a for a in _stage_actions(fleet, "prod")}["prod-euw1.prod-euw1-Preflight"]
    project = _project(fleet, pre)
    (variable,) = project["Properties"]["Environment"]["EnvironmentVariables"]
    (tmp_path / "mlcc-stage.cdk.json").write_text(variable["Value"])
    assembly = f"assembly-{PIPELINE_STACK}-Fleet-prod-euw1"
    shutil.copytree(Path(fleet[1].directory) / assembly, tmp_path / assembly)
    command = shlex.split(_buildspec(project)["phases"]["build"]["commands"][-1])
    monkeypatch.chdir(tmp_path)
    assert main([*command[1:], "--endpoint-url", moto_s3, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    found = {f["subject"]: f for f in report["findings"]}
    staged = f"s3://mlcc-models-prod-{PROD_ACCOUNT}-eu-west-1/models/mlcc-chat/qwen3-8b-sft/"
    assert (found[staged]["status"], found[staged]["check"]) == ("blocker", "model")
    bootstrap = f"/cdk-bootstrap/hnb659fds/version in aws://{PROD_ACCOUNT}/eu-west-1"
    assert found[bootstrap]["status"] == "blocker"


def test_the_pipeline_stack_needs_an_explicit_environment() -> None:
    import aws_cdk as cdk
    from aws_cdk import pipelines

    from mlcc_constructs.aws.serving_fleet import ServingFleet, ServingFleetProps

    stack = cdk.Stack(cdk.App(), "NoEnv")
    with pytest.raises(MlccError) as raised:
        ServingFleet(
            stack,
            "Fleet",
            props=ServingFleetProps(
                source=pipelines.CodePipelineSource.git_hub("acme/serving", "main"),
                stages=stages(),
                waves=("test", "prod"),
                deployments=(),
                models={},
            ),
        )
    assert [str(p) for p in raised.value.problems] == [
        "NoEnv: the pipeline's stack needs an explicit account and region (fix: pass "
        "env=cdk.Environment(account=..., region=...) to its stack)"
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"target": "hyperpod-eks"},
            "fleet:/stages/dev/deployments/qwen3-8b/target: stage 'dev': deployment 'qwen3-8b' "
            "runs on SageMaker HyperPod, and a fleet stage has no HyperPod cluster (got "
            "'hyperpod-eks'; fix: serve it on eks in a fleet, or deploy it with the "
            "single-environment app)",
        ),
        (
            {"compute": {"instance_type": "ml.nope"}},
            "fleet:/stages/dev/context/reference_deployments/0:/compute/instance_type: unknown "
            "instance type (got 'ml.nope'; allowed: the types in "
            "mlcc_constructs/data/instance_catalog.json; fix: add it to the catalog)",
        ),
    ],
)
def test_a_deployment_a_stage_cannot_serve_is_refused_in_the_stage(
    change: dict[str, Any], expected: str
) -> None:
    import aws_cdk as cdk

    from tests._fleet import DEPLOYMENT

    with pytest.raises(MlccError) as raised:
        build_fleet(cdk.App(context=CONTEXT), deployments=({**DEPLOYMENT, **change},))
    assert [str(p) for p in raised.value.problems] == [expected]


def test_the_pipeline_acknowledgements_leave_a_wildcard_of_another_service_a_finding() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from cdk_nag import AwsSolutionsChecks

    from mlcc_constructs.aws._pipeline_findings import acknowledge_pipeline_findings

    app = cdk.App()
    stack = cdk.Stack(app, "S")
    role = iam.Role(stack, "R", assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"))
    role.add_to_policy(
        iam.PolicyStatement(actions=["logs:CreateLogStream"], resources=["arn:aws:logs:*"])
    )
    table = "arn:aws:dynamodb:us-east-1:111111111111:table/*"
    role.add_to_policy(iam.PolicyStatement(actions=["dynamodb:GetItem"], resources=[table]))
    acknowledge_pipeline_findings(stack)
    report = AwsSolutionsChecks(app).validate_scope(app)
    assert [v.rule_name for v in report.violations] == [f"AwsSolutions-IAM5[Resource::{table}]"]
