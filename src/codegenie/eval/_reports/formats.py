"""The table of report formats: each ``--format`` name, and its renderer for each kind of report.

:data:`FORMATS` is the one place a format is declared. The command line's
``--format`` choices and its help, the ``format`` setting of
``[tool.codegenie-bench]``, which commands write which format, and how
``check``, ``grade``, ``merge`` and ``compare`` write a report are all read
from it.

A renderer is named, not imported (``"module:function"``): reading the
names costs the command line's start-up nothing, and a renderer's module is
imported only by :func:`render`, when a report is written in its format. A
renderer takes the typed report (:class:`~codegenie.eval._reports.documents.CheckDocument`,
:class:`~codegenie.eval._reports.documents.GradeDocument` or
:class:`~codegenie.eval._reports.documents.CompareDocument`) and the
:class:`~codegenie.eval._reports.sink.Sink` it writes to; it returns nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import (
        CheckDocument,
        CompareDocument,
        GradeDocument,
        GradeSuiteDocument,
    )
    from codegenie.eval._reports.sink import Sink

    #: Every kind of typed report a renderer takes.
    Report = CheckDocument | GradeDocument | GradeSuiteDocument | CompareDocument

__all__ = (
    "FORMATS",
    "NAMES",
    "REPORT_COMMANDS",
    "Format",
    "ReportKind",
    "commands_writing",
    "format_help",
    "format_metavar",
    "formats_of",
    "render",
    "renderer_path",
)

#: The kinds of report a format may render: ``check``'s, ``grade``'s, ``grade --all``'s
#: and ``compare``'s.
ReportKind = Literal["check", "grade", "grades", "compare"]

#: The commands that write each kind of report (``merge`` writes check's and grade's).
REPORT_COMMANDS: Final[Mapping[ReportKind, tuple[str, ...]]] = {
    "check": ("check", "merge"),
    "grade": ("grade", "merge"),
    "grades": ("grade",),
    "compare": ("compare",),
}

# The order in which help and errors name the commands that write reports.
_COMMANDS_IN_ORDER: Final = ("check", "grade", "merge", "compare")
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
            {
                "check": f"{_MODULE}.text:check_text",
                "grade": f"{_MODULE}.text:grade_text",
                "grades": f"{_MODULE}.text:grades_text",
                "compare": f"{_MODULE}.text:compare_text",
            },
            every_command=True,
        ),
        Format(
            "json",
            "JSON",
            {
                "check": f"{_MODULE}.json_report:check_json",
                "grade": f"{_MODULE}.json_report:grade_json",
                "grades": f"{_MODULE}.json_report:grades_json",
                "compare": f"{_MODULE}.json_report:compare_json",
            },
            every_command=True,
        ),
        Format(
            "github",
            "workflow annotations",
            {
                "check": f"{_MODULE}.github:check_github",
                "grade": f"{_MODULE}.github:grade_github",
                "grades": f"{_MODULE}.github:grades_github",
            },
        ),
        Format(
            "junit",
            "JUnit XML",
            {
                "check": f"{_MODULE}.junit:write_check_junit",
                "grade": f"{_MODULE}.junit:write_grade_junit",
                "grades": f"{_MODULE}.junit:write_grades_junit",
            },
        ),
        Format("sarif", "SARIF 2.1.0", {"check": f"{_MODULE}.sarif:write_check_sarif"}),
        Format("markdown", "Markdown", {"compare": f"{_MODULE}.summary:compare_markdown"}),
        Format(
            "html",
            "HTML page",
            {
                "check": f"{_MODULE}.html:check_html",
                "grade": f"{_MODULE}.html:grade_html",
                "grades": f"{_MODULE}.html:grades_html",
                "compare": f"{_MODULE}.html:compare_html",
            },
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


def format_help(command: str | None = None) -> str:
    """Return what ``--format`` says of each format: the default, then who writes the others.

    With ``command``, only the formats that command writes, each with what it is
    (its ``--help``: ``grade --help`` does not offer ``markdown``, which only
    ``compare`` writes).
    """

    def listed(commands: tuple[str, ...]) -> str:
        return (
            commands[0] if len(commands) == 1 else f"{', '.join(commands[:-1])} and {commands[-1]}"
        )

    parts = ["default: text"]
    if command is not None:
        parts += [f"{name}: {FORMATS[name].description}" for name in formats_of(command)[1:]]
        return f"output format ({'; '.join(parts)})"
    for name, format_ in FORMATS.items():
        commands = commands_writing(name)
        if commands is not None:
            parts.append(f"{name}: {format_.description}, {listed(commands)}")
    return f"output format ({'; '.join(parts)})"


def format_metavar(command: str) -> str:
    """Return how ``command``'s ``--help`` shows ``--format``'s values: ``{text,json,…}``."""
    return "{" + ",".join(formats_of(command)) + "}"


def renderer_path(name: str, kind: ReportKind) -> str | None:
    """Return the ``"module:function"`` that renders a ``kind`` report as ``name``, or ``None``."""
    return FORMATS[name].renderers.get(kind)


def render(name: str, report: Report, sink: Sink) -> None:
    """Write ``report`` to ``sink`` in format ``name``, importing its renderer now.

    Raises ``LookupError`` when the format does not render that kind of
    report (the command line refuses such a ``--format`` before it runs).
    """
    path = renderer_path(name, report.kind)
    if path is None:
        msg = f"--format {name} does not render {report.kind} reports"
        raise LookupError(msg)
    module, _, function = path.partition(":")
    renderer: Callable[[Report, Sink], None] = getattr(importlib.import_module(module), function)
    renderer(report, sink)
