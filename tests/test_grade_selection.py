"""grade's selection: -k, --tag, -x, --lf, and grading around invalid unselected cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.factory import Bench, make_bench
from tests.test_reports import run

SOLVED = {"alpha-one": True, "alpha-two": False, "beta-three": True, "beta-four": False}


@pytest.fixture
def graded(tmp_path: Path) -> Bench:
    """alpha's cases: alpha-one (solved, tag fast), alpha-two, beta-three (fast), beta-four."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    cases = made.root / "alpha" / "cases"
    for case_id, solved in SOLVED.items():
        shutil.copytree(cases / "example", cases / case_id)
        if case_id in {"alpha-one", "beta-three"}:
            (cases / case_id / "case.toml").write_text('tags = ["fast"]\n', encoding="utf-8")
        candidate = made.base / "candidates" / case_id
        candidate.mkdir(parents=True)
        if solved:
            (candidate / "answer.txt").write_text("solved\n", encoding="utf-8")
    shutil.rmtree(cases / "example")
    return made


def grade(bench: Bench, *args: str) -> tuple[int, list[tuple[str, str]], str]:
    """Grade alpha with ``args``; return the exit code, (case, status) pairs and stderr."""
    result = run(
        bench.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        "--jobs",
        "1",
        "--format",
        "json",
        *args,
        XDG_CACHE_HOME=str(bench.base / "cache"),
    )
    document = json.loads(result.stdout)
    if "error" in document:
        return result.returncode, [], result.stderr + json.dumps(document)
    pairs = [(r["case"], r["status"]) for r in document["results"]]
    return result.returncode, pairs, result.stderr


@pytest.mark.parametrize(
    ("args", "cases"),
    [
        (["-k", "two"], ["alpha-two"]),
        (["-k", "beta-*"], ["beta-four", "beta-three"]),
        (["-k", "*-t*"], ["alpha-two", "beta-three"]),
        (["--tag", "fast"], ["alpha-one", "beta-three"]),
        (["--tag", "fast", "-k", "beta"], ["beta-three"]),
        (["--tag", "slow", "--tag", "fast"], ["alpha-one", "beta-three"]),
    ],
)
def test_keyword_and_tags_select_cases(graded: Bench, args: list[str], cases: list[str]) -> None:
    """-k is a substring of the id, or a glob when it holds * ? [; --tag picks tagged cases."""
    _, pairs, _ = grade(graded, *args)
    assert [case for case, _ in pairs] == cases


def test_exitfirst_stops_at_the_first_case_that_did_not_pass(graded: Bench) -> None:
    """-x stops after the first case that did not pass: later cases are not graded."""
    code, pairs, stderr = grade(graded, "-x")
    assert code == 1
    assert pairs == [("alpha-one", "passed"), ("alpha-two", "failed")]
    assert (
        "stopped at the first case that did not pass (-x): 2 of 4" not in stderr
    )  # JSON: no notes on stderr
    text = run(
        graded.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        "--jobs",
        "1",
        "-x",
        XDG_CACHE_HOME=str(graded.base / "cache"),
    )
    assert text.returncode == 1
    assert [line.split()[1] for line in text.stdout.splitlines()[:-1]] == ["alpha-one", "alpha-two"]
    assert "(-x): 2 of 4 cases not graded" in text.stderr


def test_last_failed_grades_only_what_did_not_pass_last_time(graded: Bench) -> None:
    """--lf grades every case when nothing is known, then only those that did not pass."""
    _, first, _ = grade(graded, "--lf")
    assert len(first) == 4
    _, again, _ = grade(graded, "--lf")
    assert again == [("alpha-two", "failed"), ("beta-four", "failed")]
    (graded.base / "candidates" / "alpha-two" / "answer.txt").write_text("x\n", encoding="utf-8")
    _, fixed, _ = grade(graded, "--lf")
    assert fixed == [("alpha-two", "passed"), ("beta-four", "failed")]
    _, last, _ = grade(graded, "--lf")
    assert last == [("beta-four", "failed")]
    _, uncached, _ = grade(graded, "--lf", "--no-cache")
    assert len(uncached) == 4


def test_selected_valid_cases_are_graded_beside_invalid_unselected_ones(graded: Bench) -> None:
    """An invalid case outside the selection is reported apart on stderr; the rest are graded."""
    broken = graded.root / "alpha" / "cases" / "broken-case"
    broken.mkdir()
    (broken / "case.toml").write_text("timeout = 'soon'\n", encoding="utf-8")
    code, pairs, stderr = grade(graded, "--case", "alpha-one")
    assert (code, pairs) == (0, [("alpha-one", "passed")])
    assert "not selected and not graded, 1 invalid case: broken-case" in stderr
    code, pairs, stderr = grade(graded, "-k", "broken")
    assert code == 4
    assert pairs == []
    code, pairs, _ = grade(graded)
    assert code == 4


def test_exitfirst_leaves_the_record_of_cases_it_did_not_start(graded: Bench) -> None:
    """A run stopped by -x forgets nothing about the cases it never started."""
    grade(graded)
    _, stopped, _ = grade(graded, "-x")
    assert [case for case, _ in stopped] == ["alpha-one", "alpha-two"]
    _, again, _ = grade(graded, "--lf")
    assert again == [("alpha-two", "failed"), ("beta-four", "failed")]


def test_exitfirst_counts_the_results_it_reused(graded: Bench) -> None:
    """-x reports the results answered from the store as reused, though the grading stopped."""
    grade(graded)  # every case graded once: the passes and fails are stored
    result = run(
        graded.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        "--jobs",
        "1",
        "--format",
        "json",
        "-x",
        XDG_CACHE_HOME=str(graded.base / "cache"),
    )
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert [r["case"] for r in document["results"]] == ["alpha-one", "alpha-two"]
    assert document["reused"] == 2
    text = run(
        graded.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        "-x",
        XDG_CACHE_HOME=str(graded.base / "cache"),
    )
    assert text.returncode == 1
    assert "(-x): 2 of 4 cases not graded" in text.stderr
    assert "2 results reused from earlier runs" in text.stderr
