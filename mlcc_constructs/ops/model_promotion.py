"""Publishing a full fine-tune to its layout home (``mlcc model promote``).

:func:`promote_model` copies a source prefix or ``.tar.gz`` to its layout home
(:func:`mlcc_constructs.core.adapters.s3_layout.full_finetune`) and writes its record last (the
record's rules are :mod:`mlcc_constructs.core.adapters.model_record`'s). Identical content finds its
record already there (``unchanged``, nothing copied); other content under a taken name is
refused; a home left without a record by an interrupted promotion is completed, never
overwritten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.hf_source import is_hf_source
from mlcc_constructs.core.adapters.model_record import (
    MODEL_CONFIG,
    ModelRecord,
    content_metadata,
    model_base,
    model_files_problems,
    parse_model_record_json,
)
from mlcc_constructs.core.adapters.record import content_hash
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.support.errors import MlccError, Problem, fail
from mlcc_constructs.ops.adapter_sources import open_source
from mlcc_constructs.ops.publish import PublishStatus, now_utc, publish, who
from mlcc_constructs.ops.s3 import S3Client, get_bytes, list_objects

ModelPromotionStatus = PublishStatus


@dataclass(frozen=True, kw_only=True)
class ModelPromotion:
    """The outcome of :func:`promote_model`."""

    status: ModelPromotionStatus
    location: S3Location
    record: ModelRecord
    copied: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """For ``mlcc model promote`` output."""
        return {
            "status": self.status,
            "uri": self.location.uri,
            "model": self.location.uri,
            "copied": list(self.copied),
            "record": self.record.to_json(),
        }


def read_model_record(s3: S3Client, model: S3Location) -> ModelRecord | None:
    """The record of a full fine-tune, or ``None`` when it has none."""
    record = layout.model_record_location(model)
    body = get_bytes(s3, record)
    return None if body is None else parse_model_record_json(body, where=record.uri)


def promote_model(
    s3: S3Client,
    *,
    source_uri: str,
    core_bucket: str,
    project: str,
    name: str,
    base_model: str | None = None,
    base_revision: str | None = None,
    technique: str | None = None,
    source_job: str | None = None,
    created_by: str | None = None,
    now: Callable[[], str] = now_utc,
    dry_run: bool = False,
) -> ModelPromotion:
    """Promote a full fine-tune (an S3 prefix or ``.tar.gz``) to its layout home."""
    model = layout.full_finetune(core_bucket, project, name)
    if is_hf_source(source_uri):
        raise fail(
            "full fine-tunes are promoted from S3 (a prefix or .tar.gz), not from Hugging Face",
            pointer="/source",
            value=source_uri,
            fix="serve a Hugging Face model by its id, or stage it to S3 first",
        )
    if layout.parse_s3_uri(source_uri, pointer="/source").uri.rstrip("/") == model.uri.rstrip("/"):
        raise fail(
            "the source is the fine-tune's own home",
            pointer="/source",
            value=source_uri,
            fix="promote from the job's output (e.g. its checkpoints/hf/ prefix)",
        )
    source = open_source(s3, source_uri, metadata=content_metadata())
    try:
        problems = model_files_problems(source.files, where=source.uri)
        if problems:
            raise MlccError(problems)
        base = model_base(base_model, source.read(MODEL_CONFIG), where=source.where(MODEL_CONFIG))
        digest = content_hash(source.files, metadata=content_metadata())
        record = ModelRecord(
            project=project,
            name=name,
            content_hash=digest,
            source_uri=source.uri,
            source_job=source_job,
            technique=technique,
            base_model=base,
            base_revision=base_revision,
            created_by=created_by or who(),
            created_at=now(),
        )
        published = publish(
            s3,
            lambda: source,
            model,
            record_at=layout.model_record_location(model),
            found=read_model_record(s3, model),
            planned=record,
            taken=lambda found: Problem(
                message=f"full fine-tune {name} already holds other content (the layout keeps "
                "one fine-tune per name and never overwrites it)",
                where=model.uri,
                value=found.content_hash,
                allowed=digest,
                fix="promote it under a new name",
            ),
            before_copy=lambda: _refuse_leftovers(s3, model, set(source.files)),
            dry_run=dry_run,
        )
        return ModelPromotion(
            status=published.status,
            location=model,
            record=published.record,
            copied=published.copied,
        )
    finally:
        source.close()


def _refuse_leftovers(s3: S3Client, model: S3Location, names: set[str]) -> None:
    """A home without a record may hold an interrupted promotion of the same files (completed
    by the copy); files the source does not have would sit outside the content hash."""
    extra = sorted(
        rel
        for item in list_objects(s3, model)
        if (rel := model.relative(item["Key"])) not in names and not rel.endswith("/")
    )
    if extra:
        raise MlccError(
            Problem(
                message="the fine-tune's home holds files that are not in the source",
                where=model.uri,
                value=extra[:8],
                fix="delete the leftovers (mlcc adapter clean deletes the project's fine-tunes) "
                "or promote under a new name",
            )
        )
