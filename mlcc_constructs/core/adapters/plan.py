"""Delivering an adapter to a deployment's pods: the plan (seed lora-delivery §2).

Pure: the functions here decide over facts already read (the checked deployment, the live
state, the source's record or PEFT config, listed keys); :mod:`mlcc_constructs.ops.delivery`
reads those facts from S3 and performs the plan. A plan is decided in the seed's order:

1. :func:`mlcc_constructs.core.adapters.deployment.check_delivery` — refusals from config and
   the live state, before anything is read;
2. :func:`canonical_source`, then :func:`facts_from_record` or :func:`facts_from_peft` — what
   the source is (read by the caller in between);
3. :func:`decide_delivery` — the rank pre-check against the live limit, the base check, then
   load by path / promote / copy.

:func:`delivered` completes a plan once its version is known; :func:`version_keys` lists the
versions under a serving prefix for removal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.deployment import (
    Deployment,
    LiveState,
    Serving,
    live_rank_limit,
)
from mlcc_constructs.core.adapters.hf_source import is_hf_source, parse_hf_source
from mlcc_constructs.core.adapters.lora_rank import AdapterRank
from mlcc_constructs.core.adapters.record import AdapterRecord, PeftInfo, resolve_base
from mlcc_constructs.core.adapters.s3_layout import CanonicalAdapter, S3Location
from mlcc_constructs.core.platform.targets import load_target
from mlcc_constructs.core.support.errors import fail

Operation = Literal["add", "update"]
SOURCE_FORMS = (
    "s3://bucket/prefix/, s3://bucket/adapter.tar.gz, a canonical adapter, or "
    "hf://<org>/<repo>[@revision]"
)
"""What ``--from`` takes, for error messages."""
SourceKind = Literal["canonical-version", "canonical-home", "s3-prefix", "tar.gz", "huggingface"]


# --- the source -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SourceFacts:
    """What a delivery needs to know about its source, once read."""

    kind: SourceKind
    base: str
    base_revision: str | None
    need: int
    """The adapter's LoRA rank need."""
    canonical: CanonicalAdapter | None
    """The canonical adapter the source is; ``None`` for a source still to promote."""
    home: S3Location
    """The canonical home (for a source to promote: the one it will be promoted under)."""


def canonical_source(source: str, *, project: str, name: str) -> CanonicalAdapter | None:
    """The canonical adapter ``source`` names, ``None`` for a prefix, archive or Hugging Face
    repository to promote; any other source, or a canonical one of another project or name,
    is refused."""
    if is_hf_source(source):
        parse_hf_source(source)
        return None
    if not source.startswith("s3://"):
        raise fail(
            "adapter sources are S3 prefixes, .tar.gz archives or Hugging Face repositories",
            pointer="/source",
            value=source,
            allowed=SOURCE_FORMS,
            fix="upload the adapter to S3 (e.g. the adapters bucket), or name its Hugging Face "
            "repository",
        )
    canonical = layout.parse_canonical_adapter(source)
    if canonical is not None and (canonical.project, canonical.name) != (project, name):
        raise fail(
            "a canonical adapter keeps its project and name",
            pointer="/source",
            value=source,
            allowed=f"an adapter of project {project} named {name}",
            fix=f"add it as {canonical.name} in project {canonical.project}",
        )
    return canonical


def source_kind(source: str) -> SourceKind:
    """The kind of a source still to promote."""
    if is_hf_source(source):
        return "huggingface"
    return "tar.gz" if source.endswith((".tar.gz", ".tgz")) else "s3-prefix"


def facts_from_record(canonical: CanonicalAdapter, record: AdapterRecord) -> SourceFacts:
    """The facts of a canonical source, from its record."""
    return SourceFacts(
        kind="canonical-version" if canonical.version else "canonical-home",
        base=record.base_model,
        base_revision=record.base_revision,
        need=record.rank().need,
        canonical=canonical,
        home=canonical.home,
    )


def facts_from_peft(
    source: str,
    peft: PeftInfo,
    *,
    base_model: str | None,
    served_base: str,
    core_bucket: str,
    project: str,
    name: str,
) -> SourceFacts:
    """The facts of a source to promote, from its PEFT config (its base: ``base_model``, else
    the config's, else the base the deployment serves)."""
    base = layout.base_model(resolve_base(base_model, peft, served_base))
    return SourceFacts(
        kind=source_kind(source),
        base=base.hf_id,
        base_revision=peft.base_revision,
        need=AdapterRank(name=name, r=peft.r, rank_pattern=peft.rank_pattern).need,
        canonical=None,
        home=layout.canonical_adapter_home(core_bucket, base, project, name),
    )


# --- the plan ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DeliveryPlan:
    """What ``add``/``update`` will do. Paths are ``""`` until the version is known."""

    operation: Operation
    project: str
    name: str
    source: str
    source_kind: SourceKind
    steps: tuple[str, ...]
    """A subset of ``promote``, ``copy``, ``load`` (``update``: ``unload`` + ``load``)."""
    base_model: str
    rank_need: int
    rank_limit: int | None
    rank_limit_from: str
    canonical: str
    """The canonical version (or home) URI; ``""`` before promotion."""
    canonical_home: str
    serving: str
    """The URI the pods read from (the canonical one, or the serving copy)."""
    path: str
    """In-pod path loaded; ``""`` before the version is known."""
    path_home: str
    version: str
    core_bucket: str = ""
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The dry-run plan (``mlcc adapter plan``)."""
        return {
            "operation": self.operation,
            "project": self.project,
            "lora_name": self.name,
            "source": self.source,
            "source_kind": self.source_kind,
            "steps": list(self.steps),
            "base_model": self.base_model,
            "rank": {
                "need": self.rank_need,
                "limit": self.rank_limit,
                "limit_from": self.rank_limit_from,
            },
            "canonical": self.canonical,
            "canonical_home": self.canonical_home,
            "serving": self.serving,
            "version": self.version,
            "path": self.path,
            "path_home": self.path_home,
            "warnings": list(self.warnings),
        }


def decide_delivery(
    *,
    operation: Operation,
    deployment: Deployment,
    live: LiveState,
    serving: Serving,
    facts: SourceFacts,
    name: str,
    source: str,
    core_bucket: str,
) -> DeliveryPlan:
    """The delivery plan, from the checked deployment and the source's facts.

    The rank pre-check against the live limit; a source of another base (or of another
    revision, when both are known) is refused. A non-canonical source will be promoted under
    its base's canonical home (its version is unknown until then: ``path`` is ``""``); a
    canonical one under this deployment's model prefix is loaded by path; one elsewhere is
    copied to this prefix.
    """
    project = deployment.project
    limit, limit_from = live_rank_limit(deployment, live)
    if limit is not None and facts.need > limit:
        raise fail(
            f"adapter {name} needs LoRA rank {facts.need}, above the live limit {limit} "
            f"({limit_from})",
            pointer="/rank",
            value=facts.need,
            fix=f"raise {deployment.rank_env_key} to at least {facts.need} and redeploy, "
            "then add the adapter again",
        )
    if facts.base != serving.base or (
        facts.base_revision
        and deployment.base_revision
        and facts.base_revision != deployment.base_revision
    ):
        raise fail(
            f"adapter {name} was trained on another base and is incompatible with this deployment",
            pointer="/base_model",
            value=f"{facts.base}@{facts.base_revision or '?'}",
            allowed=f"{serving.base}@{deployment.base_revision or '?'}",
            fix="deliver it to a deployment of its own base",
        )
    delivery = load_target(deployment.target).adapter_delivery
    serving_home = layout.adapter_home(serving.model, project, name)
    path_home = layout.pod_adapter_path(delivery, project, name)
    steps: list[str] = []
    canonical = facts.canonical
    if canonical is None:
        steps.append("promote")
        home = layout.parse_canonical_adapter(facts.home.uri)
        in_place = home is not None and home.model == serving.model
        version = ""
        serving_uri = facts.home.uri if in_place else serving_home.uri
        canonical_uri = ""
    else:
        in_place = canonical.model == serving.model
        version = canonical.version or ""
        canonical_uri = canonical.location.uri
        if in_place:
            serving_uri = canonical.location.uri
        elif version:
            serving_uri = layout.adapter_version(serving_home, version).uri
        else:
            serving_uri = ""  # an unversioned home is copied to its content version
    if not in_place:
        steps.append("copy")
    steps += ["unload", "load"] if operation == "update" else ["load"]
    if canonical is not None and in_place:
        path = layout.pod_adapter_path(delivery, project, name, canonical.version)
    elif version:
        path = layout.pod_adapter_path(delivery, project, name, version)
    else:
        path = ""
    return DeliveryPlan(
        operation=operation,
        project=project,
        name=name,
        source=source,
        source_kind=facts.kind,
        steps=tuple(steps),
        base_model=facts.base,
        rank_need=facts.need,
        rank_limit=limit,
        rank_limit_from=limit_from,
        canonical=canonical_uri,
        canonical_home=facts.home.uri,
        serving=serving_uri,
        path=path,
        path_home=path_home,
        version=version,
        core_bucket=core_bucket,
    )


def serving_copy_location(
    canonical: CanonicalAdapter, model: S3Location, version: str
) -> CanonicalAdapter:
    """Where the copy of ``canonical`` serving from model prefix ``model`` goes: the same
    project, name and version under that prefix."""
    home = layout.adapter_home(model, canonical.project, canonical.name)
    copy = layout.parse_canonical_adapter(layout.adapter_version(home, version).uri)
    assert copy is not None
    return copy


def delivered(
    plan: DeliveryPlan,
    deployment: Deployment,
    *,
    canonical: CanonicalAdapter,
    served: CanonicalAdapter,
    version: str,
) -> DeliveryPlan:
    """``plan`` once performed: the canonical adapter, the one the pods read and its path."""
    delivery = load_target(deployment.target).adapter_delivery
    return replace(
        plan,
        canonical=canonical.location.uri,
        serving=served.location.uri,
        version=version,
        path=layout.pod_adapter_path(delivery, plan.project, plan.name, served.version),
    )


# --- removal ----------------------------------------------------------------------------


def version_keys(home: S3Location, keys: Iterable[str]) -> list[tuple[CanonicalAdapter, list[str]]]:
    """The versions under an adapter home and their keys (``keys``: listed under ``home``),
    sorted by version; the home's own top-level files belong to no version."""
    versions: dict[str, list[str]] = {}
    for key in keys:
        head = home.relative(key).split("/", 1)
        if len(head) == 2:
            versions.setdefault(head[0], []).append(key)
    found = []
    for version, listed in sorted(versions.items()):
        parsed = layout.parse_canonical_adapter(f"{home.uri}{version}/")
        if parsed is not None and parsed.version is not None:
            found.append((parsed, listed))
    return found
