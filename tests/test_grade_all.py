"""``codegenie-bench grade --all CANDIDATES``: every task class, one run, one report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .factory import Bench, make_bench
from .test_grade import assert_shape

SLUGS = ("alpha", "beta")


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found is not None
    return found


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """Two task classes, each with the factory's case ``example`` (passes with answer.txt)."""
    return make_bench(tmp_path / "b", *SLUGS, parts=True)


def run(bench: Bench, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script(), *args],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "TMPDIR": str(bench.base)},
    )


def candidate(bench: Bench, slug: str, case: str, *, solved: bool) -> None:
    directory = bench.base / "runs" / slug / case
    directory.mkdir(parents=True)
    (directory / ("answer.txt" if solved else "README.txt")).write_text("x\n")


def test_every_task_class_in_one_json_report(bench: Bench) -> None:
    candidate(bench, "alpha", "example", solved=True)
    candidate(bench, "beta", "example", solved=False)
    done = run(bench, "grade", "--all", "runs", "--format", "json", "--run-name", "m")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert_shape(document, "grade_all")
    assert [d["task_class"] for d in document["task_classes"]] == list(SLUGS)
    assert [d["passed"] for d in document["task_classes"]] == [1, 0]
    assert (document["passed"], document["total"], document["ok"]) == (1, 2, False)
    assert document["run"]["name"] == "m"
    assert document["run"]["candidates_digest"].startswith("blake2b-256:")
    digests = {d["run"]["candidates_digest"] for d in document["task_classes"]}
    assert document["run"]["candidates_digest"] not in digests  # the whole tree, not a part


def test_text_grades_each_task_class_under_its_name(bench: Bench) -> None:
    candidate(bench, "alpha", "example", solved=True)
    candidate(bench, "beta", "example", solved=True)
    done = run(bench, "grade", "--all", "runs")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "alpha:"
    assert lines[1].split()[:2] == ["passed", "example"]
    assert lines[2] == "1/1 passed"
    assert lines[3] == "beta:"
    assert lines[-1] == "all 2 task classes: 2/2 passed (ok)"


def test_a_task_class_without_candidates_is_missing_and_strays_are_named(bench: Bench) -> None:
    candidate(bench, "alpha", "example", solved=True)
    (bench.base / "runs" / "betta").mkdir()
    done = run(bench, "grade", "--all", "runs", "--format", "json")
    assert done.returncode == 1
    beta = json.loads(done.stdout)["task_classes"][1]
    assert beta["results"][0]["status"] == "missing"
    assert "runs/betta matches no task class" in done.stderr
    assert "did you mean 'beta'?" in done.stderr


def test_junit_has_one_suite_per_task_class(bench: Bench) -> None:
    candidate(bench, "alpha", "example", solved=True)
    candidate(bench, "beta", "example", solved=False)
    done = run(bench, "grade", "--all", "runs", "--format", "junit")
    root = ET.fromstring(done.stdout)
    assert [suite.get("name") for suite in root] == ["grade alpha", "grade beta"]
    assert (root.get("tests"), root.get("failures")) == ("2", "1")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("grade", "--all", "alpha", "runs"), "grade --all takes CANDIDATES alone"),
        (("grade", "--all", "runs", "--case", "example"), "--case names a case"),
        (("grade", "alpha"), "required: SLUG CANDIDATES"),
        (("grade", "--all", "runs", "--format", "sarif"), "sarif"),
    ],
)
def test_usage_mistakes_exit_2(bench: Bench, args: tuple[str, ...], message: str) -> None:
    (bench.base / "runs").mkdir()
    done = run(bench, *args)
    assert done.returncode == 2
    assert message in done.stderr


def test_html_shows_every_task_class_s_cases_on_one_page(bench: Bench) -> None:
    candidate(bench, "alpha", "example", solved=True)
    candidate(bench, "beta", "example", solved=False)
    done = run(bench, "grade", "--all", "runs", "--format", "html")
    assert done.returncode == 1
    assert done.stdout.startswith("<!DOCTYPE html>")
    assert "alpha/example" in done.stdout
    assert "beta/example" in done.stdout
