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

Reading. A report is read defensively: a result's ``samples_total`` and
``samples_passed`` when it has them, else (a report older than samples) one
sample that passed exactly when its status is ``passed``, none for a
``missing`` case; the report's own ``pass_at_k`` when it has one, else
pass@1, the mean over its results of each case's share of samples that
passed, a missing case counting as not passed.

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

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Final, TypeGuard, cast

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
from codegenie.eval._reports.merge import kind_of
from codegenie.eval._stats.compare import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    mcnemar_exact,
    paired_bootstrap,
)
from codegenie.eval.errors import CompareRefused, ReportsInvalid

if TYPE_CHECKING:
    from codegenie.eval.grading import GradeStatus

__all__ = ("compare_reports", "compare_sides", "read_side")

_STATUSES: Final = frozenset({"passed", "failed", "missing", "error"})
# The most problems named for one report: the rest are counted.
_PROBLEMS_SHOWN: Final = 5


# -- reading a report -----------------------------------------------------------------


def _count(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a JSON count: a whole number of at least 0 (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _fraction(value: object) -> bool:
    """Whether ``value`` is a finite JSON number in [0, 1] (not a boolean)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


def _outcome(result: object, where: str, problems: list[str]) -> tuple[str, Outcome] | None:
    """Return one result's case id and outcome, or ``None`` with its problem added."""
    if not isinstance(result, dict):
        problems.append(f"{where} is not an object")
        return None
    case, status, reason = result.get("case"), result.get("status"), result.get("reason")
    if not isinstance(case, str) or not case:
        problems.append(f"{where} has no case id")
        return None
    if status not in _STATUSES:
        problems.append(f"{where} ({case!r}) has no status passed, failed, missing or error")
        return None
    if reason is not None and not isinstance(reason, str):
        problems.append(f"{where} ({case!r}) has a reason that is not text")
        return None
    total, passed = result.get("samples_total"), result.get("samples_passed")
    if total is None and passed is None:  # a report older than samples: one sample, or none
        total = 0 if status == "missing" else 1
        passed = 1 if status == "passed" else 0
    if not (_count(total) and _count(passed) and passed <= total):
        problems.append(
            f"{where} ({case!r}) has samples_passed {passed!r} of samples_total {total!r}"
        )
        return None
    return case, Outcome(cast("GradeStatus", status), reason, total, passed)


def _pass_at_k(
    given: object, outcomes: Mapping[str, Outcome], problems: list[str]
) -> dict[int, float | None]:
    """Return the report's pass@k by k: its own, else pass@1 over its results."""
    if given is None:
        shares = [outcome.share for outcome in outcomes.values()]
        return {1: float(sum(shares, Fraction()) / len(shares)) if shares else None}
    if not isinstance(given, dict):
        problems.append("pass_at_k is not an object")
        return {}
    found: dict[int, float | None] = {}
    for key, value in given.items():
        if not (key.isascii() and key.isdigit() and len(key) <= 9 and int(key) >= 1):
            problems.append(f"pass_at_k has a key {key!r} that is not a k of 1 or more")
        elif value is not None and not _fraction(value):
            problems.append(f"pass_at_k[{key!r}] is {value!r}, not a number from 0 to 1 or null")
        else:
            found[int(key)] = None if value is None else float(value)
    return dict(sorted(found.items()))


def _side(name: str, document: object, problems: list[str]) -> Side | None:
    """Return the report ``document`` as one side of the comparison, or ``None`` with its problems.

    Each problem names ``name``; at most a few of one report's are named.
    """
    if not isinstance(document, dict):
        kind = "an array" if isinstance(document, list) else "a single value"
        problems.append(f"{name} is not a JSON report of grade: it holds {kind}, not an object")
        return None
    report_kind = kind_of(document)
    if report_kind == "check":
        problems.append(f"{name} is a report of check, not of grade: compare compares grade runs")
        return None
    if report_kind is None:
        problems.append(f"{name} is not a JSON report of grade: it has no task_class and results")
        return None
    found: list[str] = []
    task_class, results = document["task_class"], document["results"]
    if not isinstance(task_class, str) or not task_class:
        found.append("task_class is not a task class's slug")
    outcomes: dict[str, Outcome] = {}
    if not isinstance(results, list):
        found.append("results is not an array")
        results = []
    for index, result in enumerate(results):
        read = _outcome(result, f"results[{index}]", found)
        if read is None:
            continue
        case, outcome = read
        if case in outcomes:
            found.append(f"results[{index}]: case {case!r} has a result already")
        outcomes[case] = outcome
    sampled = document.get("sampled")
    if sampled is None:
        sampled = any(outcome.samples_total > 1 for outcome in outcomes.values())
    elif not isinstance(sampled, bool):
        found.append("sampled is neither true nor false")
    run, digest = document.get("run"), document.get("bench_digest")
    if run is not None and not isinstance(run, dict):
        found.append("run is not an object")
    if digest is not None and not isinstance(digest, str):
        found.append("bench_digest is not text")
    pass_at_k = _pass_at_k(document.get("pass_at_k"), outcomes, found)
    if found:
        shown = [f"{name}: {problem}" for problem in found[:_PROBLEMS_SHOWN]]
        if len(found) > _PROBLEMS_SHOWN:
            shown.append(f"{name}: {len(found) - _PROBLEMS_SHOWN} more problems")
        problems += shown
        return None
    return Side(
        file=name,
        run=run,
        task_class=task_class,
        sampled=bool(sampled),
        bench_digest=digest or None,
        outcomes=dict(sorted(outcomes.items())),
        pass_at_k=pass_at_k,
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

    ``name`` names the report in the document and in every problem. Raises
    ``ReportsInvalid`` with every problem (up to a few) when it is not a
    grade report.
    """
    problems: list[str] = []
    side = _side(name, document, problems)
    if side is None:
        raise ReportsInvalid(tuple(problems))
    return side


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
    sides = []
    for name, document in ((base_name, base), (new_name, new)):
        try:
            sides.append(read_side(name, document))
        except ReportsInvalid as invalid:
            problems += invalid.problems
    if problems:
        raise ReportsInvalid(tuple(problems))
    return compare_sides(*sides)
