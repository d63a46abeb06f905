"""The app's SageMaker HyperPod cluster, from CDK context: created or imported.

Two context keys (``cdk.json``, or ``-c key=value``), at most one of them set:

``hyperpod_instance_groups``
    The stack ``mlcc-<profile>-hyperpod-cluster`` creates the ``AWS::SageMaker::Cluster``
    ``mlcc-<profile>-hyperpod`` with these instance groups: a JSON list of
    ``{"name": ..., "instance_type": "ml.<family>.<size>", "count": N, "ebs_volume_gib": G,
    "taints": [{"key": ..., "value": ..., "effect": ...}], "labels": {...}}``
    (``ebs_volume_gib`` optional, default :data:`DEFAULT_EBS_VOLUME_GIB`). The instance type is
    checked against the instance catalog (``data/instance_catalog.json``); a count is at least 1
    (HyperPod inference needs a node, and ``mlcc rollout`` never scales a group to zero).
    ``taints`` (optional) are the nodes' Kubernetes taints: default ``nvidia.com/gpu:NoSchedule``
    on a GPU instance type (:data:`~mlcc_constructs.core.platform.hyperpod_taints.GPU_TAINT`),
    which keeps the cluster's system pods off the GPU nodes while every pod requesting a GPU
    tolerates it; ``[]`` leaves the nodes untainted. ``labels`` (optional, default none) are
    extra node labels. Rules and limits: :mod:`mlcc_constructs.core.platform.hyperpod_taints`;
    a taint an IEC of the group cannot tolerate is refused at synth
    (:mod:`mlcc_constructs.core.platform.hyperpod_tolerations`).
``hyperpod_cluster_name``
    Import mode: an existing HyperPod cluster, orchestrated by the app's EKS cluster, is used
    as it is; the stack creates no cluster (it only reads the cluster's ARN at deploy time).

Neither key: the app has no HyperPod stacks, and a deployment whose objects need the HyperPod
inference operator (``hyperpod-eks``) is refused, naming both keys.

Limits are CloudFormation's ``AWS::SageMaker::Cluster`` schema (cluster and instance group
names ``^[a-zA-Z0-9](-*[a-zA-Z0-9])*$``, at most 63 characters; ``InstanceCount`` at most 6758;
``EbsVolumeConfig.VolumeSizeInGB`` 1-16384).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import InstanceType, lookup
from mlcc_constructs.core.platform.hyperpod_taints import (
    Taint,
    default_taints,
    parse_labels,
    parse_taints,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields

GROUPS_KEY = "hyperpod_instance_groups"
IMPORT_KEY = "hyperpod_cluster_name"
WHERE = "CDK context (cdk.json or -c)"
DEFAULT_EBS_VOLUME_GIB = 500  # engine images are 10-20 GB; HyperPod mounts it at /opt/sagemaker
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_NAME_RULE = "1-63 letters, digits and '-', starting and ending with a letter or digit"
_GROUP_KEYS = ("name", "instance_type", "count", "ebs_volume_gib", "taints", "labels")
_EXAMPLE = '[{"name": "inference", "instance_type": "ml.g5.12xlarge", "count": 1}]'
_MAX_COUNT = 6758
_MAX_VOLUME_GIB = 16384
# IAM role names are at most 64 characters.
_ROLE_NAME_MAX = 64
# The inference operator's execution role: the prefix the HyperPod docs name it with
# (HYPERPOD_INFERENCE_ROLE_NAME="SageMakerHyperPodInference-...",
# https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html)
# and the role pattern AWS's AmazonSageMakerHyperPodInferenceAccess lets it pass to SageMaker.
OPERATOR_ROLE_PREFIX = "SageMakerHyperPodInference-"
# The lifecycle scripts every instance group runs (ClusterLifeCycleConfig.OnCreate).
LIFECYCLE_DIR = "hyperpod-lifecycle"
ON_CREATE = "on_create.sh"


@dataclass(frozen=True, kw_only=True)
class InstanceGroup:
    """One HyperPod instance group."""

    name: str
    """The instance group name."""
    instance_type: str
    """The SageMaker instance type (``ml.g5.12xlarge``), from the catalog (its entry:
    :attr:`instance`)."""
    count: int
    """The number of instances (at least 1)."""
    ebs_volume_gib: int = DEFAULT_EBS_VOLUME_GIB
    """The extra EBS volume per instance, mounted at ``/opt/sagemaker``; default
    :data:`DEFAULT_EBS_VOLUME_GIB`."""
    taints: tuple[Taint, ...] | None = None
    """The nodes' taints; default ``None``: the instance type's
    (:func:`~mlcc_constructs.core.platform.hyperpod_taints.default_taints`, the GPU taint on a GPU
    type). ``()`` leaves the nodes untainted."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra Kubernetes labels of the nodes; default none."""

    def __post_init__(self) -> None:
        check_fields(self)
        _ = self.instance  # an unknown type is refused when the group is built

    @cached_property
    def instance(self) -> InstanceType:
        """The catalog entry of ``instance_type``, looked up once, when the group is built: what
        the taints, the capacity check and HyperPod's required components read."""
        try:
            return lookup(self.instance_type, pointer="/instance_type")
        except MlccError as error:
            raise MlccError(
                dataclasses.replace(problem, where="InstanceGroup") for problem in error.problems
            ) from None

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        """The taints the nodes carry: ``taints``, else the instance type's default."""
        return default_taints(self.instance) if self.taints is None else self.taints


@dataclass(frozen=True, kw_only=True)
class HyperPodSettings:
    """How the app gets its HyperPod cluster.

    Fields:

    ``cluster_name``: the HyperPod cluster's name (created: ``mlcc-<profile>-hyperpod``;
    imported: the context value).
    ``groups``: the instance groups to create; empty in import mode.
    ``imported``: ``True`` when an existing cluster is used and none is created.
    ``where``, ``pointer``: where the groups are declared, what a problem of a group names
    (``<where>:<pointer>/<index>/...``); default the app's context (``cdk.json``,
    ``/context/hyperpod_instance_groups``); ``HyperPodCluster`` names its props.
    """

    cluster_name: str
    groups: tuple[InstanceGroup, ...]
    imported: bool
    where: str = "cdk.json"
    pointer: str = f"/context/{GROUPS_KEY}"

    @property
    def groups_label(self) -> str:
        """How a message names the groups: the context key, or the construct's field."""
        return GROUPS_KEY if self.pointer.endswith(GROUPS_KEY) else f"{self.where}.groups"

    def group_pointer(self, index: int, *parts: object) -> str:
        """The JSON pointer of group ``index`` (and ``parts`` under it)."""
        return self.pointer + json_pointer(index, *parts)

    @property
    def instance_types(self) -> tuple[str, ...]:
        """The instance types of the created groups, sorted, each once."""
        return tuple(sorted({group.instance_type for group in self.groups}))


def lifecycle_dir() -> Path:
    """The folder of the lifecycle scripts (shipped in ``mlcc_constructs/data``)."""
    return data_path(LIFECYCLE_DIR)


def lifecycle_hash() -> str:
    """sha256 over ``name NUL sha256(bytes) LF`` of every lifecycle script, sorted by name: the
    scripts' S3 prefix
    (:func:`mlcc_constructs.core.adapters.s3_layout.hyperpod_lifecycle_prefix`)."""
    digest = hashlib.sha256()
    for path in sorted(lifecycle_dir().iterdir()):
        if path.is_file():
            file_digest = hashlib.sha256(path.read_bytes()).hexdigest()
            digest.update(f"{path.name}\0{file_digest}\n".encode())
    return digest.hexdigest()


def created_cluster_name(profile: str) -> str:
    """``mlcc-<profile>-hyperpod``: the name of the cluster the app creates."""
    return f"mlcc-{profile}-hyperpod"


def operator_role_name(profile: str, region: str) -> str:
    """``SageMakerHyperPodInference-<profile>-<region>``: the inference operator's execution
    role (IAM names are global: the region keeps two regions of one profile apart)."""
    name = f"{OPERATOR_ROLE_PREFIX}{profile}-{region}"
    if len(name) > _ROLE_NAME_MAX:
        raise MlccError(
            Problem(
                message=f"the inference operator's role name is longer than {_ROLE_NAME_MAX} "
                "characters",
                where=WHERE,
                pointer="/profile",
                value=profile,
                fix="use a shorter profile",
            )
        )
    return name


def hyperpod_settings(
    groups_value: object, import_value: object, *, profile: str
) -> HyperPodSettings | None:
    """The settings of the context values of ``hyperpod_instance_groups`` and
    ``hyperpod_cluster_name`` (``None`` when neither is set); every problem raised at once."""
    if groups_value is not None and import_value is not None:
        raise MlccError(
            Problem(
                message=f"{GROUPS_KEY} and {IMPORT_KEY} are both set: the app either creates a "
                "HyperPod cluster or imports one",
                where=WHERE,
                pointer=f"/{IMPORT_KEY}",
                value=import_value,
                fix=f"remove {IMPORT_KEY} to create the cluster, or remove {GROUPS_KEY} to "
                "import it",
            )
        )
    if import_value is not None:
        if not isinstance(import_value, str) or not _NAME.match(import_value):
            raise MlccError(
                Problem(
                    message="not a HyperPod cluster name",
                    where=WHERE,
                    pointer=f"/{IMPORT_KEY}",
                    value=import_value,
                    allowed=_NAME_RULE,
                    fix=f"pass -c {IMPORT_KEY}=<name of the existing cluster> or edit cdk.json",
                )
            )
        return HyperPodSettings(cluster_name=import_value, groups=(), imported=True)
    if groups_value is None:
        return None
    return HyperPodSettings(
        cluster_name=created_cluster_name(profile),
        groups=instance_groups(groups_value),
        imported=False,
    )


def instance_groups(value: object) -> tuple[InstanceGroup, ...]:
    """The instance groups of the context value (a JSON list, or its text with ``-c``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise MlccError(
                _group_problem(f"is not JSON ({error.msg})", "", value, _EXAMPLE)
            ) from None
    if not isinstance(value, list) or not value:
        raise MlccError(
            _group_problem("must be a non-empty list of instance groups", "", value, _EXAMPLE)
        )
    problems: list[Problem] = []
    groups: list[InstanceGroup] = []
    names: dict[str, int] = {}
    for index, entry in enumerate(value):
        found = _group(entry, index, problems)
        if found is None:
            continue
        if found.name in names:
            problems.append(
                _group_problem(
                    f"instance group name {found.name!r} is used twice (also at index "
                    f"{names[found.name]})",
                    json_pointer(index, "name"),
                    found.name,
                    "a name unique in the cluster",
                )
            )
            continue
        names[found.name] = index
        groups.append(found)
    raise_if_any(problems)
    return tuple(groups)


def _group(entry: object, index: int, problems: list[Problem]) -> InstanceGroup | None:
    if not isinstance(entry, Mapping):
        problems.append(
            _group_problem(
                "an instance group must be an object",
                json_pointer(index),
                entry,
                "name, instance_type, count and optionally ebs_volume_gib, taints and labels",
            )
        )
        return None
    before = len(problems)
    for key in sorted(set(entry) - set(_GROUP_KEYS)):
        problems.append(
            _group_problem(
                f"unknown key {key!r}",
                json_pointer(index, key),
                entry[key],
                ", ".join(_GROUP_KEYS),
            )
        )
    for key in _GROUP_KEYS[:3]:
        if key not in entry:
            problems.append(
                _group_problem(f"missing {key!r}", json_pointer(index), dict(entry), key)
            )
    name = entry.get("name")
    if "name" in entry and (not isinstance(name, str) or not _NAME.match(name)):
        problems.append(
            _group_problem(
                "not an instance group name", json_pointer(index, "name"), name, _NAME_RULE
            )
        )
    instance_type = _instance_type(entry, index, problems)
    count = _integer(entry, index, "count", 1, _MAX_COUNT, problems)
    volume = _integer(entry, index, "ebs_volume_gib", 1, _MAX_VOLUME_GIB, problems)

    def report(message: str, pointer: str, value: object, allowed: str) -> Problem:
        return _group_problem(message, json_pointer(index) + pointer, value, allowed)

    taints = parse_taints(entry["taints"], report, problems) if "taints" in entry else None
    labels = parse_labels(entry["labels"], report, problems) if "labels" in entry else {}
    if len(problems) > before:
        return None
    assert isinstance(name, str) and instance_type is not None and count is not None
    return InstanceGroup(
        name=name,
        instance_type=instance_type,
        count=count,
        ebs_volume_gib=DEFAULT_EBS_VOLUME_GIB if volume is None else volume,
        taints=taints,
        labels=labels,
    )


def _instance_type(entry: Mapping[str, object], index: int, problems: list[Problem]) -> str | None:
    if "instance_type" not in entry:
        return None
    value = entry["instance_type"]
    pointer = json_pointer(index, "instance_type")
    if not isinstance(value, str) or not value.startswith("ml."):
        problems.append(
            _group_problem(
                "a HyperPod instance type is a SageMaker instance type (ml.<family>.<size>)",
                pointer,
                value,
                "the types in mlcc_constructs/data/instance_catalog.json",
                f"use ml.{value}" if isinstance(value, str) and value else "",
            )
        )
        return None
    try:
        return lookup(value).name
    except MlccError as error:
        (problem,) = error.problems
        problems.append(
            _group_problem(problem.message, pointer, value, problem.allowed, problem.fix)
        )
        return None


def _integer(
    entry: Mapping[str, object],
    index: int,
    key: str,
    low: int,
    high: int,
    problems: list[Problem],
) -> int | None:
    if key not in entry:
        return None
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(
            _group_problem(
                f"{key} must be a whole number from {low} to {high}",
                json_pointer(index, key),
                value,
                f"{low}-{high}",
            )
        )
        return None
    return value


def _group_problem(
    message: str, pointer: str, value: object, allowed: str, fix: str = ""
) -> Problem:
    return Problem(
        message=message,
        where=WHERE,
        pointer=f"/{GROUPS_KEY}{pointer}",
        value=value,
        allowed=allowed,
        fix=fix or f"edit {GROUPS_KEY} in cdk.json (or pass -c {GROUPS_KEY}='[...]')",
    )


def coverage_problems(
    settings: HyperPodSettings | None, needs: Sequence[tuple[str, str]]
) -> list[Problem]:
    """The problems of the deployments that need the HyperPod cluster (``(where declared,
    instance type)`` pairs): none is possible without HyperPod settings, and a created
    cluster needs an instance group of each deployment's instance type (an imported cluster's
    groups are not known offline)."""
    if not needs:
        return []
    if settings is None:
        return [
            Problem(
                message="the deployment runs on SageMaker HyperPod, but the app has no HyperPod "
                "cluster",
                where=where,
                fix=f"set {GROUPS_KEY} (the app creates the cluster) or {IMPORT_KEY} (an "
                "existing cluster) in cdk.json",
            )
            for where, _ in needs
        ]
    if settings.imported:
        return []
    return [
        Problem(
            message=f"no instance group of {settings.groups_label} runs {instance_type}, so "
            "the deployment's pods could never schedule",
            where=where,
            pointer="/compute/instance_type",
            value=instance_type,
            allowed=", ".join(settings.instance_types),
            fix=f"add an instance group of {instance_type} to {settings.groups_label}, or "
            "change the deployment's instance_type",
        )
        for where, instance_type in needs
        if instance_type not in settings.instance_types
    ]
