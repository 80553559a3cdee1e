"""The table of report formats: each ``--format`` name, and its renderer for each kind of report.

:data:`FORMATS` is the one place a format is declared. The command line's
``--format`` choices and its help, the ``format`` setting of
``[tool.codegenie-bench]``, which commands write which format, and how
``check``, ``grade`` and ``merge`` write a report are all read from it.

A renderer is named, not imported (``"module:function"``): reading the
names costs the command line's start-up nothing, and a renderer's module is
imported only by :func:`render`, when a report is written in its format. A
renderer takes the typed report (:class:`~codegenie.eval._reports.documents.CheckDocument`
or :class:`~codegenie.eval._reports.documents.GradeDocument`) and the
:class:`~codegenie.eval._reports.sink.Sink` it writes to; it returns nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument, GradeDocument
    from codegenie.eval._reports.sink import Sink

__all__ = (
    "FORMATS",
    "NAMES",
    "REPORT_COMMANDS",
    "Format",
    "ReportKind",
    "commands_writing",
    "format_help",
    "formats_of",
    "render",
    "renderer_path",
)

#: The kinds of report a format may render: ``check``'s and ``grade``'s.
ReportKind = Literal["check", "grade"]

#: The commands that write each kind of report (``merge`` writes both).
REPORT_COMMANDS: Final[Mapping[ReportKind, tuple[str, ...]]] = {
    "check": ("check", "merge"),
    "grade": ("grade", "merge"),
}

# The order in which help and errors name the commands that write reports.
_COMMANDS_IN_ORDER: Final = ("check", "grade", "merge")
_MODULE: Final = "codegenie.eval._reports"


class Format(NamedTuple):
    """One ``--format``: its name, what it is, and its renderer of each kind of report.

    Immutable (a named tuple: the command line reads the table at start-up,
    and a named tuple costs the least to define).

    ``renderers`` maps a kind of report to its renderer, named
    ``"module:function"`` (imported only to render). ``every_command``: every
    command writes this format (``text`` and ``json``; the commands that do
    not write a report print their own results in it); otherwise only the
    commands that write a kind of report it renders accept it.
    """

    name: str
    description: str
    renderers: Mapping[ReportKind, str]
    every_command: bool = False


#: Every format, in the order ``--format`` lists them.
FORMATS: Final[Mapping[str, Format]] = {
    format_.name: format_
    for format_ in (
        Format(
            "text",
            "text",
            {"check": f"{_MODULE}.text:check_text", "grade": f"{_MODULE}.text:grade_text"},
            every_command=True,
        ),
        Format(
            "json",
            "JSON",
            {
                "check": f"{_MODULE}.json_report:check_json",
                "grade": f"{_MODULE}.json_report:grade_json",
            },
            every_command=True,
        ),
        Format(
            "github",
            "workflow annotations",
            {
                "check": f"{_MODULE}.github:check_github",
                "grade": f"{_MODULE}.github:grade_github",
            },
        ),
        Format(
            "junit",
            "JUnit XML",
            {
                "check": f"{_MODULE}.junit:write_check_junit",
                "grade": f"{_MODULE}.junit:write_grade_junit",
            },
        ),
        Format("sarif", "SARIF 2.1.0", {"check": f"{_MODULE}.sarif:write_check_sarif"}),
        Format(
            "html",
            "HTML page",
            {"check": f"{_MODULE}.html:check_html", "grade": f"{_MODULE}.html:grade_html"},
        ),
    )
}

#: The ``--format`` names, in order.
NAMES: Final = tuple(FORMATS)


def commands_writing(name: str) -> tuple[str, ...] | None:
    """Return the commands that write format ``name``, in order; ``None``: every command."""
    format_ = FORMATS[name]
    if format_.every_command:
        return None
    wanted = {command for kind in format_.renderers for command in REPORT_COMMANDS[kind]}
    return tuple(command for command in _COMMANDS_IN_ORDER if command in wanted)


def formats_of(command: str) -> tuple[str, ...]:
    """Return the formats ``command`` writes, in order."""
    return tuple(
        name
        for name in NAMES
        if (commands := commands_writing(name)) is None or command in commands
    )


def format_help() -> str:
    """Return what ``--format`` says of each format: the default, then who writes the others."""

    def listed(commands: tuple[str, ...]) -> str:
        return (
            commands[0] if len(commands) == 1 else f"{', '.join(commands[:-1])} and {commands[-1]}"
        )

    parts = ["default: text"]
    for name, format_ in FORMATS.items():
        commands = commands_writing(name)
        if commands is not None:
            parts.append(f"{name}: {format_.description}, {listed(commands)}")
    return f"output format ({'; '.join(parts)})"


def renderer_path(name: str, kind: ReportKind) -> str | None:
    """Return the ``"module:function"`` that renders a ``kind`` report as ``name``, or ``None``."""
    return FORMATS[name].renderers.get(kind)


def render(name: str, report: CheckDocument | GradeDocument, sink: Sink) -> None:
    """Write ``report`` to ``sink`` in format ``name``, importing its renderer now.

    Raises ``LookupError`` when the format does not render that kind of
    report (the command line refuses such a ``--format`` before it runs).
    """
    path = renderer_path(name, report.kind)
    if path is None:
        msg = f"--format {name} does not render {report.kind} reports"
        raise LookupError(msg)
    module, _, function = path.partition(":")
    renderer: Callable[[CheckDocument | GradeDocument, Sink], None] = getattr(
        importlib.import_module(module), function
    )
    renderer(report, sink)
