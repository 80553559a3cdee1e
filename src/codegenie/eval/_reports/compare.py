"""Compare two grade reports, BASE and NEW, case by case: what changed, pass@k, and by how much.

:func:`compare_reports` takes two parsed ``grade --format json`` documents
(one run's, or the shards ``merge`` merged) and the names they go by, and
returns a :class:`~codegenie.eval._reports.documents.CompareDocument`, whose
``to_json`` is ``compare --format json``. It raises ``ReportsInvalid`` (exit
2) when a document is not a grade report, and ``CompareRefused`` (exit 1)
when the two do not grade the same thing: different task classes, or
different benches (``bench_digest``). Its two halves, :func:`read_side` (one
report) and :func:`compare_sides`, let the command line name every problem
of both files before it compares.

Reading. A report is read by the one reader of reports
(:mod:`codegenie.eval._reports.reader`), which refuses a number that is not
finite, nesting too deep and a report that contradicts itself. Each case
has the samples it was graded from (a report older than samples: one
sample, that passed exactly when its status is ``passed``, none for a
``missing`` case); pass@k is the report's own ks, computed again from its
results, else pass@1, the mean over its results of each case's share of
samples that passed, a missing case counting as not passed.

Changes. Each case's pass@1 (its share of samples that passed; 0 for a case
with none) decides: lower in NEW is ``regressed``, higher ``improved``; equal,
but either side an ``error``, is ``error``; else ``unchanged``. A case only
in NEW is ``new``, only in BASE ``gone``. With one sample a case on both
sides this is "passed -> not passed" and "not passed -> passed"; a sampled
run compared with a single-sample one compares the single sample's 0 or 1
with the sampled share. The regressions (``--fail-on-regression``) are the
regressed cases and the gone ones that passed in BASE (pass@1 above 0): a
NEW run that graded fewer cases cannot pass by leaving out those it fails.

The test, over the cases in both reports: McNemar's exact test of the
discordant cases when both runs are single-sample, else a paired bootstrap
of the pass@1 difference (:mod:`codegenie.eval._stats.compare`, seeded: the
same reports give the same interval).
"""

from __future__ import annotations

import json
from fractions import Fraction

from codegenie.eval._reports.documents import (
    Bootstrap,
    CaseChange,
    Change,
    CompareDocument,
    KComparison,
    McNemar,
    Outcome,
    Side,
)
from codegenie.eval._reports.reader import GradeFile, report_of
from codegenie.eval._stats.compare import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    mcnemar_exact,
    paired_bootstrap,
)
from codegenie.eval.errors import CompareRefused, ReportProblem, ReportsInvalid

__all__ = ("compare_reports", "compare_sides", "read_side", "side_of")


# -- reading a report -----------------------------------------------------------------


def side_of(report: GradeFile) -> Side:
    """Return a grade report, as :mod:`.reader` read it, as one side of a comparison.

    Each case's outcome is its status and reason and the samples it was
    graded from (one for a result of one candidate, none when missing);
    pass@k is the report's own for its ks, computed again from its results
    (the reader refused a report whose figures its results do not give),
    else pass@1.
    """
    graded = report.report
    outcomes = {
        result.case: Outcome(
            result.status, result.reason, result.samples_total, result.samples_passed
        )
        for result in graded.results
    }
    shares = [outcome.share for outcome in outcomes.values()]
    if report.ks is None:
        pass_at_k = {1: float(sum(shares, Fraction()) / len(shares)) if shares else None}
    else:
        pass_at_k = {int(k): rate for k, rate in graded.pass_at_k().items()}
    return Side(
        file=report.name,
        run=graded.run,
        task_class=graded.task_class,
        sampled=graded.sampled,
        bench_digest=report.bench_digest or None,
        outcomes=dict(sorted(outcomes.items())),
        pass_at_k=dict(sorted(pass_at_k.items())),
    )


# -- comparing -----------------------------------------------------------------------------


def _change(base: Outcome | None, new: Outcome | None) -> Change:
    """Return what became of a case: by its pass@1, then by an error on either side."""
    if base is None:
        return "new"
    if new is None:
        return "gone"
    if new.share < base.share:
        return "regressed"
    if new.share > base.share:
        return "improved"
    if "error" in (base.status, new.status):
        return "error"
    return "unchanged"


def _refusals(base: Side, new: Side) -> list[str]:
    problems = []
    if base.task_class != new.task_class:
        problems.append(
            f"the reports grade different task classes ({base.file}: {base.task_class!r}, "
            f"{new.file}: {new.task_class!r})"
        )
    if base.bench_digest and new.bench_digest and base.bench_digest != new.bench_digest:
        problems.append(
            f"the reports saw different benches (bench_digest differs: {base.file}: "
            f"{base.bench_digest}, {new.file}: {new.bench_digest})"
        )
    return problems


def _test(base: Side, new: Side, cases: tuple[CaseChange, ...]) -> McNemar | Bootstrap | None:
    """Return the test over the cases in both: McNemar of single-sample runs, else the bootstrap."""
    both = [c for c in cases if c.base is not None and c.new is not None]
    if not both:
        return None
    if not base.sampled and not new.sampled:
        improved = sum(c.change == "improved" for c in both)
        regressed = sum(c.change == "regressed" for c in both)
        return McNemar(improved, regressed, mcnemar_exact(improved, regressed))
    interval = paired_bootstrap(
        [c.base.pass_at_1 for c in both if c.base is not None],
        [c.new.pass_at_1 for c in both if c.new is not None],
        resamples=BOOTSTRAP_RESAMPLES,
        seed=BOOTSTRAP_SEED,
    )
    return Bootstrap(interval, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)


def read_side(name: str, document: object) -> Side:
    """Return the grade report ``document`` (parsed JSON) as one side of a comparison.

    ``name`` names the report in the document and in every problem. The
    value is read as :func:`~codegenie.eval._reports.reader.report_of`
    reads a report's text: raises ``ReportsInvalid`` with every problem (up
    to a few) when it is not a grade report, holds a number that is not
    finite, nests too deeply or contradicts itself.
    """
    try:
        text = json.dumps(document, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as error:
        message = f"{name} is not a JSON report of grade: {error}"
        raise ReportsInvalid((message,), (ReportProblem(name, None, message),)) from None
    read = report_of(name, text, grade_only=True)
    assert isinstance(read, GradeFile)
    return side_of(read)


def compare_sides(base: Side, new: Side) -> CompareDocument:
    """Return how ``new`` differs from ``base``, case by case.

    Raises ``CompareRefused`` when they grade different task classes or saw
    different benches (each reason, naming both values).
    """
    refused = _refusals(base, new)
    if refused:
        raise CompareRefused(base.file, new.file, tuple(refused))
    ids = sorted(base.outcomes.keys() | new.outcomes.keys())
    cases = tuple(
        CaseChange(
            case,
            _change(base.outcomes.get(case), new.outcomes.get(case)),
            base.outcomes.get(case),
            new.outcomes.get(case),
        )
        for case in ids
    )
    ks = sorted(base.pass_at_k.keys() & new.pass_at_k.keys())
    return CompareDocument(
        base=base,
        new=new,
        task_class=base.task_class,
        bench_digest=base.bench_digest if base.bench_digest == new.bench_digest else None,
        pass_at_k=tuple(KComparison(k, base.pass_at_k[k], new.pass_at_k[k]) for k in ks),
        cases=cases,
        test=_test(base, new, cases),
    )


def compare_reports(base: object, new: object, *, base_name: str, new_name: str) -> CompareDocument:
    """Return how the grade report ``new`` differs from ``base`` (both parsed JSON).

    ``base_name`` and ``new_name`` name the reports in the document and in
    every problem. Raises ``ReportsInvalid`` when either is not a grade
    report (every problem of both), and ``CompareRefused`` when they grade
    different task classes or saw different benches (each reason, naming
    both values).
    """
    problems: list[str] = []
    located: list[ReportProblem] = []
    sides = []
    for name, document in ((base_name, base), (new_name, new)):
        try:
            sides.append(read_side(name, document))
        except ReportsInvalid as invalid:
            problems += invalid.problems
            located += invalid.located
    if problems:
        raise ReportsInvalid(tuple(problems), tuple(located))
    return compare_sides(*sides)
