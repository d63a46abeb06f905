"""The canonical S3 layout (seed lora-delivery §1). The ONLY code that composes these paths.

::

    s3://<core>/models/<org>/<base>/.mlcc-adapters/<project>/<name>/            adapter home
    s3://<core>/models/<org>/<base>/.mlcc-adapters/<project>/<name>/v<hash12>/  one version
                                                                   (+ mlcc-adapter.json)
    s3://<core>/models/mlcc-<project>/<name>/                 full fine-tune (+ mlcc-model.json)
    s3://<artifacts>/<project>/tune|train|optimize/...        raw job output (never served)
    s3://<artifacts>/.mlcc-hyperpod/lifecycle/v<hash12>/      HyperPod lifecycle scripts

and, in a pod of a ``model-prefix`` target, ``<mount_path>/<subdir>/<project>/<name>[/v<hash12>]``.

``<org>/<base>`` is the base model's Hugging Face id; a model hub id (e.g. a JumpStart id) maps
through ``data/hub_model_ids.json`` and an unmapped one is refused, never guessed. Every path
component is validated: no empty part, no ``/``, no ``.``/``..``, no whitespace or control
characters. Other modules ask this one for paths and never join them themselves (a test greps).
Bucket names come from :func:`mlcc_constructs.core.platform.buckets.bucket_names` (``core`` and
``artifacts``); this module takes them as arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Literal

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.adapters.path_names import (
    check_bucket,
    check_components,
    check_version,
    component_problem,
    is_bucket_name,
    is_version,
    version_id,
)
from mlcc_constructs.core.platform.targets import AdapterDelivery
from mlcc_constructs.core.support.errors import MlccError, fail, json_pointer

ADAPTER_DIR = ".mlcc-adapters"
"""The folder under a model prefix that holds adapter homes (also the pod ``subdir``)."""
ADAPTER_RECORD = "mlcc-adapter.json"
"""The record written into every adapter version (and into serving copies)."""
MODEL_RECORD = "mlcc-model.json"
"""The record written into every full fine-tune (``models/mlcc-<project>/<name>/``)."""
PACKED = ".tar.gz"
"""The suffix of a version's packed archive (:attr:`CanonicalAdapter.packed`)."""
JOB_KINDS = ("tune", "train", "optimize")
"""Kinds of raw job output under the artifacts bucket."""

JobKind = Literal["tune", "train", "optimize"]

_MODELS = "models"
# Job output is <project>/<tune|train|optimize>/...: "lifecycle" is no job kind, so this
# prefix never meets a project's output, whatever the project is called.
_HYPERPOD_LIFECYCLE = (".mlcc-hyperpod", "lifecycle")
_FULL_MODEL_PREFIX = "mlcc-"
_HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_S3_URI = re.compile(r"^s3://(?P<bucket>[^/]+)/(?P<key>.*)$")


@dataclass(frozen=True, kw_only=True)
class S3Location:
    """An S3 bucket and key; a key ending in ``/`` is a prefix ("folder")."""

    bucket: str
    key: str

    @property
    def uri(self) -> str:
        """``s3://bucket/key``."""
        return f"s3://{self.bucket}/{self.key}"

    @property
    def is_prefix(self) -> bool:
        """True when the key ends with ``/`` (or is empty: the bucket root)."""
        return self.key == "" or self.key.endswith("/")

    def relative(self, key: str) -> str:
        """``key`` relative to this prefix (``key`` must lie under it)."""
        if not key.startswith(self.key):
            raise ValueError(f"{key!r} is not under {self.key!r}")
        return key[len(self.key) :]


@dataclass(frozen=True, kw_only=True)
class BaseModel:
    """A base model's Hugging Face id split into ``org`` and ``base``."""

    org: str
    base: str

    @property
    def hf_id(self) -> str:
        """``org/base``."""
        return f"{self.org}/{self.base}"


@dataclass(frozen=True, kw_only=True)
class CanonicalAdapter:
    """An adapter home or version found in a URI: ``<model>/.mlcc-adapters/<project>/<name>/``.

    ``model`` is the model prefix the home lives under (the canonical ``models/<org>/<base>/``
    or another staging of the same base); ``version`` is ``None`` for an unversioned home.
    """

    model: S3Location
    project: str
    name: str
    version: str | None = None

    @property
    def home(self) -> S3Location:
        """The adapter home (prefix)."""
        return adapter_home(self.model, self.project, self.name)

    @property
    def location(self) -> S3Location:
        """The version prefix, or the home when unversioned."""
        return adapter_version(self.home, self.version) if self.version else self.home

    @property
    def record(self) -> S3Location:
        """Where this adapter's ``mlcc-adapter.json`` is (or would be)."""
        return record_location(self.location)

    @property
    def packed(self) -> S3Location:
        """``<home>/v<hash12>.tar.gz``: this version as one gzip tar archive, beside its folder.
        A SageMaker adapter inference component reads only such an archive ("ArtifactUrl ...
        must point to a single gzip compressed tar archive (.tar.gz suffix)":
        https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentContainerSpecification.html)."""
        if self.version is None:
            raise fail("an unversioned adapter home has no packed archive", value=self.home.uri)
        return S3Location(bucket=self.home.bucket, key=f"{self.home.key}{self.version}{PACKED}")


def _prefix_parts(bucket: str, prefix: str) -> list[str]:
    parts = prefix.rstrip("/").split("/")
    where = f"s3://{bucket}/{prefix}"
    problems = [
        problem for part in parts if (problem := component_problem(part, where=where)) is not None
    ]
    if problems:
        raise MlccError(problems)
    return parts


def model_location(bucket: str, prefix: str) -> S3Location:
    """A staged model's prefix (``s3://bucket/prefix/``), every part validated."""
    check_bucket(bucket)
    parts = _prefix_parts(bucket, prefix)
    return S3Location(bucket=bucket, key="/".join(parts) + "/")


# --- base model ids ---------------------------------------------------------------------


@cache
def hub_model_ids() -> Mapping[str, str]:
    """Hub id → Hugging Face id, from ``data/hub_model_ids.json``."""
    document = json.loads(data_path("hub_model_ids.json").read_text(encoding="utf-8"))
    return MappingProxyType(dict(document["hub_ids"]))


def base_model(model_id: str, *, pointer: str = "/base_model", where: str = "") -> BaseModel:
    """``org``/``base`` of a Hugging Face id, or of a hub id mapped in the hub table.

    A hub id that is not in ``data/hub_model_ids.json`` is refused: guessing an org would put
    adapters under a base they were never trained on. ``where``/``pointer`` locate the id
    (the document and field it came from) in the error.
    """
    if isinstance(model_id, str) and model_id in hub_model_ids():
        model_id = hub_model_ids()[model_id]
    elif not isinstance(model_id, str) or not _HF_ID.match(model_id):
        raise fail(
            "not a Hugging Face model id, and not a mapped model hub id",
            where=where,
            pointer=pointer,
            value=model_id,
            allowed="<org>/<name> (letters, digits, '.', '_', '-') or one of "
            + ", ".join(sorted(hub_model_ids())),
            fix="name the base by its Hugging Face id, or add the hub id to "
            "mlcc_constructs/data/hub_model_ids.json",
        )
    org, base = model_id.split("/")
    if org.startswith(_FULL_MODEL_PREFIX):
        raise fail(
            f"not a base model: {_MODELS}/{_FULL_MODEL_PREFIX}<project>/ holds a project's full "
            "fine-tunes, and nothing has a home under them",
            where=where,
            pointer=pointer,
            value=model_id,
            allowed=f"a Hugging Face model id whose org does not start with '{_FULL_MODEL_PREFIX}'",
            fix="name the Hugging Face base it was trained on",
        )
    # a mapped hub id comes from the data file, so its parts are checked too
    problems = [
        problem
        for part in (org, base)
        if (problem := component_problem(part, pointer=pointer, where=where)) is not None
    ]
    if problems:
        raise MlccError(problems)
    return BaseModel(org=org, base=base)


# --- S3 paths ---------------------------------------------------------------------------


def base_model_location(core_bucket: str, base: BaseModel) -> S3Location:
    """``s3://<core>/models/<org>/<base>/``: where a base is staged."""
    check_bucket(core_bucket)
    check_components(org=base.org, base=base.base)
    return S3Location(bucket=core_bucket, key=f"{_MODELS}/{base.org}/{base.base}/")


def base_of_model_location(model: S3Location) -> BaseModel | None:
    """The base of a canonical ``models/<org>/<base>/`` prefix; ``None`` for any other."""
    parts = model.key.rstrip("/").split("/")
    if len(parts) == 3 and parts[0] == _MODELS and not parts[1].startswith(_FULL_MODEL_PREFIX):
        return BaseModel(org=parts[1], base=parts[2])
    return None


def adapter_home(model: S3Location, project: str, name: str) -> S3Location:
    """``<model prefix>/.mlcc-adapters/<project>/<name>/`` under any staged model prefix."""
    check_components(project=project, name=name)
    checked = model_location(model.bucket, model.key)
    return S3Location(bucket=checked.bucket, key=f"{checked.key}{ADAPTER_DIR}/{project}/{name}/")


def canonical_adapter_home(
    core_bucket: str, base: BaseModel, project: str, name: str
) -> S3Location:
    """The one canonical home of an adapter of ``base``: under ``s3://<core>/models/<org>/<base>/``."""
    return adapter_home(base_model_location(core_bucket, base), project, name)


def project_adapters(model: S3Location, project: str) -> S3Location:
    """``<model prefix>/.mlcc-adapters/<project>/``: every adapter of a project for one base."""
    check_components(project=project)
    checked = model_location(model.bucket, model.key)
    return S3Location(bucket=checked.bucket, key=f"{checked.key}{ADAPTER_DIR}/{project}/")


def adapters_root(model: S3Location) -> S3Location:
    """``<model prefix>/.mlcc-adapters/``: every project's adapters for one staged base."""
    checked = model_location(model.bucket, model.key)
    return S3Location(bucket=checked.bucket, key=f"{checked.key}{ADAPTER_DIR}/")


def adapter_version(home: S3Location, version: str) -> S3Location:
    """``<home>/v<hash12>/``."""
    check_version(version)
    parsed = parse_canonical_adapter(home.uri)
    if parsed is None or parsed.version is not None:
        raise fail("not an adapter home", pointer="/home", value=home.uri)
    return S3Location(bucket=home.bucket, key=f"{home.key}{version}/")


VERSION_URI_FORM = f"s3://<bucket>/<model prefix>/{ADAPTER_DIR}/<project>/<name>/v<hash12>/"
"""What a canonical adapter version's URI looks like (for error messages)."""


def parse_adapter_version(uri: str, *, pointer: str = "/version") -> CanonicalAdapter:
    """The canonical adapter version at ``uri``; a home or any other URI is refused."""
    adapter = parse_canonical_adapter(uri)
    if adapter is None or adapter.version is None:
        raise fail(
            "not a canonical adapter version",
            pointer=pointer,
            value=uri,
            allowed=VERSION_URI_FORM,
            fix="pass the version URI mlcc adapter promote printed",
        )
    return adapter


def record_location(adapter: S3Location) -> S3Location:
    """The ``mlcc-adapter.json`` of an adapter version (or unversioned home)."""
    return S3Location(bucket=adapter.bucket, key=f"{adapter.key}{ADAPTER_RECORD}")


def full_finetune(core_bucket: str, project: str, name: str) -> S3Location:
    """``s3://<core>/models/mlcc-<project>/<name>/`` (a full fine-tune + ``mlcc-model.json``)."""
    check_bucket(core_bucket)
    check_components(project=project, name=name)
    return S3Location(bucket=core_bucket, key=f"{_MODELS}/{_FULL_MODEL_PREFIX}{project}/{name}/")


def model_record_location(model: S3Location) -> S3Location:
    """The ``mlcc-model.json`` of a full fine-tune (``model``: its prefix)."""
    return S3Location(bucket=model.bucket, key=f"{model.key}{MODEL_RECORD}")


def project_full_finetunes(core_bucket: str, project: str) -> S3Location:
    """``s3://<core>/models/mlcc-<project>/``: every full fine-tune of a project."""
    check_bucket(core_bucket)
    check_components(project=project)
    return S3Location(bucket=core_bucket, key=f"{_MODELS}/{_FULL_MODEL_PREFIX}{project}/")


def parse_full_finetune(model: S3Location) -> tuple[str, str] | None:
    """``(project, name)`` of a full fine-tune prefix ``models/mlcc-<project>/<name>/``;
    ``None`` for any other prefix."""
    parts = model.key.rstrip("/").split("/")
    if (
        len(parts) == 3
        and parts[0] == _MODELS
        and parts[1].startswith(_FULL_MODEL_PREFIX)
        and len(parts[1]) > len(_FULL_MODEL_PREFIX)
        and not any(component_problem(p) for p in parts)
    ):
        return parts[1][len(_FULL_MODEL_PREFIX) :], parts[2]
    return None


def models_root(core_bucket: str) -> S3Location:
    """``s3://<core>/models/``: where bases (``<org>/<base>/``) and full fine-tunes live."""
    check_bucket(core_bucket)
    return S3Location(bucket=core_bucket, key=f"{_MODELS}/")


def child_prefix(parent: S3Location, name: str) -> S3Location:
    """``<parent>/<name>/``: one level below a prefix (``name`` a valid component)."""
    check_components(name=name)
    return S3Location(bucket=parent.bucket, key=f"{parent.key}{name}/")


def child_name(parent: S3Location, prefix_key: str) -> str | None:
    """The one path component a listed common prefix adds below ``parent`` (``models/org/`` →
    ``org``); ``None`` when it is not a valid component directly below it."""
    if not prefix_key.startswith(parent.key) or not prefix_key.endswith("/"):
        return None
    name = prefix_key[len(parent.key) : -1]
    return None if component_problem(name) else name


def base_locations(core_bucket: str, orgs: dict[str, list[str]]) -> list[S3Location]:
    """The canonical base prefixes among listed ``org → [base, ...]`` (sorted): full
    fine-tune folders (``mlcc-<project>``) are not bases."""
    return [
        base_model_location(core_bucket, BaseModel(org=org, base=base))
        for org in sorted(orgs)
        if not org.startswith(_FULL_MODEL_PREFIX)
        for base in sorted(orgs[org])
    ]


def job_output(artifacts_bucket: str, project: str, kind: JobKind, *parts: str) -> S3Location:
    """``s3://<artifacts>/<project>/<kind>/<parts...>/``: raw job output, never served as-is."""
    check_bucket(artifacts_bucket)
    if kind not in JOB_KINDS:
        raise fail("unknown job kind", pointer="/kind", value=kind, allowed=", ".join(JOB_KINDS))
    check_components(project=project)
    problems = [
        problem
        for index, part in enumerate(parts)
        if (problem := component_problem(part, pointer=json_pointer("parts", index))) is not None
    ]
    if problems:
        raise MlccError(problems)
    tail = "".join(f"{p}/" for p in parts)
    return S3Location(bucket=artifacts_bucket, key=f"{project}/{kind}/{tail}")


# --- parsing ----------------------------------------------------------------------------


def parse_s3_uri(uri: str, *, pointer: str = "/uri") -> S3Location:
    """``s3://bucket/key`` → :class:`S3Location`; anything else is refused."""
    match = _S3_URI.match(uri) if isinstance(uri, str) else None
    if match is None:
        raise fail("not an S3 URI", pointer=pointer, value=uri, allowed="s3://<bucket>/<key>")
    check_bucket(match.group("bucket"), pointer=pointer)
    return S3Location(bucket=match.group("bucket"), key=match.group("key"))


def parse_canonical_adapter(uri: str) -> CanonicalAdapter | None:
    """The canonical adapter a URI names (home or version), or ``None`` when it is not one.

    Recognises ``s3://<bucket>/<model prefix>/.mlcc-adapters/<project>/<name>/[v<hash12>/]``
    under any model prefix, with or without the trailing slash.
    """
    match = _S3_URI.match(uri) if isinstance(uri, str) else None
    if match is None or not is_bucket_name(match.group("bucket")):
        return None
    parts = match.group("key").rstrip("/").split("/")
    if ADAPTER_DIR not in parts:
        return None
    at = parts.index(ADAPTER_DIR)
    model_parts, tail = parts[:at], parts[at + 1 :]
    if not model_parts or len(tail) not in (2, 3):
        return None
    version = tail[2] if len(tail) == 3 else None
    if version is not None and not is_version(version):
        return None
    if any(component_problem(p) for p in (*model_parts, *tail)):
        return None
    return CanonicalAdapter(
        model=S3Location(bucket=match.group("bucket"), key="/".join(model_parts) + "/"),
        project=tail[0],
        name=tail[1],
        version=version,
    )


# --- in-pod paths -----------------------------------------------------------------------


def pod_adapter_path(
    delivery: AdapterDelivery, project: str, name: str, version: str | None = None
) -> str:
    """The adapter's path inside a pod of a ``model-prefix`` target (no trailing slash).

    ``<mount_path>/<subdir>/<project>/<name>[/v<hash12>]``: the model prefix is mounted at
    ``mount_path``, so ``subdir`` must be the S3 layout's adapter folder.
    """
    if delivery.strategy != "model-prefix" or not delivery.mount_path or not delivery.subdir:
        raise fail(
            "the target does not deliver adapters through the model mount",
            pointer="/adapter_delivery",
            value=delivery.strategy,
            allowed="model-prefix with mount_path and subdir",
        )
    if delivery.subdir != ADAPTER_DIR:
        raise fail(
            "adapter_delivery.subdir must be the S3 layout's adapter folder: the pod sees the "
            "model prefix as it is on S3",
            pointer="/adapter_delivery/subdir",
            value=delivery.subdir,
            allowed=ADAPTER_DIR,
        )
    check_components(project=project, name=name)
    path = f"{delivery.mount_path.rstrip('/')}/{delivery.subdir}/{project}/{name}"
    return f"{path}/{check_version(version)}" if version is not None else path


def parse_pod_adapter_path(
    delivery: AdapterDelivery, path: object
) -> tuple[str, str, str | None] | None:
    """``(project, name, version or None)`` of an in-pod adapter path (the inverse of
    :func:`pod_adapter_path`); ``None`` for any other path."""
    if delivery.strategy != "model-prefix" or not delivery.mount_path or not delivery.subdir:
        return None
    root = f"{delivery.mount_path.rstrip('/')}/{delivery.subdir}/"
    if not isinstance(path, str) or not path.startswith(root):
        return None
    tail = path[len(root) :].rstrip("/").split("/")
    if len(tail) not in (2, 3) or any(component_problem(p) for p in tail):
        return None
    version = tail[2] if len(tail) == 3 else None
    if version is not None and not is_version(version):
        return None
    return tail[0], tail[1], version


def hyperpod_lifecycle_prefix(artifacts_bucket: str, content_hash: str) -> S3Location:
    """``s3://<artifacts>/.mlcc-hyperpod/lifecycle/v<hash12>/``: the HyperPod lifecycle
    scripts of one content (sha256 over their names and bytes). A changed script gets a new
    prefix, so the cluster's ``SourceS3Uri`` changes with it and no node ever reads a script
    half-replaced."""
    check_bucket(artifacts_bucket)
    key = "/".join((*_HYPERPOD_LIFECYCLE, version_id(content_hash)))
    return S3Location(bucket=artifacts_bucket, key=f"{key}/")
