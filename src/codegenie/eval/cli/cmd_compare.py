"""``codegenie-bench compare BASE NEW``: how one grade run differs from another, case by case.

Reads the two ``--format json`` reports of ``grade`` (or of ``merge`` of its
shards), compares them (:mod:`codegenie.eval._reports.compare`)
and prints what changed in ``text``, ``json`` or ``markdown``. Exit 0, or 1
with ``--fail-on-regression`` when a case regressed; 1 when the reports
grade different task classes or saw different benches (``CompareRefused``);
2 when a file is not a grade report it can read (``ReportsInvalid``: see
:mod:`codegenie.eval._reports.reader` for what it refuses), as for any
command-line mistake.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from codegenie.eval.cli._base import Command, Output, step_summary
from codegenie.eval.errors import ReportProblem, ReportsInvalid

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Read both reports, compare them, print the comparison; exit 1 on a regression if asked."""
    from codegenie.eval._reports.compare import compare_sides, side_of  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.formats import render  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.reader import GradeFile, read_report  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.summary import compare_summary  # noqa: PLC0415 - start-up: only this command pays for it

    sides = []
    problems: list[str] = []
    located: list[ReportProblem] = []
    for path in (args.base, args.new):  # every problem of both files, then none is left to find
        try:
            read = read_report(path, grade_only=True)
        except ReportsInvalid as invalid:
            problems += invalid.problems
            located += invalid.located
            continue
        assert isinstance(read, GradeFile)
        sides.append(side_of(read))
    if problems:
        raise ReportsInvalid(tuple(problems), tuple(located))
    report = compare_sides(*sides)
    step_summary(compare_summary(report))
    render(out.format, report, out)
    return 1 if args.fail_on_regression and not report.ok else 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add BASE, NEW and --fail-on-regression."""
    parser.add_argument(
        "base",
        type=Path,
        metavar="BASE",
        help="the grade --format json report to compare against (or merge's of its shards)",
    )
    parser.add_argument(
        "new", type=Path, metavar="NEW", help="the grade --format json report to compare"
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a case that passed in BASE does not pass in NEW (sampled: its pass@1 "
        "fell), or is not in NEW",
    )


COMMAND = Command(
    name="compare",
    summary="Compare two grade reports: what changed per case, pass@k, and how significant.",
    examples="""\
examples:
  codegenie-bench compare base.json new.json
  codegenie-bench compare base.json new.json --fail-on-regression --format markdown
""",
    run=run,
    configure=configure,
)
