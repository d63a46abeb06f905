"""Errors that name what went wrong, where, the bad value, what is allowed and the fix.

Every rule in the core reports through :class:`Problem`; a check that can find several
problems collects them and raises one :class:`MlccError` holding all of them, so a user
fixes a file in one pass instead of one error per run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

_MISSING = object()


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One problem: ``where`` is a file, flag or object; ``pointer`` an RFC 6901 JSON pointer
    into it (``/env/VLLM_MAX_LORAS``), or empty."""

    message: str
    where: str = ""
    pointer: str = ""
    value: object = _MISSING
    allowed: str = ""
    fix: str = ""

    def __post_init__(self) -> None:
        # One location format everywhere: a JSON pointer into the input (or nothing, with
        # ``where`` naming the file, flag or object).
        if self.pointer and not self.pointer.startswith("/"):
            raise ValueError(f"Problem.pointer must be an RFC 6901 JSON pointer: {self.pointer!r}")

    def __str__(self) -> str:
        location = ":".join(part for part in (self.where, self.pointer) if part)
        text = f"{location}: {self.message}" if location else self.message
        text = _printable(text)
        details = []
        if self.value is not _MISSING:
            details.append(f"got {self.value!r}")
        if self.allowed:
            details.append(f"allowed: {self.allowed}")
        if self.fix:
            details.append(f"fix: {self.fix}")
        return f"{text} ({'; '.join(details)})" if details else text


def _printable(text: str) -> str:
    """``text`` on one line: control and other non-printable characters (a key read from a
    file may hold any) escaped as Python does in a repr."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class MlccError(Exception):
    """Raised for bad input. ``problems`` holds every problem found, in a stable order."""

    def __init__(self, problems: Problem | Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = (
            (problems,) if isinstance(problems, Problem) else tuple(problems)
        )
        if not self.problems:
            raise ValueError("MlccError needs at least one problem")
        super().__init__("\n".join(str(p) for p in self.problems))


def fail(
    message: str,
    *,
    where: str = "",
    pointer: str = "",
    value: object = _MISSING,
    allowed: str = "",
    fix: str = "",
) -> MlccError:
    """Build a single-problem error: ``raise fail("...", pointer=..., value=...)``."""
    return MlccError(
        Problem(
            message=message, where=where, pointer=pointer, value=value, allowed=allowed, fix=fix
        )
    )


def raise_if_any(problems: Iterable[Problem]) -> None:
    """Raise one :class:`MlccError` with every problem, or return when there are none."""
    collected = tuple(problems)
    if collected:
        raise MlccError(collected)


def json_pointer(*parts: object) -> str:
    """RFC 6901 pointer for ``parts`` (``~`` and ``/`` escaped)."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return "".join("/" + p for p in escaped)


def closest(
    name: str, candidates: Iterable[str], limit: int = 3, *, cutoff: float = 0.5
) -> list[str]:
    """The candidates closest to ``name`` by edit similarity (at least ``cutoff``, 0 to 1), for
    'did you mean' hints."""
    import difflib  # only on an error: pure commands do not import it

    return difflib.get_close_matches(name, sorted(candidates), n=limit, cutoff=cutoff)
