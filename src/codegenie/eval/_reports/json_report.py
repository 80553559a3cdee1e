"""The ``json`` format: the report's documented JSON document, on stdout."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import (
        CheckDocument,
        CompareDocument,
        GradeDocument,
        GradeSuiteDocument,
    )
    from codegenie.eval._reports.sink import Sink

__all__ = ("check_json", "compare_json", "grade_json", "grades_json")


def check_json(report: CheckDocument, sink: Sink) -> None:
    """Write the ``check`` document."""
    sink.result(report.to_json(), "")


def grade_json(report: GradeDocument, sink: Sink) -> None:
    """Write the ``grade`` document."""
    sink.result(report.to_json(), "")


def grades_json(report: GradeSuiteDocument, sink: Sink) -> None:
    """Write the ``grade --all`` document."""
    sink.result(report.to_json(), "")


def compare_json(report: CompareDocument, sink: Sink) -> None:
    """Write the ``compare`` document."""
    sink.result(report.to_json(), "")
