"""The plain AWS facts preflight's checks read, as the shell (``mlcc_constructs/ops/
preflight.py``) gathers them with read-only calls. Each looked-up fact is its value, ``None``
when AWS says it does not exist, or :class:`Unavailable` when the call could not tell (access
denied, the API not available in the region): a check turns that into ``could-not-check``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TypeAlias, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Unavailable:
    """A fact the call could not read: ``reason`` (e.g. ``AccessDeniedException: ...``)."""

    reason: str


Looked: TypeAlias = T | Unavailable | None
"""A fact as looked up: its value, ``None`` (does not exist) or :class:`Unavailable`."""


@dataclass(frozen=True, kw_only=True)
class Quota:
    """A Service Quotas quota: its ``name`` as the API returns it, its ``value`` and its
    ``code``; ``in_use``: how much of it is used now (the quota's CloudWatch usage metric, the
    most over the last hour; ``None`` when not read, ``in_use_note`` saying why)."""

    name: str
    value: float
    code: str = ""
    in_use: float | None = None
    in_use_note: str = ""


@dataclass(frozen=True, kw_only=True)
class Reservation:
    """An EC2 capacity reservation (or Capacity Block) of the region: its ``instance_type``,
    ``zone``, ``state``, ``available`` instances and ``kind`` (``default`` or
    ``capacity-block``)."""

    instance_type: str
    zone: str
    state: str
    available: int
    total: int
    kind: str = "default"


@dataclass(frozen=True, kw_only=True)
class Certificate:
    """An ACM certificate's metadata: ``status`` (``ISSUED``, ``PENDING_VALIDATION``, ...),
    ``not_after`` (``None`` before it is issued), and the names it covers."""

    status: str
    not_after: datetime | None
    domain_name: str
    alternative_names: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class StagedObject:
    """An object under a model's prefix: its ``key`` relative to the prefix and ``size``."""

    key: str
    size: int


def _frozen(value: Mapping[str, T]) -> Mapping[str, T]:
    return MappingProxyType(dict(value))


@dataclass(frozen=True, kw_only=True)
class AccountFacts:
    """Every fact gathered for one :class:`~mlcc_constructs.core.preflight.needs.AppNeeds`.

    ``bootstrap_version``: the CDK bootstrap version in the environment (SSM parameter).
    ``bootstrap_required``: the version the synthesised app needs (``None``: no cdk.out).
    ``ec2_quotas``: quota code -> the quota. ``hyperpod_quotas``: ml. instance type -> its
    cluster quota. ``offerings``: instance type (EC2 name) -> the zones offering it.
    ``reservations``: the region's capacity reservations. ``addon_versions``: add-on name ->
    the builds available for the Kubernetes version. ``secrets``: name or ARN -> its ARN.
    ``certificates``: ARN -> metadata. ``hosted_zones``: zone id -> its name (``example.com.``).
    ``models``: ``s3://bucket/prefix/`` -> the objects under it (``None``: the bucket does not
    exist). ``roles``: role ARN -> the role's ARN as IAM returns it. ``cluster_version``: the
    named EKS cluster's Kubernetes version (EKS DescribeCluster).
    """

    bootstrap_version: Looked[int] = None
    bootstrap_required: int | None = None
    ec2_quotas: Mapping[str, Looked[Quota]] = field(default_factory=dict)
    hyperpod_quotas: Mapping[str, Looked[Quota]] = field(default_factory=dict)
    offerings: Mapping[str, Looked[tuple[str, ...]]] = field(default_factory=dict)
    reservations: Looked[tuple[Reservation, ...]] = ()
    addon_versions: Mapping[str, Looked[tuple[str, ...]]] = field(default_factory=dict)
    secrets: Mapping[str, Looked[str]] = field(default_factory=dict)
    certificates: Mapping[str, Looked[Certificate]] = field(default_factory=dict)
    hosted_zones: Mapping[str, Looked[str]] = field(default_factory=dict)
    models: Mapping[str, Looked[tuple[StagedObject, ...]]] = field(default_factory=dict)
    roles: Mapping[str, Looked[str]] = field(default_factory=dict)
    cluster_version: Looked[str] = None

    def __post_init__(self) -> None:
        for name in (
            "ec2_quotas",
            "hyperpod_quotas",
            "offerings",
            "addon_versions",
            "secrets",
            "certificates",
            "hosted_zones",
            "models",
            "roles",
        ):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
