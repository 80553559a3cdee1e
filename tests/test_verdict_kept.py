"""A rubric's own verdict keys reach grade's results, bounded in size."""

from __future__ import annotations

from codegenie.eval.grading import VERDICT_LIMIT, GradeResult
from codegenie.eval.rubrics import RubricResult


def graded(verdict: dict[str, object] | None) -> GradeResult:
    status = "passed" if verdict and verdict.get("passed") else "failed"
    rubric = RubricResult(case="c", status=status, duration_s=0.1, verdict=verdict)
    return GradeResult.from_rubric(rubric)


def test_the_rubrics_own_keys_reach_the_result_and_its_json() -> None:
    verdict = {"passed": True, "score": 1.0, "tests_run": 12, "coverage": {"lines": 0.9}}
    result = graded(verdict)
    assert result.verdict == verdict
    assert result.to_json()["verdict"] == verdict


def test_no_verdict_is_null() -> None:
    assert graded(None).to_json()["verdict"] is None


def test_a_verdict_too_large_keeps_its_gist_and_says_how_large_it_was() -> None:
    verdict = {"passed": False, "reason": "2 tests failed", "log": "x" * (VERDICT_LIMIT + 1)}
    kept = graded(verdict).verdict
    assert kept is not None
    assert set(kept) == {"passed", "reason", "omitted"}
    assert (kept["passed"], kept["reason"]) == (False, "2 tests failed")
    assert "more than 65,536" in kept["omitted"]


def test_a_verdict_exactly_at_the_bound_is_kept_whole() -> None:
    base = '{"passed":true,"log":""}'
    verdict = {"passed": True, "log": "y" * (VERDICT_LIMIT - len(base))}
    assert graded(verdict).verdict == verdict
