"""The app's settings from its CDK context, as plain data: where it deploys (profile, account,
region, availability zones, admin roles, API endpoint networks), the GPU pool's limit and
maintenance window, the VPC's egress (NAT gateways, the ECR pull through cache's secrets).

``cdk.json`` holds the defaults; ``cdk synth -c profile=prod -c account=... -c region=...``
overrides them. Each reader takes ``get`` (a context key -> its value: ``app.node.
try_get_context``) and reports every bad value at once, naming the context key, the value, what
is allowed and how to fix it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.platform.buckets import check_environment
from mlcc_constructs.core.platform.cluster_access import admin_role_arns, endpoint_cidrs
from mlcc_constructs.core.platform.context_values import context_source, decode_context
from mlcc_constructs.core.platform.gpu_disruption import (
    default_gpu_limit,
    gpu_limit_problems,
    parse_gpu_limit,
    parse_maintenance_window,
)
from mlcc_constructs.core.platform.hyperpod import (
    GROUPS_KEY,
    IMPORT_KEY,
    HyperPodSettings,
    hyperpod_settings,
)
from mlcc_constructs.core.platform.image_cache import SECRETS_KEY, parse_pull_through_secrets
from mlcc_constructs.core.platform.load_balancing import MAX_ZONES
from mlcc_constructs.core.platform.vpc_network import (
    NAT_GATEWAYS_KEY,
    default_nat_gateways,
    nat_gateway_problems,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any

CONTEXT_KEYS = ("profile", "account", "region", "availability_zones")
# Optional lists (cdk.json list, or comma-separated with -c); empty when unset.
ACCESS_KEYS = ("admin_role_arns", "endpoint_public_cidrs")
_WHERE = "CDK context (cdk.json or -c)"
_MIN_ZONES = 2  # EKS needs subnets in at least two availability zones

ContextGetter = Callable[[str], Any]
"""A context key -> its value (``None`` when unset): ``app.node.try_get_context``."""


def _zones(value: object) -> tuple[str, ...]:
    # `-c availability_zones=a,b` arrives as a string; cdk.json holds a list.
    value = decode_context(value, "availability_zones")
    if isinstance(value, str):
        return tuple(zone.strip() for zone in value.split(",") if zone.strip())
    if isinstance(value, list):
        return tuple(str(zone) for zone in value)
    return ()


def _zone_problems(zones: tuple[str, ...], region: str) -> list[Problem]:
    if len(zones) > MAX_ZONES and len(set(zones)) == len(zones):
        return [
            Problem(
                message=f"the cluster's VPC has load balancer subnets for {MAX_ZONES} zones at "
                "most (REFERENCE_CIDRS)",
                where=_WHERE,
                pointer="/availability_zones",
                value=",".join(zones),
                allowed=f"{_MIN_ZONES} to {MAX_ZONES} zones of region {region}",
                fix=f"name {MAX_ZONES} zones or fewer: -c availability_zones="
                + ",".join(zones[:MAX_ZONES]),
            )
        ]
    pattern = re.compile(rf"^{re.escape(region)}[a-z]$")
    if len(zones) >= _MIN_ZONES and len(set(zones)) == len(zones):
        bad = [zone for zone in zones if not pattern.match(zone)]
        if not bad:
            return []
    return [
        Problem(
            message=f"availability_zones must name at least {_MIN_ZONES} distinct zones "
            f"of region {region}",
            where=_WHERE,
            pointer="/availability_zones",
            value=",".join(zones),
            allowed=f"{region}a, {region}b, ... (the zones your account has in {region})",
            fix=f"pass -c availability_zones={region}a,{region}b or edit cdk.json",
        )
    ]


@dataclass(frozen=True, kw_only=True)
class AppEnvironment:
    """Where the app's stacks deploy: ``mlcc-<profile>-*`` stacks in ``account``/``region``."""

    profile: str
    account: str
    region: str
    availability_zones: tuple[str, ...]
    admin_role_arns: tuple[str, ...] = ()
    """IAM roles granted cluster-admin through EKS access entries."""
    endpoint_public_cidrs: tuple[str, ...] = ()
    """Networks that reach the public API endpoint; empty: the endpoint is private."""

    def stack_name(self, suffix: str) -> str:
        """``mlcc-<profile>-<suffix>``, e.g. ``mlcc-dev-eks-cluster``."""
        return f"mlcc-{self.profile}-{suffix}"


GPU_LIMIT_KEY = "gpu_limit"
MAINTENANCE_WINDOW_KEY = "gpu_maintenance_window"


@dataclass(frozen=True, kw_only=True)
class GpuPoolSettings:
    """The GPU NodePool's context values: ``gpu_limit`` (default: the deployments' max replicas
    x GPUs per pod) and ``gpu_maintenance_window`` (default: none, drift never replaces a
    node)."""

    gpu_limit: int
    maintenance_window: str | None = None


def read_gpu_pool(get: ContextGetter, demand: tuple[tuple[int, int], ...]) -> GpuPoolSettings:
    """Read and check ``gpu_limit`` and ``gpu_maintenance_window``; ``demand`` holds
    ``(max replicas, GPUs per pod)`` of the deployments on the pool."""
    problems: list[Problem] = []
    limit: int | None = None
    try:
        limit = parse_gpu_limit(get(GPU_LIMIT_KEY), where=_WHERE)
    except MlccError as error:
        problems.extend(error.problems)
    if limit is not None:
        problems.extend(gpu_limit_problems(limit, demand, where=_WHERE))
    window = get(MAINTENANCE_WINDOW_KEY) or None
    try:
        parse_maintenance_window(window, where=_WHERE, pointer=f"/{MAINTENANCE_WINDOW_KEY}")
    except MlccError as error:
        problems.extend(error.problems)
    raise_if_any(problems)
    return GpuPoolSettings(
        gpu_limit=default_gpu_limit(demand) if limit is None else limit,
        maintenance_window=window,
    )


@dataclass(frozen=True, kw_only=True)
class EgressSettings:
    """The cluster VPC's egress context values: ``nat_gateways`` (default: 1 for a dev profile,
    one per zone otherwise) and ``ecr_pull_through_secrets`` (upstream registry -> the existing
    Secrets Manager secret its pull through cache rule authenticates with; ``None`` when the
    context does not set it: no pull through cache, images come from their registries)."""

    nat_gateways: int
    pull_through_secrets: Mapping[str, str] | None


def read_egress(get: ContextGetter, environment: AppEnvironment) -> EgressSettings:
    """Read and check ``nat_gateways`` and ``ecr_pull_through_secrets``; every problem at
    once."""
    zones = len(environment.availability_zones)
    value = get(NAT_GATEWAYS_KEY)
    problems = [] if value is None else nat_gateway_problems(value, zones=zones, where=_WHERE)
    given = get(SECRETS_KEY)
    secrets, secret_problems = (
        parse_pull_through_secrets(
            given, account=environment.account, region=environment.region, where=_WHERE
        )
        if given is not None
        else ({}, [])
    )
    raise_if_any([*problems, *secret_problems])
    default = default_nat_gateways(environment.profile, zones)
    assert default is not None  # the app's zones are known
    return EgressSettings(
        nat_gateways=default if value is None else int(value),
        pull_through_secrets=MappingProxyType(secrets) if given is not None else None,
    )


def read_environment(get: ContextGetter) -> AppEnvironment:
    """Read and check ``profile``, ``account`` and ``region`` from the app's context."""
    values: dict[str, object] = {}
    problems: list[Problem] = []
    for key in CONTEXT_KEYS:
        value = get(key)
        if value is None:
            problems.append(
                Problem(
                    message=f"missing context value {key!r}",
                    where=_WHERE,
                    pointer=f"/{key}",
                    fix=f'set "{key}" under "context" in cdk.json or pass -c {key}=VALUE',
                )
            )
        else:
            values[key] = value
    if problems:
        raise MlccError(problems)
    profile, account, region = (str(values[key]) for key in ("profile", "account", "region"))
    zones: tuple[str, ...] | None = None
    try:
        zones = _zones(values["availability_zones"])
    except MlccError as error:
        problems.extend(error.problems)
    try:
        check_environment(account=account, region=region, profile=profile)
    except MlccError as error:
        problems.extend(
            dataclasses.replace(
                problem,
                where=_WHERE,
                fix=problem.fix or f"pass -c {problem.pointer.lstrip('/')}=VALUE or edit cdk.json",
            )
            for problem in error.problems
        )
    if zones is not None:
        problems.extend(_zone_problems(zones, region))
    access: dict[str, tuple[str, ...]] = {}
    for key, parse in zip(ACCESS_KEYS, (admin_role_arns, endpoint_cidrs), strict=True):
        raw = get(key)
        try:
            access[key] = parse(raw, where=context_source(raw, key, otherwise=_WHERE), key=key)
        except MlccError as error:
            problems.extend(error.problems)
    raise_if_any(problems)
    return AppEnvironment(
        profile=profile,
        account=account,
        region=region,
        availability_zones=zones or (),
        admin_role_arns=access["admin_role_arns"],
        endpoint_public_cidrs=access["endpoint_public_cidrs"],
    )


def read_hyperpod(get: ContextGetter, environment: AppEnvironment) -> HyperPodSettings | None:
    """The app's HyperPod settings: ``hyperpod_instance_groups`` (create) or
    ``hyperpod_cluster_name`` (import); ``None``: the app has no HyperPod stacks."""
    return hyperpod_settings(get(GROUPS_KEY), get(IMPORT_KEY), profile=environment.profile)
