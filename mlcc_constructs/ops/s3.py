"""Small S3 helpers over a boto3 client: read bytes, list (objects, prefixes, versions), hash,
write JSON, delete (objects, versions).

boto3 is never imported here: callers pass a client (``boto3.client("s3", ...)``), so this
package loads fast and tests can point it at any S3 endpoint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mlcc_constructs.core.adapters.record_fields import dig
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.support.errors import fail

S3Client = Any
"""A boto3 S3 client (``boto3.client("s3", ...)``)."""

CHUNK = 1 << 20
"""Bytes read at a time when hashing."""
_DELETE_BATCH = 1000  # the most keys one DeleteObjects call takes


def is_missing(error: Exception) -> bool:
    """True when a botocore error says the object (or bucket) does not exist."""
    response = getattr(error, "response", None)
    code = str(dig(response, "Error", "Code") or "")
    return code in ("404", "NoSuchKey", "NotFound")


def get_bytes(s3: S3Client, location: S3Location) -> bytes | None:
    """The object's bytes, or ``None`` when it does not exist."""
    try:
        response = s3.get_object(Bucket=location.bucket, Key=location.key)
    except Exception as error:
        if is_missing(error):
            return None
        raise
    body: bytes = response["Body"].read()
    return body


def list_objects(s3: S3Client, prefix: S3Location) -> Iterator[dict[str, Any]]:
    """Every object under ``prefix`` (``list_objects_v2`` entries, every page)."""
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=prefix.bucket, Prefix=prefix.key):
        yield from page.get("Contents", [])


def stream_sha256(s3: S3Client, location: S3Location) -> str:
    """sha256 hex of an object, read in chunks."""
    digest = hashlib.sha256()
    body = s3.get_object(Bucket=location.bucket, Key=location.key)["Body"]
    for chunk in body.iter_chunks(CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def put_json(s3: S3Client, location: S3Location, document: Mapping[str, Any]) -> None:
    """Write ``document`` as indented JSON (key order kept, trailing newline)."""
    body = (json.dumps(document, indent=2, sort_keys=False) + "\n").encode()
    s3.put_object(
        Bucket=location.bucket, Key=location.key, Body=body, ContentType="application/json"
    )


def delete_keys(s3: S3Client, bucket: str, keys: Sequence[str]) -> None:
    """Delete ``keys`` from ``bucket`` in batches, in order; a key S3 refused is an error
    (``DeleteObjects`` answers 200 and lists per-key failures)."""
    _delete(s3, bucket, [{"Key": k} for k in keys])


def delete_versions(s3: S3Client, bucket: str, versions: Sequence[tuple[str, str]]) -> None:
    """Delete object versions ``(key, version id)`` permanently, in batches, in order."""
    _delete(s3, bucket, [{"Key": k, "VersionId": v} for k, v in versions])


def _delete(s3: S3Client, bucket: str, objects: list[dict[str, str]]) -> None:
    for start in range(0, len(objects), _DELETE_BATCH):
        batch = objects[start : start + _DELETE_BATCH]
        answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
        errors = answer.get("Errors") or []
        if errors:
            first = errors[0]
            raise fail(
                f"S3 refused to delete {len(errors)} object(s): {first.get('Code')}: "
                f"{first.get('Message')}",
                where=f"s3://{bucket}/{first.get('Key', '')}",
                fix="check the credentials' s3:DeleteObject (and s3:DeleteObjectVersion) "
                "permissions, then run the command again: it finishes what is left",
            )


def list_prefixes(s3: S3Client, prefix: S3Location) -> list[str]:
    """The common prefixes (``<prefix><name>/``) one level below ``prefix``, every page."""
    paginator = s3.get_paginator("list_objects_v2")
    found: list[str] = []
    for page in paginator.paginate(Bucket=prefix.bucket, Prefix=prefix.key, Delimiter="/"):
        found += [str(p["Prefix"]) for p in page.get("CommonPrefixes", [])]
    return found


def list_object_versions(s3: S3Client, prefix: S3Location) -> list[dict[str, Any]]:
    """Every object version and delete marker under ``prefix`` (each entry gets
    ``"IsDeleteMarker"``), every page."""
    paginator = s3.get_paginator("list_object_versions")
    found: list[dict[str, Any]] = []
    for page in paginator.paginate(Bucket=prefix.bucket, Prefix=prefix.key):
        found += [{**v, "IsDeleteMarker": False} for v in page.get("Versions", [])]
        found += [{**m, "IsDeleteMarker": True} for m in page.get("DeleteMarkers", [])]
    return found


def bucket_versioning(s3: S3Client, bucket: str) -> str:
    """``Enabled``, ``Suspended`` or ``Off`` (never enabled)."""
    return str(s3.get_bucket_versioning(Bucket=bucket).get("Status") or "Off")
