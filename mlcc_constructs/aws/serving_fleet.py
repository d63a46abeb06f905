"""``ServingFleet``: one model served in several accounts and regions, delivered by a CDK
Pipelines ``CodePipeline`` in waves.

The pipeline (``aws_cdk.pipelines``, aws-cdk-lib 2.275). Facts from the CDK API reference:
``Wave`` ``pre``/``post`` steps run before/after the wave's stages (WaveOptions), a stage's
``pre``/``post`` steps and ``ManualApprovalStep`` (ShellStepProps' example), a step's
``env_from_cfn_outputs`` sets environment variables from a stage's stack outputs
(ShellStepProps), ``CodeBuildStep``'s ``vpc``/``subnet_selection`` run the build in a VPC
(default: its private subnets) (CodeBuildStepProps), ``cross_account_keys`` puts KMS keys on
the artifact buckets, needed for cross-account actions, USD 1 a month each (aws-codepipeline
README). https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.pipelines.WaveOptions.html,
.../aws-cdk-lib.pipelines.ShellStepProps.html, .../aws-cdk-lib.pipelines.CodeBuildStepProps.html,
https://pypi.org/project/aws-cdk.aws-codepipeline/.

* source -> synth: the team's synth commands, then the diff guard over every stage's stack
  templates against the stage's committed history (``mlcc diff-guard --chain``): an
  undeclared diff fails the synth step, before any stage deploys;
* then the waves in order, each stage a :class:`~mlcc_constructs.aws.serving_stage.
  ServingStage` (its buckets, cluster and served models, as the single-environment app
  builds them) with a pre step (promote the pinned model into the stage's bucket, then ``mlcc
  preflight`` for the stage) and a post step (``mlcc endpoint check`` per deployment against
  its ``EndpointUrl`` stack output, inside the check network's VPC for an internal load
  balancer). A failed step stops the pipeline before the next wave; a manual approval guards
  each wave of ``approval_waves``.

Cross account: every stage account is bootstrapped with ``cdk bootstrap --trust <pipeline
account> --cloudformation-execution-policies <policy ARN> aws://<account>/<region>`` (CDK
guide, https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping-env.html); the pipeline
encrypts its artifacts with KMS keys (``cross_account_keys=True``, rotation on) so the stage
accounts' deploy roles can read them, and CodePipeline makes a support stack with a
replication bucket per other region. The pre and post steps may assume only the stages'
check roles (``sts:AssumeRole`` on those ARNs).
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_iam as iam, pipelines
from constructs import Construct

from mlcc_constructs.aws._pipeline_findings import acknowledge_bucket, acknowledge_pipeline_findings
from mlcc_constructs.aws.serving_stage import ServingStage, ServingStageProps
from mlcc_constructs.core.platform.fleet import (
    WHERE,
    FleetShape,
    FleetStage,
    internal_check_problems,
    shape_problems,
    stage_pointer,
)
from mlcc_constructs.core.platform.fleet_pin import ModelPin, pin_problems, stage_pin_problems
from mlcc_constructs.core.platform.fleet_steps import (
    STAGE_CONTEXT_ENV,
    EndpointCheck,
    HistoryCheck,
    post_commands,
    pre_commands,
    stage_cdk_json,
    synth_commands,
)
from mlcc_constructs.core.rollout.fleet_model import fleet_problems, stage_context
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any


def _default_install() -> tuple[str, ...]:
    try:
        version = importlib.metadata.version("mlcc-constructs")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return ("python3 -m pip install mlcc-constructs",)
    return (f"python3 -m pip install mlcc-constructs=={version}",)


@dataclass(frozen=True, kw_only=True)
class ServingFleetProps:
    """What a :class:`ServingFleet` delivers, and how."""

    source: pipelines.IFileSetProducer
    """The pipeline's source, e.g. ``pipelines.CodePipelineSource.connection(repo, branch,
    connection_arn=...)``."""
    stages: tuple[FleetStage, ...]
    """Every environment, each in one of ``waves``."""
    waves: tuple[str, ...]
    """The waves, in deploy order; the stages of a wave deploy in parallel."""
    deployments: tuple[Mapping[str, Any], ...]
    """The deployments every stage serves, declared once (``mlcc render -f`` spec entries,
    without ``model.uri``, ``engine.image`` or ``engine.version``: the pin sets them)."""
    models: Mapping[str, ModelPin]
    """Deployment name -> the model version every stage serves."""
    context: Mapping[str, Any] = field(default_factory=dict)
    """App context every stage shares (``cdk.json`` keys other than the environment's and
    the deployments). Default: none."""
    stage_models: Mapping[str, Mapping[str, ModelPin]] = field(default_factory=dict)
    """Stage name -> deployment name -> the version that stage serves; refused where it
    differs from ``models``, unless the stage is ``rollout_stage``. Default: none."""
    rollout_stage: str | None = None
    """The one stage that may serve another version first. Default: none."""
    approval_waves: tuple[str, ...] = ()
    """Waves a manual approval guards (before their first stage). Default: none."""
    history_root: str = "snapshots/fleet"
    """Where the stages' stack histories are committed in the source:
    ``<history_root>/<stage>/<stack without mlcc-<profile>->/``. Default:
    ``snapshots/fleet``."""
    synth: tuple[str, ...] = (
        "npm ci",
        "python3 -m pip install -r requirements.txt",
        "npx cdk synth",
    )
    """The synth step's commands, ending in ``cdk synth``; the diff guard follows. Default:
    ``npm ci``, install ``requirements.txt``, ``npx cdk synth``."""
    install: tuple[str, ...] = field(default_factory=_default_install)
    """How the pre and post steps install the ``mlcc`` CLI. Default: pip install of this
    package's version."""


class ServingFleet(Construct):
    """A fleet's pipeline (module doc), made in ``scope``'s stack: that stack's account and
    region are the pipeline's. ``stages``: the :class:`ServingStage` of each fleet stage;
    ``pipeline``: the built ``pipelines.CodePipeline``."""

    def __init__(self, scope: Construct, construct_id: str, *, props: ServingFleetProps) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        if cdk.Token.is_unresolved(stack.account) or cdk.Token.is_unresolved(stack.region):
            raise MlccError(
                Problem(
                    message="the pipeline's stack needs an explicit account and region",
                    where=stack.node.path,
                    fix="pass env=cdk.Environment(account=..., region=...) to its stack",
                )
            )
        raise_if_any(_declaration_problems(props, stack.account, stack.region))
        self.stages: dict[str, ServingStage] = {}
        served: dict[str, Mapping[str, ModelPin]] = {}
        for stage in props.stages:
            served[stage.name] = {**props.models, **props.stage_models.get(stage.name, {})}
            context = stage_context(props.context, props.deployments, served[stage.name], stage)
            self.stages[stage.name] = ServingStage(
                self, props=ServingStageProps(stage=stage, context=context)
            )
        raise_if_any(
            problem
            for stage in props.stages
            for problem in _endpoint_problems(stage, self.stages[stage.name], stack)
        )
        checks = [
            HistoryCheck(
                template=f"{os.path.basename(built.outdir)}/{s.template_file}",
                history=f"{props.history_root}/{name}/{_history_name(built, s)}",
            )
            for name, built in self.stages.items()
            for s in built.stacks
        ]
        self.synth_step = pipelines.ShellStep(
            "Synth",
            input=props.source,
            commands=synth_commands(checks, synth=props.synth),
            primary_output_directory="cdk.out",
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            synth=self.synth_step,
            # KMS keys on the artifact buckets, so the stage accounts' roles can read them.
            cross_account_keys=True,
            enable_key_rotation=True,
        )
        for wave_name in props.waves:
            approval = (
                [pipelines.ManualApprovalStep(f"Approve-{wave_name}")]
                if wave_name in props.approval_waves
                else []
            )
            wave = self.pipeline.add_wave(wave_name, pre=approval)
            for stage in props.stages:
                if stage.wave == wave_name:
                    built = self.stages[stage.name]
                    wave.add_stage(
                        built,
                        pre=[self._pre_step(stage, built, served[stage.name], props)],
                        post=[self._post_step(stage, built, props)],
                    )
        self.pipeline.build_pipeline()
        acknowledge_pipeline_findings(self.pipeline)  # not the stages: theirs are their own
        for support in self.pipeline.pipeline.cross_region_support.values():
            acknowledge_bucket(support.replication_bucket)

    def _role_statements(self, stage: FleetStage) -> list[iam.PolicyStatement]:
        """The step may assume the stage's check role, and nothing else."""
        return [iam.PolicyStatement(actions=["sts:AssumeRole"], resources=[stage.check_role_arn])]

    def _pre_step(
        self,
        stage: FleetStage,
        built: ServingStage,
        models: Mapping[str, ModelPin],
        props: ServingFleetProps,
    ) -> pipelines.CodeBuildStep:
        return pipelines.CodeBuildStep(
            f"{stage.name}-Preflight",
            # The synth step's output (cdk.out): preflight reads the stage's cloud assembly.
            input=self.synth_step,
            install_commands=list(props.install),
            commands=pre_commands(stage, models, assembly=os.path.basename(built.outdir)),
            env={STAGE_CONTEXT_ENV: stage_cdk_json(built.context)},
            role_policy_statements=self._role_statements(stage),
        )

    def _post_step(
        self, stage: FleetStage, built: ServingStage, props: ServingFleetProps
    ) -> pipelines.CodeBuildStep:
        outputs: dict[str, cdk.CfnOutput] = {}
        checks = []
        for index, endpoint in enumerate(built.endpoints()):
            assert endpoint.url is not None  # _endpoint_problems refused a stage without one
            url_env = f"MLCC_ENDPOINT_URL_{index}"
            outputs[url_env] = endpoint.url
            spec = endpoint.deployment.prepared.spec
            checks.append(
                EndpointCheck(
                    url_env=url_env,
                    served_model_name=endpoint.deployment.prepared.served_name,
                    api_key_secret=spec.endpoint.api_key_secret,
                )
            )
        network = stage.check_network
        vpc = (
            ec2.Vpc.from_vpc_attributes(
                self,
                f"{stage.name}CheckVpc",
                vpc_id=network.vpc_id,
                availability_zones=list(network.availability_zones),
                private_subnet_ids=list(network.subnet_ids),
            )
            if network is not None
            else None
        )
        return pipelines.CodeBuildStep(
            f"{stage.name}-EndpointCheck",
            install_commands=list(props.install),
            commands=post_commands(stage, checks),
            env_from_cfn_outputs=outputs,
            role_policy_statements=self._role_statements(stage),
            vpc=vpc,
        )


def _history_name(built: ServingStage, stack: cdk.Stack) -> str:
    """``eks-cluster`` for ``mlcc-<profile>-eks-cluster``: the app's history folder names."""
    return stack.node.id.removeprefix(built.environment.stack_name(""))


def _declaration_problems(props: ServingFleetProps, account: str, region: str) -> list[Problem]:
    problems = shape_problems(
        FleetShape(
            stages=props.stages,
            waves=props.waves,
            pipeline_account=account,
            pipeline_region=region,
            approval_waves=props.approval_waves,
        )
    )
    problems += fleet_problems(props.context, props.deployments, props.models)
    for name, pin in sorted(props.models.items()):
        problems += pin_problems(pin, pointer=f"/models/{name}")
    names = {stage.name for stage in props.stages}
    if props.rollout_stage is not None and props.rollout_stage not in names:
        problems.append(
            Problem(
                message="the rollout stage is no stage of the fleet",
                where=WHERE,
                pointer="/rollout_stage",
                value=props.rollout_stage,
                allowed=", ".join(sorted(names)),
            )
        )
    for stage_name, pins in sorted(props.stage_models.items()):
        if stage_name not in names:
            problems.append(
                Problem(
                    message="models are set for a stage the fleet does not have",
                    where=WHERE,
                    pointer=f"/stage_models/{stage_name}",
                    allowed=", ".join(sorted(names)),
                )
            )
            continue
        for deployment, pin in sorted(pins.items()):
            if deployment not in props.models:
                continue  # fleet_problems names a pin of no deployment
            problems += stage_pin_problems(
                props.models[deployment],
                pin,
                stage=stage_name,
                rollout_stage=props.rollout_stage,
                deployment=deployment,
            )
    return problems


def _endpoint_problems(stage: FleetStage, built: ServingStage, stack: cdk.Stack) -> list[Problem]:
    """Each deployment has an endpoint the post step can reach."""
    problems = []
    internal = []
    for endpoint in built.endpoints():
        spec = endpoint.deployment.prepared.spec
        if endpoint.url is None:
            problems.append(
                Problem(
                    message=f"stage {stage.name!r}: deployment {spec.name!r} has no load "
                    "balancer, so its post step cannot check it",
                    where=WHERE,
                    pointer=stage_pointer(stage, f"/deployments/{spec.name}/endpoint/scheme"),
                    value=spec.endpoint.scheme,
                    allowed="internal, internet-facing",
                )
            )
        elif spec.endpoint.scheme == "internal":
            internal.append(str(spec.name))
    problems += internal_check_problems(
        stage, internal, pipeline_account=stack.account, pipeline_region=stack.region
    )
    return problems
