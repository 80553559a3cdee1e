"""The Markdown of ``check``, ``grade`` and ``compare`` reports.

Each is what a CI job summary shows (``$GITHUB_STEP_SUMMARY``); compare's is
also its ``--format markdown``, for a job summary or a pull request's comment.
Every string from a report is one table cell or one line: no line break, no
column break, no HTML, no control character.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from codegenie.eval._output import escape_control

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument, CompareDocument, GradeDocument
    from codegenie.eval._reports.sink import Sink

__all__ = ("CHANGED_ROWS", "check_summary", "compare_markdown", "compare_summary", "grade_summary")

#: The most changed cases compare's Markdown lists (GitHub keeps 1 MiB of a job's summary);
#: the JSON report has every case.
CHANGED_ROWS: Final = 500
# The most of a reason one cell shows.
_REASON_WIDTH: Final = 200


def _cell(value: object) -> str:
    """``value`` as one Markdown table cell: no line break, no column break, no HTML."""
    text = escape_control(" ".join(str(value).split()))
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(value: str) -> str:
    """``value`` as code in a table cell (a case id); as plain text if it holds a backtick."""
    text = escape_control(" ".join(value.split()))
    if "`" in text:
        return _cell(text)
    return "`" + text.replace("|", "\\|") + "`"


def check_summary(report: CheckDocument) -> str:
    """Return the Markdown summary of a ``check`` report: the counts, then each diagnostic."""
    verdict = "passed" if report.ok else "failed"
    lines = [
        f"### codegenie-bench check: {verdict}",
        "",
        f"{report.checked} task classes checked: {report.errors} errors, "
        f"{report.warnings} warnings.",
        "",
    ]
    if report.diagnostics:
        lines += ["| severity | code | where | message |", "| --- | --- | --- | --- |"]
        for d in report.diagnostics:
            where = d.file or ""
            if d.line is not None:
                where += f":{d.line}"
            code, message = _cell(d.code), _cell(d.message)
            lines.append(f"| {d.severity} | `{code}` | {_cell(where)} | {message} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def grade_summary(report: GradeDocument) -> str:
    """Return the Markdown summary of a ``grade`` report: the counts, then what did not pass."""
    grades = report.report
    counts = grades.counts()
    verdict = "passed" if grades.ok else "failed"
    lines = [
        f"### codegenie-bench grade {_cell(grades.task_class)}: {verdict}",
        "",
        f"{grades.passed}/{grades.total} passed "
        f"({counts['failed']} failed, {counts['error']} errors, {counts['missing']} missing).",
        "",
    ]
    if grades.sampled or grades.fail_under is not None or grades.pass_at is not None:
        lines += [_cell(grades.pass_at_line()), ""]
    if grades.run is not None and grades.run.name is not None:
        lines += [f"Run `{_cell(grades.run.name)}`.", ""]
    others = [r for r in grades.results if r.status != "passed"]
    if others:
        lines += ["| status | case | reason |", "| --- | --- | --- |"]
        lines += [f"| {r.status} | `{_cell(r.case)}` | {_cell(r.reason or '')} |" for r in others]
        lines.append("")
    return "\n".join(lines) + "\n"


def _reason(reason: str | None) -> str:
    """``reason`` as one cell, cut at ``_REASON_WIDTH`` characters (JSON keeps it whole)."""
    text = " ".join((reason or "").split())
    return _cell(f"{text[:_REASON_WIDTH]}…" if len(text) > _REASON_WIDTH else text)


def compare_summary(report: CompareDocument) -> str:
    """Return the Markdown of a ``compare`` report.

    The verdict, both runs, the pass@k table, the test, then a table of the
    cases that changed (at most :data:`CHANGED_ROWS`) with both reasons, and
    the count of each change.
    """
    from codegenie.eval._reports.text import regressions_phrase, signed, state, statistic_line  # noqa: PLC0415 - start-up: check's and grade's summaries do not pay for it

    verdict = regressions_phrase(report)
    lines = [f"### codegenie-bench compare {_cell(report.task_class)}: {verdict}", ""]
    lines += [
        "| | report | run | cases | passed | samples |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for label, side in (("base", report.base), ("new", report.new)):
        name = side.run.name if side.run is not None else None
        run = _cell(name) if isinstance(name, str) else ""
        sampling = "sampled" if side.sampled else "one a case"
        lines.append(
            f"| {label} | {_cell(side.file)} | {run} | {side.total} | {side.passed} | {sampling} |"
        )
    lines.append("")
    if report.pass_at_k:
        lines += ["| | base | new | difference |", "| --- | ---: | ---: | ---: |"]
        lines += [
            f"| pass@{c.k} | {'-' if c.base is None else f'{c.base:.3f}'} "
            f"| {'-' if c.new is None else f'{c.new:.3f}'} | {signed(c.difference)} |"
            for c in report.pass_at_k
        ]
        lines.append("")
    lines += [f"{_cell(statistic_line(report))}.", ""]
    changed = [c for c in report.cases if c.change != "unchanged"]
    if changed:
        lines += [
            "| change | case | base | new | base reason | new reason |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for c in changed[:CHANGED_ROWS]:
            before, after = state(c.base, report.base), state(c.new, report.new)
            lines.append(
                f"| {c.change} | {_code(c.case)} | {_cell(before)} | {_cell(after)} "
                f"| {_reason(c.base.reason if c.base else None)} "
                f"| {_reason(c.new.reason if c.new else None)} |"
            )
        if len(changed) > CHANGED_ROWS:
            lines.append(
                f"| … | {len(changed) - CHANGED_ROWS} more: the JSON report has them | | | | |"
            )
        lines.append("")
    counts = report.changes
    lines.append(
        f"{counts['regressed']} regressed, {counts['improved']} improved, "
        f"{counts['error']} {'error' if counts['error'] == 1 else 'errors'}, {counts['new']} new, "
        f"{counts['gone']} gone, {counts['unchanged']} unchanged."
    )
    return "\n".join(lines) + "\n"


def compare_markdown(report: CompareDocument, sink: Sink) -> None:
    """Write the Markdown of a ``compare`` report on stdout (``--format markdown``)."""
    sink.stdout.write(compare_summary(report))
