"""Deleting a project's adapters and full fine-tunes from S3 (``mlcc adapter clean``).

:func:`plan_project_clean` lists exactly the project's prefixes (its adapter folder under
every staged base, under any extra model prefix given, and its full fine-tune folder) and
asks :mod:`mlcc_constructs.core.adapters.clean` for the plan; nothing outside those prefixes is
listed, so nothing outside them can be deleted. :func:`execute_clean` deletes unit by unit,
each unit's record first (see the core module for why), and :func:`purge_noncurrent`
deletes the noncurrent versions and delete markers a versioned bucket keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.clean import CleanPlan, plan_clean, purge_order
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.ops.inventory import adapter_listing, canonical_models, list_keys
from mlcc_constructs.ops.s3 import (
    S3Client,
    bucket_versioning,
    delete_keys,
    delete_versions,
    list_object_versions,
)


@dataclass(frozen=True, kw_only=True)
class CleanFacts:
    """A plan and what the bucket keeps besides the current objects."""

    plan: CleanPlan
    versioning: str
    """``Enabled``, ``Suspended`` or ``Off``."""
    noncurrent_versions: int
    """Noncurrent object versions under the plan's prefixes now (before the clean)."""
    delete_markers: int

    def to_json(self) -> dict[str, Any]:
        """The versioning part of the report."""
        kept = self.noncurrent_versions + (self.plan.objects if self.versioning != "Off" else 0)
        return {
            "versioning": self.versioning,
            "noncurrent_versions": self.noncurrent_versions,
            "delete_markers": self.delete_markers,
            "noncurrent_after_clean": kept if self.versioning != "Off" else 0,
        }


def project_models(
    s3: S3Client, core_bucket: str, extra_models: Sequence[S3Location]
) -> list[S3Location]:
    """Every staged base of the core bucket, then the extra model prefixes (deduplicated)."""
    models = canonical_models(s3, core_bucket)
    return models + [m for m in extra_models if m not in models]


def plan_project_clean(
    s3: S3Client, *, core_bucket: str, project: str, models: Sequence[S3Location]
) -> CleanFacts:
    """The clean plan of ``project`` over ``models``, with the bucket's versioning state."""
    adapters = [adapter_listing(s3, model, project) for model in models]
    finetunes = layout.project_full_finetunes(core_bucket, project)
    plan = plan_clean(
        bucket=core_bucket,
        project=project,
        adapters=adapters,
        finetunes=(finetunes, list_keys(s3, finetunes)),
    )
    versioning = bucket_versioning(s3, core_bucket)
    noncurrent = markers = 0
    if versioning != "Off":
        for version in _versions(s3, plan):
            if version["IsDeleteMarker"]:
                markers += 1
            elif not version.get("IsLatest"):
                noncurrent += 1
    return CleanFacts(
        plan=plan, versioning=versioning, noncurrent_versions=noncurrent, delete_markers=markers
    )


def _versions(s3: S3Client, plan: CleanPlan) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for uri in plan.prefixes:
        found += list_object_versions(s3, layout.parse_s3_uri(uri))
    return found


def execute_clean(s3: S3Client, plan: CleanPlan) -> list[str]:
    """Delete every unit of ``plan``, record first; returns the unit URIs deleted."""
    done = []
    for unit in plan.units:
        if unit.record_keys:
            delete_keys(s3, plan.bucket, unit.record_keys)
        delete_keys(s3, plan.bucket, unit.keys)
        done.append(unit.uri)
    return done


def purge_noncurrent(s3: S3Client, plan: CleanPlan) -> tuple[int, int]:
    """Permanently delete every object version and delete marker under the plan's prefixes
    (object versions before markers); returns how many of each."""
    versions = _versions(s3, plan)
    order = purge_order(versions)
    delete_versions(s3, plan.bucket, order)
    markers = sum(1 for v in versions if v["IsDeleteMarker"])
    return len(versions) - markers, markers
