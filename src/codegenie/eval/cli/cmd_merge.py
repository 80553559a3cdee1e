"""``codegenie-bench merge REPORT…``: the JSON reports of a sharded check or grade, as one.

Reads each ``--format json`` report a shard wrote, proves they add up to one
run of one bench (:func:`codegenie.eval._reports.merge.merge_reports`), and
prints the merged report in any format, as the command that made the shards
would have. Exit 1 when the reports do not add up (each reason on stderr,
nothing on stdout) or the merged run failed; 0 when it passed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import PROG, Command, Output, UsageError, step_summary
from codegenie.eval.errors import ReportsInvalid

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Merge the reports; print the merged one; exit 1 when they do not add up or it failed.

    Each report is read by the one reader of reports
    (:mod:`codegenie.eval._reports.reader`); one it refuses (not a report,
    a number that is not finite, nesting too deep, figures its results do
    not give) is a reason the reports do not add up: every such problem of
    every file is said, and the command exits 1. A format the merged kind
    of report has no renderer for (``sarif`` of grade reports) is a usage
    error (exit 2), once the reports are merged.
    """
    from codegenie.eval._reports.formats import FORMATS, REPORT_COMMANDS, render, renderer_path  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.merge import MergeRefused, merge_reports  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.reader import read_report  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.summary import check_summary, grade_summary  # noqa: PLC0415 - start-up: only this command pays for it

    reports = []
    unreadable: list[str] = []
    for path in args.reports:
        try:
            reports.append(read_report(path))
        except ReportsInvalid as invalid:
            unreadable += invalid.problems
    try:
        if unreadable:
            raise MergeRefused(unreadable)
        merged = merge_reports(reports)
    except MergeRefused as refused:
        for problem in refused.problems:
            out.stderr.write(f"{PROG}: error: {escape_control(problem)}\n")
        return 1
    if merged.kind == "check":
        step_summary(check_summary(merged))
    else:
        step_summary(grade_summary(merged))
    if renderer_path(out.format, merged.kind) is None:
        kinds = [kind for kind in REPORT_COMMANDS if kind in FORMATS[out.format].renderers]
        usage = f"usage: {PROG} merge [-h] REPORT [REPORT ...]"
        raise UsageError(usage, f"--format {out.format} is only for {' and '.join(kinds)} reports")
    render(out.format, merged, out)
    return 0 if merged.ok else 1


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the REPORT arguments."""
    parser.add_argument(
        "reports",
        nargs="+",
        type=Path,
        metavar="REPORT",
        help="a --format json report of one shard of check, or of grade (all of one kind)",
    )


COMMAND = Command(
    name="merge",
    summary="Merge the JSON reports of sharded checks or grades, proving they cover one bench.",
    examples="""\
examples:
  codegenie-bench merge check-*.json --format junit --output-file check.xml
  codegenie-bench merge grade-*.json --format json
""",
    run=run,
    configure=configure,
)
