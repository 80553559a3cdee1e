r"""Diagnostics: one located problem, rendered for people, machines and CI.

A diagnostic is what the command line prints for an error and what ``check``
reports for each inconsistency: a stable ``code``, a ``severity``, a message,
where it is (``file``, ``line``, ``column``), the ``slug`` concerned and a
``hint``. Renderers follow the compiler convention
(``FILE:LINE:COL: error[code]: message``) and GitHub's workflow commands, and
never let a string from a manifest, a path or a registration forge a line or
reach the terminal raw: control characters are escaped
(:func:`escape_control`), and the ``github`` form also escapes ``%``, ``\r``
and ``\n`` in data, plus ``:`` and ``,`` in properties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from codegenie.eval._output import escape_control

__all__ = (
    "Diagnostic",
    "DiagnosticCounts",
    "Severity",
    "escape_control",
    "escape_github_data",
    "escape_github_property",
)

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem, where it is, and what to do about it.

    ``file`` is ``None`` for a problem with no file (a bad command-line
    argument); ``line`` and ``column`` are 1-based, ``None`` when unknown.
    ``traceback`` is, for a registration that raised, its traceback without
    the loader's frames (shown with ``-v``); for an environment uv could not
    build, what uv said.
    """

    code: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    slug: str | None = None
    hint: str | None = None
    traceback: str | None = None

    def location(self, program: str = "codegenie-bench") -> str:
        """Return ``FILE:LINE:COL``, as much of it as is known, or ``program``.

        The file is returned as it is, control characters included: callers
        that print it escape it.
        """
        if self.file is None:
            return program
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def render_text(
        self, *, colour: bool = False, hint: bool = True, traceback: bool = False
    ) -> str:
        """Return the compiler-convention text: the diagnostic, then its hint line.

        ``hint=False`` leaves the hint out; ``traceback=True`` adds the
        registration's traceback (when there is one) between the two, indented.
        Whatever the strings hold, each printed line is one line: control
        characters are escaped. ``colour`` adds terminal colours (location in
        bold, severity and code in red or yellow, ``hint`` in cyan) around
        the escaped text.
        """
        location = escape_control(f"{self.location()}:")
        label = escape_control(f"{self.severity}[{self.code}]")
        message = escape_control(self.message)
        if colour:
            tint = _RED if self.severity == "error" else _YELLOW
            location = f"{_BOLD}{location}{_RESET}"
            label = f"{_BOLD}{tint}{label}{_RESET}"
        lines = [f"{location} {label}: {message}"]
        if traceback and self.traceback:
            lines += [f"    {escape_control(line)}" for line in self.traceback.splitlines()]
        if hint and self.hint:
            word = f"{_BOLD}{_CYAN}hint{_RESET}" if colour else "hint"
            lines.append(f"  {word}: {escape_control(self.hint)}")
        return "\n".join(lines)

    def render_github(self) -> str:
        """Return a GitHub Actions workflow command (``::error file=…,line=…::…``).

        One line, whatever the strings hold: control characters are escaped
        first (:func:`escape_control`), then the message and hint as
        workflow-command data and the file and title as properties.
        """
        properties = []
        if self.file is not None:
            properties.append(f"file={escape_github_property(escape_control(self.file))}")
            if self.line is not None:
                properties.append(f"line={self.line}")
            if self.column is not None:
                properties.append(f"col={self.column}")
        title = f"{self.code}" + (f" ({self.slug})" if self.slug else "")
        properties.append(f"title={escape_github_property(escape_control(title))}")
        message = escape_control(self.message)
        if self.hint:
            message += f"\nhint: {escape_control(self.hint)}"
        return f"::{self.severity} {','.join(properties)}::{escape_github_data(message)}"

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape of a diagnostic."""
        return asdict(self)

    def sort_key(self) -> tuple[str, int, int, str, str, str]:
        """Return the sort key: file, line, column, slug, code, message."""
        return (
            self.file or "",
            self.line or 0,
            self.column or 0,
            self.slug or "",
            self.code,
            self.message,
        )


_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_YELLOW = "\x1b[33m"
_CYAN = "\x1b[36m"
_RESET = "\x1b[0m"


class DiagnosticCounts:
    """What every report of diagnostics counts of them: its errors and its warnings.

    A base of the frozen dataclasses that hold ``diagnostics`` (a check run's
    report, the document a format renders, a report read back), so that the
    counts are defined once.
    """

    __slots__ = ()
    diagnostics: Sequence[Diagnostic]

    @property
    def errors(self) -> int:
        """How many diagnostics are errors."""
        return sum(d.severity == "error" for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        """How many diagnostics are warnings."""
        return sum(d.severity == "warning" for d in self.diagnostics)


def escape_github_data(value: str) -> str:
    """Return ``value`` escaped as the data of a GitHub workflow command (``%``, CR, LF)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_github_property(value: str) -> str:
    """Return ``value`` escaped as a workflow-command property: the data rules, ``:`` and ``,``."""
    return escape_github_data(value).replace(":", "%3A").replace(",", "%2C")
