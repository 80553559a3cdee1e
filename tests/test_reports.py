"""CI reports: JUnit XML, SARIF, --output-file and the job summary, through the console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema

from tests.factory import Bench, make_bench

DATA = Path(__file__).parent / "data"
# The published schemas (tests/data/README.md says where each comes from).
SARIF_SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
JUNIT_SCHEMA = xmlschema.XMLSchema(DATA / "junit-10.xsd")

_SUITE_ATTRIBUTES = ("name", "tests", "failures", "errors", "skipped", "time")
_CASE_ATTRIBUTES = ("classname", "name", "time")
_OUTCOMES = {"failure": ("message", "type"), "error": ("message", "type"), "skipped": ()}


def script() -> str:
    """Return the installed console script."""
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the console script in ``cwd``."""
    return subprocess.run(
        [script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}, **env},
    )


def junit_cases(text: str) -> dict[str, ET.Element]:
    """Validate ``text`` as JUnit XML; return its test cases by name.

    Valid against the JUnit schema CI servers read (``junit-10.xsd``), and
    beyond it: testsuites > testsuite (name, tests, failures, errors, skipped, time, the
    counts matching its cases) > testcase (classname, name, time) with at
    most one failure/error (message, type) or skipped child, besides
    system-out/system-err; nothing else anywhere.
    """
    JUNIT_SCHEMA.validate(text)
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    cases: dict[str, ET.Element] = {}
    for suite in root:
        assert suite.tag == "testsuite"
        assert all(suite.get(key) is not None for key in _SUITE_ATTRIBUTES), suite.attrib
        float(suite.get("time", ""))
        found = dict.fromkeys(_OUTCOMES, 0)
        for case in suite:
            if case.tag == "properties":  # the run's identity and pass@k
                assert all(child.tag == "property" for child in case)
                continue
            assert case.tag == "testcase"
            assert all(case.get(key) is not None for key in _CASE_ATTRIBUTES), case.attrib
            outcomes = [child for child in case if child.tag in _OUTCOMES]
            assert len(outcomes) <= 1
            assert all(child.tag in {*_OUTCOMES, "system-out", "system-err"} for child in case)
            for child in outcomes:
                found[child.tag] += 1
                assert all(child.get(key) is not None for key in _OUTCOMES[child.tag])
            cases[case.get("name", "")] = case
        assert int(suite.get("tests", "")) == len(suite.findall("testcase"))
        assert int(suite.get("failures", "")) == found["failure"]
        assert int(suite.get("errors", "")) == found["error"]
        assert int(suite.get("skipped", "")) == found["skipped"]
    return cases


def validate_sarif(log: object) -> None:
    """Validate ``log`` against the SARIF 2.1.0 schema (a draft-04 JSON Schema), formats too."""
    validator = jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker())
    validator.validate(log)


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """A bench with a good task class (alpha) and one that registers nothing (broken)."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    made.add("broken", register=None)
    return made


def test_check_junit_has_one_case_per_task_class_and_failures_carry_diagnostics(
    bench: Bench,
) -> None:
    """check --format junit: a test case per task class; a failing one carries its diagnostics."""
    result = run(bench.base, "check", "--format", "junit")
    assert result.returncode == 1, result.stderr
    cases = junit_cases(result.stdout)
    assert set(cases) == {"alpha", "broken"}
    assert cases["alpha"].find("failure") is None
    failure = cases["broken"].find("failure")
    assert failure is not None
    assert failure.get("type") == "not-registered"
    assert "error[not-registered]" in (failure.text or "")


def test_check_sarif_validates_and_names_rules_and_locations(bench: Bench) -> None:
    """check --format sarif: SARIF 2.1.0 with the code table as rules and located results."""
    result = run(bench.base, "check", "--format", "sarif")
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    validate_sarif(log)
    (only,) = log["runs"]
    rules = only["tool"]["driver"]["rules"]
    assert {rule["id"] for rule in rules} >= {"not-registered", "import-failed"}
    assert all(rule["help"]["text"] for rule in rules)
    (found,) = [r for r in only["results"] if r["ruleId"] == "not-registered"]
    assert rules[found["ruleIndex"]]["id"] == "not-registered"
    location = found["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "bench.toml"
    assert location["region"]["startLine"] >= 1


def test_output_file_holds_the_report_and_stdout_stays_empty(bench: Bench) -> None:
    """--output-file PATH writes the report there (and only there), leaving no temporary file."""
    target = bench.base / "reports" / "check.json"
    target.parent.mkdir()
    result = run(bench.base, "check", "--format", "json", "--output-file", str(target))
    assert result.returncode == 1
    assert result.stdout == ""
    document: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    assert document["task_classes"] == ["alpha", "broken"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["check.json"]


def test_output_file_in_a_missing_directory_fails_on_stderr(bench: Bench) -> None:
    """An --output-file that cannot be written is an error on stderr (exit 1)."""
    result = run(bench.base, "list", "--output-file", "nowhere/list.txt")
    assert result.returncode == 1
    assert "cannot write nowhere/list.txt" in result.stderr


def test_step_summary_is_appended_by_check_and_grade(bench: Bench) -> None:
    """$GITHUB_STEP_SUMMARY gets a Markdown summary appended by check and by grade."""
    summary = bench.base / "summary.md"
    summary.write_text("earlier\n", encoding="utf-8")
    run(bench.base, "check", GITHUB_STEP_SUMMARY=str(summary))
    (bench.base / "candidates").mkdir()
    run(
        bench.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier\n### codegenie-bench check: failed")
    assert "| error | `not-registered` | bench.toml:" in text
    assert "### codegenie-bench grade alpha: failed" in text
    assert "| missing | `example` |" in text


@pytest.fixture
def graded(tmp_path: Path) -> Bench:
    """A bench whose alpha has three cases: one solved, one unsolved, one without a candidate."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    cases = made.root / "alpha" / "cases"
    for case_id in ("b-unsolved", "c-missing"):
        shutil.copytree(cases / "example", cases / case_id)
    for case_id, solved in (("example", True), ("b-unsolved", False)):
        candidate = made.base / "candidates" / case_id
        candidate.mkdir(parents=True)
        if solved:
            (candidate / "answer.txt").write_text("solved\n", encoding="utf-8")
    return made


def test_grade_junit_maps_failed_and_missing(graded: Bench) -> None:
    """grade --format junit: one test case per case; failed is a failure, missing skipped."""
    result = run(
        graded.base, "grade", "alpha", "candidates", "--format", "junit", "--sandbox", "none"
    )
    assert result.returncode == 1, result.stderr
    cases = junit_cases(result.stdout)
    assert set(cases) == {"example", "b-unsolved", "c-missing"}
    assert list(cases["example"]) == []
    assert [c.tag for c in cases["b-unsolved"]] == ["failure"]
    assert [c.tag for c in cases["c-missing"]] == ["skipped"]


def test_grade_github_annotates_each_case_that_did_not_pass(graded: Bench) -> None:
    """grade --format github: one annotation per case not passed, at its case.toml."""
    result = run(
        graded.base, "grade", "alpha", "candidates", "--format", "github", "--sandbox", "none"
    )
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        "::error file=bench/alpha/cases/b-unsolved/case.toml,line=1,"
        "title=failed (b-unsolved)::no answer.txt",
        "::error file=bench/alpha/cases/c-missing/case.toml,line=1,"
        "title=missing (c-missing)::no candidate directory candidates/c-missing",
    ]
    assert "1/3 passed" in result.stderr


@pytest.mark.parametrize(("command", "fmt"), [("list", "junit"), ("grade", "sarif")])
def test_report_formats_are_refused_where_they_mean_nothing(
    bench: Bench, command: str, fmt: str
) -> None:
    """A report format a command cannot write is a usage error (exit 2)."""
    args = ["grade", "alpha", "candidates"] if command == "grade" else [command]
    result = run(bench.base, *args, "--format", fmt)
    assert result.returncode == 2
    assert f"--format {fmt} is only for" in result.stderr
