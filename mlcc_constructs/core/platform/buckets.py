"""The bucket descriptor (``stacks/buckets.json``): the only place bucket names are written;
everything that needs a bucket name asks :func:`bucket_names`.

Every name pattern holds ``${profile}``, ``${account}`` and ``${region}``: each profile's
``mlcc-<profile>-buckets`` stack owns all of its buckets, so ``-c profile=prod`` never tries to
create a bucket that ``mlcc-dev-buckets`` owns (and dev principals never share prod's model
bucket). The account is exactly 12 digits between two separators, so two profiles of one
account and region can never form the same name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.support.documents import read_json
from mlcc_constructs.core.support.errors import MlccError, Problem, fail, json_pointer

_PLACEHOLDER = re.compile(r"\$\{([a-z]+)\}")
_PLACEHOLDERS = ("account", "region", "profile")
# S3 bucket naming rules (general purpose buckets).
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PROFILE = re.compile(r"^[a-z][a-z0-9-]{0,19}$")
_ACCOUNT = re.compile(r"^[0-9]{12}$")
REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$")


DEFAULT_NONCURRENT_DAYS = 30
"""Days a bucket keeps an object's previous version when its ``noncurrent_days`` is absent."""
DEFAULT_ACCESS_LOG_DAYS = 90
"""Days the server access logs are kept when the descriptor has no ``access_logs``."""
DEFAULT_ACCESS_LOG_NONCURRENT_DAYS = 1
ABORT_INCOMPLETE_UPLOAD_DAYS = 7
"""Days after which S3 removes the parts of a multipart upload that never completed."""


@cache
def _descriptor() -> dict[str, Any]:
    document: dict[str, Any] = read_json(shipped_path("stacks/buckets.json"))
    return document


@dataclass(frozen=True, kw_only=True)
class Lifecycle:
    """A bucket's lifecycle: previous versions expire ``noncurrent_days`` after they stop being
    current; current objects expire after ``expiration_days`` (``None``: never)."""

    noncurrent_days: int
    expiration_days: int | None = None
    abort_incomplete_upload_days: int = ABORT_INCOMPLETE_UPLOAD_DAYS


def bucket_lifecycles() -> dict[str, Lifecycle]:
    """Bucket key → its lifecycle (``noncurrent_days`` of ``stacks/buckets.json``, default
    :data:`DEFAULT_NONCURRENT_DAYS`): a model overwritten or deleted by mistake can be restored
    from its previous version for that long, and multi-GB weights stop being billed after it."""
    return {
        key: Lifecycle(noncurrent_days=int(bucket.get("noncurrent_days", DEFAULT_NONCURRENT_DAYS)))
        for key, bucket in _descriptor()["buckets"].items()
    }


def access_log_lifecycle() -> Lifecycle:
    """The server access log bucket's lifecycle (``access_logs`` of ``stacks/buckets.json``;
    default: logs kept :data:`DEFAULT_ACCESS_LOG_DAYS` days, their previous versions a day)."""
    logs = _descriptor().get("access_logs", {})
    return Lifecycle(
        noncurrent_days=int(logs.get("noncurrent_days", DEFAULT_ACCESS_LOG_NONCURRENT_DAYS)),
        expiration_days=int(logs.get("expiration_days", DEFAULT_ACCESS_LOG_DAYS)),
    )


@cache
def bucket_patterns() -> dict[str, str]:
    """Bucket key → name pattern with ``${account}``, ``${region}``, ``${profile}``."""
    path = shipped_path("stacks/buckets.json")
    document = _descriptor()
    # The shipped descriptor's schema is checked by the test suite
    # (tests/core/platform/test_buckets.py), as the shipped engine manifests are: jsonschema
    # costs more to import than a whole render.
    problems = pattern_problems(document["buckets"], where=str(path))
    if problems:
        raise MlccError(problems)
    return {key: bucket["name"] for key, bucket in document["buckets"].items()}


def pattern_problems(buckets: dict[str, dict[str, str]], *, where: str) -> list[Problem]:
    """Every problem of the descriptor's name patterns (``buckets``: key → {"name": ...})."""
    problems = []
    for key, bucket in buckets.items():
        missing = [p for p in _PLACEHOLDERS if f"${{{p}}}" not in bucket["name"]]
        if missing:
            problems.append(
                Problem(
                    message="a bucket name must hold every placeholder, or two profiles (or "
                    "accounts, regions) would share the bucket",
                    where=where,
                    pointer=json_pointer("buckets", key, "name"),
                    value=bucket["name"],
                    allowed="a pattern with " + ", ".join(f"${{{p}}}" for p in _PLACEHOLDERS),
                    fix="add " + ", ".join(f"${{{p}}}" for p in missing) + " to the name",
                )
            )
        for placeholder in _PLACEHOLDER.findall(bucket["name"]):
            if placeholder not in _PLACEHOLDERS:
                problems.append(
                    Problem(
                        message=f"unknown placeholder ${{{placeholder}}}",
                        where=where,
                        pointer=json_pointer("buckets", key, "name"),
                        value=bucket["name"],
                        allowed=", ".join(f"${{{p}}}" for p in _PLACEHOLDERS),
                    )
                )
    return problems


def environment_problems(
    *, account: str | None = None, region: str | None = None, profile: str | None = None
) -> list[Problem]:
    """The problems of the given account, region and profile (``None``: not checked)."""
    checks = (
        ("account", account, _ACCOUNT, "12 digits, e.g. 123456789012"),
        ("region", region, REGION, "an AWS region such as us-east-1"),
        ("profile", profile, _PROFILE, "lower-case letters, digits and '-', 1-20, e.g. dev"),
    )
    return [
        Problem(message=f"invalid {name}", pointer=f"/{name}", value=value, allowed=allowed)
        for name, value, pattern, allowed in checks
        if value is not None and not (isinstance(value, str) and pattern.fullmatch(value))
    ]


def check_environment(*, account: str, region: str, profile: str) -> None:
    """Refuse an account, region or profile that cannot form valid bucket names."""
    problems = environment_problems(account=account, region=region, profile=profile)
    if problems:
        raise MlccError(problems)


def bucket_names(*, account: str, region: str, profile: str) -> dict[str, str]:
    """Every bucket's concrete name for one environment (key → name)."""
    check_environment(account=account, region=region, profile=profile)
    values = {"account": account, "region": region, "profile": profile}
    names = {
        key: _PLACEHOLDER.sub(lambda m: values[m.group(1)], pattern)
        for key, pattern in bucket_patterns().items()
    }
    bad = [
        Problem(
            message="not a valid S3 bucket name (3-63 lower-case letters, digits, '.', '-')",
            where="stacks/buckets.json",
            pointer=json_pointer("buckets", key, "name"),
            value=name,
        )
        for key, name in names.items()
        if not _BUCKET_NAME.match(name)
    ]
    if bad:
        raise MlccError(bad)
    return names


def bucket_name(key: str, *, account: str, region: str, profile: str) -> str:
    """One bucket's concrete name, e.g. ``bucket_name("tls", account=..., ...)``."""
    names = bucket_names(account=account, region=region, profile=profile)
    if key not in names:
        raise fail(
            f"unknown bucket {key!r}",
            where="stacks/buckets.json",
            value=key,
            allowed=", ".join(sorted(names)),
        )
    return names[key]


def bucket_environment(bucket: str) -> tuple[str, dict[str, str]] | None:
    """``(key, {"account": ..., "region": ..., "profile": ...})`` of a bucket named by a
    ``stacks/buckets.json`` pattern, or ``None`` for any other bucket (a team's own)."""
    for key, regex in _bucket_regexes():
        match = regex.fullmatch(bucket)
        if match:
            return key, {k: v for k, v in match.groupdict().items() if v}
    return None


@cache
def _bucket_regexes() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each bucket pattern as the regex of the names it gives, compiled once per process."""
    parts = {
        "account": r"(?P<account>[0-9]{12})",
        "region": r"(?P<region>[a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-[0-9])",
        "profile": r"(?P<profile>[a-z][a-z0-9-]{0,19})",
    }
    found = []
    for key, pattern in bucket_patterns().items():
        pieces = re.split(r"\$\{([a-z]+)\}", pattern)
        regex = "".join(
            parts[piece] if index % 2 else re.escape(piece) for index, piece in enumerate(pieces)
        )
        found.append((key, re.compile(regex)))
    return tuple(found)
