"""The ``github`` format: GitHub Actions workflow commands, one annotation per problem.

Annotations go to stdout; one run's summary line goes to stderr (escaped,
so that no path can start a workflow command), unless ``-q``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from codegenie.eval._output import escape_control
from codegenie.eval.diagnostics import Diagnostic

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument, GradeDocument, GradeSuiteDocument
    from codegenie.eval._reports.sink import Sink
    from codegenie.eval.grading import GradeReport

__all__ = ("check_github", "grade_diagnostics", "grade_github", "grades_github")


def check_github(report: CheckDocument, sink: Sink) -> None:
    """Write one annotation per diagnostic, paths relative to the workspace or the bench."""
    sink.diagnostics(report.diagnostics, stream=sink.stdout, base=report.manifest.parent)
    if report.merged is None and not sink.quiet:
        sink.stderr.write(escape_control(report.summary) + "\n")


def grade_github(report: GradeDocument, sink: Sink) -> None:
    """Write one annotation per case that did not pass, at its ``case.toml``."""
    base = report.manifest.parent if report.manifest is not None else None
    found = grade_diagnostics(report.report, report.case_files)
    sink.diagnostics(found, stream=sink.stdout, base=base)
    if report.merged is None and not sink.quiet:
        sink.stderr.write(escape_control(report.report.summary()) + "\n")


def grade_diagnostics(report: GradeReport, files: Mapping[str, Path | None]) -> list[Diagnostic]:
    """One annotation per case of ``report`` that did not pass.

    At the case's ``case.toml`` (``files``: case id to path; ``None`` or
    absent: no file), titled by its status and case id, worded by its reason.
    """
    found = []
    for result in report.results:
        if result.status == "passed":
            continue
        file = files.get(result.case)
        found.append(
            Diagnostic(
                code=result.status,
                severity="error",
                message=result.reason or result.status,
                file=None if file is None else str(file),
                line=None if file is None else 1,
                slug=result.case,
            )
        )
    return found


def grades_github(report: GradeSuiteDocument, sink: Sink) -> None:
    """Write each task class's annotations (``grade --all``), then the whole run's line."""
    for document in report.documents:
        grade_github(document, sink)
    if not sink.quiet:
        sink.stderr.write(escape_control(report.summary()) + "\n")
