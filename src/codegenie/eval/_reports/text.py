"""The ``text`` format: diagnostics compiler-style, grade's result lines and summary line.

A ``grade`` run prints its result lines as the cases are graded
(:func:`result_line`), so its report adds only the summary line; a merged
grade report, which arrives whole, prints every line first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from codegenie.eval._output import escape_control, wants_colour

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument, GradeDocument, GradeSuiteDocument
    from codegenie.eval._reports.sink import Sink
    from codegenie.eval.grading import GradeResult, GradeStatus

__all__ = ("REASON_WIDTH", "check_text", "grade_text", "grades_text", "paint", "result_line")

# The widest status word ("missing"), so that the case ids line up.
_STATUS_WIDTH: Final = 7
#: The most of a reason one text line shows (a rubric may print up to 1 MiB of it);
#: --format json keeps it whole.
REASON_WIDTH: Final = 200

# Each status's colour on a terminal, as pytest colours its outcomes.
_COLOURS: Final[dict[str, str]] = {
    "passed": "\x1b[32m",  # green
    "failed": "\x1b[31m",  # red
    "error": "\x1b[1m\x1b[31m",  # bold red
    "missing": "\x1b[33m",  # yellow
}
_RESET: Final = "\x1b[0m"


def paint(status: GradeStatus, words: str) -> str:
    """Return ``words`` in the colour of ``status`` (terminal escape sequences)."""
    return f"{_COLOURS[status]}{words}{_RESET}"


def result_line(
    result: GradeResult,
    case_width: int,
    *,
    colour: bool = False,
    shown: Callable[[str], str] = lambda reason: reason,
) -> str:
    """Return one text line: status, case id, score, duration, reason (escaped, shortened).

    ``colour`` paints the status word; ``shown`` rewrites the reason before it
    is escaped (the paths in it, as text output shows paths).
    """
    score = f"{result.score:.2f}" if result.score is not None else "-"
    duration = f"{result.duration_s:.2f}s" if result.duration_s is not None else "-"
    reason = escape_control(shown(result.reason or ""))
    if len(reason) > REASON_WIDTH:
        cut = len(reason) - REASON_WIDTH
        reason = f"{reason[:REASON_WIDTH]}… ({cut} more characters; --format json shows all)"
    case = escape_control(result.case)
    status = f"{result.status:<{_STATUS_WIDTH}}"
    if colour:
        padding = status[len(result.status) :]
        status = paint(result.status, result.status) + padding
    line = f"{status}  {case:<{case_width}}  {score:>5}  {duration:>8}"
    return f"{line}  {reason}".rstrip()


def check_text(report: CheckDocument, sink: Sink) -> None:
    """Write the diagnostics on stdout (they are the result), the summary as a note."""
    sink.diagnostics(report.diagnostics, stream=sink.stdout, base=None)
    sink.note(report.summary)


def grade_text(report: GradeDocument, sink: Sink) -> None:
    """Write the summary line (coloured on a terminal); a merged report's result lines first."""
    grades = report.report
    # pass@k is the verdict of samples (and of a --fail-under); one candidate a case has its count.
    shows_pass_at = grades.sampled or grades.fail_under is not None or grades.pass_at is not None
    if report.merged is None:
        colour = wants_colour(sink.stdout)
        sink.result({}, grades.summary(paint if colour else None))
        if shows_pass_at:
            sink.stdout.write(escape_control(grades.pass_at_line()) + "\n")
        return
    width = max((len(result.case) for result in grades.results), default=0)
    for result in grades.results:
        sink.stdout.write(result_line(result, width) + "\n")
    sink.stdout.write(escape_control(grades.summary()) + "\n")
    if shows_pass_at:
        sink.stdout.write(escape_control(grades.pass_at_line()) + "\n")


def grades_text(report: GradeSuiteDocument, sink: Sink) -> None:
    """Write ``grade --all``'s last line (each task class's lines and summary come as graded)."""
    sink.result({}, report.summary())
