"""``grade --samples`` and JSON Lines samples: pass@k, the run's identity, merge, over-limit, --lf.

Through the installed console script, on real benches in tmp_path (the
rubric of :mod:`tests.test_grade`: a candidate's ``mode.txt`` says what it does).
"""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.cases import Case
from codegenie.eval.grading import grade

from .test_grade import SLUG, World, assert_shape


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fresh bench and candidates directory in tmp_path."""
    return World(tmp_path)


def samples(world: World, case_id: str, *modes: str, root: Path | None = None) -> None:
    """Give ``case_id`` one sample per mode: ``CANDIDATES/<case>/s<i>/mode.txt``."""
    top = (root or world.candidates) / case_id
    top.mkdir(parents=True)
    for number, mode in enumerate(modes, start=1):
        (top / f"s{number:02d}").mkdir()
        (top / f"s{number:02d}" / "mode.txt").write_text(mode + "\n", encoding="utf-8")


def cases(world: World, *ids: str, toml: str = "") -> None:
    """Add cases without a candidate of their own (samples are given apart)."""
    for case_id in ids:
        world.case(case_id, None, toml)


def exact_pass_at(counts: list[tuple[int, int]], k: int) -> float:
    """pass@k by its definition, in fractions: the mean of 1 - C(n-c, k) / C(n, k)."""
    total = sum(Fraction(1) - Fraction(comb(n - c, k), comb(n, k)) for n, c in counts)
    return float(total / len(counts))


def as_json(world: World, *args: str) -> tuple[int, dict[str, Any]]:
    result = world.grade(*args, "--format", "json")
    document = json.loads(result.stdout)
    assert_shape(document, "grade")
    return result.returncode, document


# -- a directory of samples -------------------------------------------------------------


def test_each_sample_is_a_run_and_a_case_sums_them_up(world: World) -> None:
    """Sampled results: each sample's outcome in id order, the case's status from them, pass@1."""
    cases(world, "a", "b")
    samples(world, "a", "pass", "fail", "pass")
    samples(world, "b", "pass", "pass")
    code, document = as_json(world, "--samples", "--jobs", "2")
    assert code == 0  # failed samples are pass@k's business: no error, nothing missing
    assert document["sampled"] is True
    a, b = document["results"]
    assert [s["sample"] for s in a["samples"]] == ["s01", "s02", "s03"]
    assert [s["status"] for s in a["samples"]] == ["passed", "failed", "passed"]
    assert (a["status"], a["samples_total"], a["samples_passed"]) == ("failed", 3, 2)
    assert a["reason"] == "2/3 samples passed"
    assert (b["status"], b["samples_total"], b["samples_passed"]) == ("passed", 2, 2)
    assert all(s["candidate_digest"].startswith("blake2b-256:") for s in a["samples"])
    assert len({s["candidate_digest"] for s in a["samples"]}) == 2  # two samples are the same
    assert document["pass_at_k"] == {"1": pytest.approx(exact_pass_at([(3, 2), (2, 2)], 1))}


def test_text_prints_the_pass_at_line(world: World) -> None:
    cases(world, "a")
    samples(world, "a", "pass", "fail")
    result = world.grade("--samples")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "pass@1 0.500 (2 samples, 1 passed)"


def test_a_sample_that_errors_or_a_missing_case_fails_the_command(world: World) -> None:
    cases(world, "a", "b")
    samples(world, "a", "pass", "crash")
    code, document = as_json(world, "--samples")
    assert code == 1
    a, b = document["results"]
    assert a["status"] == "error"
    assert "sample s02:" in a["reason"]
    assert a["samples"][1]["traceback"]  # the sample keeps what broke
    assert b["status"] == "missing"
    assert b["samples_total"] == 0
    # a missing case counts 0 in pass@1: (1/2 + 0) / 2
    assert document["pass_at_k"] == {"1": pytest.approx(0.25)}


@pytest.mark.parametrize(("threshold", "expected"), [("0.5", 0), ("0.51", 1), ("0", 0)])
def test_fail_under_gates_on_pass_at_1(world: World, threshold: str, expected: int) -> None:
    cases(world, "a")
    samples(world, "a", "pass", "fail")
    assert world.grade("--samples", "--fail-under", threshold).returncode == expected


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "half", "nan"])
def test_fail_under_takes_a_fraction(world: World, bad: str) -> None:
    cases(world, "a")
    samples(world, "a", "pass")
    result = world.grade("--samples", "--fail-under", bad)
    assert result.returncode == 2
    assert "expected a fraction between 0 and 1" in result.stderr


def test_default_ks_are_those_every_case_has_samples_for(world: World) -> None:
    cases(world, "a", "b")
    samples(world, "a", *["pass"] * 3, *["fail"] * 7)
    samples(world, "b", *["fail"] * 9, "pass")
    _, document = as_json(world, "--samples")
    counts = [(10, 3), (10, 1)]
    assert document["pass_at_k"] == {
        "1": pytest.approx(exact_pass_at(counts, 1)),
        "10": pytest.approx(exact_pass_at(counts, 10)),
    }
    _, chosen = as_json(world, "--samples", "--pass-at", "2,5")
    assert chosen["pass_at_k"] == {
        "2": pytest.approx(exact_pass_at(counts, 2)),
        "5": pytest.approx(exact_pass_at(counts, 5)),
    }


def test_a_k_above_a_cases_samples_is_refused_before_anything_runs(world: World) -> None:
    cases(world, "a", "b")
    samples(world, "a", "pass", "pass", "pass")
    samples(world, "b", "crash")
    result = world.grade("--samples", "--pass-at", "1,3")
    assert result.returncode == 2
    assert "--pass-at 3 needs at least 3 samples of every case; case 'b' has 1" in result.stderr


@pytest.mark.parametrize("bad", ["0", "1,x", "", "1,-2"])
def test_pass_at_takes_whole_numbers(world: World, bad: str) -> None:
    cases(world, "a")
    samples(world, "a", "pass")
    assert world.grade("--samples", "--pass-at", bad).returncode == 2


def test_what_is_not_a_sample_is_refused_with_every_problem(world: World) -> None:
    cases(world, "a", "b")
    samples(world, "a", "pass")
    (world.candidates / "a" / "Bad Name").mkdir()
    (world.candidates / "a" / "loose.txt").write_text("x")
    (world.candidates / "b").mkdir()  # no sample at all
    result = world.grade("--samples", "--format", "json")
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "SamplesInvalid"
    found = {(Path(p["file"]).name, p["case"]) for p in error["attributes"]["problems"]}
    assert found == {("Bad Name", "a"), ("loose.txt", "a"), ("b", "b")}


def test_without_samples_a_sample_directory_is_one_candidate(world: World) -> None:
    """Without --samples, CANDIDATES/<case>/ is the candidate, as before: no mode.txt there."""
    cases(world, "a")
    samples(world, "a", "pass")
    code, document = as_json(world)
    assert code == 1
    assert document["sampled"] is False
    assert document["results"][0]["status"] == "error"


# -- JSON Lines -----------------------------------------------------------------------


def jsonl(world: World, *lines: object) -> Path:
    path = world.bench.base / "samples.jsonl"
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def test_a_json_lines_file_is_graded_as_samples_and_leaves_nothing(world: World) -> None:
    cases(world, "a", "b")
    jsonl(
        world,
        {"case": "a", "files": {"mode.txt": "pass\n"}},
        {"case": "b", "files": {"mode.txt": "fail\n", "sub/dir/x.py": "print()\n"}},
        {"case": "a", "files": {"mode.txt": "fail\n"}},
        {"case": "a", "sample": "best", "files": {"mode.txt": "pass\n"}},
    )
    result = world.run("grade", SLUG, "samples.jsonl", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert_shape(document, "grade")
    a, b = document["results"]
    # numbered in file order within their case; sorted by id
    assert [(s["sample"], s["status"]) for s in a["samples"]] == [
        ("1", "passed"),
        ("2", "failed"),
        ("best", "passed"),
    ]
    assert (b["samples_total"], b["samples_passed"]) == (1, 0)
    assert document["run"]["candidates_digest"].startswith("blake2b-256:")
    assert list(world.tmp.iterdir()) == []  # the written-out samples are gone


def test_every_bad_line_is_reported_with_its_line_before_anything_runs(world: World) -> None:
    cases(world, "alpha", "beta")
    jsonl(
        world,
        {"case": "alpha", "files": {"mode.txt": "hang\n"}},
        {"case": "alhpa", "files": {"mode.txt": "pass\n"}},
        {"case": "beta", "files": {"../escape.txt": "x"}},
        "not json",
        {"case": "beta", "sample": "x", "files": {"mode.txt": "pass\n"}},
        {"case": "beta", "sample": "x", "files": {"mode.txt": "pass\n"}},
        {"case": "beta", "files": {"mode.txt": "pass\n"}, "extra": 1},
    )
    result = world.run("grade", SLUG, "samples.jsonl", "--format", "json")
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "SamplesInvalid"
    problems = error["attributes"]["problems"]
    assert [p["line"] for p in problems] == [2, 3, 4, 6, 7]
    assert "did you mean 'alpha'" in problems[0]["message"]
    assert all(p["file"] == "samples.jsonl" for p in problems)
    assert list(world.tmp.iterdir()) == []  # nothing was written, nothing ran (no hang)
    text = world.run("grade", SLUG, "samples.jsonl")
    assert "samples.jsonl:2: " in text.stderr


# -- the run's identity, merge, the ledger ------------------------------------------


def test_shards_of_one_run_merge_and_of_two_runs_do_not(world: World) -> None:
    cases(world, "a", "b", "c")
    for case_id in "abc":
        samples(world, case_id, "pass", "fail")
    reports = []
    for index in (1, 2):
        result = world.grade(
            "--samples", "--run-name", "model-a", "--shard", f"{index}/2", "--format", "json"
        )
        path = world.bench.base / f"shard{index}.json"
        path.write_text(result.stdout)
        reports.append(path)
        assert json.loads(result.stdout)["run"]["name"] == "model-a"
    digests = {json.loads(p.read_text())["run"]["candidates_digest"] for p in reports}
    assert len(digests) == 1  # the whole candidates tree, not the shard's cases
    merged = world.run("merge", *map(str, reports), "--format", "json")
    assert merged.returncode == 0, merged.stderr
    document = json.loads(merged.stdout)
    assert_shape(document, "grade")
    assert document["pass_at_k"] == {"1": pytest.approx(0.5)}
    assert document["run"]["name"] == "model-a"
    assert document["sampled"] is True

    other = world.grade(
        "--samples", "--run-name", "model-b", "--shard", "2/2", "--format", "json"
    ).stdout
    (world.bench.base / "other.json").write_text(other)
    refused = world.run("merge", str(reports[0]), "other.json")
    assert refused.returncode == 1
    assert "differently named runs" in refused.stderr
    assert "model-a" in refused.stderr
    assert "model-b" in refused.stderr


def test_merge_refuses_shards_of_other_candidates(world: World) -> None:
    cases(world, "a", "b")
    for case_id in "ab":
        samples(world, case_id, "pass")
    first = world.grade("--samples", "--shard", "1/2", "--format", "json").stdout
    (world.candidates / "b" / "s01" / "mode.txt").write_text("fail\n")
    second = world.grade("--samples", "--shard", "2/2", "--format", "json").stdout
    (world.bench.base / "one.json").write_text(first)
    (world.bench.base / "two.json").write_text(second)
    refused = world.run("merge", "one.json", "two.json")
    assert refused.returncode == 1
    assert "different candidates" in refused.stderr


def test_a_reused_sample_says_so_and_keeps_its_time(world: World) -> None:
    cases(world, "a")
    samples(world, "a", "pass", "fail")
    _, first = as_json(world, "--samples")
    _, again = as_json(world, "--samples")
    assert [s["reused"] for s in first["results"][0]["samples"]] == [False, False]
    assert [s["reused"] for s in again["results"][0]["samples"]] == [True, True]
    assert again["reused"] == 2
    assert [s["duration_s"] for s in again["results"][0]["samples"]] == [
        s["duration_s"] for s in first["results"][0]["samples"]
    ]
    junit = world.grade("--samples", "--format", "junit").stdout
    assert "reused from an earlier run" in junit
    assert 'name="pass@1" value="0.500000"' in junit


# -- over a limit, --lf, what matches no case -----------------------------------------


def test_a_case_may_make_over_the_timeout_a_failure(world: World) -> None:
    cases(world, "slow", toml='timeout = 0.5\nover-limit = "failed"\n')
    cases(world, "slow-error", toml="timeout = 0.5\n")
    samples(world, "slow", "sleep", "pass")
    samples(world, "slow-error", "sleep")
    code, document = as_json(world, "--samples")
    slow, slow_error = document["results"]
    assert slow["samples"][0]["status"] == "failed"
    assert "timeout" in slow["samples"][0]["reason"]
    assert slow["status"] == "failed"
    assert slow_error["status"] == "error"
    assert code == 1  # the default stays: over the timeout is an error


def test_a_task_class_may_make_over_a_limit_a_failure(world: World) -> None:
    """register_task_class(over_limit="failed"), as the library sees it; a case may say "error"."""
    found = [
        Case(task_class=SLUG, id="a", directory=world.cases / "a", timeout=0.5),
        Case(task_class=SLUG, id="b", directory=world.cases / "b", timeout=0.5, over_limit="error"),
    ]
    for case in found:
        world.case(case.id, "sleep")
    report = grade(
        SLUG,
        world.package / "rubric.py",
        found,
        world.candidates,
        over_limit="failed",
        reuse=False,
        sandbox="none",
    )
    assert [r.status for r in report.results] == ["failed", "error"]


def test_last_failed_is_kept_per_candidates(world: World) -> None:
    for case_id, mode in (("a", "pass"), ("b", "fail")):
        world.case(case_id, mode)
    other = world.bench.base / "other"
    for case_id in "ab":
        (other / case_id).mkdir(parents=True)
        (other / case_id / "mode.txt").write_text("pass\n")
    assert world.grade().returncode == 1  # b failed with these candidates
    assert world.run("grade", SLUG, "other").returncode == 0  # another model: all passed
    again = world.grade("--lf")
    assert [line.split()[1] for line in again.stdout.splitlines()[:-1]] == ["b"]


def test_an_entry_that_matches_no_case_is_named_with_the_closest(world: World) -> None:
    world.case("jinja2-cve", "pass")
    (world.candidates / "jinja2-cev").mkdir()
    result = world.grade()
    assert result.returncode == 0
    assert "candidates/jinja2-cev matches no case of 'grader'" in result.stderr
    assert "did you mean 'jinja2-cve'?" in result.stderr
    assert world.grade("-q").stderr == ""


def test_grade_help_offers_only_the_formats_grade_writes(world: World) -> None:
    shown = world.run("grade", "--help").stdout
    assert "--format {text,json,github,junit" in shown
    assert "sarif" not in shown
