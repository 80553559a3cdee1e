"""Merge the JSON reports of the shards of one ``check`` or ``grade`` into one report.

A merge is proof that the shards together covered the bench once: every
report is of the same command (and, for ``grade``, task class), carries the
same ``bench_digest`` and shard count, each shard ``1..N`` comes exactly
once, no task class (``check``) or case (``grade``) is reported by two
shards, a check report holds only task classes of its own shard (the stable
split of ``check --shard``), and, for ``grade``, every case of the task
class has a result.
:func:`merge_reports` takes the reports as the one reader of reports read
them (:mod:`.reader`: typed, finite, bounded, each consistent with its own
results) and returns the merged report, typed as one run's
(:mod:`.documents`), or raises :class:`MergeRefused` with every reason it
found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import final

from codegenie.eval._paths import fs_path
from codegenie.eval._reports.documents import CheckDocument, GradeDocument, Proof
from codegenie.eval._reports.reader import CheckFile, GradeFile, ReportFile
from codegenie.eval._sandbox.choices import ProviderName, least_contained
from codegenie.eval.grading import RunInfo

__all__ = ("MergeRefused", "merge_reports")


@final
class MergeRefused(Exception):
    """The reports do not add up to one run of one bench; ``problems`` says each way."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


def _shards(reports: Sequence[ReportFile]) -> list[str]:
    problems = []
    digests = {report.bench_digest for report in reports}
    if None in digests or "" in digests:
        unproved = [r.name for r in reports if not r.bench_digest]
        problems.append(f"no bench_digest in {', '.join(unproved)}: cannot prove one bench")
    elif len(digests) > 1:
        seen = ", ".join(f"{r.name}: {r.bench_digest}" for r in reports)
        problems.append(f"the shards saw different benches (bench_digest differs: {seen})")
    shards = [report.shard or (1, 1) for report in reports]
    counts = {count for _, count in shards}
    if len(counts) > 1:
        problems.append(f"the reports split the bench differently (shard counts {sorted(counts)})")
        return problems
    (count,) = counts
    seen_shards = Counter(index for index, _ in shards)
    for index in range(1, count + 1):
        if seen_shards[index] == 0:
            problems.append(f"shard {index}/{count} is missing")
        elif seen_shards[index] > 1:
            problems.append(f"shard {index}/{count} appears {seen_shards[index]} times")
    return problems


def _twice(label: str, owners: dict[str, list[str]]) -> list[str]:
    return [
        f"{label} {name!r} appears twice (in {', '.join(where)})"
        for name, where in sorted(owners.items())
        if len(where) > 1
    ]


def _path(text: str) -> Path:
    """Return a report's path (text, in JSON) as a path of this process, to compare with its own."""
    return Path(fs_path(text))


def _merge_check(reports: Sequence[CheckFile]) -> tuple[CheckDocument, list[str]]:
    from codegenie.eval.check import Shard  # noqa: PLC0415 - only check reports need the split

    owners: dict[str, list[str]] = {}
    problems = []
    for report in reports:
        shard = Shard(*(report.shard or (1, 1)))
        for slug in report.task_classes:
            owners.setdefault(slug, []).append(report.name)
            if slug not in shard:
                problems.append(
                    f"task class {slug!r} in {report.name} does not belong to its shard "
                    f"{shard.index}/{shard.count}"
                )
    problems += _twice("task class", owners)
    diagnostics = sorted((d for r in reports for d in r.diagnostics), key=lambda d: d.sort_key())
    strict = any(report.strict for report in reports)
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = sum(d.severity == "warning" for d in diagnostics)
    checked = sum(report.checked for report in reports)
    merged = CheckDocument(
        manifest=_path(reports[0].manifest),
        ok=all(report.ok for report in reports) and errors == 0 and (not strict or warnings == 0),
        checked=checked,
        declared=sum(report.declared for report in reports),
        diagnostics=tuple(diagnostics),
        strict=strict,
        task_classes=tuple(sorted(owners)),
        summary=f"merged {len(reports)} reports: checked {checked} task classes: "
        f"{errors} errors, {warnings} warnings",
        proof=Proof(reports[0].bench_digest, (1, 1)),
        merged=len(reports),
    )
    return merged, problems


def _merge_grade(reports: Sequence[GradeFile]) -> tuple[GradeDocument, list[str]]:
    problems = []
    graded = [report.report for report in reports]
    names = [report.name for report in reports]
    task_classes = {report.task_class for report in graded}
    if len(task_classes) > 1:
        problems.append(f"the reports grade different task classes: {sorted(task_classes)}")
    runs = [report.run for report in graded]
    for key, what in (
        ("candidates_digest", "different candidates"),
        ("name", "differently named runs"),
    ):
        values = [None if run is None else getattr(run, key) for run in runs]
        if len(set(values)) > 1:
            seen = ", ".join(f"{n}: {v}" for n, v in zip(names, values, strict=True))
            problems.append(f"the reports are of {what} (run {key} differs: {seen})")
    digests = ["the harness's" if r.environment is None else r.environment.digest for r in graded]
    if len(set(digests)) > 1:
        seen = ", ".join(f"{n}: {d}" for n, d in zip(names, digests, strict=True))
        problems.append(f"the reports ran the rubrics in different environments ({seen})")
    sampled = [r.name for r in reports if r.report.sampled]
    single = [n for n in names if n not in sampled]
    if sampled and single:
        problems.append(
            "the reports mix a grading of samples and one of a candidate per case "
            f"(samples: {', '.join(sampled)}; one candidate a case: {', '.join(single)})"
        )
    sandbox = least_contained(report.sandbox for report in graded)
    owners: dict[str, list[str]] = {}
    results = []
    for report in reports:
        for result in report.report.results:
            owners.setdefault(result.case, []).append(report.name)
            results.append(result)
    problems += _twice("case", owners)
    every = {case for report in reports for case in report.cases or ()}
    problems += [
        f"case {case!r} is missing: no shard graded it" for case in sorted(every - set(owners))
    ]
    results.sort(key=lambda result: result.case)
    first = graded[0]
    kept = [report.ks for report in reports if report.ks is not None]
    ks = tuple(sorted(set.intersection(*map(set, kept)))) if kept else ()
    # Every other field is the first shard's, as every shard's is the same (or refused above):
    # a field a report gains is merged without a line here unless the shards' values differ.
    whole = first.model_copy(
        update={
            "results": tuple(results),
            "sandbox": sandbox,
            "reused": sum(report.reused for report in graded),
            "ledger": None,  # how each shard's store answered is no figure of the whole
            "pass_at": ks or None,
            "run": _merged_run(runs, sandbox),
        }
    )
    manifest = reports[0].manifest
    merged = GradeDocument(
        report=whole,
        manifest=_path(manifest) if manifest else None,
        case_files={case: _path(file) for r in reports for case, file in r.case_files.items()},
        cases=tuple(sorted(every)),
        proof=Proof(reports[0].bench_digest, (1, 1)),
        merged=len(reports),
    )
    return merged, problems


def _merged_run(runs: Sequence[RunInfo | None], sandbox: ProviderName) -> RunInfo | None:
    """Return the identity of the shards' run: the first start, the last finish, one name."""
    given = [run for run in runs if run is not None]
    if not given:
        return None
    started = [run.started_at for run in given if run.started_at]
    finished = [run.finished_at for run in given if run.finished_at]
    return given[0].model_copy(
        update={
            "started_at": min(started, default=None),
            "finished_at": max(finished, default=None),
            "sandbox": sandbox,
        }
    )


def merge_reports(reports: Sequence[ReportFile]) -> CheckDocument | GradeDocument:
    """Return the reports' merge; raise ``MergeRefused`` if they do not add up.

    ``reports`` are as :func:`~codegenie.eval._reports.reader.read_report`
    read them (each names its file in the problems).
    """
    if not reports:
        raise MergeRefused(["no report to merge"])
    checks = [report for report in reports if isinstance(report, CheckFile)]
    grades = [report for report in reports if isinstance(report, GradeFile)]
    if checks and grades:
        raise MergeRefused(["the reports mix check and grade"])
    problems = _shards(reports)
    merged: CheckDocument | GradeDocument
    if checks:
        merged, more = _merge_check(checks)
    else:
        merged, more = _merge_grade(grades)
    problems += more
    if problems:
        raise MergeRefused(problems)
    return merged
