"""The one set of rules every ``mlcc`` command follows, in one parser class and its helpers.

- **Exit codes**: 2 for a usage error (an unknown flag, a missing or repeated option, a bad
  choice: :meth:`MlccParser.error`, or a handler's :class:`UsageError`), 1 for bad input and
  runtime failures (:class:`~mlcc_constructs.core.support.errors.MlccError`, OS and S3
  errors), 0 when the command did what it was asked.
- **Error lines**: every error is one ``mlcc: error: <command>: <problem>`` line on stderr,
  the command named once (never ``mlcc: error: mlcc: ...``).
- **Once**: an option that takes one value refuses a repeat (argparse's ``store`` keeps the
  last one silently); :class:`MlccParser` makes :class:`Once` the default action, so
  ``append``, ``count`` and ``store_true`` options are untouched and no command can forget it.
- **Formats**: a command that prints data takes ``--format`` (:func:`add_format_option`:
  ``json``, ``table`` and ``yaml``) and prints through :func:`emit`; JSON and YAML reports
  carry ``command`` and ``ok`` at the top, on failure too (:func:`failure_document`).
  :data:`FORMAT_EXEMPT` lists the commands whose output is an artifact in its own format.
- **JSON-reporting commands** (:class:`ReportingParser`: ``adapter``, ``model``,
  ``endpoint``) print their JSON failure report for a usage error as well, and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from mlcc_constructs.core.support.errors import MlccError, Problem

FORMATS: tuple[str, ...] = ("json", "table", "yaml")
"""The ``--format`` values every data-printing command takes."""

FORMAT_EXEMPT: dict[str, str] = {
    "render": "prints Kubernetes manifests: the YAML is the output (`--out` writes files)",
    "argv": "prints the engine's command line, a JSON list a container's args take as is",
    "dashboard": "prints the Grafana dashboard JSON Grafana imports as is (`-o` writes a file)",
    "spec migrate": "prints the migrated spec file itself, in its own format (YAML or JSON)",
}
"""Commands without ``--format`` and why: their output is an artifact in its own format."""

COMMAND_DEST = "mlcc_command"
"""The namespace attribute holding the command's path (``"adapter list"``)."""


class UsageError(MlccError):
    """A command line that does not say what to do (exit 2, like argparse's own errors), found
    by a handler rather than by argparse (e.g. two options that need each other)."""


class ReportedError(MlccError):
    """A failure whose report the command built itself (:func:`failure_document` prints it
    instead of the generic one)."""

    def __init__(self, problems: list[Problem], document: dict[str, Any]) -> None:
        super().__init__(problems)
        self.document = document


class Once(argparse.Action):
    """Store a flag that takes one value, and refuse a repeat as a usage error naming the flag
    (argparse's own ``store`` keeps the last one silently: ``-f a.yaml -f b.yaml`` would render
    only ``b.yaml``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        seen: set[str] = namespace.__dict__.setdefault("_once_given", set())
        if self.option_strings and self.dest in seen:
            flags = " / ".join(self.option_strings)
            message = f"{flags} given more than once; it takes one value"
            if isinstance(parser, MlccParser):
                parser.usage_error(message, fix=f"pass {flags} once")
            parser.error(message)
        seen.add(self.dest)
        setattr(namespace, self.dest, values)


def command_of(prog: str) -> str:
    """``"mlcc adapter list"`` -> ``"adapter list"`` (``""`` for ``mlcc`` itself)."""
    return prog.removeprefix("mlcc").strip()


class MlccParser(argparse.ArgumentParser):
    """argparse with mlcc's rules: :class:`Once` the default action; a usage error is one
    ``mlcc: error:`` line naming the command and exit 2; a leaf command's unknown arguments are
    its own error (so a JSON-reporting command reports them); the command's path is stored in
    the namespace (:data:`COMMAND_DEST`). Subparsers inherit the class."""

    reports_json = False
    """Print the JSON failure report on stdout for a usage error too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the registry is shared with argument groups: every store-like option is Once
        self.register("action", None, Once)
        self.register("action", "store", Once)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        found, extras = super().parse_known_args(args, namespace)
        if not any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            if extras:  # a leaf: nothing after it would parse them
                self.error(f"unrecognized arguments: {' '.join(extras)}")
            setattr(found, COMMAND_DEST, command_of(self.prog))
        return found, extras

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse's own asks shutil for the width (less 2), and makes one for every
        # add_argument: importing shutil (and its bz2, lzma, zlib) costs every command's start-up.
        formatter: Any = self.formatter_class  # typeshed's protocol names only `prog`
        made: argparse.HelpFormatter = formatter(prog=self.prog, width=terminal_columns() - 2)
        return made

    def error(self, message: str) -> NoReturn:
        self.usage_error(message, fix=f"see {self.prog} --help")

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError:
            self.value_error(action, arg_string)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if isinstance(action, argparse._SubParsersAction):
            super()._check_value(action, value)  # an unknown command: a usage error (exit 2)
            return
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            self.value_error(action, value)

    def value_error(self, action: argparse.Action, value: Any) -> NoReturn:
        """A flag's value that its type or choices refuse: a bad value (exit 1), as every
        check after parsing reports one, not a usage error (exit 2): the same mistake exits
        the same way whichever step finds it. One ``mlcc: error: <flag>: ...`` line."""
        flag = max(action.option_strings, key=len, default=action.metavar or action.dest)
        allowed = (
            ", ".join(map(str, action.choices))
            if action.choices is not None
            else _TYPE_NAMES.get(action.type, "")
        )
        problem = Problem(
            message="not a valid value",
            where=str(flag),
            value=value,
            allowed=allowed,
            fix=f"see {self.prog} --help",
        )
        if self.reports_json:
            print(json.dumps(failure_report(command_of(self.prog), [problem]), indent=2))
        print(f"mlcc: error: {problem}", file=sys.stderr)
        self.exit(1)

    def usage_error(self, message: str, *, fix: str) -> NoReturn:
        """One ``mlcc: error: <command>: <message> (fix: ...)`` line (and the JSON report of a
        reporting command), exit 2."""
        command = command_of(self.prog)
        problem = Problem(message=message, where=command, fix=fix)
        if self.reports_json:
            print(json.dumps(failure_report(command, [problem]), indent=2))
        print(f"mlcc: error: {problem}", file=sys.stderr)
        self.exit(2)


_TYPE_NAMES: dict[Any, str] = {int: "an integer", float: "a number"}
"""What a flag of a plain type takes, for its bad-value error (other types name theirs in help)."""


def terminal_columns() -> int:
    """The width help is wrapped to, as :func:`shutil.get_terminal_size` finds it: a positive
    ``COLUMNS``, else the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class ReportingParser(MlccParser):
    """The parser of a command that reports JSON: a usage error also prints the command's
    JSON failure report on stdout (exit 2, like every usage error)."""

    reports_json = True


def walk(
    parser: argparse.ArgumentParser, path: str = "mlcc"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the tree with its command path, ``mlcc`` first; the leaves are the
    commands (tests walk this to hold every command to the rules)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}")


def is_leaf(parser: argparse.ArgumentParser) -> bool:
    """A parser that runs a command (no subcommands under it)."""
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def add_format_option(
    parser: argparse.ArgumentParser, *, default: str | None, extra: tuple[str, ...] = ()
) -> None:
    """``--format json|table|yaml`` (and a command's own ``extra`` forms)."""
    choices = (*extra, *FORMATS)
    shown = f"{default} (default)" if default else "the command's"
    parser.add_argument(
        "--format",
        choices=choices,
        default=default,
        help=f"output: {', '.join(choices)}; default: {shown}",
    )


def report_of(args: argparse.Namespace, document: Mapping[str, Any], *, ok: bool) -> dict[str, Any]:
    """``{"command", "ok", ...document}`` (a document's own ``ok`` wins)."""
    return {"command": getattr(args, COMMAND_DEST, ""), "ok": ok, **document}


def emit(
    args: argparse.Namespace,
    document: Mapping[str, Any],
    *,
    ok: bool = True,
    table: Callable[[], str] | None = None,
) -> None:
    """Print a command's data in ``args.format``: JSON or YAML reports with ``command`` and
    ``ok``; ``table`` the command's text (default: one ``KEY  VALUE`` row per field)."""
    fmt = getattr(args, "format", None) or "json"
    if fmt == "table":
        sys.stdout.write(table() if table is not None else key_value_table(document))
        return
    write_report(fmt, report_of(args, document, ok=ok))


def write_report(fmt: str, report: Mapping[str, Any]) -> None:
    """One JSON (indented) or YAML (the deterministic emitter) document on stdout."""
    if fmt == "yaml":
        from mlcc_constructs.core.support.yaml_output import to_yaml

        sys.stdout.write(to_yaml([report]))
    else:
        print(json.dumps(report, indent=2))


def key_value_table(document: Mapping[str, Any]) -> str:
    """A document as text: one ``KEY  VALUE`` row per field, a nested value as compact JSON."""
    if not document:
        return ""
    width = max(len(str(k)) for k in document)
    lines = []
    for key, value in document.items():
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        lines.append(f"{str(key).ljust(width)}  {text}")
    return "\n".join(lines) + "\n"


def failure_report(command: str, problems: Sequence[Problem | str]) -> dict[str, Any]:
    """The report a command prints on failure: the command and each error line."""
    return {"command": command, "ok": False, "errors": [str(p) for p in problems]}


def failure_document(args: argparse.Namespace, error: BaseException, lines: list[str]) -> None:
    """Print the failure report of a command that prints JSON or YAML (``--format``), on
    stdout: the document a :class:`ReportedError` carries, else the generic one."""
    fmt = getattr(args, "format", None)
    if fmt not in ("json", "yaml"):
        return
    command = getattr(args, COMMAND_DEST, "")
    report = failure_report(command, lines)
    if isinstance(error, ReportedError):
        report = {"command": command, **error.document, "ok": False, "errors": lines}
    write_report(fmt, report)
