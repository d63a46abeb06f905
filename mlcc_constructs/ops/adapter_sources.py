"""The files of a promotion source: an S3 prefix, a ``.tar.gz`` on S3 spooled to a temporary
file, or a Hugging Face repository (:mod:`mlcc_constructs.ops.hf_hub`).

:func:`open_source` lists (or unpacks) a source and hashes every file; the file-name and PEFT
rules it applies are :mod:`mlcc_constructs.core.adapters.record`'s. Close a source when done.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
from collections.abc import Collection
from typing import IO

from mlcc_constructs.core.adapters import s3_layout as layout
from mlcc_constructs.core.adapters.hf_source import is_hf_source, parse_hf_source
from mlcc_constructs.core.adapters.record import (
    PEFT_CONFIG,
    PeftInfo,
    archive_root,
    file_name_problem,
    parse_peft_config,
    peft_files_problems,
)
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.support.errors import MlccError, Problem, fail
from mlcc_constructs.ops.s3 import (
    CHUNK,
    S3Client,
    get_bytes,
    is_missing,
    list_objects,
    stream_sha256,
)
from mlcc_constructs.ops.source import Source


class PrefixSource(Source):
    """Every object under an S3 prefix (the record, ``metadata``, and folder markers
    excluded)."""

    def __init__(
        self,
        s3: S3Client,
        location: S3Location,
        *,
        metadata: Collection[str] = (layout.ADAPTER_RECORD,),
    ) -> None:
        self.uri = location.uri
        self._s3 = s3
        self._location = location
        self._keys: dict[str, str] = {}
        problems = []
        for item in list_objects(s3, location):
            key = item["Key"]
            name = location.relative(key)
            if key.endswith("/") or name in metadata:
                continue  # a console "folder" marker, or metadata (never content)
            if (problem := file_name_problem(name, where=self.where(name))) is not None:
                problems.append(problem)
                continue
            self._keys[name] = key
        if problems:
            raise MlccError(problems)
        self.files = {
            n: stream_sha256(s3, S3Location(bucket=location.bucket, key=k))
            for n, k in self._keys.items()
        }

    def where(self, name: str) -> str:
        """The file's S3 URI."""
        return self.uri + name

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``."""
        body = get_bytes(self._s3, S3Location(bucket=self._location.bucket, key=self._keys[name]))
        return body or b""

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        """Copy file ``name`` to ``dest`` (server side)."""
        s3.copy({"Bucket": self._location.bucket, "Key": self._keys[name]}, dest.bucket, dest.key)


class TarSource(Source):
    """The regular files of a gzip-compressed tar on S3, spooled to a temporary file."""

    def __init__(self, s3: S3Client, location: S3Location) -> None:
        self.uri = location.uri
        self._spool: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        try:
            s3.download_fileobj(location.bucket, location.key, self._spool)
        except Exception as error:
            if is_missing(error):
                raise fail("the source archive does not exist", value=self.uri) from error
            raise
        self._spool.seek(0)
        self._members: dict[str, tarfile.TarInfo] = {}
        try:
            self._tar = tarfile.open(fileobj=self._spool, mode="r:gz")  # noqa: SIM115
        except tarfile.TarError as error:
            raise fail(f"not a gzip-compressed tar archive: {error}", value=self.uri) from error
        problems = []
        members = [m for m in self._tar.getmembers() if not m.isdir()]
        names = [m.name.removeprefix("./") for m in members]
        strip = archive_root(names)
        for member, raw in zip(members, names, strict=True):
            name = raw.removeprefix(strip)
            if not member.isfile():
                problems.append(
                    Problem(
                        message="the archive may hold only regular files and folders",
                        where=self.uri,
                        value=member.name,
                    )
                )
            elif (problem := file_name_problem(name, where=self.uri)) is not None:
                problems.append(problem)
            else:
                self._members[name] = member
        if problems:
            raise MlccError(problems)
        self.files = {}
        for name, member in self._members.items():
            handle = self._tar.extractfile(member)
            assert handle is not None
            digest = hashlib.sha256()
            for chunk in iter(lambda h=handle: h.read(CHUNK), b""):  # type: ignore[misc]
                digest.update(chunk)
            self.files[name] = digest.hexdigest()

    def read(self, name: str) -> bytes:
        """The bytes of member ``name``."""
        handle = self._tar.extractfile(self._members[name])
        return handle.read() if handle is not None else b""

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        """Upload member ``name`` to ``dest``."""
        handle = self._tar.extractfile(self._members[name])
        assert handle is not None
        s3.upload_fileobj(handle, dest.bucket, dest.key)

    def close(self) -> None:
        """Close the archive and delete its spool file."""
        self._tar.close()
        self._spool.close()


def open_source(
    s3: S3Client, uri: str, *, metadata: Collection[str] = (layout.ADAPTER_RECORD,)
) -> Source:
    """The source at ``uri``: a Hugging Face repository (``hf://``), a ``.tar.gz``/``.tgz``
    archive, else a prefix with files (``metadata``: the record names that are not content)."""
    if is_hf_source(uri):
        from mlcc_constructs.ops.hf_hub import HubSource  # imports huggingface_hub: only here

        return HubSource(parse_hf_source(uri))
    location = layout.parse_s3_uri(uri, pointer="/source")
    if location.key.endswith((".tar.gz", ".tgz")):
        return TarSource(s3, location)
    if not location.is_prefix:
        location = S3Location(bucket=location.bucket, key=location.key + "/")
    source = PrefixSource(s3, location, metadata=metadata)
    if not source.files:
        raise fail(
            "the source prefix holds no files",
            pointer="/source",
            value=uri,
            fix="point at the folder holding adapter_config.json and the adapter weights",
        )
    return source


def check_peft_files(source: Source) -> PeftInfo:
    """The source's PEFT config, once its top holds a config and weights."""
    problems = peft_files_problems(source.files, where=source.uri)
    if problems:
        raise MlccError(problems)
    return parse_peft_config(source.read(PEFT_CONFIG), where=source.where(PEFT_CONFIG))
