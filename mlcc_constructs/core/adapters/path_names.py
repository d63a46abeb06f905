"""Names inside S3 paths: path components, bucket names and adapter versions, checked the
same way everywhere (:mod:`.s3_layout` composes the paths themselves)."""

from __future__ import annotations

import re
import unicodedata

from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer

_VERSION = re.compile(r"^v[0-9a-f]{12}$")
_HASH = re.compile(r"^[0-9a-f]{64}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_COMPONENT_RULE = "a non-empty name without '/', whitespace or control characters, not '.' or '..'"


def component_problem(value: object, *, pointer: str = "", where: str = "") -> Problem | None:
    """The problem with one path component, or ``None`` when it is valid.

    ``pointer`` is the JSON pointer of the field holding it (if any), ``where`` the object.
    """
    if (
        not isinstance(value, str)
        or value in ("", ".", "..")
        or "/" in value
        or any(ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in value)
    ):
        return Problem(
            message="not a valid S3 path component",
            where=where,
            pointer=pointer,
            value=value,
            allowed=_COMPONENT_RULE,
        )
    return None


def check_components(**components: str) -> None:
    """Raise one error naming every invalid component (keyword = field name; the pointer is
    ``/<field name>``)."""
    problems = [
        problem
        for field_name, value in components.items()
        if (problem := component_problem(value, pointer=json_pointer(field_name))) is not None
    ]
    if problems:
        raise MlccError(problems)


def check_bucket(bucket: str, *, pointer: str = "") -> str:
    """A valid S3 bucket name, or an error at ``pointer`` (a field holding the name) or, with
    no pointer, at the bucket's URI."""
    if not _BUCKET.match(bucket):
        raise fail(
            "not a valid S3 bucket name",
            where="" if pointer else f"s3://{bucket}/",
            pointer=pointer,
            value=bucket,
            allowed="3-63 lower-case letters, digits, '.', '-'",
        )
    return bucket


def check_version(version: str, *, pointer: str = "/version") -> str:
    """``v`` followed by 12 lower-case hex digits, or an error."""
    if not isinstance(version, str) or not _VERSION.match(version):
        raise fail(
            "not an adapter version",
            pointer=pointer,
            value=version,
            allowed="v<first 12 hex digits of the content hash>, e.g. v0123456789ab",
        )
    return version


def version_id(content_hash: str) -> str:
    """The version directory name of a content hash (sha256 hex): ``v<hash12>``."""
    if not _HASH.match(content_hash):
        raise fail(
            "not a sha256 content hash",
            pointer="/content_hash",
            value=content_hash,
            allowed="64 lower-case hex digits",
        )
    return "v" + content_hash[:12]


def is_bucket_name(text: str) -> bool:
    """Whether ``text`` is a valid S3 bucket name."""
    return bool(_BUCKET.match(text))


def is_version(text: str) -> bool:
    """Whether ``text`` is an adapter version (``v<hash12>``)."""
    return bool(_VERSION.match(text))
