"""The record of a full fine-tune and the rules over its files (seed lora-delivery §1).

A full fine-tune lives at its layout prefix
(:func:`mlcc_constructs.core.adapters.s3_layout.full_finetune`) with its record
(``s3_layout.MODEL_RECORD``) beside the weights. The layout gives a fine-tune no version
folder (a deployment serves the prefix itself), so content addressing works by name: the
record carries the content hash, promoting identical content again is a no-op, and other
content under a name that is taken is refused (never overwritten).

Pure: reading and writing S3 is :mod:`mlcc_constructs.ops.model_promotion`'s job.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.record import PEFT_CONFIG
from mlcc_constructs.core.adapters.record_fields import (
    dig,
    header_problems,
    provenance_fields,
    text_field,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, fail

RECORD_FORMAT = "mlcc-model/1"
MODEL_CONFIG = "config.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin")
"""A full model's top level holds at least one weights file with one of these suffixes."""


@dataclass(frozen=True, kw_only=True)
class ModelRecord:
    """The record of a full fine-tune: what it is, where it came from, who made it."""

    project: str
    name: str
    content_hash: str
    """sha256 hex of the model's files (:func:`mlcc_constructs.core.adapters.record.content_hash`
    with the model record as metadata)."""
    source_uri: str
    base_model: str
    """Hugging Face id of the model it was fine-tuned from."""
    created_by: str
    created_at: str
    """ISO 8601, UTC."""
    source_job: str | None = None
    technique: str | None = None
    base_revision: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The document written to S3 (stable key order)."""
        return {
            "format": RECORD_FORMAT,
            "project": self.project,
            "name": self.name,
            "content_hash": self.content_hash,
            "source": {"uri": self.source_uri, "job": self.source_job},
            "technique": self.technique,
            "base_model": {"id": self.base_model, "revision": self.base_revision},
            "created_by": self.created_by,
            "created_at": self.created_at,
        }


def parse_model_record(document: Any, *, where: str) -> ModelRecord:
    """Validate a full fine-tune record document; every problem is reported at once."""
    if not isinstance(document, Mapping):
        raise fail("not a JSON object", where=where, value=type(document).__name__)
    problems: list[Problem] = []

    problems += header_problems(document, record_format=RECORD_FORMAT, where=where)
    values = {
        "project": text_field(document, "project", where=where, problems=problems),
        "name": text_field(document, "name", where=where, problems=problems),
        "content_hash": text_field(document, "content_hash", where=where, problems=problems),
        **provenance_fields(document, where=where, problems=problems),
    }
    if problems:
        raise MlccError(problems)
    return ModelRecord(**values)  # type: ignore[arg-type]


def parse_model_record_json(body: bytes, *, where: str) -> ModelRecord:
    """:func:`parse_model_record` of a stored record's bytes (``where``: its location)."""
    try:
        document = json.loads(body)
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON: {error.msg}", where=where) from error
    return parse_model_record(document, where=where)


def model_files_problems(names: Collection[str], *, where: str) -> list[Problem]:
    """What a full model folder lacks at its top (``names``: its relative file names); a
    PEFT adapter is refused with the command that takes it."""
    top = {n for n in names if "/" not in n}
    if PEFT_CONFIG in top and MODEL_CONFIG not in top:
        return [
            Problem(
                message=f"this is a LoRA adapter ({PEFT_CONFIG} at the top), not a full model",
                where=where,
                fix="promote it with mlcc adapter promote",
            )
        ]
    problems = []
    if MODEL_CONFIG not in top:
        problems.append(
            Problem(
                message=f"no {MODEL_CONFIG} at the top of the source",
                where=where,
                value=sorted(names)[:8],
                fix="point at the folder holding the fine-tuned model (e.g. the job's "
                "checkpoints/hf/)",
            )
        )
    if not any(n.endswith(WEIGHT_SUFFIXES) for n in top):
        problems.append(
            Problem(
                message="no model weights at the top of the source",
                where=where,
                allowed="*" + " or *".join(WEIGHT_SUFFIXES),
            )
        )
    return problems


def model_base(explicit: str | None, config: bytes | None, *, where: str) -> str:
    """The Hugging Face id a full fine-tune was trained from: ``explicit`` (``--base-model``),
    else ``_name_or_path`` of its ``config.json`` when that is a Hugging Face id."""
    if explicit:
        return layout.base_model(explicit, pointer="/base_model").hf_id
    named: object = None
    if config is not None:
        try:
            named = dig(json.loads(config), "_name_or_path")
        except json.JSONDecodeError as error:
            raise fail(f"not valid JSON: {error.msg}", where=where) from error
    if not isinstance(named, str) or not named or named.startswith(("/", ".")):
        raise fail(
            "the fine-tune's base model is unknown",
            pointer="/base_model",
            value=named,
            fix="pass --base-model <org>/<name> (the Hugging Face id it was fine-tuned from)",
        )
    return layout.base_model(named, where=where, pointer="/_name_or_path").hf_id


def content_metadata() -> tuple[str, ...]:
    """The file names that are a full fine-tune's metadata, never its content."""
    return (layout.MODEL_RECORD,)
