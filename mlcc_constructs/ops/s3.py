"""Small S3 helpers over a boto3 client: read bytes, list, hash, write JSON, delete.

boto3 is never imported here: callers pass a client (``boto3.client("s3", ...)``), so this
package loads fast and tests can point it at any S3 endpoint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mlcc_constructs.core.adapter_record import dig
from mlcc_constructs.core.s3_layout import S3Location

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
    """Delete ``keys`` from ``bucket`` in batches."""
    for start in range(0, len(keys), _DELETE_BATCH):
        batch = [{"Key": k} for k in keys[start : start + _DELETE_BATCH]]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
