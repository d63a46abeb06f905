"""The fenced code blocks of README.md and docs/**/*.md, with the HTML comments that label them.

A block may be preceded (blank lines allowed) by comments that say how the tests treat it:

- ``<!-- example: NAME -->`` names it (a test may check what it makes, or another block may
  continue it);
- ``<!-- continues: NAME -->`` runs it after the named block of the same page, in one program;
- ``<!-- not-run: REASON -->`` keeps a shell block from running (it needs AWS, a cluster...);
  its ``mlcc`` commands are still parsed by the real parser;
- ``<!-- from-zero:MARKER -->`` is the quick start's path, read by tests/aws/test_first_deploy.py.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w+-]*)\s*$")
COMMENT = re.compile(r"^\s*<!--\s*(?P<key>[\w-]+)\s*:?\s*(?P<value>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text (indent removed), its labels."""

    page: str
    line: int
    lang: str
    text: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        name = self.labels.get("example")
        return f"{self.page}:{self.line}" + (f"[{name}]" if name else "")


def pages() -> list[Path]:
    """README.md, then every Markdown page of docs/ (sorted)."""
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one page, in order."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    page = str(path.relative_to(REPO))
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        labels: dict[str, str] = {}
        j = i - 1
        while j >= 0 and (not lines[j].strip() or COMMENT.match(lines[j])):
            comment = COMMENT.match(lines[j])
            if comment:
                labels.setdefault(comment["key"], comment["value"])
            j -= 1
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = textwrap.dedent("\n".join(lines[i + 1 : end]))
        found.append(Block(page, i + 1, opening["lang"], body + "\n", labels))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def named(name: str) -> Block:
    (block,) = [b for b in all_blocks() if b.labels.get("example") == name]
    return block


def program(block: Block) -> str:
    """A Python block's program: the blocks it continues, then itself."""
    earlier = block.labels.get("continues")
    return (program(named(earlier)) + "\n" if earlier else "") + block.text


def shell_commands(text: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines out."""
    joined = text.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(line)
    return commands


def unsafe_operators(command: str) -> list[str]:
    """Redirection operators a placeholder would turn into (``<account>``): none may appear."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.commenters = "#"
    lexer.whitespace_split = True
    operators = set("();<>|&")
    return [t for t in lexer if set(t) <= operators and set(t) & {"<", ">"}]
