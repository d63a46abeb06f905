"""A serving fleet's shape: its stages (one environment each: account, region, profile), the
waves they deploy in, and what a stage may set for itself.

A fleet declares its deployments once; every stage serves them. A stage differs from the
others only where environments legitimately differ (:data:`STAGE_OVERRIDES`: the instance
types its region offers, its replica bounds, its hostnames, certificates and API key secret;
:data:`STAGE_CONTEXT`: its GPU capacity, admins and egress). Anything else a stage sets is
refused, naming the stage and the field. The rules here are plain functions over the
dataclasses below; :class:`~mlcc_constructs.aws.serving_fleet.ServingFleet` calls them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlcc_constructs.core.support.errors import Problem, raise_if_any

WHERE = "fleet"
"""Where a fleet's problems point: ``fleet:/stages/<name>/...``."""

STAGE_OVERRIDES: tuple[str, ...] = (
    "/compute/instance_type",
    "/compute/instance_types",
    "/scaling/replicas",
    "/scaling/autoscaling/min_replicas",
    "/scaling/autoscaling/max_replicas",
    "/endpoint/hostname",
    "/endpoint/certificate_arn",
    "/endpoint/hosted_zone_id",
    "/endpoint/api_key_secret",
)
"""The deployment fields (JSON pointers into a deployment spec) a stage may set for itself:
what its region offers (instance types), its capacity (replica bounds) and its names and
credentials (hostname, certificate, hosted zone, API key secret: per account and region)."""

STAGE_CONTEXT: tuple[str, ...] = (
    "gpu_limit",
    "gpu_maintenance_window",
    "admin_role_arns",
    "endpoint_public_cidrs",
    "nat_gateways",
)
"""The app context keys (``cdk.json``) a stage may set for itself: its GPU capacity and
maintenance window, its cluster admins and API endpoint networks, its NAT gateways."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$")
_NAME_ALLOWED = "a letter, then letters, digits and '-'; at most 40 characters"
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(?P<account>[0-9]{12}):role/[\w+=,.@/-]{1,512}$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")


@dataclass(frozen=True, kw_only=True)
class CheckNetwork:
    """A VPC of the pipeline's account and region that routes to a stage's internal load
    balancer (peering, Transit Gateway, or the stage's own VPC when the stage is in the
    pipeline's account and region): its endpoint check runs there. CodeBuild joins a VPC of
    its own account and region only, so a stage in another account needs such a route."""

    vpc_id: str
    """``vpc-...``."""
    subnet_ids: tuple[str, ...]
    """Private subnets of that VPC the check runs in (at least one)."""
    availability_zones: tuple[str, ...]
    """The zone of each subnet, in the same order."""


@dataclass(frozen=True, kw_only=True)
class FleetStage:
    """One environment of a fleet: a ``cdk.Stage`` deployed by the pipeline in its wave."""

    name: str
    """The stage's name (its ``cdk.Stage`` id and pipeline stage): a letter, then letters,
    digits and ``-``."""
    wave: str
    """The wave it deploys in (one of the fleet's ``waves``)."""
    account: str
    """Its AWS account (12 digits), bootstrapped with ``cdk bootstrap --trust <pipeline
    account>``."""
    region: str
    """Its AWS region."""
    profile: str
    """Its mlcc profile: stack names ``mlcc-<profile>-*`` and bucket names."""
    availability_zones: tuple[str, ...]
    """Its cluster's availability zones (at least two, in ``region``)."""
    check_role_arn: str
    """A role in the stage's account the pre and post steps assume: read-only for ``mlcc
    preflight``, plus writing the stage's models bucket (``mlcc model promote``) and reading
    its API key secret (the endpoint check). The pipeline's steps may assume this role only."""
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per deployment name: JSON pointer (one of :data:`STAGE_OVERRIDES`) -> value. Default:
    none (the fleet's deployments as declared)."""
    context: Mapping[str, Any] = field(default_factory=dict)
    """App context keys (one of :data:`STAGE_CONTEXT`) -> value. Default: none."""
    check_network: CheckNetwork | None = None
    """Where the endpoint check runs when a deployment's load balancer is internal. Default:
    none (refused for a stage with an internal endpoint)."""


@dataclass(frozen=True, kw_only=True)
class FleetShape:
    """The stages and waves of a fleet (``pipeline_account``/``pipeline_region``: where the
    pipeline runs; ``approval_waves``: waves a manual approval guards)."""

    stages: tuple[FleetStage, ...]
    waves: tuple[str, ...]
    pipeline_account: str
    pipeline_region: str
    approval_waves: tuple[str, ...] = ()


def stage_pointer(stage: FleetStage, rest: str = "") -> str:
    """``/stages/<name><rest>``: where a stage's problems point."""
    return f"/stages/{stage.name}{rest}"


def shape_problems(shape: FleetShape) -> list[Problem]:
    """The fleet's stages and waves: names well formed and unique, every stage in a declared
    wave, every wave holding a stage, one stage per environment (account, region, profile),
    approvals on declared waves, and each stage's role in its own account."""
    problems: list[Problem] = []
    if not shape.stages:
        problems.append(
            Problem(message="a fleet needs at least one stage", where=WHERE, pointer="/stages")
        )
    for index, wave in enumerate(shape.waves):
        if not _NAME.match(wave):
            problems.append(_bad_name(wave, f"/waves/{index}"))
        if shape.waves.index(wave) != index:
            problems.append(
                Problem(message=f"wave {wave!r} is declared twice", where=WHERE, pointer="/waves")
            )
        if not any(stage.wave == wave for stage in shape.stages):
            problems.append(
                Problem(
                    message=f"wave {wave!r} holds no stage",
                    where=WHERE,
                    pointer=f"/waves/{index}",
                    fix="give it a stage or drop it",
                )
            )
    for wave in shape.approval_waves:
        if wave not in shape.waves:
            problems.append(
                Problem(
                    message="a manual approval guards a wave the fleet does not have",
                    where=WHERE,
                    pointer="/approval_waves",
                    value=wave,
                    allowed=", ".join(shape.waves),
                )
            )
    seen: dict[str, FleetStage] = {}
    places: dict[tuple[str, str, str], str] = {}
    for stage in shape.stages:
        problems.extend(_stage_problems(stage, shape.waves))
        if stage.name.lower() in seen:
            problems.append(
                Problem(
                    message=f"stage name {stage.name!r} is taken (names are compared without "
                    "case: CloudFormation and CodePipeline names)",
                    where=WHERE,
                    pointer=stage_pointer(stage, "/name"),
                )
            )
        seen[stage.name.lower()] = stage
        place = (stage.account, stage.region, stage.profile)
        if place in places:
            problems.append(
                Problem(
                    message=f"stage {stage.name!r} deploys to the environment of stage "
                    f"{places[place]!r} (account {stage.account}, region {stage.region}, "
                    f"profile {stage.profile}): their stacks and buckets would be one",
                    where=WHERE,
                    pointer=stage_pointer(stage, "/profile"),
                    fix="give one of them another profile, account or region",
                )
            )
        places[place] = stage.name
    return problems


def _bad_name(value: str, pointer: str) -> Problem:
    return Problem(
        message="not a stage or wave name",
        where=WHERE,
        pointer=pointer,
        value=value,
        allowed=_NAME_ALLOWED,
    )


def _stage_problems(stage: FleetStage, waves: Sequence[str]) -> list[Problem]:
    problems: list[Problem] = []
    if not _NAME.match(stage.name):
        problems.append(_bad_name(stage.name, stage_pointer(stage, "/name")))
    if stage.wave not in waves:
        problems.append(
            Problem(
                message=f"stage {stage.name!r} is in a wave the fleet does not have",
                where=WHERE,
                pointer=stage_pointer(stage, "/wave"),
                value=stage.wave,
                allowed=", ".join(waves),
            )
        )
    role = _ROLE_ARN.match(stage.check_role_arn)
    if role is None or role.group("account") != stage.account:
        problems.append(
            Problem(
                message=f"stage {stage.name!r}: the check role is not a role of the stage's "
                f"account {stage.account}",
                where=WHERE,
                pointer=stage_pointer(stage, "/check_role_arn"),
                value=stage.check_role_arn,
                allowed=f"arn:aws:iam::{stage.account}:role/<name>",
            )
        )
    for name, fields in sorted(stage.overrides.items()):
        for pointer in sorted(fields):
            if pointer not in STAGE_OVERRIDES:
                problems.append(
                    Problem(
                        message=f"stage {stage.name!r} may not set {pointer} of deployment "
                        f"{name!r}: every stage serves the fleet's deployment as declared",
                        where=WHERE,
                        pointer=stage_pointer(stage, f"/overrides/{name}{pointer}"),
                        allowed=", ".join(STAGE_OVERRIDES),
                        fix="change the fleet's deployment (every stage), or drop the override",
                    )
                )
    for key in sorted(stage.context):
        if key not in STAGE_CONTEXT:
            problems.append(
                Problem(
                    message=f"stage {stage.name!r} may not set context {key!r}",
                    where=WHERE,
                    pointer=stage_pointer(stage, f"/context/{key}"),
                    allowed=", ".join(STAGE_CONTEXT),
                    fix="set it in the fleet's context (every stage), or drop it",
                )
            )
    if stage.check_network is not None:
        problems.extend(_network_problems(stage, stage.check_network))
    return problems


def mismatch(
    pattern: re.Pattern[str], value: str, *, message: str, pointer: str, allowed: str
) -> list[Problem]:
    """``[]`` when ``value`` matches ``pattern``, else the one problem of the fleet's field at
    ``pointer`` saying so."""
    if pattern.match(value):
        return []
    return [Problem(message=message, where=WHERE, pointer=pointer, value=value, allowed=allowed)]


def _network_problems(stage: FleetStage, network: CheckNetwork) -> list[Problem]:
    pointer = stage_pointer(stage, "/check_network")
    problems = mismatch(
        _VPC_ID,
        network.vpc_id,
        message="not a VPC id",
        pointer=f"{pointer}/vpc_id",
        allowed="vpc-<8 to 17 hex digits>",
    )
    bad = [s for s in network.subnet_ids if not _SUBNET_ID.match(s)]
    if not network.subnet_ids or bad or len(network.subnet_ids) != len(network.availability_zones):
        problems.append(
            Problem(
                message="the check network needs one or more subnet ids, each with its zone",
                where=WHERE,
                pointer=f"{pointer}/subnet_ids",
                value=list(network.subnet_ids),
                allowed="subnet-<8 to 17 hex digits>, as many as availability_zones",
            )
        )
    return problems


def check_shape(shape: FleetShape) -> None:
    """Raise every problem of :func:`shape_problems` at once."""
    raise_if_any(shape_problems(shape))


def internal_check_problems(
    stage: FleetStage, internal: Sequence[str], *, pipeline_account: str, pipeline_region: str
) -> list[Problem]:
    """A stage whose deployments ``internal`` (their names) answer on an internal load
    balancer needs a :class:`CheckNetwork` for its endpoint check: a post step outside the
    VPC cannot reach it. (The network is in the pipeline's account and region: where the
    pipeline's CodeBuild projects run.)"""
    if not internal or stage.check_network is not None:
        return []
    same = (stage.account, stage.region) == (pipeline_account, pipeline_region)
    return [
        Problem(
            message=f"stage {stage.name!r}: deployment(s) {', '.join(internal)} answer on an "
            "internal load balancer, and the endpoint check has no network that reaches it",
            where=WHERE,
            pointer=stage_pointer(stage, "/check_network"),
            fix="set check_network to "
            + (
                "a VPC of this account and region that routes to the cluster's VPC"
                if same
                else f"a VPC of the pipeline's account {pipeline_account} in "
                f"{pipeline_region} that routes to the stage's VPC (peering or Transit "
                "Gateway)"
            )
            + ", or make the endpoint internet-facing",
        )
    ]
