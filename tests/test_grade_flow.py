"""grade_task_class: the one flow of grading a bench's task class, which the command only renders.

The command line and :func:`codegenie.eval.grading.grade_bench` both grade
through it; what it says as it goes reaches its caller as events, in a
fixed order, and the library prints nothing.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from codegenie.eval._selection import Selection
from codegenie.eval.cases import Case
from codegenie.eval.errors import BenchCasesInvalid, CandidatesDirInvalid, TaskClassNotFound
from codegenie.eval.executors import get_executor
from codegenie.eval.grading import (
    GradeOptions,
    GradeResult,
    PassAtTooHigh,
    grade_bench,
    grade_task_class,
)
from codegenie.eval.manifest import BenchManifest
from codegenie.eval.models import TaskClass
from codegenie.eval.sandboxes import choose_sandbox
from tests.factory import Bench, make_bench

SOLVED = {"alpha-one": True, "alpha-two": False, "beta-three": True}


class Recorder:
    """Every event, in order, as a word and what it carried."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    def note(self, text: str) -> None:
        self.seen.append(("note", text))

    def warning(self, text: str) -> None:
        self.seen.append(("warning", text))

    def invalid_apart(self, error: BenchCasesInvalid) -> None:
        self.seen.append(("invalid_apart", sorted({p.case or "" for p in error.problems})))

    def started(self, task_class: TaskClass, cases: Sequence[Case]) -> None:
        self.seen.append(("started", (task_class.name, [case.id for case in cases])))

    def arrived(self, index: int, result: GradeResult) -> None:
        self.seen.append(("arrived", (index, result.case, result.status)))

    def ended(self, *, completed: bool) -> None:
        self.seen.append(("ended", completed))

    def words(self) -> list[str]:
        return [word for word, _ in self.seen]


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """alpha's cases alpha-one (solved), alpha-two, beta-three (solved); candidates beside them."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    cases = made.root / "alpha" / "cases"
    for case_id, solved in SOLVED.items():
        shutil.copytree(cases / "example", cases / case_id)
        candidate = made.base / "candidates" / case_id
        candidate.mkdir(parents=True)
        if solved:
            (candidate / "answer.txt").write_text("solved\n", encoding="utf-8")
    shutil.rmtree(cases / "example")
    return made


def _grade(
    bench: Bench, events: Recorder, candidates: Path | None = None, **kwargs: object
) -> object:
    options = kwargs.pop("options", GradeOptions(jobs=1, reuse=False))
    executor = get_executor("local")
    try:
        return grade_task_class(
            BenchManifest.load(bench.manifest),
            "alpha",
            bench.base / "candidates" if candidates is None else candidates,
            options,  # type: ignore[arg-type]
            choose_sandbox("none"),
            executor,
            events=events,
            **kwargs,  # type: ignore[arg-type]
        )
    finally:
        executor.close()


def test_the_events_come_in_their_order(bench: Bench) -> None:
    """started (the sorted cases), one arrival per case, ended; the report's statuses."""
    events = Recorder()
    graded = _grade(bench, events)
    words = events.words()
    assert words[0] == "started"
    assert events.seen[0][1] == ("alpha", ["alpha-one", "alpha-two", "beta-three"])
    assert words[1:] == ["arrived"] * 3 + ["ended"]
    assert events.seen[-1] == ("ended", True)
    arrived = sorted(value for word, value in events.seen if word == "arrived")  # type: ignore[type-var]
    assert arrived == [
        (0, "alpha-one", "passed"),
        (1, "alpha-two", "failed"),
        (2, "beta-three", "passed"),
    ]
    assert [case.id for case in graded.cases] == ["alpha-one", "alpha-two", "beta-three"]  # type: ignore[attr-defined]
    assert graded.task_class.name == "alpha"  # type: ignore[attr-defined]


def test_a_candidate_of_no_case_is_a_warning_before_any_run(bench: Bench) -> None:
    """An entry of the candidates that names no case: warned of after started, before a result."""
    (bench.base / "candidates" / "alpha-tow").mkdir()
    events = Recorder()
    _grade(bench, events)
    words = events.words()
    assert words[:2] == ["started", "warning"]
    text = events.seen[1][1]
    assert isinstance(text, str)
    assert "alpha-tow matches no case of 'alpha', and is not graded" in text
    assert "; did you mean 'alpha-two'" in text


def test_lf_with_nothing_known_notes_it_and_grades_every_case(bench: Bench) -> None:
    """--lf without a record: a note first, then every case (nothing is read when not remembering)."""
    events = Recorder()
    _grade(bench, events, last_failed=True)
    assert events.seen[0][0] == "note"
    assert "--lf: no case of 'alpha' is known to have failed" in str(events.seen[0][1])
    assert events.seen[1] == ("started", ("alpha", ["alpha-one", "alpha-two", "beta-three"]))


def test_lf_grades_what_did_not_pass_last_time_once_remembered(bench: Bench) -> None:
    """remember=True keeps what did not pass (in the test's own cache); last_failed grades that."""
    _grade(bench, Recorder(), remember=True)
    events = Recorder()
    _grade(bench, events, last_failed=True, remember=True)
    assert events.seen[0] == ("started", ("alpha", ["alpha-two"]))


def test_an_unselected_invalid_case_is_told_apart_and_a_selected_one_refuses(
    bench: Bench,
) -> None:
    """A narrowed selection grades around an invalid case it leaves out, and says so."""
    broken = bench.root / "alpha" / "cases" / "beta-broken"
    broken.mkdir()  # no input/ or expected/: invalid
    events = Recorder()
    _grade(bench, events, selection=Selection(keyword="alpha-"))
    assert events.seen[0] == ("invalid_apart", ["beta-broken"])
    assert events.seen[1] == ("started", ("alpha", ["alpha-one", "alpha-two"]))
    with pytest.raises(BenchCasesInvalid):
        _grade(bench, Recorder(), selection=Selection(keyword="beta-"))
    with pytest.raises(BenchCasesInvalid):
        _grade(bench, Recorder())  # not narrowed: every problem refuses


def test_stopping_after_the_first_failure_ends_then_notes(bench: Bench) -> None:
    """stop_after=1: ended(completed=True), then the note of how many were not graded."""
    events = Recorder()
    graded = _grade(bench, events, options=GradeOptions(jobs=1, reuse=False, stop_after=1))
    assert graded.report.stopped  # type: ignore[attr-defined]
    assert events.words()[-2:] == ["ended", "note"]
    assert "stopped at the first case that did not pass (-x): 1 of 3 cases not graded" in str(
        events.seen[-1][1]
    )


def test_a_pass_at_above_the_samples_refuses_before_any_run(bench: Bench) -> None:
    """pass@2 of cases with one sample each: PassAtTooHigh, with the k, the case and its count."""
    for case_id in SOLVED:
        target = bench.base / "sampled" / case_id / "s1"
        shutil.copytree(bench.base / "candidates" / case_id, target)
    events = Recorder()
    with pytest.raises(PassAtTooHigh) as raised:
        _grade(
            bench,
            events,
            candidates=bench.base / "sampled",
            samples=True,
            options=GradeOptions(jobs=1, reuse=False, pass_at=(1, 2)),
        )
    assert (raised.value.k, raised.value.case.id, raised.value.samples) == (2, "alpha-one", 1)
    assert "arrived" not in events.words()


def test_a_task_class_without_candidates_is_all_missing(bench: Bench) -> None:
    """Where the candidates are not there at all (grade --all's slug), every case is missing."""
    events = Recorder()
    graded = _grade(bench, events, candidates=bench.base / "nowhere")
    statuses = [r.status for r in graded.report.results]  # type: ignore[attr-defined]
    assert statuses == ["missing"] * 3


def test_grade_bench_refuses_candidates_that_are_not_there(bench: Bench) -> None:
    """A harness's mistyped path is an error, never a report of missing candidates."""
    with pytest.raises(CandidatesDirInvalid, match="does not exist"):
        grade_bench("alpha", bench.base / "nowhere", bench_root=bench.base)
    with pytest.raises(TaskClassNotFound):
        grade_bench("alpah", bench.base / "candidates", bench_root=bench.base)


def test_grade_bench_grades_through_the_same_flow(bench: Bench) -> None:
    """grade_bench's cases narrow the selection as --case does; on_result sees each result."""
    seen: list[int] = []
    report = grade_bench(
        "alpha",
        bench.base / "candidates",
        bench_root=bench.base,
        options=GradeOptions(jobs=1, reuse=False, sandbox="none"),
        cases=["alpha-two", "alpha-one"],
        on_result=lambda index, _: seen.append(index),
    )
    assert [(r.case, r.status) for r in report.results] == [
        ("alpha-one", "passed"),
        ("alpha-two", "failed"),
    ]
    assert sorted(seen) == [0, 1]
