"""check covers the whole task class: its rubric, its cases, and (with rubrics) their golden runs."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import codegenie.eval.check as check_package
from codegenie.eval.check import Shard
from codegenie.eval.check.workers import Outcome, import_all

from .checking import check, codes, make_bench
from .factory import Bench, write_case


def tree_digest(root: Path) -> dict[str, str]:
    """Every file, directory and link under ``root`` with its content's digest."""
    found = {}
    for directory, subdirectories, files in os.walk(root):
        for name in sorted(subdirectories + files):
            path = Path(directory) / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                found[relative] = "link:" + os.readlink(path)
            elif path.is_dir():
                found[relative] = "dir"
            else:
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture(autouse=True)
def _run_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Diagnostics show paths relative to the working directory: work in the bench."""
    monkeypatch.chdir(tmp_path)


def test_a_complete_task_class_is_clean_with_and_without_rubrics(tmp_path: Path) -> None:
    """Registration, rubric and a case whose expected/ passes and input/ fails: nothing to say."""
    bench = make_bench(tmp_path, "aa", "bb")
    assert codes(check(bench)) == []
    assert codes(check(bench, rubrics=True)) == []


def test_rubric_missing_is_an_error_at_the_decorator(tmp_path: Path) -> None:
    """A task class whose rubric file is gone is rubric-missing, at its @register_task_class line."""
    bench = make_bench(tmp_path, "aa")
    (bench.root / "aa" / "rubric.py").unlink()
    [diagnostic] = check(bench).diagnostics
    assert (diagnostic.code, diagnostic.slug, diagnostic.severity) == (
        "rubric-missing",
        "aa",
        "error",
    )
    assert (diagnostic.file, diagnostic.line) == ("bench/aa/registration.py", 4)
    assert "bench/aa/rubric.py" in diagnostic.message


@pytest.mark.parametrize("how", ["deleted", "empty"])
def test_cases_missing_is_a_warning(tmp_path: Path, how: str) -> None:
    """No cases directory, or an empty one, is the warning cases-missing (an error when strict)."""
    bench = make_bench(tmp_path, "aa")
    shutil.rmtree(bench.root / "aa" / "cases")
    if how == "empty":
        (bench.root / "aa" / "cases").mkdir()
    report = check(bench)
    assert codes(report) == [("cases-missing", "aa")]
    assert report.diagnostics[0].severity == "warning"
    assert report.ok()
    assert not report.ok(strict=True)


def test_case_layout_problems(tmp_path: Path) -> None:
    """A case without input/, one without case.toml and one with a bad id are each case-layout."""
    bench = make_bench(tmp_path, "aa")
    cases = bench.root / "aa" / "cases"
    write_case(cases, "no-input", "", input_dir=False, expected_files={"answer.txt": "x"})
    write_case(cases, "no-toml", None, expected_files={"answer.txt": "x"})
    write_case(cases, "Bad-Id", "", expected_files={"answer.txt": "x"})
    report = check(bench)
    assert sorted(codes(report)) == [("case-layout", "aa")] * 3
    assert {d.file.split("/")[-1] if d.file else "" for d in report.diagnostics} >= {"Bad-Id"}


def _many_cases(cases: Path, count: int, *, valid: bool) -> None:
    """Write ``count`` cases in ``cases``: valid ones, or entries that are not directories."""
    shutil.rmtree(cases, ignore_errors=True)
    cases.mkdir()
    for index in range(count):
        case = os.path.join(cases, f"c{index:05d}")
        if not valid:
            os.close(os.open(case, os.O_CREAT | os.O_WRONLY, 0o644))
            continue
        os.mkdir(case)
        os.mkdir(os.path.join(case, "input"))
        os.mkdir(os.path.join(case, "expected"))
        os.close(os.open(os.path.join(case, "case.toml"), os.O_CREAT | os.O_WRONLY, 0o644))


def test_twenty_thousand_valid_cases_all_reach_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task class with 20,000 valid cases is clean, and every case comes back for --rubrics."""
    bench = make_bench(tmp_path, "aa", "many")
    _many_cases(bench.root / "many" / "cases", 20_000, valid=True)
    outcomes: dict[str, Outcome] = {}

    def recorded(*args: Any, **kwargs: Any) -> dict[str, Outcome]:
        outcomes.update(import_all(*args, **kwargs))
        return outcomes

    monkeypatch.setattr(check_package, "import_all", recorded)
    assert codes(check(bench)) == []
    parts = outcomes["many"].parts
    assert parts is not None
    assert {case["id"] for case in parts["cases"]} == {f"c{i:05d}" for i in range(20_000)}


def test_thousands_of_case_problems_are_listed_up_to_a_bound_with_a_count(tmp_path: Path) -> None:
    """6,000 broken cases: the first 1,000 problems, then one diagnostic counting the 5,000 others."""
    bench = make_bench(tmp_path, "aa", "broken")
    _many_cases(bench.root / "broken" / "cases", 6_000, valid=False)
    report = check(bench)
    found = codes(report)
    assert found.count(("case-layout", "broken")) == 1_000
    assert found.count(("case-invalid", "broken")) == 1
    assert len(found) == 1_001
    [summary] = [d for d in report.diagnostics if d.code == "case-invalid"]
    assert (
        summary.message
        == "'broken' cases: 5,000 more problems not listed (only the first 1,000 are)"
    )
    assert summary.severity == "error"


def test_a_registration_inside_a_case_is_data_not_an_orphan(tmp_path: Path) -> None:
    """A case whose input/ or expected/ holds a registration.py is not an orphan task class."""
    bench = make_bench(tmp_path, "aa")
    registration = "from codegenie.eval import register_task_class\n"
    write_case(
        bench.root / "aa" / "cases",
        "writes-a-task-class",
        "",
        input_files={"todo_one/registration.py": registration},
        expected_files={"todo_one/registration.py": registration, "todo_one/rubric.py": ""},
    )
    assert codes(check(bench)) == []
    # Elsewhere under the root, the same file is still an orphan.
    (bench.root / "todo_two").mkdir()
    (bench.root / "todo_two" / "registration.py").write_text(registration)
    assert codes(check(bench)) == [("orphan-task-class", "todo-two")]


def test_case_invalid_is_located_at_the_key(tmp_path: Path) -> None:
    """A case.toml breaking the common keys is case-invalid at its value's line and column."""
    bench = make_bench(tmp_path, "aa")
    write_case(
        bench.root / "aa" / "cases",
        "broken",
        'description = "fine"\ntimeout = "soon"\n',
        expected_files={"answer.txt": "x"},
    )
    [diagnostic] = check(bench).diagnostics
    assert (diagnostic.code, diagnostic.slug) == ("case-invalid", "aa")
    assert (diagnostic.file, diagnostic.line, diagnostic.column) == (
        "bench/aa/cases/broken/case.toml",
        2,
        11,
    )
    assert "timeout" in diagnostic.message


CASE_MODEL = """\
from pydantic import BaseModel, ConfigDict, Field


class Pins(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    package: str
    fixed_version: str = Field(alias="fixed-version")


"""


def test_the_case_model_of_the_registration_validates_the_cases(tmp_path: Path) -> None:
    """case_model= from the registration is applied in the worker: a missing key is case-invalid."""
    bench = Bench(tmp_path, parts=True)
    bench.write_manifest()
    source = (
        "from codegenie.eval.registry import register_task_class\n"
        + CASE_MODEL
        + "@register_task_class('pins', case_model=Pins)\nclass PinsTask:\n    pass\n"
    )
    bench.add("pins", source=source)
    cases = bench.root / "pins" / "cases"
    shutil.rmtree(cases / "example")
    write_case(
        cases, "good", 'package = "x"\nfixed-version = "1.0"\n', expected_files={"answer.txt": "x"}
    )
    write_case(
        cases, "bad", 'package = "x"\nfixed-versoin = "1.0"\n', expected_files={"answer.txt": "x"}
    )
    report = check(bench)
    assert set(codes(report)) == {("case-invalid", "pins")}
    assert {d.file for d in report.diagnostics} == {"bench/pins/cases/bad/case.toml"}
    assert check(bench, rubrics=True).diagnostics == report.diagnostics


# -- check --rubrics --------------------------------------------------------------------


def test_golden_fails_when_expected_does_not_pass(tmp_path: Path) -> None:
    """An expected/ that its rubric rejects is golden-fails, with the rubric's reason."""
    bench = make_bench(tmp_path, "aa", "bb")
    (bench.root / "aa" / "cases" / "example" / "expected" / "answer.txt").unlink()
    assert codes(check(bench)) == []
    [diagnostic] = check(bench, rubrics=True).diagnostics
    assert (diagnostic.code, diagnostic.slug) == ("golden-fails", "aa")
    assert diagnostic.file == "bench/aa/cases/example/case.toml"
    assert "no answer.txt" in diagnostic.message


def test_input_passes_when_doing_nothing_solves_the_case(tmp_path: Path) -> None:
    """An input/ that already passes is input-passes: the case is solved by doing nothing."""
    bench = make_bench(tmp_path, "aa")
    (bench.root / "aa" / "cases" / "example" / "input" / "answer.txt").write_text("x")
    assert codes(check(bench, rubrics=True)) == [("input-passes", "aa")]


@pytest.mark.parametrize(
    ("rubric", "code"),
    [
        ("import sys\nsys.exit(2)\n", "rubric-error"),
        ("print('not json')\n", "rubric-error"),
        ("import json\nprint(json.dumps({'passed': True}))\nraise SystemExit(1)\n", "rubric-error"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "rubric-error"),
        ("import time\ntime.sleep(60)\n", "rubric-timeout"),
    ],
    ids=["exit-2", "garbage", "contradiction", "signal", "hang"],
)
def test_rubrics_that_break_the_protocol(tmp_path: Path, rubric: str, code: str) -> None:
    """A rubric that exits oddly, prints garbage, contradicts itself, dies or hangs is never a pass."""
    bench = make_bench(tmp_path, "aa")
    (bench.root / "aa" / "rubric.py").write_text(rubric)
    (bench.root / "aa" / "cases" / "example" / "case.toml").write_text("timeout = 1\n")
    report = check(bench, rubrics=True)
    assert set(codes(report)) == {(code, "aa")}
    assert len(report.diagnostics) == 2  # expected/ and input/ each


def test_the_bench_is_byte_for_byte_unchanged_by_rubrics(tmp_path: Path) -> None:
    """Rubrics that delete and write their inputs run on copies: the bench tree is unchanged."""
    bench = make_bench(tmp_path, "aa", "bb")
    (bench.root / "bb" / "rubric.py").write_text(
        "import json, shutil, sys\n"
        "from pathlib import Path\n"
        "solved = (Path(sys.argv[2]) / 'answer.txt').is_file()\n"
        "for target in sys.argv[1:]:\n"
        "    (Path(target) / 'junk.txt').write_text('junk')\n"
        "    shutil.rmtree(target)\n"
        "print(json.dumps({'passed': solved}))\n"
        "sys.exit(0 if solved else 1)\n"
    )
    before = tree_digest(tmp_path)
    report = check(bench, rubrics=True)
    assert codes(report) == []
    assert tree_digest(tmp_path) == before


def test_rubric_runs_split_with_their_slug_and_do_not_depend_on_jobs(tmp_path: Path) -> None:
    """--shard puts each slug's rubric runs in its slice; --jobs changes nothing in the output."""
    bench = make_bench(tmp_path, *(f"slug-{n}" for n in range(6)))
    for n in (1, 4):
        (bench.root / f"slug_{n}" / "cases" / "example" / "input" / "answer.txt").write_text("x")
    full = check(bench, rubrics=True, jobs=1)
    assert sorted(codes(full)) == [("input-passes", "slug-1"), ("input-passes", "slug-4")]
    assert check(bench, rubrics=True, jobs=3).diagnostics == full.diagnostics
    parts = [check(bench, rubrics=True, shard=Shard(k, 3)) for k in (1, 2, 3)]
    union = sorted((d for part in parts for d in part.diagnostics), key=lambda d: d.sort_key())
    assert tuple(union) == full.diagnostics


def test_cli_rubrics_flag_and_a_fresh_scaffold(tmp_path: Path) -> None:
    """`new` scaffolds a task class that passes `check --strict --rubrics` as generated."""
    import shutil as _shutil
    import subprocess
    import sys

    make_bench(tmp_path, "aa")
    script = _shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    created = subprocess.run(
        [script, "new", "fresh-one"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert created.returncode == 0, created.stderr
    result = subprocess.run(
        [script, "check", "--strict", "--rubrics"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (tmp_path / "bench" / "fresh_one" / "cases" / "example" / "expected" / "README.txt").unlink()
    failed = subprocess.run(
        [script, "check", "--rubrics", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert failed.returncode == 1
    assert '"input-passes"' in failed.stdout
