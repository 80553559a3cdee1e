"""Reports from Python: read a JSON report, compare two grade runs, merge the shards of one.

What ``codegenie-bench compare`` and ``codegenie-bench merge`` do, minus the
printing, on the same typed reports the formats render:

- :func:`read_report` reads a ``check`` or ``grade`` ``--format json``
  report (a file of bounded size, finite numbers only, every figure
  computed again from its results) into a :class:`GradeFile` (its
  :class:`~codegenie.eval.grading.GradeReport` in ``report``) or a
  :class:`CheckFile`; it raises ``ReportsInvalid`` naming the file, the
  JSON path and what is wrong;
- :func:`compare` returns how one grade report differs from another, case
  by case, with pass@k and the test (a :class:`CompareDocument`), or raises
  ``CompareRefused`` when they grade different task classes or benches;
- :func:`merge` returns the merge of the shards' reports (a
  :class:`GradeDocument` or :class:`CheckDocument`, typed as one run's
  report), or raises :class:`MergeRefused` with every reason they do not
  add up to one run of one bench.

Each document's ``to_json()`` is the JSON the matching command prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codegenie.eval._reports.compare import compare_sides, side_of
from codegenie.eval._reports.documents import (
    CaseChange,
    Change,
    CheckDocument,
    CompareDocument,
    GradeDocument,
    KComparison,
    Outcome,
    Side,
)
from codegenie.eval._reports.merge import MergeRefused, merge_reports
from codegenie.eval._reports.reader import CheckFile, GradeFile, ReportFile
from codegenie.eval._reports.reader import read_report as _read

__all__ = (
    "CaseChange",
    "Change",
    "CheckDocument",
    "CheckFile",
    "CompareDocument",
    "GradeDocument",
    "GradeFile",
    "KComparison",
    "MergeRefused",
    "Outcome",
    "ReportFile",
    "Side",
    "compare",
    "merge",
    "read_report",
)


def read_report(path: str | Path, *, name: str | None = None) -> ReportFile:
    """Return the ``check`` or ``grade`` JSON report in the file at ``path``, typed.

    ``name`` names the file in problems (default: ``path`` as given). Raises
    ``ReportsInvalid`` (exit code 2) when the file cannot be read, is not
    UTF-8 JSON within bounds, is neither report, or contradicts itself (a
    figure its results do not give); each problem names the file, a JSON
    path and what is wrong.
    """
    return _read(Path(path), name=str(path) if name is None else name)


def compare(base: GradeFile, new: GradeFile) -> CompareDocument:
    """Return how the grade report ``new`` differs from ``base``.

    Each case's change is decided by its pass@1 (``regressed``,
    ``improved``, ``error``, ``new``, ``gone``, ``unchanged``); ``ok`` is
    false exactly when a case regressed (``--fail-on-regression``). Raises
    ``CompareRefused`` (exit code 1) when the reports grade different task
    classes or saw different benches.
    """
    return compare_sides(side_of(base), side_of(new))


def merge(reports: Sequence[ReportFile]) -> CheckDocument | GradeDocument:
    """Return the merge of the shards' reports, as one run's report.

    The reports must be of one command (and, for ``grade``, one task class
    and one run), carry the same ``bench_digest``, and cover every shard
    ``1..N`` once, with no case or task class twice; otherwise raises
    :class:`MergeRefused`, whose ``problems`` say every way they do not.
    """
    return merge_reports(reports)
