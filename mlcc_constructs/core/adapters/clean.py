"""Deleting a project's adapters and full fine-tunes (``mlcc adapter clean``; seed
lora-delivery §2: "deletes this project's adapter folder under every base and its full
fine-tunes; never base weights or another project's adapters").

Pure: :mod:`mlcc_constructs.ops.clean` lists the project's prefixes and performs the plan.

**Order, so an interrupted clean leaves a consistent state.** A promotion writes a version's
files first and its record last, so "a version with a record is complete" holds for every
reader (``promote`` finds it ``unchanged``, a delivery loads it). A clean is the mirror image:
each unit's record is deleted first, then its files. Interrupted anywhere, every version that
still has its record still has all its files; a version left without a record is an
``incomplete`` one that a new promotion completes and a rerun of the clean deletes. The same
holds for a full fine-tune and its record.

**Versioned buckets.** Deleting a key of a versioned bucket only adds a delete marker: the
bytes stay as a noncurrent version (restorable, and billed) until deleted by version id.
:func:`purge_order` deletes every object version before any delete marker, so an interrupted
purge never makes an old version current again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mlcc_constructs.core.adapters import path_names, s3_layout as layout
from mlcc_constructs.core.adapters.inventory import AdapterListing, LoadedAdapter
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.platform.labels import STREAMED_MODEL_ANNOTATION
from mlcc_constructs.core.platform.mountpoint import S3_CSI_DRIVER
from mlcc_constructs.core.support.errors import MlccError, Problem

UnitKind = Literal["adapter-version", "adapter-home", "full-finetune", "stray"]


@dataclass(frozen=True, kw_only=True)
class CleanUnit:
    """Objects deleted together: a version, a home, a fine-tune, or stray keys."""

    kind: UnitKind
    uri: str
    record_keys: tuple[str, ...]
    """Deleted first."""
    keys: tuple[str, ...]
    """Deleted after the record (sorted)."""
    bytes: int

    @property
    def ordered_keys(self) -> tuple[str, ...]:
        """Every key in deletion order."""
        return (*self.record_keys, *self.keys)

    def to_json(self) -> dict[str, Any]:
        """For the clean report."""
        return {
            "kind": self.kind,
            "uri": self.uri,
            "objects": len(self.ordered_keys),
            "bytes": self.bytes,
        }


@dataclass(frozen=True, kw_only=True)
class CleanPlan:
    """What ``clean`` deletes: the prefixes it looked in and the units found there."""

    bucket: str
    project: str
    prefixes: tuple[str, ...]
    """Every prefix listed (URIs): only keys under these are ever deleted."""
    units: tuple[CleanUnit, ...]

    @property
    def objects(self) -> int:
        """Number of current objects to delete."""
        return sum(len(u.ordered_keys) for u in self.units)

    @property
    def bytes(self) -> int:
        """Their total size."""
        return sum(u.bytes for u in self.units)

    def to_json(self) -> dict[str, Any]:
        """For the clean report."""
        return {
            "bucket": self.bucket,
            "project": self.project,
            "prefixes": list(self.prefixes),
            "objects": self.objects,
            "bytes": self.bytes,
            "units": [u.to_json() for u in self.units],
        }


def _split(record: str, keys: Mapping[str, int]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (
        (record,) if record in keys else (),
        tuple(sorted(k for k in keys if k != record)),
    )


def plan_clean(
    *,
    bucket: str,
    project: str,
    adapters: Sequence[tuple[S3Location, AdapterListing]],
    finetunes: tuple[S3Location, Mapping[str, int]],
) -> CleanPlan:
    """The plan from the project's listings: ``adapters`` is ``(project folder, its
    listing)`` per model prefix, ``finetunes`` the project's full fine-tune folder and its
    keys (key → size). Every listed key is in exactly one unit."""
    units: list[CleanUnit] = []
    prefixes = [root.uri for root, _ in adapters]
    for _, listing in adapters:
        for found in listing.adapters:
            first, rest = _split(found.record_key, found.keys)
            units.append(
                CleanUnit(
                    kind="adapter-version" if found.adapter.version else "adapter-home",
                    uri=found.adapter.location.uri,
                    record_keys=first,
                    keys=rest,
                    bytes=found.bytes,
                )
            )
        if listing.stray:
            units.append(_stray(bucket, listing.stray))
    root, keys = finetunes
    prefixes.append(root.uri)
    names: dict[str, dict[str, int]] = {}
    stray: dict[str, int] = {}
    for key, size in keys.items():
        head = root.relative(key).split("/", 1) if key.startswith(root.key) else []
        if len(head) == 2 and head[1] and path_names.component_problem(head[0]) is None:
            names.setdefault(head[0], {})[key] = size
        elif key.startswith(root.key):
            stray[key] = size
    for name, found_keys in sorted(names.items()):
        model = layout.full_finetune(bucket, project, name)
        first, rest = _split(layout.model_record_location(model).key, found_keys)
        units.append(
            CleanUnit(
                kind="full-finetune",
                uri=model.uri,
                record_keys=first,
                keys=rest,
                bytes=sum(found_keys.values()),
            )
        )
    if stray:
        units.append(_stray(bucket, stray))
    return CleanPlan(
        bucket=bucket,
        project=project,
        prefixes=tuple(prefixes),
        units=tuple(sorted(units, key=lambda u: (u.kind == "stray", u.uri))),
    )


def _stray(bucket: str, keys: Mapping[str, int]) -> CleanUnit:
    first = min(keys)
    return CleanUnit(
        kind="stray",
        uri=S3Location(bucket=bucket, key=first).uri,
        record_keys=(),
        keys=tuple(sorted(keys)),
        bytes=sum(keys.values()),
    )


def serving_conflicts(project: str, loaded: Iterable[LoadedAdapter]) -> list[LoadedAdapter]:
    """The loaded adapters that belong to ``project`` (a clean would pull files from under
    a pod that serves them)."""
    return [a for a in loaded if a.project == project]


def conflict_problems(conflicts: Sequence[LoadedAdapter]) -> list[Problem]:
    """One refusal per pod-adapter pair still served."""
    return [
        Problem(
            message=f"pod {c.pod} still serves adapter {c.lora_name} from {c.path}",
            where="--force",
            fix=f"unload it first (mlcc adapter remove {c.name} ...), or pass --force",
        )
        for c in conflicts
    ]


"""The Mountpoint for Amazon S3 CSI driver's name, as a PersistentVolume names it."""


@dataclass(frozen=True, kw_only=True)
class ModelMount:
    """An S3 prefix a cluster object mounts as a model (``what``: ``PersistentVolume x``)."""

    what: str
    location: S3Location


def model_mounts(
    volumes: Mapping[str, Any],
    endpoint_configs: Mapping[str, Any] | None,
    deployments: Mapping[str, Any] | None = None,
) -> list[ModelMount]:
    """The S3 prefixes mounted by the cluster's Mountpoint PersistentVolumes (``kubectl get pv``
    JSON: bucket in ``volumeAttributes.bucketName``, prefix in a ``prefix`` mount option), read
    by its InferenceEndpointConfigs (``modelSourceConfig.s3Storage`` and ``modelLocation``;
    ``None``: the CRD is not installed) and streamed by its Deployments (the
    :data:`STREAMED_MODEL_ANNOTATION`; ``None``: not read)."""
    mounts: list[ModelMount] = []
    for deployment in (deployments or {}).get("items", []):
        meta = deployment.get("metadata") or {}
        uri = (meta.get("annotations") or {}).get(STREAMED_MODEL_ANNOTATION)
        if not uri:
            continue
        try:
            location = layout.parse_s3_uri(str(uri))
        except MlccError:
            continue  # not a URI we wrote
        mounts.append(
            ModelMount(
                what=f"Deployment {meta.get('namespace', 'default')}/{meta.get('name')}",
                location=location,
            )
        )
    for volume in volumes.get("items", []):
        csi = volume.get("spec", {}).get("csi") or {}
        bucket = (csi.get("volumeAttributes") or {}).get("bucketName")
        if csi.get("driver") != S3_CSI_DRIVER or not bucket:
            continue
        prefix = ""
        for option in volume["spec"].get("mountOptions") or []:
            name, _, value = str(option).lstrip("-").replace("=", " ", 1).partition(" ")
            if name == "prefix":
                prefix = value.strip()
        mounts.append(
            ModelMount(
                what=f"PersistentVolume {volume['metadata']['name']}",
                location=S3Location(bucket=str(bucket), key=prefix),
            )
        )
    for config in (endpoint_configs or {}).get("items", []):
        source = config.get("spec", {}).get("modelSourceConfig") or {}
        bucket = (source.get("s3Storage") or {}).get("bucketName")
        if source.get("modelSourceType") != "s3" or not bucket:
            continue
        key = str(source.get("modelLocation") or "").strip("/")
        meta = config["metadata"]
        mounts.append(
            ModelMount(
                what=f"InferenceEndpointConfig {meta.get('namespace', 'default')}/{meta['name']}",
                location=S3Location(bucket=str(bucket), key=f"{key}/" if key else ""),
            )
        )
    return mounts


def mounted_problems(plan: CleanPlan, mounts: Iterable[ModelMount]) -> list[Problem]:
    """One refusal per cluster object whose mounted model lies inside a unit the plan deletes
    (a full fine-tune a deployment serves). A base model whose adapter folder is cleaned is no
    conflict: the adapters' own check (pods that still serve them) covers it."""
    problems = []
    for mount in mounts:
        where = mount.location
        key = where.key if where.key.endswith("/") or not where.key else where.key + "/"
        for unit in plan.units:
            unit_location = layout.parse_s3_uri(unit.uri)
            if unit.kind == "stray" or unit_location.bucket != where.bucket:
                continue
            if key.startswith(unit_location.key):
                problems.append(
                    Problem(
                        message=f"{mount.what} mounts {where.uri}: the model it serves is "
                        f"deleted by this clean ({unit.kind} {unit.uri})",
                        where="--force",
                        fix="delete or re-point that deployment first, or pass --force",
                    )
                )
                break
    return problems


def purge_order(versions: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(key, version id)`` in deletion order for a permanent purge: every object version
    before any delete marker (deleting a marker first could make an older version current
    again), each group by key and version id."""

    def rank(v: Mapping[str, Any]) -> tuple[int, str, str]:
        return (1 if v.get("IsDeleteMarker") else 0, str(v["Key"]), str(v["VersionId"]))

    return [(str(v["Key"]), str(v["VersionId"])) for v in sorted(versions, key=rank)]
