"""Deliver an adapter to a deployment on S3: plan, perform, remove serving copies.

- :func:`plan_delivery` reads what the plan needs (the source's record or PEFT config) and
  asks :mod:`mlcc_constructs.core.adapters.plan` to decide; it writes nothing.
- :func:`apply_delivery` performs a plan's S3 steps: promote, then copy to the serving prefix;
  the version pods will load (canonical, or an existing serving copy) is first read in full and
  refused when its files are not what its record says (the plan checks its sizes).
- :func:`remove_serving_copies` deletes only the versions whose record has ``serving_copy_of``.

Loading into the pods is :mod:`mlcc_constructs.ops.pods`' job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.deployment import (
    Deployment,
    LiveState,
    check_delivery,
    serving_model,
)
from mlcc_constructs.core.adapters.integrity import damage_problems, size_damage
from mlcc_constructs.core.adapters.plan import (
    DeliveryPlan,
    Operation,
    SourceFacts,
    canonical_source,
    decide_delivery,
    delivered,
    facts_from_peft,
    facts_from_record,
    serving_copy_location,
    version_keys,
)
from mlcc_constructs.core.adapters.record import AdapterRecord, adapter_files
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.support.errors import MlccError, Problem
from mlcc_constructs.ops.adapter_sources import PrefixSource, check_peft_files, open_source
from mlcc_constructs.ops.integrity import require_intact, version_sizes
from mlcc_constructs.ops.promotion import canonical_record, promote, read_adapter_record
from mlcc_constructs.ops.publish import now_utc, publish, who
from mlcc_constructs.ops.s3 import S3Client, delete_keys, list_objects


def plan_delivery(
    s3: S3Client,
    *,
    operation: Operation,
    deployment: Deployment,
    live: LiveState,
    name: str,
    source: str,
    core_bucket: str,
    base_model: str | None = None,
) -> DeliveryPlan:
    """The delivery plan (seed §2); reads S3, writes nothing.

    Order: (1) refusals from config and the live state, before anything is read; (2) the
    rank pre-check against the live limit; (3) a non-canonical source will be promoted under
    its base's canonical home (its version is unknown until then: ``path`` is ``""``); (4)
    canonical under this deployment's model prefix → load by path; (5) canonical elsewhere →
    copy when the base id (and revision, when both are known) match; a different base is
    refused.
    """
    serving = check_delivery(deployment, live, name)
    facts = _source_facts(
        s3,
        source,
        base_model=base_model,
        served_base=serving.base,
        core_bucket=core_bucket,
        project=deployment.project,
        name=name,
    )
    return decide_delivery(
        operation=operation,
        deployment=deployment,
        live=live,
        serving=serving,
        facts=facts,
        name=name,
        source=source,
        core_bucket=core_bucket,
    )


def _source_facts(
    s3: S3Client,
    source: str,
    *,
    base_model: str | None,
    served_base: str,
    core_bucket: str,
    project: str,
    name: str,
) -> SourceFacts:
    canonical = canonical_source(source, project=project, name=name)
    if canonical is not None:
        record = canonical_record(s3, canonical)
        if record.files:  # the plan checks sizes; the delivery reads every byte
            damage = size_damage(record, version_sizes(s3, canonical))
            if damage:
                location = canonical.location.uri
                raise MlccError(damage_problems(location, damage, doing="not served"))
        return facts_from_record(canonical, record)
    opened = open_source(s3, source)
    try:
        peft = check_peft_files(opened)
    finally:
        opened.close()
    return facts_from_peft(
        source,
        peft,
        base_model=base_model,
        served_base=served_base,
        core_bucket=core_bucket,
        project=project,
        name=name,
    )


def apply_delivery(
    s3: S3Client,
    plan: DeliveryPlan,
    deployment: Deployment,
    *,
    base_model: str | None = None,
    created_by: str | None = None,
    now: Callable[[], str] = now_utc,
) -> DeliveryPlan:
    """Run the S3 steps of ``plan`` (promote, copy); returns the plan with the path known."""
    source = plan.source
    if "promote" in plan.steps:
        promotion = promote(
            s3,
            source_uri=plan.source,
            core_bucket=plan.core_bucket,
            project=plan.project,
            name=plan.name,
            base_model=base_model or plan.base_model,
            created_by=created_by,
            now=now,
        )
        source = promotion.adapter.location.uri
    canonical = layout.parse_canonical_adapter(source)
    assert canonical is not None
    model = serving_model(deployment)
    # the load path: what pods are told to load is first checked against its record
    record = canonical_record(s3, canonical, verify="not served")
    served = canonical
    if "copy" in plan.steps:
        served = _serving_copy(s3, canonical, record, model, created_by=created_by, now=now)
    return delivered(
        plan,
        deployment,
        canonical=canonical,
        served=served,
        version=canonical.version or record.version,
    )


def _serving_copy(
    s3: S3Client,
    canonical: CanonicalAdapter,
    record: AdapterRecord,
    model: S3Location,
    *,
    created_by: str | None,
    now: Callable[[], str],
) -> CanonicalAdapter:
    copy = serving_copy_location(canonical, model, record.version)
    publish(
        s3,
        lambda: _adapter_files_of(s3, canonical),
        copy.location,
        record_at=layout.record_location(copy.location),
        found=read_adapter_record(s3, copy.location),
        planned=replace(
            record,
            serving_copy_of=canonical.location.uri,
            created_by=created_by or who(),
            created_at=now(),
        ),
        taken=lambda found: Problem(
            message="a different adapter already holds this version under the serving prefix",
            where=copy.location.uri,
            value=found.content_hash,
        ),
        verify=lambda found: require_intact(s3, copy, found, doing="not served"),
    )
    return copy


def _adapter_files_of(s3: S3Client, canonical: CanonicalAdapter) -> PrefixSource:
    """A canonical adapter's own files (its record and anything beside them left out)."""
    source = PrefixSource(s3, canonical.location)
    source.files = adapter_files(canonical, source.files)
    return source


def remove_serving_copies(
    s3: S3Client, deployment: Deployment, name: str, *, dry_run: bool = False
) -> list[str]:
    """Delete the serving copies of ``name`` under this deployment's model prefix.

    Only versions whose record has ``serving_copy_of`` are deleted; canonical adapters (with
    or without a record) are never touched here. Returns the deleted version URIs, sorted.
    """
    home = layout.adapter_home(serving_model(deployment), deployment.project, name)
    listed = [item["Key"] for item in list_objects(s3, home)]
    deleted = []
    for version, keys in version_keys(home, listed):
        record = read_adapter_record(s3, version.location)
        if record is None or record.serving_copy_of is None:
            continue
        if not dry_run:
            delete_keys(s3, home.bucket, keys)
        deleted.append(version.location.uri)
    return deleted
