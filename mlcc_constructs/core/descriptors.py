"""Descriptors read from data files: deployment targets (``targets/``) and buckets
(``stacks/buckets.json``). The bucket descriptor is the only place bucket names are
written; everything that needs a bucket name asks :func:`bucket_names`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mlcc_constructs.core._resources import shipped_path
from mlcc_constructs.core.errors import MlccError, Problem, closest, fail, json_pointer

_PLACEHOLDER = re.compile(r"\$\{([a-z]+)\}")
_PLACEHOLDERS = ("account", "region", "profile")
# S3 bucket naming rules (general purpose buckets).
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PROFILE = re.compile(r"^[a-z][a-z0-9-]{0,19}$")
_ACCOUNT = re.compile(r"^[0-9]{12}$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$")


@dataclass(frozen=True, kw_only=True)
class AdapterDelivery:
    """How LoRA adapters reach a target's pods (seed lora-delivery §2)."""

    strategy: str
    mount_path: str | None = None
    subdir: str | None = None


@dataclass(frozen=True, kw_only=True)
class TargetDescriptor:
    """One deployment target from ``targets/<name>/manifest.json``."""

    name: str
    description: str
    model_mount_path: str
    adapter_delivery: AdapterDelivery
    huggingface_model: str = "by-id"
    """``by-id``: the engine downloads a Hugging Face model; ``mounted``: the platform stages it
    at ``model_mount_path`` (the HyperPod operator's init container, which alone has the token)."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise fail(
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
            where=str(path),
        ) from error


def _validate(document: Any, schema_path: Path, where: Path) -> None:
    import jsonschema

    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        Problem(
            message=error.message,
            where=str(where),
            pointer=json_pointer(*error.absolute_path) or "/",
        )
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        raise MlccError(problems)


@cache
def target_names() -> tuple[str, ...]:
    """Every built-in target, sorted."""
    root = shipped_path("targets")
    return tuple(sorted(p.parent.name for p in root.glob("*/manifest.json")))


@cache
def load_target(name: str) -> TargetDescriptor:
    """The descriptor of target ``name``; an unknown name suggests the closest ones."""
    if name not in target_names():
        raise fail(
            f"unknown target {name!r}",
            value=name,
            allowed=", ".join(target_names()),
            fix=f"use one of the allowed targets{_did_you_mean(name, target_names())}",
        )
    path = shipped_path("targets") / name / "manifest.json"
    document = _read_json(path)
    _validate(document, shipped_path("targets") / "manifest.schema.json", path)
    delivery = document["adapter_delivery"]
    return TargetDescriptor(
        name=document["target"],
        description=document.get("description", ""),
        model_mount_path=document["model_mount_path"],
        huggingface_model=document.get("huggingface_model", "by-id"),
        adapter_delivery=AdapterDelivery(
            strategy=delivery["strategy"],
            mount_path=delivery.get("mount_path"),
            subdir=delivery.get("subdir"),
        ),
    )


def _did_you_mean(name: str, candidates: tuple[str, ...]) -> str:
    near = closest(name, candidates)
    return f" (did you mean {', '.join(near)}?)" if near else ""


@cache
def bucket_patterns() -> dict[str, str]:
    """Bucket key → name pattern with ``${account}``, ``${region}``, ``${profile}``."""
    path = shipped_path("stacks/buckets.json")
    document = _read_json(path)
    _validate(document, shipped_path("stacks/buckets.schema.json"), path)
    problems = []
    for key, bucket in document["buckets"].items():
        for placeholder in _PLACEHOLDER.findall(bucket["name"]):
            if placeholder not in _PLACEHOLDERS:
                problems.append(
                    Problem(
                        message=f"unknown placeholder ${{{placeholder}}}",
                        where=str(path),
                        pointer=json_pointer("buckets", key, "name"),
                        value=bucket["name"],
                        allowed=", ".join(f"${{{p}}}" for p in _PLACEHOLDERS),
                    )
                )
    if problems:
        raise MlccError(problems)
    return {key: bucket["name"] for key, bucket in document["buckets"].items()}


def check_environment(*, account: str, region: str, profile: str) -> None:
    """Refuse an account, region or profile that cannot form valid bucket names."""
    checks = (
        ("account", account, _ACCOUNT, "12 digits, e.g. 123456789012"),
        ("region", region, _REGION, "an AWS region such as us-east-1"),
        ("profile", profile, _PROFILE, "lower-case letters, digits and '-', 1-20, e.g. dev"),
    )
    problems = [
        Problem(message=f"invalid {name}", pointer=name, value=value, allowed=allowed)
        for name, value, pattern, allowed in checks
        if not pattern.match(value)
    ]
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
