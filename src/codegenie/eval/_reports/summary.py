"""The Markdown a CI job summary shows (``$GITHUB_STEP_SUMMARY``) for ``check`` and ``grade``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument, GradeDocument

__all__ = ("check_summary", "grade_summary")


def _cell(value: object) -> str:
    """``value`` as one Markdown table cell: no line break, no column break, no HTML."""
    text = " ".join(str(value).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


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
