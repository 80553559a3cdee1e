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


def test_the_node_that_made_a_run_is_in_the_json_only_when_there_is_one() -> None:
    """Under Ray a result names its node; a local result's JSON is what it was before nodes."""
    from codegenie.eval.grading import SampleResult

    here = graded({"passed": True})
    assert "node" not in here.to_json()
    assert list(here.to_json())[:14] == [
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
        "candidate_digest",
        "reused",
    ]
    remote = RubricResult(case="c", status="passed", duration_s=0.1, node="ab12")
    there = GradeResult.from_rubric(remote).to_json()
    assert list(there)[13:16] == ["reused", "node", "tags"]
    assert there["node"] == "ab12"
    sample = SampleResult.from_rubric("s1", remote).to_json()
    assert sample["node"] == "ab12"
    assert "node" not in SampleResult.from_rubric("s1", here_rubric()).to_json()
    case = GradeResult.of_samples("c", [SampleResult.from_rubric("s1", remote)]).to_json()
    assert "node" not in case  # a case of samples: each sample names its node
    assert case["samples"][0]["node"] == "ab12"
    from codegenie.eval.grading import GradeReport
    from tests.test_grade import assert_shape

    for results in (
        (GradeResult.from_rubric(remote),),
        (GradeResult.of_samples("c", [SampleResult.from_rubric("s1", remote)]),),
    ):
        assert_shape(GradeReport(task_class="tc", results=results).to_json(), "grade")


def here_rubric() -> RubricResult:
    return RubricResult(case="c", status="passed", duration_s=0.1)


def test_a_verdict_holding_a_number_that_is_not_finite_keeps_what_is_finite() -> None:
    """Whatever handed it over (the store of results from before the protocol refused them)."""
    kept = graded({"passed": True, "reason": "ok", "x": float("inf"), "y": [float("nan")]}).verdict
    assert kept == {
        "passed": True,
        "reason": "ok",
        "omitted": "the verdict holds a number that is not finite",
    }
