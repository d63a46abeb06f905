"""A Hugging Face adapter repository as a promotion source (``hf://<org>/<repo>[@revision]``).

:class:`HubSource` asks the Hub for the repository's files at the revision (one API call,
which resolves the revision to a commit), checks that its top holds a PEFT adapter, and only
then downloads the adapter's files
(:func:`mlcc_constructs.core.adapters.hf_source.adapter_file_names`)
at that commit into a temporary folder, once: opening the same commit again (``mlcc adapter
add`` plans, then promotes) reuses it. Gated, private, missing repositories and revisions
and an unreachable Hub are :class:`~mlcc_constructs.core.support.errors.MlccError` before anything
is downloaded or written.

``huggingface_hub`` does the talking: it reads ``HF_TOKEN`` for the token; ``HF_ENDPOINT`` (a
mirror, or a test's loopback fake) is read here when the source is opened, so a value set
after ``huggingface_hub`` was imported still counts.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.adapters.hf_source import HfSource, adapter_file_names
from mlcc_constructs.core.adapters.record import file_name_problem, peft_files_problems
from mlcc_constructs.core.adapters.s3_layout import S3Location
from mlcc_constructs.core.support.errors import MlccError, fail
from mlcc_constructs.ops.s3 import CHUNK, S3Client
from mlcc_constructs.ops.source import Source

DEFAULT_ENDPOINT = "https://huggingface.co"
"""The Hub ``huggingface_hub`` talks to when ``HF_ENDPOINT`` is not set."""


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` (read now), else the public Hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


class HubSource(Source):
    """The adapter files of a Hugging Face repository at one commit, downloaded to a temporary
    folder (the latest download is kept for the next open of the same commit, and deleted when
    another is downloaded or the process exits). ``uri`` names the resolved commit."""

    def __init__(self, hub: HfSource) -> None:
        from huggingface_hub import HfApi

        endpoint = hub_endpoint()
        self.requested = hub
        try:
            info = HfApi(endpoint=endpoint).model_info(hub.repo_id, revision=hub.revision)
        except Exception as error:
            raise hub_error(error, hub, endpoint) from error
        self.pinned = hub.at(str(info.sha or ""))
        self.uri = self.pinned.uri
        names = adapter_file_names(s.rfilename for s in (info.siblings or []))
        problems = [p for n in names if (p := file_name_problem(n, where=hub.uri)) is not None]
        problems += peft_files_problems(names, where=hub.uri)
        if problems:
            raise MlccError(problems)
        self._download = _downloaded(self.pinned, names, endpoint)
        self.files = dict(self._download.hashes)

    def where(self, name: str) -> str:
        """``hf://<org>/<repo>@<commit> <file>``."""
        return f"{self.uri} {name}"

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``."""
        return self._download.paths[name].read_bytes()

    def copy_to(self, s3: S3Client, name: str, dest: S3Location) -> None:
        """Upload file ``name`` to ``dest``."""
        s3.upload_file(str(self._download.paths[name]), dest.bucket, dest.key)

    def close(self) -> None:
        """Nothing to release now: the download stays for the next open of the same commit
        (``mlcc adapter add`` plans, then promotes) and is deleted when another commit is
        downloaded or the process exits."""


@dataclass(frozen=True)
class _Download:
    """The adapter files of one commit in a temporary folder, with their SHA-256."""

    key: tuple[str, str, tuple[str, ...]]
    folder: tempfile.TemporaryDirectory[str]
    paths: Mapping[str, Path]
    hashes: Mapping[str, str]


_LAST: list[_Download] = []
"""The latest download only: a command that opens the same commit twice (plan, then promote)
fetches it once, and a long-lived process keeps at most one adapter on disk."""


def _downloaded(pinned: HfSource, names: list[str], endpoint: str) -> _Download:
    """The files ``names`` of the pinned commit, downloaded now unless the latest download
    was exactly these."""
    from huggingface_hub import hf_hub_download

    key = (endpoint, pinned.uri, tuple(sorted(names)))
    if _LAST and _LAST[0].key == key and all(p.is_file() for p in _LAST[0].paths.values()):
        return _LAST[0]
    while _LAST:
        _LAST.pop().folder.cleanup()
    folder = tempfile.TemporaryDirectory(prefix="mlcc-hf-")
    paths: dict[str, Path] = {}
    try:
        for name in names:
            path = hf_hub_download(
                pinned.repo_id,
                name,
                revision=pinned.revision,
                local_dir=folder.name,
                endpoint=endpoint,
                tqdm_class=_quiet_progress(),
            )
            paths[name] = Path(str(path))
    except Exception as error:
        folder.cleanup()
        raise hub_error(error, pinned, endpoint) from error
    download = _Download(
        key=key,
        folder=folder,
        paths=MappingProxyType(paths),
        hashes=MappingProxyType({name: _sha256(path) for name, path in paths.items()}),
    )
    _LAST.append(download)
    return download


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _quiet_progress() -> Any:
    """A progress-bar class that draws nothing: ``mlcc`` prints JSON on stdout and one-line
    errors on stderr, never bars."""
    from tqdm.auto import tqdm  # type: ignore[import-untyped]

    class Quiet(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    return Quiet


def hub_error(error: Exception, hub: HfSource, endpoint: str) -> MlccError:
    """A clear error for what ``huggingface_hub`` raised; anything else is re-raised as is
    (a bug keeps its traceback)."""
    from huggingface_hub import errors

    status = getattr(getattr(error, "response", None), "status_code", None)
    token = "HF_TOKEN is set" if os.environ.get("HF_TOKEN") else "HF_TOKEN is not set"
    if isinstance(error, errors.GatedRepoError) or status == 403:
        return fail(
            f"the Hugging Face repository {hub.repo_id} is gated and this token may not read it "
            f"(HTTP {status}; {token})",
            where=hub.uri,
            fix="accept the repository's terms on its Hub page with the account whose token "
            "is in HF_TOKEN, or use a token that has access",
        )
    if isinstance(error, errors.RevisionNotFoundError):
        return fail(
            f"the Hugging Face repository {hub.repo_id} has no revision {hub.revision!r} "
            f"(HTTP {status})",
            where=hub.uri,
            fix="name an existing branch, tag or commit after '@', or none for the default branch",
        )
    if isinstance(error, errors.RepositoryNotFoundError) or status in (401, 404):
        return fail(
            f"the Hugging Face repository {hub.repo_id} does not exist, or it is private and "
            f"this token may not read it (HTTP {status}; {token})",
            where=hub.uri,
            fix="check the repository id; for a private repository set HF_TOKEN to a token "
            "that can read it",
        )
    if isinstance(error, errors.HfHubHTTPError):
        return fail(
            f"the Hugging Face Hub at {endpoint} answered HTTP {status}",
            where=hub.uri,
            fix="try again later, or check HF_ENDPOINT",
        )
    if type(error).__module__.split(".")[0] in ("httpx2", "httpcore2") or isinstance(
        error, (OSError, errors.LocalEntryNotFoundError)
    ):
        return fail(
            f"cannot reach the Hugging Face Hub at {endpoint}: {error}",
            where=hub.uri,
            fix="check the network, or HF_ENDPOINT for a mirror",
        )
    raise error
