"""``codegenie-bench compare BASE NEW``, through the installed console script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.factory import Bench, make_bench
from tests.test_compare import DIGEST, OTHER_DIGEST, report, result
from tests.test_grade import assert_shape
from tests.test_reports import run

HINT = (
    "  hint: pass the files `codegenie-bench grade SLUG CANDIDATES_DIR --format json "
    "--output-file FILE` writes (or `merge` makes of its shards)"
)


def write(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path.name


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    """base.json and new.json in tmp_path: one case regressed, one improved, one unchanged."""
    write(
        tmp_path / "base.json",
        report(result("a", "passed", "ok"), result("b", "failed", "no"), result("c", "passed")),
    )
    write(
        tmp_path / "new.json",
        report(result("a", "failed", "no"), result("b", "passed", "ok"), result("c", "passed")),
    )
    write(
        tmp_path / "better.json",
        report(result("a", "passed", "ok"), result("b", "passed", "ok"), result("c", "passed")),
    )
    return tmp_path


def test_compare_prints_the_changes_and_exits_0(pair: Path) -> None:
    done = run(pair, "compare", "base.json", "new.json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "task class grader",
        "base: base.json (run model-a): 2/3 passed, one sample a case",
        "new:  new.json (run model-a): 2/3 passed, one sample a case",
        "pass@1: 0.667 → 0.667 (+0.000)",
        "regressed  a  passed → failed  (base: ok; new: no)",
        "improved   b  failed → passed  (base: no; new: ok)",
        "1 regressed, 1 improved, 0 errors, 0 new, 0 gone, 1 unchanged (1 regression)",
        "McNemar exact p = 1.000 (1 improved, 1 regressed)",
    ]


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
@pytest.mark.parametrize(
    ("new", "flag", "code"),
    [
        ("new.json", True, 1),
        ("new.json", False, 0),
        ("better.json", True, 0),
        ("base.json", True, 0),
    ],
)
def test_fail_on_regression_exits_1_only_on_a_regression(
    pair: Path, fmt: str, new: str, flag: bool, code: int
) -> None:
    """The report is printed whatever the exit status."""
    args = ["--fail-on-regression"] if flag else []
    done = run(pair, "compare", "base.json", new, "--format", fmt, *args)
    assert done.returncode == code, done.stderr
    assert done.stdout
    if fmt == "json":
        document = json.loads(done.stdout)
        assert document["ok"] is (new != "new.json")
        assert_shape(document, "compare")
    if fmt == "markdown":
        assert done.stdout.startswith("### codegenie-bench compare grader: ")


def test_output_file_holds_what_stdout_would(pair: Path) -> None:
    printed = run(pair, "compare", "base.json", "new.json", "--format", "json")
    done = run(
        pair, "compare", "base.json", "new.json", "--format", "json", "--output-file", "c.json"
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert (pair / "c.json").read_text(encoding="utf-8") == printed.stdout


def test_the_markdown_goes_to_the_job_summary_under_github_actions(pair: Path) -> None:
    summary = pair / "summary.md"
    markdown = run(pair, "compare", "base.json", "new.json", "--format", "markdown").stdout
    done = run(pair, "compare", "base.json", "new.json", GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0
    assert summary.read_text(encoding="utf-8") == markdown


def test_the_same_reports_give_byte_identical_output(tmp_path: Path) -> None:
    """The bootstrap is seeded: two processes print the same bytes."""
    write(
        tmp_path / "b.json",
        report(*(result(f"c{n:02}", "failed", samples=(5, n % 6)) for n in range(40))),
    )
    write(
        tmp_path / "n.json",
        report(*(result(f"c{n:02}", "failed", samples=(5, (n * 7) % 6)) for n in range(40))),
    )
    for fmt in ("json", "text", "markdown"):
        first, second = (
            run(tmp_path, "compare", "b.json", "n.json", "--format", fmt) for _ in range(2)
        )
        assert first.returncode == 0, first.stderr
        assert first.stdout == second.stdout
    document = json.loads(run(tmp_path, "compare", "b.json", "n.json", "--format", "json").stdout)
    assert document["test"]["name"] == "paired-bootstrap"
    assert_shape(document, "compare")


# -- refusals and files that are not grade reports --------------------------------------------


def test_reports_of_different_task_classes_or_benches_are_refused_with_exit_1(
    tmp_path: Path,
) -> None:
    write(tmp_path / "base.json", report(result("a", "passed")))
    write(
        tmp_path / "other.json",
        report(result("a", "passed"), task_class="other", digest=OTHER_DIGEST),
    )
    done = run(tmp_path, "compare", "base.json", "other.json")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "codegenie-bench: error[compare-refused]: the reports grade different task classes "
        "(base.json: 'grader', other.json: 'other')",
        "codegenie-bench: error[compare-refused]: the reports saw different benches "
        f"(bench_digest differs: base.json: {DIGEST}, other.json: {OTHER_DIGEST})",
        "  hint: compare two grade runs of one task class on one bench: grade both with the same "
        "bench.toml and cases",
    ]
    as_json = run(tmp_path, "compare", "base.json", "other.json", "--format", "json")
    assert as_json.returncode == 1
    error = json.loads(as_json.stdout)["error"]
    assert (error["type"], error["code"], error["exit_code"]) == (
        "CompareRefused",
        "compare-refused",
        1,
    )
    assert error["attributes"]["base"] == "base.json"
    assert_shape(json.loads(as_json.stdout), "error")


def _make(tmp_path: Path, kind: str) -> tuple[str, str]:
    """Make ``bad.json`` of ``kind``; return it and the problem compare names."""
    bad = tmp_path / "bad.json"
    if kind == "missing":
        return "bad.json", "cannot read bad.json: No such file or directory"
    if kind == "directory":
        bad.mkdir()
        return "bad.json", "cannot read bad.json: the file is a directory, not a regular file"
    if kind == "truncated":
        text = json.dumps(report(result("a", "passed")))
        bad.write_text(text[: len(text) // 2], encoding="utf-8")
        return "bad.json", "bad.json is not JSON: "
    if kind == "not-utf-8":
        bad.write_bytes(b'{"task_class": "\xff"}')
        return "bad.json", "bad.json is not UTF-8 text (byte 16 is not UTF-8)"
    if kind == "array":
        write(bad, [report(result("a", "passed"))])
        return (
            "bad.json",
            "bad.json is not a JSON report of grade: it holds an array, not an object",
        )
    if kind == "check":
        write(bad, {"ok": True, "manifest": "/r/bench.toml", "checked": 0, "diagnostics": []})
        return (
            "bad.json",
            "bad.json is a report of check, not of grade: compare compares grade runs",
        )
    assert kind == "broken-result"
    write(bad, report(result("a", "passed")) | {"results": [{"case": "a"}]})
    return "bad.json", "bad.json: results[0].status: Field required"


KINDS = ["missing", "directory", "truncated", "not-utf-8", "array", "check", "broken-result"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("side", ["base", "new"])
def test_a_file_that_is_not_a_grade_report_is_a_usage_error(
    tmp_path: Path, kind: str, side: str
) -> None:
    """Exit 2, the file named and what is wrong with it, on stderr; nothing on stdout."""
    good = write(tmp_path / "good.json", report(result("a", "passed")))
    bad, problem = _make(tmp_path, kind)
    args = [bad, good] if side == "base" else [good, bad]
    done = run(tmp_path, "compare", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    first, hint = done.stderr.splitlines()
    assert first.startswith(f"codegenie-bench: error[report-invalid]: {problem}")
    assert hint == HINT
    as_json = run(tmp_path, "compare", *args, "--format", "json")
    assert as_json.returncode == 2
    error = json.loads(as_json.stdout)["error"]
    assert (error["type"], error["exit_code"]) == ("ReportsInvalid", 2)
    assert error["attributes"]["problems"][0].startswith(problem)


def test_both_files_problems_are_named_at_once(tmp_path: Path) -> None:
    write(tmp_path / "array.json", [])
    done = run(tmp_path, "compare", "array.json", "nowhere.json")
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        "codegenie-bench: error[report-invalid]: array.json is not a JSON report of grade: "
        "it holds an array, not an object",
        "codegenie-bench: error[report-invalid]: cannot read nowhere.json: No such file or directory",
    ]


def test_markdown_is_compare_s_alone(pair: Path) -> None:
    """--format markdown is offered by compare only; compare writes no github, junit or sarif."""
    grade = run(pair, "grade", "alpha", "candidates", "--format", "markdown")
    assert grade.returncode == 2
    assert "--format markdown is only for compare" in grade.stderr
    junit = run(pair, "compare", "base.json", "new.json", "--format", "junit")
    assert junit.returncode == 2
    assert "--format junit is only for check, grade, merge" in junit.stderr
    assert "markdown" not in run(pair, "grade", "--help").stdout
    assert "sarif" not in run(pair, "grade", "--help").stdout
    compare_help = run(pair, "compare", "--help").stdout
    assert "--format {text,json,markdown,html}" in compare_help
    assert "github" not in compare_help
    assert "markdown: Markdown, compare" in " ".join(run(pair, "--help").stdout.split())


# -- real grade runs ----------------------------------------------------------------------------


@pytest.fixture
def graded(tmp_path: Path) -> Bench:
    """A bench whose alpha has four cases, each with a solved candidate."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    cases = made.root / "alpha" / "cases"
    for n in range(3):
        shutil.copytree(cases / "example", cases / f"case-{n}")
    for case in cases.iterdir():
        candidate = made.base / "candidates" / case.name
        candidate.mkdir(parents=True)
        (candidate / "answer.txt").write_text("solved\n", encoding="utf-8")
    return made


def grade(bench: Bench, output: str, *args: str) -> dict[str, Any]:
    done = run(
        bench.base,
        "grade",
        "alpha",
        "candidates",
        "--format",
        "json",
        "--output-file",
        output,
        *args,
    )
    assert done.returncode in {0, 1}, done.stderr
    document: dict[str, Any] = json.loads((bench.base / output).read_text(encoding="utf-8"))
    return document


def test_real_grade_reports_compare_and_gate(graded: Bench) -> None:
    """grade twice, a candidate broken between: compare finds the regression and the gate fails."""
    base = grade(graded, "base.json")
    assert base["ok"] is True
    (graded.base / "candidates" / "case-1" / "answer.txt").unlink()
    grade(graded, "new.json")
    done = run(
        graded.base, "compare", "base.json", "new.json", "--format", "json", "--fail-on-regression"
    )
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert_shape(document, "compare")
    assert document["bench_digest"] == base["bench_digest"]
    assert [(c["case"], c["change"]) for c in document["cases"]] == [
        ("case-0", "unchanged"),
        ("case-1", "regressed"),
        ("case-2", "unchanged"),
        ("example", "unchanged"),
    ]
    regressed = document["cases"][1]
    assert (regressed["base"]["reason"], regressed["new"]["reason"]) == (
        "answer.txt",
        "no answer.txt",
    )
    assert document["test"] == {
        "name": "mcnemar-exact",
        "improved": 0,
        "regressed": 1,
        "p_value": 1.0,
    }
    back = run(graded.base, "compare", "new.json", "base.json", "--fail-on-regression")
    assert back.returncode == 0, back.stderr
    assert (
        "improved   case-1  failed → passed  (base: no answer.txt; new: answer.txt)" in back.stdout
    )


def test_a_merged_report_compares_with_the_unsharded_one(graded: Bench) -> None:
    grade(graded, "whole.json")
    for index in (1, 2):
        grade(graded, f"shard-{index}.json", "--shard", f"{index}/2")
    merged = run(
        graded.base,
        "merge",
        "shard-1.json",
        "shard-2.json",
        "--format",
        "json",
        "--output-file",
        "merged.json",
    )
    assert merged.returncode == 0, merged.stderr
    done = run(
        graded.base,
        "compare",
        "whole.json",
        "merged.json",
        "--format",
        "json",
        "--fail-on-regression",
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["changes"]["unchanged"] == 4
    assert document["pass_at_k"]["1"] == {"base": 1.0, "new": 1.0, "difference": 0.0}
    shard = run(graded.base, "compare", "whole.json", "shard-1.json", "--fail-on-regression")
    assert shard.returncode == 1  # the cases another shard graded are gone, and they had passed
    assert "gone" in shard.stdout


def test_reports_of_a_changed_bench_are_refused(graded: Bench) -> None:
    grade(graded, "base.json")
    (graded.root / "alpha" / "cases" / "example" / "case.toml").write_text(
        'description = "Changed."\n', encoding="utf-8"
    )
    grade(graded, "new.json")
    done = run(graded.base, "compare", "base.json", "new.json")
    assert done.returncode == 1
    assert (
        "the reports saw different benches (bench_digest differs: base.json: sha256:" in done.stderr
    )


# -- hostile reports: refused by the one reader, never believed --------------------------------


def _lying(document: dict[str, Any]) -> dict[str, Any]:
    """NEW as the issue found it: every status failed, the counts and pass@k say all passed."""
    for entry in document["results"]:
        entry["status"] = "failed"
    return document


def test_a_report_whose_figures_contradict_its_statuses_is_refused_not_believed(
    tmp_path: Path,
) -> None:
    """(Was: believed, no regression, --fail-on-regression exited 0.)"""
    passing = report(result("a", "passed"), result("b", "passed"))
    write(tmp_path / "base.json", passing)
    write(tmp_path / "new.json", _lying(report(result("a", "passed"), result("b", "passed"))))
    done = run(tmp_path, "compare", "base.json", "new.json", "--fail-on-regression")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "codegenie-bench: error[report-invalid]: new.json: results[0].samples_passed: says 1, "
        "but its status gives 0: the report contradicts itself; give the report the command "
        "wrote, unedited"
    )
    assert any("new.json: passed: says 2, but its results give 0" in line for line in lines)
    as_json = run(tmp_path, "compare", "base.json", "new.json", "--format", "json")
    error = json.loads(as_json.stdout)["error"]
    assert (error["type"], error["exit_code"]) == ("ReportsInvalid", 2)
    assert error["attributes"]["located"][0] == {
        "file": "new.json",
        "path": "results[0].samples_passed",
        "message": "says 1, but its status gives 0: the report contradicts itself; give the "
        "report the command wrote, unedited",
    }
    assert_shape(json.loads(as_json.stdout), "error")
    honest = report(result("a", "failed"), result("b", "failed"))
    write(tmp_path / "new.json", honest)
    gate = run(tmp_path, "compare", "base.json", "new.json", "--fail-on-regression")
    assert gate.returncode == 1, gate.stderr  # the truth: both regressed


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ('"score": 1.0', '"score": NaN', "new.json: results[0].score: NaN is not a finite"),
        ('"duration_s": 0.5', '"duration_s": 1e309', "new.json: results[0].duration_s: 1e309"),
        ('"1": 1.0', '"1": -Infinity', 'new.json: pass_at_k["1"]: -Infinity is not a finite'),
        ('"verdict": null', '"verdict": ' + "[" * 900 + "]" * 900, "nests more than 100 levels"),
        ('"reused": 0', '"reused": 0, "reused": 0', "new.json: $: the key 'reused' appears twice"),
    ],
)
def test_a_report_with_a_number_that_is_not_finite_or_too_deep_is_a_usage_error(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    write(tmp_path / "base.json", report(result("a", "passed")))
    text = json.dumps(report(result("a", "passed")))
    assert old in text
    (tmp_path / "new.json").write_text(text.replace(old, new, 1), encoding="utf-8")
    done = run(tmp_path, "compare", "base.json", "new.json", "--fail-on-regression")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert said in done.stderr
    assert "internal error" not in done.stderr
