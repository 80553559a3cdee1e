"""``grade(..., options)``: one frozen ``GradeOptions`` value holds a grading run's settings."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.cases import Case
from codegenie.eval.grading import GradeOptions, grade

from .factory import write_case

RUBRIC = textwrap.dedent(
    """\
    import json, sys
    from pathlib import Path
    passed = (Path(sys.argv[2]) / "ok").exists()
    print(json.dumps({"passed": passed}))
    sys.exit(0 if passed else 1)
    """
)


def _graded(tmp_path: Path) -> tuple[Path, list[Case], Path]:
    """A rubric, three cases (a passes, b fails, c has no candidate) and their candidates."""
    rubric = tmp_path / "rubric.py"
    rubric.write_text(RUBRIC, encoding="utf-8")
    cases = []
    for case_id in "abc":
        write_case(tmp_path / "cases", case_id)
        cases.append(Case(task_class="t", id=case_id, directory=tmp_path / "cases" / case_id))
    for case_id in "ab":
        (tmp_path / "candidates" / case_id).mkdir(parents=True)
    (tmp_path / "candidates" / "a" / "ok").write_text("")
    return rubric, cases, tmp_path / "candidates"


def test_grade_options_are_frozen_with_the_defaults_of_grade() -> None:
    """Every setting has grade's default, and the value cannot be changed in place."""
    options = GradeOptions()
    assert dataclasses.asdict(options) == {
        "jobs": None,
        "reuse": True,
        "stop_after": None,
        "over_limit": "error",
        "run_name": None,
        "pass_at": None,
        "fail_under": None,
        "sandbox": "auto",
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.jobs = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("jobs", 0),
        ("jobs", True),
        ("stop_after", 0),
        ("pass_at", (0,)),
        ("pass_at", ()),
        ("fail_under", 1.5),
    ],
)
def test_grade_options_refuse_a_value_out_of_range(field: str, value: Any) -> None:
    """An options value out of range is refused when it is made, naming the setting."""
    with pytest.raises(ValueError, match=field):
        GradeOptions(**{field: value})


def test_grade_takes_an_options_value(tmp_path: Path) -> None:
    """The options value's settings are in force: the run's name, no reuse, the sandbox word."""
    rubric, cases, candidates = _graded(tmp_path)
    options = GradeOptions(jobs=1, reuse=False, run_name="model-a", sandbox="none")
    report = grade("t", rubric, cases, candidates, options)
    assert [(r.case, r.status) for r in report.results] == [
        ("a", "passed"),
        ("b", "failed"),
        ("c", "missing"),
    ]
    assert report.ledger is None  # nothing was looked up
    assert report.run is not None
    assert report.run.name == "model-a"
    assert report.sandbox == "none"
    assert report.reused == 0


def test_a_keyword_setting_replaces_the_options_field(tmp_path: Path) -> None:
    """grade(..., options, jobs=2) is grade(..., replace(options, jobs=2)): the same report."""
    rubric, cases, candidates = _graded(tmp_path)
    base = GradeOptions(reuse=False, sandbox="none", pass_at=(1,))
    by_value = grade("t", rubric, cases, candidates, dataclasses.replace(base, fail_under=0.5))
    by_keyword = grade("t", rubric, cases, candidates, base, fail_under=0.5)

    def shown(report: Any) -> list[tuple[str, str]]:
        return [(r.case, r.status) for r in report.results]

    assert (
        shown(by_value) == shown(by_keyword) == [("a", "passed"), ("b", "failed"), ("c", "missing")]
    )
    assert by_value.fail_under == by_keyword.fail_under == 0.5
    assert by_value.pass_at == by_keyword.pass_at == (1,)


def test_the_identity_of_runs_graded_together_spans_them() -> None:
    """RunInfo.of_runs: from the first start to the last finish, the first run's Python."""
    from codegenie.eval.grading import RunInfo

    first = RunInfo(started_at="2026-12-02T07:01:02Z", finished_at="2026-12-02T07:02:00Z")
    second = RunInfo(
        started_at="2026-12-02T07:00:00Z", finished_at="2026-12-02T07:03:00Z", python="3.12.1"
    )
    both = RunInfo.of_runs([first, second], name="m", candidates_digest="d")
    assert both is not None
    assert (both.started_at, both.finished_at) == ("2026-12-02T07:00:00Z", "2026-12-02T07:03:00Z")
    assert (both.name, both.candidates_digest, both.python) == ("m", "d", None)
    assert RunInfo.of_runs([], name=None, candidates_digest=None) is None
