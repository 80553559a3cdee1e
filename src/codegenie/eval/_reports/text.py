"""The ``text`` format: diagnostics, grade's result and summary lines, what compare found.

A ``grade`` run prints its result lines as the cases are graded
(:func:`result_line`), so its report adds only the summary line; a merged
grade report, which arrives whole, prints every line first. A ``compare``
report prints both runs and their pass@k, one line per case that changed,
the count of each change and the test (:func:`compare_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from codegenie.eval._output import escape_control, wants_colour

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import (
        CheckDocument,
        CompareDocument,
        GradeDocument,
        GradeSuiteDocument,
        Outcome,
        Side,
    )
    from codegenie.eval._reports.sink import Sink
    from codegenie.eval.grading import GradeResult, GradeStatus

__all__ = (
    "REASON_WIDTH",
    "check_text",
    "compare_lines",
    "compare_text",
    "grade_text",
    "grades_text",
    "paint",
    "regressions_phrase",
    "result_line",
    "signed",
    "state",
    "statistic_line",
)

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
    cheat = None if report.rubrics is None else report.rubrics.exploits
    if cheat is not None:
        sink.note(cheat.sentence())
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


# -- compare ---------------------------------------------------------------------------

# The widest change word ("regressed", "unchanged"), so that the case ids line up.
_CHANGE_WIDTH: Final = 9


def _shortened(reason: str) -> str:
    """``reason`` escaped, cut at :data:`REASON_WIDTH` characters (JSON keeps it whole)."""
    reason = escape_control(reason)
    if len(reason) > REASON_WIDTH:
        return f"{reason[:REASON_WIDTH]}…"
    return reason


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def signed(value: float | None) -> str:
    """``value`` with its sign and three decimals (``+0.040``); ``-`` for none; never ``-0.000``."""
    if value is None:
        return "-"
    text = f"{value:+.3f}"
    return "+0.000" if text == "-0.000" else text


def state(outcome: Outcome | None, side: Side) -> str:
    """Return a case's state on one side: its status (and samples, when sampled), or ``absent``."""
    if outcome is None:
        return "absent"
    if side.sampled and outcome.samples_total:
        return f"{outcome.status} {outcome.samples_passed}/{outcome.samples_total}"
    return outcome.status


def statistic_line(report: CompareDocument) -> str:
    """Return the test's line: McNemar's p-value, the bootstrap's interval, or why neither."""
    from codegenie.eval._reports.documents import McNemar  # noqa: PLC0415 - start-up: grade's text lines do not pay for it

    test = report.test
    if test is None:
        return "no case is in both reports: no test"
    if isinstance(test, McNemar):
        p_value = f"{test.p_value:.3f}" if test.p_value >= 0.001 else f"{test.p_value:.1e}"
        return f"McNemar exact p = {p_value} ({test.improved} improved, {test.regressed} regressed)"
    interval = test.interval
    return (
        f"pass@1 difference {signed(interval.difference)}, {test.confidence:.0%} CI "
        f"[{signed(interval.low)}, {signed(interval.high)}] "
        f"(paired bootstrap, {test.resamples} resamples, seed {test.seed})"
    )


def regressions_phrase(report: CompareDocument) -> str:
    """Return ``no regression``, ``1 regression``, ``3 regressions, 1 of them gone``."""
    regressions = report.regressions
    if regressions == 0:
        return "no regression"
    phrase = f"{regressions} regression{'s' if regressions > 1 else ''}"
    gone = regressions - report.changes["regressed"]
    return f"{phrase}, {gone} of them gone" if gone else phrase


def _side_line(label: str, side: Side) -> str:
    name = side.run.name if side.run is not None else None
    run = f" (run {escape_control(name)})" if isinstance(name, str) and name else ""
    sampling = "sampled" if side.sampled else "one sample a case"
    return f"{label}{escape_control(side.file)}{run}: {side.passed}/{side.total} passed, {sampling}"


def compare_lines(report: CompareDocument) -> list[str]:
    """Return the text of a compare report, one string a line, every string from a report escaped.

    Both runs; each k's pass@k, before and after, and the difference; one
    line per case that changed (``regressed  case-id  passed → failed  (base:
    …; new: …)``), an unchanged case only counted; the counts; the test.
    """
    lines = [
        f"task class {escape_control(report.task_class)}",
        _side_line("base: ", report.base),
        _side_line("new:  ", report.new),
    ]
    lines += [
        f"pass@{c.k}: {_fixed(c.base)} → {_fixed(c.new)} ({signed(c.difference)})"
        for c in report.pass_at_k
    ]
    changed = [c for c in report.cases if c.change != "unchanged"]
    width = max((len(escape_control(c.case)) for c in changed), default=0)
    for c in changed:
        before, after = state(c.base, report.base), state(c.new, report.new)
        reasons = [
            f"{label}: {_shortened(outcome.reason)}"
            for label, outcome in (("base", c.base), ("new", c.new))
            if outcome is not None and outcome.reason
        ]
        line = f"{c.change:<{_CHANGE_WIDTH}}  {escape_control(c.case):<{width}}  {before} → {after}"
        lines.append(f"{line}  ({'; '.join(reasons)})" if reasons else line)
    counts = report.changes
    verdict = regressions_phrase(report)
    lines.append(
        f"{counts['regressed']} regressed, {counts['improved']} improved, "
        f"{counts['error']} {'error' if counts['error'] == 1 else 'errors'}, "
        f"{counts['new']} new, {counts['gone']} gone, {counts['unchanged']} unchanged "
        f"({verdict})"
    )
    lines.append(statistic_line(report))
    return lines


def compare_text(report: CompareDocument, sink: Sink) -> None:
    """Write the compare report on stdout (it is the result)."""
    sink.stdout.write("".join(line + "\n" for line in compare_lines(report)))
