"""``codegenie-bench merge REPORT…``: the JSON reports of a sharded check or grade, as one.

Reads each ``--format json`` report a shard wrote, proves they add up to one
run of one bench (:func:`codegenie.eval._reports.merge.merge_reports`), and
prints the merged report in any format, as the command that made the shards
would have. Exit 1 when the reports do not add up (each reason on stderr,
nothing on stdout) or the merged run failed; 0 when it passed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import PROG, Command, Output, UsageError, step_summary

__all__ = ("COMMAND",)


#: The largest report read: a report of 100,000 task classes stays well under it.
_REPORT_LIMIT = 512 * 1024 * 1024


def _read(path: Path) -> dict[str, Any] | str:
    """Return the JSON document at ``path``, or why it cannot be read.

    Only a regular file of bounded size is read: a FIFO never blocks the merge.
    """
    from codegenie.eval._paths import FileRefused, read_regular_file  # noqa: PLC0415 - start-up: only this command pays for it

    try:
        data, _ = read_regular_file(str(path), _REPORT_LIMIT)
        document = json.loads(data.decode("utf-8"))
    except FileRefused as refused:
        return f"cannot read {path}: the file {refused.reason}"
    except OSError as error:
        return f"cannot read {path}: {error.strerror or error}"
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"{path} is not JSON: {error}"
    if not isinstance(document, dict):
        return f"{path} is not a JSON report of check or grade"
    return document


def _path(text: str) -> Path:
    """Return a report's path (text, in JSON) as a path of this process, to compare with its own."""
    from codegenie.eval._paths import fs_path  # noqa: PLC0415 - start-up: only this command pays for it

    return Path(fs_path(text))


def run(args: argparse.Namespace, out: Output) -> int:
    """Merge the reports; print the merged one; exit 1 when they do not add up or it failed."""
    from codegenie.eval._reports.merge import MergeRefused, merge_reports  # noqa: PLC0415 - start-up: only this command pays for it

    names = [str(path) for path in args.reports]
    read = [_read(path) for path in args.reports]
    unreadable = [problem for problem in read if isinstance(problem, str)]
    documents = [document for document in read if not isinstance(document, str)]
    try:
        if unreadable:
            raise MergeRefused(unreadable)
        kind, merged = merge_reports(names, documents)
    except MergeRefused as refused:
        for problem in refused.problems:
            out.stderr.write(f"{PROG}: error: {escape_control(problem)}\n")
        return 1
    if kind == "check":
        _print_check(merged, out)
    else:
        _print_grade(merged, out)
    return 0 if merged["ok"] else 1


def _print_check(document: dict[str, Any], out: Output) -> None:
    from codegenie.eval._reports.junit import check_junit  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.sarif import check_sarif  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.summary import check_summary  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.diagnostics import Diagnostic  # noqa: PLC0415 - start-up: only this command pays for it

    step_summary(check_summary(document))
    found = [Diagnostic(**d) for d in document["diagnostics"]]
    summary = (
        f"merged {document['merged']} reports: checked {document['checked']} task classes: "
        f"{document['errors']} errors, {document['warnings']} warnings"
    )
    if out.format == "json":
        out.result(document, "")
    elif out.format == "junit":
        out.stdout.write(check_junit(document))
    elif out.format == "sarif":
        out.stdout.write(check_sarif(document))
    elif out.format == "github":
        out.diagnostics(found, stream=out.stdout, base=_path(document["manifest"]).parent)
    else:
        out.diagnostics(found, stream=out.stdout, base=None)
        out.note(summary)


def _print_grade(document: dict[str, Any], out: Output) -> None:
    from codegenie.eval._reports.junit import grade_junit  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.summary import grade_summary  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.cli.cmd_grade import grade_diagnostics, result_line  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.grading import GradeReport, GradeResult  # noqa: PLC0415 - start-up: only this command pays for it

    step_summary(grade_summary(document))
    if out.format == "sarif":
        usage = f"usage: {PROG} merge [-h] REPORT [REPORT ...]"
        raise UsageError(usage, "--format sarif is only for check reports")
    if out.format == "json":
        out.result(document, "")
    elif out.format == "junit":
        out.stdout.write(grade_junit(document))
    elif out.format == "github":
        files = {case: _path(file) for case, file in document.get("case_files", {}).items()}
        base = _path(document["manifest"]).parent if document.get("manifest") else None
        out.diagnostics(grade_diagnostics(document, files), stream=out.stdout, base=base)
    else:
        results = [GradeResult.model_validate(r, strict=False) for r in document["results"]]
        width = max((len(result.case) for result in results), default=0)
        for result in results:
            out.stdout.write(result_line(result, width) + "\n")
        report = GradeReport(task_class=document["task_class"], results=tuple(results))
        out.stdout.write(escape_control(report.summary()) + "\n")


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
