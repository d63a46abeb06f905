"""Hugging Face adapter sources: ``hf://<org>/<repo>[@revision]`` (seed lora-delivery §1,
"add --from-hub": the repository's loose PEFT files go straight to a canonical version).

Pure: parsing a source, and choosing which of a repository's files are the adapter's. Talking
to the Hub is :mod:`mlcc_constructs.ops.hf_hub`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mlcc_constructs.core.support.errors import fail

SCHEME = "hf://"
"""The prefix of a Hugging Face source."""
# A Hub repository id as huggingface_hub's validate_repo_id accepts it (utils/_validators.py):
# <namespace>/<name>, letters, digits, '-', '_', '.', at most 96 each, no '--' or '..', no
# leading or trailing '-' or '.'.
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO = re.compile(rf"^(?P<repo>{_PART}/{_PART})(?:@(?P<revision>[^@]*))?$")
# A branch, tag or commit: git ref characters ('refs/pr/1' included), no whitespace.
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
GIT_METADATA = (".gitattributes", ".gitignore")
"""Files of a Hub repository that are git's, not the adapter's."""
_ALLOWED = "hf://<org>/<repo> or hf://<org>/<repo>@<branch, tag or commit>"


@dataclass(frozen=True, kw_only=True)
class HfSource:
    """A Hugging Face model repository and the revision asked for (``None``: the default
    branch)."""

    repo_id: str
    revision: str | None = None

    @property
    def uri(self) -> str:
        """``hf://<org>/<repo>[@revision]``."""
        return f"{SCHEME}{self.repo_id}" + (f"@{self.revision}" if self.revision else "")

    def at(self, commit: str) -> HfSource:
        """The same repository pinned to a resolved commit (what a record names)."""
        if not _COMMIT.match(commit):
            raise fail("the Hub answered with no commit id", value=commit, where=self.uri)
        return HfSource(repo_id=self.repo_id, revision=commit)


def is_hf_source(text: object) -> bool:
    """True when ``text`` uses the ``hf://`` scheme (valid or not)."""
    return isinstance(text, str) and text.startswith(SCHEME)


def parse_hf_source(text: str, *, where: str = "", pointer: str = "/source") -> HfSource:
    """``hf://<org>/<repo>[@revision]`` → :class:`HfSource`, or an error naming what is
    wrong (``where``/``pointer`` locate the value)."""
    body = text[len(SCHEME) :] if is_hf_source(text) else None
    match = _REPO.match(body) if body is not None else None
    if match is None or ".." in match.group("repo") or "--" in match.group("repo"):
        raise fail(
            "not a Hugging Face repository",
            where=where,
            pointer=pointer,
            value=text,
            allowed=_ALLOWED,
        )
    revision = match.group("revision")
    if revision is not None and (not _REVISION.match(revision) or ".." in revision):
        raise fail(
            "not a Hugging Face revision",
            where=where,
            pointer=pointer,
            value=text,
            allowed="a branch, tag or commit after '@' (letters, digits, '.', '_', '-', '/')",
        )
    return HfSource(repo_id=match.group("repo"), revision=revision)


def adapter_file_names(names: Iterable[str]) -> list[str]:
    """The repository files that are the adapter's (sorted): its top-level files, git's own
    excepted. A PEFT adapter is a flat folder; sub-folders of a repository are other things
    (checkpoints, runs) and never part of the version."""
    return sorted(n for n in names if "/" not in n and n not in GIT_METADATA)
