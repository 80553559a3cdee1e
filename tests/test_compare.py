"""codegenie.eval._reports.compare: two grade reports, case by case, and how they render."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegenie.eval._reports.compare import compare_reports, compare_sides, read_side
from codegenie.eval._reports.documents import Bootstrap, CompareDocument, McNemar
from codegenie.eval._reports.summary import CHANGED_ROWS, compare_summary
from codegenie.eval._reports.text import compare_lines
from codegenie.eval._stats.compare import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    mcnemar_exact,
    paired_bootstrap,
)
from codegenie.eval.errors import CompareRefused, ReportsInvalid
from codegenie.eval.grading import GradeResult, SampleResult, SampleStatus
from tests.test_grade import assert_shape

DIGEST = "sha256:" + "a" * 64
OTHER_DIGEST = "sha256:" + "b" * 64
RUN = {
    "name": "model-a",
    "candidates_digest": "sha256:" + "c" * 64,
    "started_at": "2026-12-02T07:01:02Z",
    "finished_at": "2026-12-02T07:03:04Z",
    "tool_version": "0.1.0",
    "python": "3.11.2",
    "sandbox": "bwrap",
}


# -- grade documents as spec25 has them, and as older reports had them -----------------


def result(
    case: str,
    status: str,
    reason: str | None = None,
    *,
    samples: tuple[int, int] | None = None,
    old: bool = False,
) -> dict[str, Any]:
    """One entry of a grade report's results; ``samples`` (total, passed) makes it sampled.

    Written as ``grade`` writes it, so that its figures agree: a sampled
    case's ``passed`` samples passed, the rest failed (errors when
    ``status`` is ``error``), and its status is what they give. ``old``: the keys of a report older than
    samples only.
    """
    if samples is None:
        graded = GradeResult(
            case=case,
            status=status,  # type: ignore[arg-type]
            score=None if status == "missing" else float(status == "passed"),
            reason=reason,
            duration_s=None if status == "missing" else 0.5,
        )
    else:
        total, passed = samples
        other: SampleStatus = "error" if status == "error" else "failed"
        made = [
            SampleResult(sample=str(n), status="passed" if n < passed else other, duration_s=0.5)
            for n in range(total)
        ]
        graded = GradeResult.of_samples(case, made)
    entry = graded.to_json()
    if old:
        return {key: value for key, value in entry.items() if key in _OLD_KEYS}
    return entry


# The keys of a result in a report older than samples.
_OLD_KEYS = (
    "case",
    "status",
    "score",
    "reason",
    "duration_s",
    "wall_s",
    "cpu_s",
    "peak_memory_mib",
    "limit",
    "stderr_tail",
    "traceback",
    "verdict",
)


def report(
    *results: dict[str, Any],
    task_class: str = "grader",
    digest: str | None = DIGEST,
    sampled: bool | None = None,
    pass_at_k: dict[str, float | None] | None = None,
    old: bool = False,
    run: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A grade report whose figures its results give; ``old``: without any key issue 25 added."""
    passed = sum(r["status"] == "passed" for r in results)
    scores = [r["score"] for r in results if r["score"] is not None]
    if sampled is None:
        sampled = any(r.get("samples") is not None for r in results)
    bad = any(r["status"] in ("missing", "error") for r in results)
    document: dict[str, Any] = {
        "task_class": task_class,
        "sandbox": "bwrap",
        "reused": 0,
        "results": list(results),
        "passed": passed,
        "total": len(results),
        "counts": {
            s: sum(r["status"] == s for r in results)
            for s in ("passed", "failed", "missing", "error")
        },
        "ok": bool(results) and (not bad if sampled else passed == len(results)),
        "mean_score": sum(scores) / len(scores) if scores else None,
    }
    if digest is not None:
        document["bench_digest"] = digest
    if old:
        return document
    shares = [
        r["samples_passed"] / r["samples_total"]
        if r.get("samples_total")
        else float(r["status"] == "passed" and "samples_total" not in r)
        for r in results
    ]
    document["run"] = run if run is not None else RUN
    document["sampled"] = sampled
    document["fail_under"] = None
    document["pass_at_k"] = (
        pass_at_k
        if pass_at_k is not None
        else {"1": sum(shares) / len(shares) if results else None}
    )
    return document


def compare(base: Any, new: Any) -> CompareDocument:
    return compare_reports(base, new, base_name="base.json", new_name="new.json")


def change_of(base: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """The change of case ``x`` between two one-case reports (``None``: the case is absent)."""
    documents = []
    for one in (base, new):
        sampled = one is not None and one.get("samples") is not None
        filler = result("zz-filler", "passed", samples=(1, 1) if sampled else None)
        documents.append(report(*(r for r in (one, filler) if r is not None)))
    (case,) = [c for c in compare(*documents).cases if c.case == "x"]
    return case.change


# -- the changes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "new", "change"),
    [
        ("passed", "failed", "regressed"),
        ("passed", "error", "regressed"),
        ("passed", "missing", "regressed"),
        ("failed", "passed", "improved"),
        ("error", "passed", "improved"),
        ("missing", "passed", "improved"),
        ("error", "failed", "error"),
        ("failed", "error", "error"),
        ("error", "error", "error"),
        ("missing", "error", "error"),
        ("error", "missing", "error"),
        ("passed", "passed", "unchanged"),
        ("failed", "failed", "unchanged"),
        ("failed", "missing", "unchanged"),
        ("missing", "missing", "unchanged"),
        (None, "passed", "new"),
        (None, "error", "new"),
        ("passed", None, "gone"),
        ("failed", None, "gone"),
    ],
)
def test_each_change_of_a_single_sample_case(
    base: str | None, new: str | None, change: str
) -> None:
    """passed -> not passed regressed, not passed -> passed improved, then an error, new, gone."""
    base_result = None if base is None else result("x", base, "why")
    new_result = None if new is None else result("x", new, "why")
    assert change_of(base_result, new_result) == change


@pytest.mark.parametrize(
    ("base", "new", "change"),
    [
        (("failed", 5, 3), ("failed", 5, 2), "regressed"),
        (("passed", 5, 5), ("failed", 5, 4), "regressed"),
        (("failed", 5, 2), ("passed", 5, 5), "improved"),
        (("failed", 5, 0), ("failed", 5, 1), "improved"),
        (("failed", 3, 1), ("failed", 6, 2), "unchanged"),  # the same share of other counts
        (("passed", 5, 5), ("passed", 4, 4), "unchanged"),
        (("error", 5, 3), ("failed", 5, 3), "error"),
        (("failed", 5, 3), ("error", 5, 3), "error"),
        (("failed", 5, 3), ("error", 5, 1), "regressed"),  # the fall first, then the error
        (("error", 5, 1), ("error", 5, 4), "improved"),
        (("passed", 5, 5), ("missing", 0, 0), "regressed"),
        (("missing", 0, 0), ("failed", 5, 1), "improved"),
        (("missing", 0, 0), ("missing", 0, 0), "unchanged"),
    ],
)
def test_each_change_of_a_sampled_case(
    base: tuple[str, int, int], new: tuple[str, int, int], change: str
) -> None:
    """A sampled case's pass@1 (its share of samples that passed) fell or rose; else its errors."""
    base_result = result("x", base[0], samples=(base[1], base[2]))
    new_result = result("x", new[0], samples=(new[1], new[2]))
    assert change_of(base_result, new_result) == change


@pytest.mark.parametrize(
    ("single", "sampled", "change"),
    [
        ("passed", ("failed", 5, 4), "regressed"),
        ("passed", ("passed", 5, 5), "unchanged"),
        ("failed", ("failed", 5, 1), "improved"),
        ("failed", ("failed", 5, 0), "unchanged"),
        ("error", ("failed", 5, 0), "error"),
    ],
)
def test_a_single_sample_case_against_a_sampled_one(
    single: str, sampled: tuple[str, int, int], change: str
) -> None:
    """One sample's 0 or 1 is compared with the sampled share, whichever side is which."""
    one = result("x", single, "why")
    many = result("x", sampled[0], samples=(sampled[1], sampled[2]))
    assert change_of(one, many) == change
    flipped = {"regressed": "improved", "improved": "regressed"}.get(change, change)
    assert change_of(many, one) == flipped


def test_changes_count_every_category_zeros_included_and_cases_are_in_id_order() -> None:
    base = report(result("b", "passed"), result("a", "failed"), result("c", "passed"))
    new = report(result("c", "passed"), result("d", "passed"), result("a", "failed"))
    document = compare(base, new)
    assert [c.case for c in document.cases] == ["a", "b", "c", "d"]
    assert document.changes == {
        "regressed": 0,
        "improved": 0,
        "error": 0,
        "new": 1,
        "gone": 1,
        "unchanged": 2,
    }
    assert list(document.to_json()["changes"]) == [
        "regressed",
        "improved",
        "error",
        "new",
        "gone",
        "unchanged",
    ]


def test_regressions_are_the_regressed_cases_and_the_gone_ones_that_passed() -> None:
    """A NEW run that left out a case that passed does not pass the gate by leaving it out."""
    base = report(
        result("a", "passed"), result("b", "passed"), result("c", "failed"), result("d", "passed")
    )
    new = report(result("a", "failed"), result("d", "passed"))
    document = compare(base, new)
    assert document.changes["regressed"] == 1
    assert document.changes["gone"] == 2
    assert document.regressions == 2  # a regressed, b gone that passed; c gone but had failed
    assert not document.ok
    sampled_base = report(
        result("a", "failed", samples=(5, 1)), result("b", "failed", samples=(5, 0))
    )
    sampled_new = report(result("z", "failed", samples=(5, 1)))
    assert compare(sampled_base, sampled_new).regressions == 1  # a had pass@1 above 0
    assert compare(new, base).regressions == 0
    assert compare(new, base).ok


# -- the test -------------------------------------------------------------------------------


def test_single_sample_runs_get_mcnemar_over_the_cases_in_both() -> None:
    base = report(
        *(result(f"r{n}", "passed") for n in range(5)),
        *(result(f"i{n}", "failed") for n in range(2)),
        result("same", "passed"),
        result("only-base", "passed"),
    )
    new = report(
        *(result(f"r{n}", "failed") for n in range(5)),
        *(result(f"i{n}", "passed") for n in range(2)),
        result("same", "passed"),
        result("only-new", "failed"),
    )
    test = compare(base, new).test
    assert isinstance(test, McNemar)
    assert (test.improved, test.regressed) == (2, 5)
    assert test.p_value == mcnemar_exact(2, 5)
    assert compare(base, new).to_json()["test"] == {
        "name": "mcnemar-exact",
        "improved": 2,
        "regressed": 5,
        "p_value": mcnemar_exact(2, 5),
    }


@pytest.mark.parametrize("which", ["both", "base", "new"])
def test_a_sampled_run_gets_the_seeded_paired_bootstrap(which: str) -> None:
    """Sampled on either side: the bootstrap of per-case pass@1 over the cases in both."""
    shares = [(5, 1), (5, 3), (5, 5), (5, 0)]
    later = [(5, 2), (5, 3), (5, 4), (5, 2)]

    def side(counts: list[tuple[int, int]], sampled: bool) -> dict[str, Any]:
        if sampled:
            return report(*(result(f"c{n}", "failed", samples=s) for n, s in enumerate(counts)))
        return report(
            *(
                result(f"c{n}", "passed" if p * 2 > t else "failed")
                for n, (t, p) in enumerate(counts)
            )
        )

    base = side(shares, which in {"both", "base"})
    new = side(later, which in {"both", "new"})
    document = compare(base, new)
    test = document.test
    assert isinstance(test, Bootstrap)
    expected = paired_bootstrap(
        [c.base.pass_at_1 for c in document.cases if c.base],
        [c.new.pass_at_1 for c in document.cases if c.new],
    )
    assert test.interval == expected
    assert (test.resamples, test.seed, test.confidence) == (
        BOOTSTRAP_RESAMPLES,
        BOOTSTRAP_SEED,
        0.95,
    )
    assert document.to_json()["test"] == {
        "name": "paired-bootstrap",
        "difference": expected.difference,
        "low": expected.low,
        "high": expected.high,
        "confidence": 0.95,
        "resamples": BOOTSTRAP_RESAMPLES,
        "seed": BOOTSTRAP_SEED,
    }


def test_no_case_in_both_reports_means_no_test() -> None:
    document = compare(report(result("a", "passed")), report(result("b", "passed")))
    assert document.test is None
    assert document.to_json()["test"] is None
    assert compare_lines(document)[-1] == "no case is in both reports: no test"


# -- pass@k ---------------------------------------------------------------------------------


def test_pass_at_k_is_the_reports_own_for_the_ks_both_have() -> None:
    base = report(
        result("a", "failed", samples=(10, 3)),
        result("b", "failed", samples=(10, 0)),
        pass_at_k={"1": 0.15, "10": 0.5, "100": None},
    )
    new = report(
        result("a", "failed", samples=(10, 5)),
        result("b", "failed", samples=(10, 0)),
        pass_at_k={"1": 0.25, "10": 0.5},
    )
    document = compare(base, new).to_json()
    assert document["pass_at_k"] == {
        "1": {"base": pytest.approx(0.15), "new": 0.25, "difference": pytest.approx(0.1)},
        "10": {"base": 0.5, "new": 0.5, "difference": 0.0},
    }
    assert document["base"]["pass_at_k"] == {"1": pytest.approx(0.15), "10": 0.5, "100": None}


def test_pass_at_1_is_computed_where_the_report_has_none() -> None:
    """passed over total, a missing case counting as not passed; null for no case at all."""
    old = report(
        result("a", "passed", old=True),
        result("b", "missing", old=True),
        result("c", "failed", old=True),
        result("d", "passed", old=True),
        old=True,
    )
    new = report(result("a", "passed"), pass_at_k={"1": 1.0})
    assert compare(old, new).to_json()["pass_at_k"] == {
        "1": {"base": 0.5, "new": 1.0, "difference": 0.5}
    }
    empty = compare(report(old=True), report(old=True)).to_json()
    assert empty["pass_at_k"] == {"1": {"base": None, "new": None, "difference": None}}
    assert empty["test"] is None


# -- reading reports ------------------------------------------------------------------------


def test_an_older_report_is_read_as_a_single_sample_run() -> None:
    """No run, sampled, pass_at_k or samples_*: one sample a case (none when missing)."""
    old = report(
        result("a", "passed", "fine", old=True),
        result("b", "missing", "no candidate directory b", old=True),
        result("c", "error", "crashed", old=True),
        digest=None,
        old=True,
    )
    side = read_side("old.json", old)
    assert side.to_json() == {
        "file": "old.json",
        "run": None,
        "task_class": "grader",
        "sampled": False,
        "total": 3,
        "passed": 1,
        "pass_at_k": {"1": 1 / 3},
    }
    assert [(o.samples_total, o.samples_passed) for o in side.outcomes.values()] == [
        (1, 1),
        (0, 0),
        (1, 0),
    ]
    new = report(result("a", "failed", "now wrong"), result("b", "passed"), result("c", "error"))
    document = compare(old, new)
    assert [c.change for c in document.cases] == ["regressed", "improved", "error"]
    assert isinstance(document.test, McNemar)
    assert document.bench_digest is None  # only one of them proves its bench


def test_merged_reports_are_compared_as_one_run() -> None:
    """A document merge made (merged, shard, cases, case_files, manifest) is a grade report."""
    merged = report(result("a", "passed"), result("b", "failed")) | {
        "manifest": "/r/bench.toml",
        "case_files": {"a": "/r/bench/grader/cases/a/case.toml"},
        "cases": ["a", "b"],
        "shard": {"index": 1, "count": 1},
        "merged": 2,
    }
    document = compare(merged, report(result("a", "passed"), result("b", "passed")))
    assert [c.change for c in document.cases] == ["unchanged", "improved"]
    assert document.bench_digest == DIGEST


def test_the_document_has_the_documented_shape() -> None:
    """The keys of spec 25, in its order, valid against docs/cli-output.schema.json."""
    base = report(result("a", "passed", "ok"), result("b", "failed", "bad"), run=RUN)
    new = report(
        result("a", "failed", "bad"), result("c", "passed", "ok"), run=RUN | {"name": None}
    )
    document = compare(base, new).to_json()
    assert list(document) == [
        "base",
        "new",
        "task_class",
        "bench_digest",
        "pass_at_k",
        "cases",
        "changes",
        "test",
        "regressions",
        "ok",
    ]
    assert list(document["base"]) == [
        "file",
        "run",
        "task_class",
        "sampled",
        "total",
        "passed",
        "pass_at_k",
    ]
    assert document["base"]["run"] == RUN
    assert document["cases"][0] == {
        "case": "a",
        "change": "regressed",
        "base": {
            "status": "passed",
            "reason": "ok",
            "samples_total": 1,
            "samples_passed": 1,
            "pass_at_1": 1.0,
        },
        "new": {
            "status": "failed",
            "reason": "bad",
            "samples_total": 1,
            "samples_passed": 0,
            "pass_at_1": 0.0,
        },
    }
    assert document["cases"][2]["base"] is None
    assert (document["regressions"], document["ok"], document["bench_digest"]) == (1, False, DIGEST)
    assert_shape(json.loads(json.dumps(document)), "compare")
    sampled = compare(
        report(result("a", "failed", samples=(4, 1))), report(result("a", "failed", samples=(4, 3)))
    ).to_json()
    assert_shape(sampled, "compare")


# -- refusals and reports that are not grade reports ----------------------------------------


def test_different_task_classes_are_refused_naming_both() -> None:
    with pytest.raises(CompareRefused) as refused:
        compare(report(result("a", "passed")), report(result("a", "passed"), task_class="other"))
    assert refused.value.problems == (
        "the reports grade different task classes (base.json: 'grader', new.json: 'other')",
    )
    assert (refused.value.base, refused.value.new, refused.value.exit_code) == (
        "base.json",
        "new.json",
        1,
    )


def test_different_benches_are_refused_naming_both_digests() -> None:
    with pytest.raises(CompareRefused) as refused:
        compare(
            report(result("a", "passed")),
            report(result("a", "passed"), task_class="other", digest=OTHER_DIGEST),
        )
    assert len(refused.value.problems) == 2  # every reason at once
    assert refused.value.problems[1] == (
        f"the reports saw different benches (bench_digest differs: base.json: {DIGEST}, "
        f"new.json: {OTHER_DIGEST})"
    )


def test_a_report_without_a_digest_is_compared_with_one_that_has_it() -> None:
    document = compare(report(result("a", "passed"), digest=None), report(result("a", "passed")))
    assert document.bench_digest is None
    assert (
        compare(report(result("a", "passed")), report(result("a", "passed"))).bench_digest == DIGEST
    )


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([1, 2], "base.json is not a JSON report of grade: it holds an array, not an object"),
        ("text", "base.json is not a JSON report of grade: it holds a single value, not an object"),
        (
            {"ok": True, "checked": 1, "diagnostics": []},
            "base.json is a report of check, not of grade: compare compares grade runs",
        ),
        (
            {"slug": "x"},
            "base.json is not a JSON report of grade: it has no task_class and results",
        ),
        (
            {"task_class": "grader", "results": {}},
            "base.json: results: Input should be a valid array",
        ),
        (
            {"task_class": 3, "results": []},
            "base.json: task_class: Input should be a valid string, not 3",
        ),
        (
            {"task_class": "grader", "results": [7]},
            "base.json: results[0]: Input should be an object, not 7",
        ),
        (
            {"task_class": "grader", "results": [{"status": "passed"}]},
            "base.json: results[0].case: Field required",
        ),
        (
            {"task_class": "grader", "results": [{"case": "a", "status": "fine"}]},
            "base.json: results[0].status: Input should be 'passed', 'failed', 'missing' or 'error', "
            "not 'fine'",
        ),
        (
            {"task_class": "grader", "results": [{"case": "a", "status": "passed", "reason": 3}]},
            "base.json: results[0].reason: Input should be a valid string, not 3",
        ),
        (
            {"task_class": "grader", "results": [{"case": "a", "status": "passed"}] * 2},
            "base.json: results[1].case: 'a' has a result already",
        ),
        (
            {
                "task_class": "grader",
                "results": [
                    {"case": "a", "status": "passed", "samples_total": 1, "samples_passed": 3}
                ],
            },
            "base.json: results[0].samples_passed: says 3, but its status gives 1: the report "
            "contradicts itself; give the report the command wrote, unedited",
        ),
        (
            {
                "task_class": "grader",
                "results": [
                    {"case": "a", "status": "passed", "samples_total": True, "samples_passed": 1}
                ],
            },
            "base.json: results[0].samples_total: Input should be a valid integer, not True",
        ),
        (
            {"task_class": "grader", "results": [], "pass_at_k": {"1": float("nan")}},
            'base.json: pass_at_k["1"]: NaN is not a finite number; a report holds only finite numbers',
        ),
        (
            {"task_class": "grader", "results": [], "pass_at_k": {"0": 0.5}},
            'base.json: pass_at_k["0"]: the key is not a k, a whole number of 1 or more',
        ),
        (
            {"task_class": "grader", "results": [], "sampled": "yes"},
            "base.json: sampled: Input should be a valid boolean, not 'yes'",
        ),
        (
            {"task_class": "grader", "results": [], "run": []},
            "base.json: run: Input should be an object",
        ),
        (
            {"task_class": "grader", "results": [], "bench_digest": 1},
            "base.json: bench_digest: Input should be a valid string, not 1",
        ),
    ],
)
def test_a_document_that_is_not_a_grade_report_is_invalid(document: Any, problem: str) -> None:
    """Exit 2, the file named, the problem said: nothing is compared."""
    with pytest.raises(ReportsInvalid) as invalid:
        compare(document, report(result("a", "passed")))
    assert invalid.value.problems == (problem,)
    assert invalid.value.exit_code == 2


def test_the_problems_of_both_reports_are_named_at_once_and_a_few_of_each() -> None:
    many = {"task_class": "grader", "results": [{"case": str(n)} for n in range(9)]}
    with pytest.raises(ReportsInvalid) as invalid:
        compare(many, [])
    assert len(invalid.value.problems) == 7
    assert invalid.value.problems[5] == "base.json: 4 more problems"
    assert invalid.value.problems[6].startswith("new.json is not a JSON report of grade")


# -- the renderers ----------------------------------------------------------------------------


def test_text_lists_what_changed_with_both_reasons_and_counts_the_rest() -> None:
    base = report(
        result("alpha", "passed", "ok"),
        result("beta", "failed", "wrong"),
        result("gamma", "error", "crashed"),
        result("delta", "passed", "ok"),
        result("gone-one", "passed", "ok"),
        run=RUN,
    )
    new = report(
        result("alpha", "failed", "now wrong"),
        result("beta", "passed", "ok"),
        result("gamma", "failed", None),
        result("delta", "passed", "ok"),
        result("new-one", "passed", "ok"),
        run=RUN | {"name": "model-b"},
    )
    assert compare_lines(compare(base, new)) == [
        "task class grader",
        "base: base.json (run model-a): 3/5 passed, one sample a case",
        "new:  new.json (run model-b): 3/5 passed, one sample a case",
        "pass@1: 0.600 → 0.600 (+0.000)",
        "regressed  alpha     passed → failed  (base: ok; new: now wrong)",
        "improved   beta      failed → passed  (base: wrong; new: ok)",
        "error      gamma     error → failed  (base: crashed)",
        "gone       gone-one  passed → absent  (base: ok)",
        "new        new-one   absent → passed  (new: ok)",
        "1 regressed, 1 improved, 1 error, 1 new, 1 gone, 1 unchanged (2 regressions, 1 of them gone)",
        "McNemar exact p = 1.000 (1 improved, 1 regressed)",
    ]


def test_text_of_sampled_runs_shows_the_samples_and_the_interval() -> None:
    base = report(*(result(f"c{n}", "failed", samples=(4, 1)) for n in range(3)))
    new = report(*(result(f"c{n}", "failed", samples=(4, 2 + (n == 0))) for n in range(3)))
    lines = compare_lines(compare(base, new))
    assert lines[1] == "base: base.json (run model-a): 0/3 passed, sampled"
    assert lines[4] == (
        "improved   c0  failed 1/4 → failed 3/4  (base: 1/4 samples passed; new: 3/4 samples passed)"
    )
    interval = paired_bootstrap([0.25] * 3, [0.75, 0.5, 0.5])
    assert lines[-1] == (
        f"pass@1 difference +{interval.difference:.3f}, 95% CI [+{interval.low:.3f}, "
        f"+{interval.high:.3f}] (paired bootstrap, {BOOTSTRAP_RESAMPLES} resamples, "
        f"seed {BOOTSTRAP_SEED})"
    )


def test_control_characters_from_a_report_are_escaped_in_text_and_markdown() -> None:
    evil = "evil\x1b[31m\nforged line | col"
    base = report(
        result("a\x1bb", "passed", evil), task_class="grader\x07", run=RUN | {"name": "m\x1b"}
    )
    new = report(result("a\x1bb", "failed", "x" * 500), task_class="grader\x07")
    text = "\n".join(compare_lines(compare(base, new)))
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "evil\\x1b[31m\\nforged line | col" in text
    assert "x" * 200 + "…)" in text  # a long reason is cut; JSON keeps it whole
    markdown = compare_summary(compare(base, new))
    assert "\x1b" not in markdown
    assert "\x07" not in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| regressed"))
    assert row.startswith(
        "| regressed | `a\\x1bb` | passed | failed | evil\\x1b[31m forged line \\| col | "
    )
    assert row.count(" | ") == 5  # six cells: no column break from a reason


def test_markdown_has_the_pass_at_k_table_the_test_and_the_changed_cases() -> None:
    base = report(result("a", "passed", "ok"), result("b", "failed", "no"), result("c", "passed"))
    new = report(result("a", "failed", "no"), result("b", "failed", "no"), result("c", "passed"))
    assert compare_summary(compare(base, new)) == (
        "### codegenie-bench compare grader: 1 regression\n"
        "\n"
        "| | report | run | cases | passed | samples |\n"
        "| --- | --- | --- | ---: | ---: | --- |\n"
        "| base | base.json | model-a | 3 | 2 | one a case |\n"
        "| new | new.json | model-a | 3 | 1 | one a case |\n"
        "\n"
        "| | base | new | difference |\n"
        "| --- | ---: | ---: | ---: |\n"
        "| pass@1 | 0.667 | 0.333 | -0.333 |\n"
        "\n"
        "McNemar exact p = 1.000 (0 improved, 1 regressed).\n"
        "\n"
        "| change | case | base | new | base reason | new reason |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| regressed | `a` | passed | failed | ok | no |\n"
        "\n"
        "1 regressed, 0 improved, 0 errors, 0 new, 0 gone, 2 unchanged.\n"
    )


def test_markdown_lists_a_bounded_number_of_changed_cases() -> None:
    count = CHANGED_ROWS + 3
    base = report(*(result(f"c{n:04}", "passed") for n in range(count)))
    new = report(*(result(f"c{n:04}", "failed") for n in range(count)))
    markdown = compare_summary(compare(base, new))
    assert sum(line.startswith("| regressed") for line in markdown.splitlines()) == CHANGED_ROWS
    assert "| … | 3 more: the JSON report has them | | | | |" in markdown


# -- properties --------------------------------------------------------------------------------

STATUSES = st.sampled_from(["passed", "failed", "missing", "error"])


@st.composite
def reports(draw: st.DrawFn, ids: list[str] | None = None) -> dict[str, Any]:
    """A grade report over some of a few case ids: single-sample, or sampled."""
    sampled = draw(st.booleans())
    if ids is None:
        ids = draw(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8))
    results = []
    for case in ids:
        status = draw(STATUSES)
        if sampled and status != "missing":
            total = draw(st.integers(1, 5))
            passed = total if status == "passed" else draw(st.integers(0, total - 1))
            results.append(result(case, status, samples=(total, passed)))
        elif sampled:
            results.append(result(case, status, samples=(0, 0)))
        else:
            results.append(result(case, status, old=draw(st.booleans())))
    return report(*results, sampled=sampled)


@settings(max_examples=60, deadline=None)
@given(reports())
def test_a_report_compared_with_itself_changes_nothing(document: dict[str, Any]) -> None:
    """No case moves, every difference is 0, and the test finds nothing (p = 1, or 0 in the interval)."""
    compared = compare(document, document)
    changes = compared.changes
    assert changes["regressed"] == changes["improved"] == changes["new"] == changes["gone"] == 0
    assert changes["error"] == sum(r["status"] == "error" for r in document["results"])
    assert compared.regressions == 0
    assert compared.ok
    assert all(k.difference in (0.0, None) for k in compared.pass_at_k)
    test = compared.test
    if not document["results"]:
        assert test is None
    elif isinstance(test, McNemar):
        assert test.p_value == 1.0
    else:
        assert isinstance(test, Bootstrap)
        assert test.interval.low <= 0.0 <= test.interval.high


SWAPPED = {"regressed": "improved", "improved": "regressed", "new": "gone", "gone": "new"}


@settings(max_examples=60, deadline=None)
@given(reports(), reports())
def test_swapping_base_and_new_swaps_regressed_and_improved(
    base: dict[str, Any], new: dict[str, Any]
) -> None:
    forward, backward = compare(base, new), compare(new, base)
    assert [(c.case, SWAPPED.get(c.change, c.change)) for c in forward.cases] == [
        (c.case, c.change) for c in backward.cases
    ]
    if isinstance(forward.test, McNemar):
        assert isinstance(backward.test, McNemar)
        assert (forward.test.improved, forward.test.regressed) == (
            backward.test.regressed,
            backward.test.improved,
        )
        assert forward.test.p_value == backward.test.p_value
    for ahead, behind in zip(forward.pass_at_k, backward.pass_at_k, strict=True):
        assert (ahead.base, ahead.new) == (behind.new, behind.base)


def test_the_same_reports_give_the_same_document() -> None:
    """Seeded: comparing the same sampled reports twice gives equal documents (the CLI: bytes)."""
    base = report(*(result(f"c{n}", "failed", samples=(5, n % 6)) for n in range(30)))
    new = report(*(result(f"c{n}", "failed", samples=(5, (n * 7) % 6)) for n in range(30)))
    assert compare(base, new).to_json() == compare(base, new).to_json()
    sides = read_side("base.json", base), read_side("new.json", new)
    assert compare_sides(*sides) == compare(base, new)
