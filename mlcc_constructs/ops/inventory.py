"""Reading what adapters exist on S3 and what pods serve (``mlcc adapter list``).

The bases are found by listing ``models/`` one level at a time (common prefixes, so base
weights are never listed); each base's adapter folder (or one project's) is listed in full.
The grouping and ordering rules are :mod:`mlcc_constructs.core.adapters.inventory`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.integrity import own_files
from mlcc_constructs.core.adapters.inventory import (
    AdapterEntry,
    AdapterListing,
    LoadedAdapter,
    group_adapter_keys,
    inventory,
    loaded_adapters,
)
from mlcc_constructs.core.adapters.record import (
    PEFT_CONFIG,
    AdapterRecord,
    PeftInfo,
    parse_peft_config,
)
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.platform.targets import AdapterDelivery
from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.ops.integrity import version_digests
from mlcc_constructs.ops.pods import PodClient, PodModels
from mlcc_constructs.ops.promotion import read_adapter_record
from mlcc_constructs.ops.s3 import S3Client, get_bytes, list_objects, list_prefixes


def canonical_models(s3: S3Client, core_bucket: str) -> list[S3Location]:
    """Every base staged under ``s3://<core>/models/<org>/<base>/`` (sorted)."""
    root = layout.models_root(core_bucket)
    orgs: dict[str, list[str]] = {}
    for listed in list_prefixes(s3, root):
        org = layout.child_name(root, listed)
        if org is None:
            continue
        folder = layout.child_prefix(root, org)
        orgs[org] = [
            base for p in list_prefixes(s3, folder) if (base := layout.child_name(folder, p))
        ]
    return layout.base_locations(core_bucket, orgs)


def list_keys(s3: S3Client, prefix: S3Location) -> dict[str, int]:
    """Every key under ``prefix`` with its size."""
    return {str(item["Key"]): int(item.get("Size", 0)) for item in list_objects(s3, prefix)}


def adapter_listing(
    s3: S3Client, model: S3Location, project: str | None
) -> tuple[S3Location, AdapterListing]:
    """The folder listed (one project's, or every project's) and its grouped keys."""
    root = (
        layout.project_adapters(model, project)
        if project is not None
        else layout.adapters_root(model)
    )
    return root, group_adapter_keys(root, model, list_keys(s3, root))


@dataclass
class RecordsRead:
    """What :func:`read_records` found, keyed by a version's (or home's) URI."""

    records: dict[str, AdapterRecord] = field(default_factory=dict)
    peft: dict[str, PeftInfo] = field(default_factory=dict)
    unreadable: dict[str, list[str]] = field(default_factory=dict)
    """The errors of each record that could not be read (bad JSON, bad fields, another
    project's or name's record): that version is reported so, the others still listed."""
    digests: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each recorded version's file digests (``verify`` only)."""


def read_records(
    s3: S3Client, listings: Sequence[AdapterListing], *, verify: bool = False
) -> RecordsRead:
    """The records of the listed versions (only where a record key was listed), and the PEFT
    config of each unversioned home without one (for its rank; unreadable: left out).
    ``verify``: also read every file of each recorded version (its sha256)."""
    read = RecordsRead()
    for listing in listings:
        for found in listing.adapters:
            location = found.adapter.location
            if found.record_key in found.keys:
                try:
                    record = read_adapter_record(s3, location)
                except MlccError as error:
                    read.unreadable[location.uri] = [str(p) for p in error.problems]
                    continue
                if record is not None:
                    read.records[location.uri] = record
                    if verify:
                        names = sorted(own_files(found.adapter, found.keys))
                        read.digests[location.uri] = version_digests(s3, found.adapter, names)
            elif found.adapter.version is None:
                config = S3Location(bucket=location.bucket, key=location.key + PEFT_CONFIG)
                body = get_bytes(s3, config) if config.key in found.keys else None
                # a broken config: the entry shows no rank
                with contextlib.suppress(MlccError):
                    if body is not None:
                        read.peft[location.uri] = parse_peft_config(body, where=config.uri)
    return read


def pod_models(client: PodClient, pods: Sequence[str]) -> list[PodModels]:
    """Each pod's model list, in pod order."""
    return [client.models(pod) for pod in pods]


def pods_loaded(delivery: AdapterDelivery, answers: Sequence[PodModels]) -> list[LoadedAdapter]:
    """The canonical adapters the pods that answered have loaded."""
    return [
        loaded
        for answer in answers
        if answer.ok
        for loaded in loaded_adapters(delivery, answer.pod, answer.entries)
    ]


def read_inventory(
    s3: S3Client,
    *,
    models: Sequence[S3Location],
    project: str | None,
    loaded: Sequence[LoadedAdapter] = (),
    verify: bool = False,
) -> list[AdapterEntry]:
    """Every adapter (of ``project``, or of every project) under ``models``, each recorded
    version checked by its sizes (``verify``: by every file's sha256)."""
    listings = [adapter_listing(s3, model, project)[1] for model in models]
    read = read_records(s3, listings, verify=verify)
    return inventory(
        listings,
        read.records,
        peft=read.peft,
        loaded=loaded,
        unreadable=read.unreadable,
        digests=read.digests,
    )
