"""codegenie.eval.grading and ``codegenie-bench grade``: rubrics run on real candidates."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval.cases import Case
from codegenie.eval.errors import CaseNotFound
from codegenie.eval.grading import GradeReport, GradeResult, grade, select_cases
from codegenie.eval.manifest import BenchManifest
from codegenie.eval.rubrics import RubricResult

from .factory import Bench, make_bench, write_case
from .observe import gone, on_a_terminal, tree_digest

REPO = Path(__file__).resolve().parent.parent
OUTPUT_SCHEMA = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())
SLUG = "grader"

# Does what the candidate's mode.txt says; the statuses grade must tell apart.
RUBRIC = """\
import json, os, shutil, sys, time
from pathlib import Path

case, candidate = Path(sys.argv[1]), Path(sys.argv[2])
mode = (candidate / "mode.txt").read_text().strip()
if mode == "crash":
    raise RuntimeError("the rubric crashed")
if mode == "sleep":
    time.sleep(60)
if mode == "hang":
    Path(os.environ["GRADE_PIDS"], case.name).write_text(str(os.getpid()))
    time.sleep(600)
if mode == "delete":
    shutil.rmtree(case)
    shutil.rmtree(candidate)
reason = {"ctl": "evil\\x1b[31m\\nforged line"}.get(mode, mode)
if mode == "names":  # an honest rubric naming the candidate's files, whatever their names
    reason = "files: " + ", ".join(sorted(os.listdir(candidate)))
passed = mode in ("pass", "delete", "ctl")
if mode == "deep":  # a verdict with something nested deeper than any writer recurses
    print('{"passed": false, "reason": "deep \\\\ud83d\\\\ude00", "x": ' + "[" * 900 + "]" * 900 + "}")
    sys.exit(1)
print(json.dumps({"passed": passed, "score": 1.0 if passed else 0.25, "reason": reason}))
sys.exit(0 if passed else 1)
"""


def script() -> str:
    """Return the installed console script."""
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def assert_shape(document: Any, shape: str) -> None:
    """Validate a JSON document against its definition in docs/cli-output.schema.json."""
    schema = {**OUTPUT_SCHEMA, "$ref": f"#/$defs/{shape}"}
    jsonschema.Draft202012Validator(schema).validate(document)


class World:
    """A bench with one task class, a candidates directory, and a private TMPDIR."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.bench: Bench = make_bench(base / "home", SLUG, parts=True)
        self.package = self.bench.root / SLUG
        (self.package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
        shutil.rmtree(self.package / "cases")
        self.cases = self.package / "cases"
        self.cases.mkdir()
        self.candidates = base / "home" / "candidates"
        self.candidates.mkdir()
        self.tmp = base / "tmp"
        self.tmp.mkdir()

    def case(self, case_id: str, mode: str | None, toml: str = "") -> None:
        """Add a case; give it a candidate in ``mode`` (``None``: no candidate)."""
        write_case(self.cases, case_id, toml, expected_files={"mode.txt": "pass\n"})
        if mode is not None:
            candidate = self.candidates / case_id
            candidate.mkdir()
            (candidate / "mode.txt").write_text(mode + "\n", encoding="utf-8")

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "TMPDIR": str(self.tmp), **extra}

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """Run the console script in the bench's directory."""
        return subprocess.run(
            [script(), *args],
            cwd=self.bench.base,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=self.env(**extra),
        )

    def grade(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("grade", SLUG, "candidates", *args)


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fresh bench and candidates directory in tmp_path."""
    return World(tmp_path)


def without_durations(text: str) -> str:
    """``text`` with the run times (which differ from run to run) blanked."""
    return re.sub(r"\d+\.\d\ds\b", "N.NNs", text)


# -- the statuses, text and JSON -------------------------------------------------------


def _every_status(world: World) -> None:
    world.case("a-pass", "pass")
    world.case("b-fail", "fail")
    world.case("c-missing", None)
    world.case("d-crash", "crash")
    world.case("e-timeout", "sleep", "timeout = 0.5\n")


def test_every_status_in_text(world: World) -> None:
    """One line per case in case-id order (status, id, score, time, reason), then the summary; exit 1."""
    _every_status(world)
    result = world.grade("--jobs", "3")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [
        ["passed", "a-pass"],
        ["failed", "b-fail"],
        ["missing", "c-missing"],
        ["error", "d-crash"],
        ["error", "e-timeout"],
    ]
    assert lines[0].split()[2] == "1.00"
    assert lines[0].endswith("  pass")
    assert lines[1].split()[2] == "0.25"
    assert lines[2].split()[2:4] == ["-", "-"]
    assert "no candidate directory candidates/c-missing" in lines[2]
    assert "RuntimeError: the rubric crashed" in lines[3]
    assert "timeout" in lines[4]
    assert lines[-1] == "1/5 passed (1 failed, 2 errors, 1 missing)"
    assert result.stderr == ""


def test_every_status_in_json(world: World) -> None:
    """The JSON document has exactly the documented keys; a timeout is an error that says so."""
    _every_status(world)
    result = world.grade("--format", "json")
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert_shape(document, "grade")
    assert set(document) == {
        "task_class",
        "sandbox",
        "reused",
        "ledger",
        "results",
        "passed",
        "total",
        "counts",
        "ok",
        "mean_score",
        "cases",
        "bench_digest",
        "shard",
        "manifest",
        "case_files",
        "run",
        "environment",
        "reads_expected",
        "sampled",
        "pass_at_k",
        "fail_under",
    }
    assert document["environment"] is None  # the harness's own interpreter
    assert document["sampled"] is False
    assert document["pass_at_k"] == {"1": pytest.approx(1 / 5)}
    assert document["fail_under"] is None
    assert document["run"]["name"] is None
    assert document["run"]["candidates_digest"].startswith("blake2b-256:")
    assert document["run"]["sandbox"] == "bwrap"
    assert document["sandbox"] == "bwrap"
    assert document["task_class"] == SLUG
    assert (document["passed"], document["total"]) == (1, 5)
    assert document["counts"] == {"passed": 1, "failed": 1, "missing": 1, "error": 2}
    assert document["ok"] is False
    # The scores the rubric gave: 1.0 (passed) and 0.25 (failed); the others have none.
    assert document["mean_score"] == pytest.approx(0.625)
    results = document["results"]
    for entry in results:
        assert set(entry) == {
            "case", "status", "score", "reason", "duration_s",
            "wall_s", "cpu_s", "peak_memory_mib", "limit", "stderr_tail", "traceback",
            "verdict", "candidate_digest", "reused", "tags", "samples_total", "samples_passed",
            "samples",
        }  # fmt: skip
        assert entry["samples"] is None
        assert entry["samples_total"] == (0 if entry["status"] == "missing" else 1)
        assert entry["reused"] is False
    statuses = [(entry["case"], entry["status"]) for entry in results]
    assert statuses == [
        ("a-pass", "passed"),
        ("b-fail", "failed"),
        ("c-missing", "missing"),
        ("d-crash", "error"),
        ("e-timeout", "error"),
    ]
    assert results[0]["score"] == 1.0
    assert results[2]["duration_s"] is None
    assert results[2]["score"] is None
    assert "timeout of 0.5 s" in results[4]["reason"]
    assert all(isinstance(entry["duration_s"], float) for i, entry in enumerate(results) if i != 2)


GREEN, RED, YELLOW, BOLD, RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"


def test_status_words_are_coloured_as_the_other_commands_colour(world: World) -> None:
    """FORCE_COLOR colours each status word and the summary's counts; the columns still line up."""
    world.case("a-pass", "pass")
    world.case("b-fail", "fail")
    world.case("c-missing", None)
    world.case("d-crash", "crash")
    result = world.run("grade", SLUG, "candidates", FORCE_COLOR="1")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{GREEN}passed{RESET}   a-pass")
    assert lines[1].startswith(f"{RED}failed{RESET}   b-fail")
    assert lines[2].startswith(f"{YELLOW}missing{RESET}  c-missing")
    assert lines[3].startswith(f"{BOLD}{RED}error{RESET}    d-crash")
    assert lines[-1] == (
        f"1/4 {GREEN}passed{RESET} ({RED}1 failed{RESET}, {BOLD}{RED}1 error{RESET}, "
        f"{YELLOW}1 missing{RESET})"
    )
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    assert without_durations(plain) == without_durations(world.grade().stdout)


@pytest.mark.parametrize("env", [{}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, {"--format": "json"}])
def test_no_colour_off_a_terminal_under_no_color_or_in_json(
    world: World, env: dict[str, str]
) -> None:
    """Off a terminal, under NO_COLOR (which wins over FORCE_COLOR), or as JSON: no escape sequence."""
    world.case("a-pass", "pass")
    world.case("b-fail", "fail")
    args = ["--format", "json"] if "--format" in env else []
    colour = {k: v for k, v in env.items() if not k.startswith("-")}
    result = world.run("grade", SLUG, "candidates", *args, **colour)
    assert result.returncode == 1
    assert "\x1b" not in result.stdout


def test_status_words_are_coloured_on_a_terminal(world: World) -> None:
    """On a terminal, without NO_COLOR or FORCE_COLOR, the status words are coloured."""
    world.case("a-pass", "pass")
    env = {k: v for k, v in world.env().items() if k not in {"NO_COLOR", "FORCE_COLOR"}}
    env["TERM"] = "xterm"
    _, shown, code = on_a_terminal(
        [script(), "grade", SLUG, "candidates"], cwd=world.bench.base, env=env, stdout_too=True
    )
    assert code == 0
    assert f"{GREEN}passed{RESET}" in shown


def test_a_deleted_rubric_is_named_relative_to_the_working_directory(world: World) -> None:
    """A task class whose rubric is gone: RubricMissing before any case runs, the file named relative."""
    world.case("a-pass", "pass")
    (world.package / "rubric.py").unlink()
    result = world.grade()
    assert result.returncode == 4
    assert result.stdout == ""
    assert f"has no rubric at bench/{SLUG}/rubric.py" in result.stderr
    assert str(world.base) not in result.stderr
    document = json.loads(world.grade("--format", "json").stdout)
    assert document["error"]["type"] == "RubricMissing"
    assert document["error"]["attributes"]["path"] == str(world.package / "rubric.py")


def test_a_verdict_naming_a_file_whose_name_is_not_utf_8_is_kept_and_said(
    world: World,
) -> None:
    """JSON can escape a lone surrogate (``json.dumps`` of such a name); no writer takes it."""
    world.case("a-pass", "pass")
    world.case("b-names", "names")
    world.case("c-pass", "pass")
    (world.candidates / "b-names" / "notes-\udcff.txt").write_bytes(b"")  # b"notes-\xff.txt"
    said = "files: mode.txt, notes-\\udcff.txt"  # the escape, as text
    done = world.grade("--format", "json")  # and each result kept in the ledger
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert [(r["case"], r["status"], r["reason"]) for r in document["results"]] == [
        ("a-pass", "passed", "pass"),
        ("b-names", "failed", said),
        ("c-pass", "passed", "pass"),
    ]
    text = world.grade()  # from the ledger now
    assert text.returncode == 1, text.stderr
    assert "internal error" not in text.stderr
    assert said in text.stdout
    assert "2/3 passed (1 failed)" in text.stdout


@pytest.mark.parametrize("form", ["json", "html", "text"])
def test_a_verdict_nested_too_deep_is_kept_as_its_gist(world: World, form: str) -> None:
    """No writer (the ledger, the JSON, the HTML) is stopped by one case's deep verdict."""
    world.case("a-pass", "pass")
    world.case("b-deep", "deep")
    done = world.grade("--format", form)
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr
    again = world.grade("--format", "json")  # from the ledger
    document = json.loads(again.stdout)
    results = {r["case"]: r for r in document["results"]}
    assert results["a-pass"]["status"] == "passed"
    assert results["b-deep"]["status"] == "failed"
    assert results["b-deep"]["verdict"] == {
        "passed": False,
        "reason": "deep \U0001f600",
        "omitted": "the verdict nests more than 64 levels deep",
    }


# Prints the candidate's verdict.txt as it is, and exits as its first word says.
RAW_RUBRIC = """\
import sys
from pathlib import Path
status, _, verdict = (Path(sys.argv[2]) / "verdict.txt").read_text().partition(" ")
print(verdict)
sys.exit(int(status))
"""


def _strict_json(text: str) -> Any:
    """Parse ``text`` as RFC 8259 JSON: NaN and Infinity are not JSON."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the output")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "verdict",
    [
        '{"passed": true, "score": 1e309}',
        '{"passed": true, "score": -1e309}',
        '{"passed": true, "tests_run": 1e309}',
        '{"passed": false, "coverage": {"lines": [0.5, -1e309]}}',
        '{"passed": true, "big": 1' + "0" * 400 + "}",
        '{"passed": true, "x": NaN}',
        '{"passed": true, "x": -Infinity}',
    ],
)
def test_grade_never_writes_a_number_that_is_not_finite(world: World, verdict: str) -> None:
    """A verdict holding 1e309 (inf to Python) is a rubric error, and the JSON stays JSON.

    (Was: ``"score": Infinity`` in grade's JSON, which no reader takes, merge included.)
    """
    (world.package / "rubric.py").write_text(RAW_RUBRIC, encoding="utf-8")
    world.case("a", None)
    (world.candidates / "a").mkdir()
    code = "1" if '"passed": false' in verdict else "0"
    (world.candidates / "a" / "verdict.txt").write_text(f"{code} {verdict}", encoding="utf-8")
    done = world.grade("--format", "json", "--no-cache")
    assert done.returncode == 1, done.stderr
    (graded,) = _strict_json(done.stdout)["results"]
    assert graded["status"] == "error"
    assert graded["verdict"] is None
    assert "stdout is not one JSON object" in graded["reason"]
    shard = world.bench.base / "graded.json"
    shard.write_text(done.stdout, encoding="utf-8")
    merged = world.run("merge", str(shard), "--format", "json")
    assert "internal error" not in merged.stderr
    _strict_json(merged.stdout)


def test_every_case_passing_exits_0(world: World) -> None:
    """Exit 0 when every graded case passed."""
    world.case("one", "pass")
    world.case("two", "pass")
    result = world.grade()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "2/2 passed"


def test_no_cases_at_all_is_not_a_pass(world: World) -> None:
    """A task class without cases grades nothing: 0/0, exit 1 (nothing was shown to pass)."""
    result = world.grade()
    assert result.returncode == 1
    assert result.stdout == "0/0 passed (no cases to grade)\n"
    document = json.loads(world.grade("--format", "json").stdout)
    assert_shape(document, "grade")
    assert document.pop("bench_digest").startswith("sha256:")
    assert document.pop("manifest").endswith("bench.toml")
    assert set(document.pop("run")) == {
        "name", "candidates_digest", "started_at", "finished_at", "tool_version", "python",
        "sandbox",
    }  # fmt: skip
    assert document == {
        "task_class": SLUG,
        "sandbox": "bwrap",
        "reused": 0,
        "ledger": None,
        "environment": None,
        "reads_expected": False,
        "results": [],
        "passed": 0,
        "total": 0,
        "counts": {"passed": 0, "failed": 0, "missing": 0, "error": 0},
        "ok": False,
        "mean_score": None,
        "sampled": False,
        "pass_at_k": {"1": None},
        "fail_under": None,
        "cases": [],
        "case_files": {},
        "shard": None,
    }


def test_jobs_do_not_change_the_output(world: World) -> None:
    """--jobs 1 and --jobs 3 print the same results, in case-id order."""
    for i, mode in enumerate(["fail", "pass", "pass", "fail", "crash", "pass"]):
        world.case(f"case-{5 - i}", mode)
    one = world.grade("--jobs", "1")
    three = world.grade("--jobs", "3")
    assert one.returncode == three.returncode == 1
    assert without_durations(one.stdout) == without_durations(three.stdout)
    ids = [line.split()[1] for line in one.stdout.splitlines()[:-1]]
    assert ids == sorted(ids)
    as_json = [json.loads(world.grade("--jobs", n, "--format", "json").stdout) for n in "13"]
    for document in as_json:
        document["run"]["started_at"] = document["run"]["finished_at"] = None
        for entry in document["results"]:
            for measure in ("duration_s", "wall_s", "cpu_s", "peak_memory_mib", "stderr_tail"):
                entry[measure] = None
    assert as_json[0] == as_json[1]


# -- selecting cases -------------------------------------------------------------------


def test_case_selects_the_named_cases(world: World) -> None:
    """--case (repeated) grades only those cases, in case-id order, each once."""
    world.case("alpha", "pass")
    world.case("beta", "fail")
    world.case("gamma", "fail")
    result = world.grade("--case", "gamma", "--case", "alpha", "--case", "gamma")
    assert [line.split()[1] for line in result.stdout.splitlines()[:-1]] == ["alpha", "gamma"]
    assert result.stdout.splitlines()[-1] == "1/2 passed (1 failed)"
    only = world.grade("--case", "alpha")
    assert only.returncode == 0


def test_an_unknown_case_exits_3_with_suggestions(world: World) -> None:
    """A well-formed id the task class lacks is CaseNotFound: exit 3, the close ids suggested."""
    world.case("example", "pass")
    result = world.grade("--case", "exmaple")
    assert result.returncode == 3
    assert result.stdout == ""
    assert "has no case 'exmaple'; did you mean 'example'?" in result.stderr
    error = json.loads(world.grade("--case", "exmaple", "--format", "json").stdout)["error"]
    assert_shape({"error": error}, "error")
    assert error["type"] == "CaseNotFound"
    assert error["exit_code"] == 3
    assert error["attributes"]["suggestions"] == ["example"]
    assert error["attributes"]["available_ids"] == ["example"]


@pytest.mark.parametrize("bad", ["Example", "../x", "", "-x", "a" * 101])
def test_an_invalid_case_id_is_a_usage_error(world: World, bad: str) -> None:
    """An id that breaks the case-id rule is refused by the command line: exit 2."""
    world.case("example", "pass")
    result = world.grade(f"--case={bad}")
    assert result.returncode == 2
    assert "invalid case id" in result.stderr
    document = json.loads(world.grade(f"--case={bad}", "--format", "json").stdout)
    assert document["error"]["type"] == "UsageError"
    assert list(world.tmp.iterdir()) == []


@pytest.mark.parametrize("jobs", ["0", "-1", "x", "1.5"])
def test_a_bad_jobs_is_a_usage_error(world: World, jobs: str) -> None:
    """--jobs takes a whole number of at least 1, as check's does."""
    world.case("example", "pass")
    assert world.grade("--jobs", jobs).returncode == 2


# -- exit codes of what is not grading ----------------------------------------------------


def test_candidates_dir_that_is_not_a_directory_exits_2(world: World) -> None:
    """CANDIDATES that does not exist, or is neither a directory nor a file, exits 2.

    A regular file is read as JSON Lines of samples: one that is not is
    ``SamplesInvalid``, with its line.
    """
    world.case("example", "pass")
    missing = world.run("grade", SLUG, "nowhere")
    assert missing.returncode == 2
    assert "candidates directory nowhere does not exist" in missing.stderr
    os.mkfifo(world.bench.base / "fifo")
    a_fifo = world.run("grade", SLUG, "fifo", "--format", "json")
    assert a_fifo.returncode == 2
    error = json.loads(a_fifo.stdout)["error"]
    assert error["type"] == "CandidatesDirInvalid"
    assert error["attributes"] == {
        "path": "fifo",
        "reason": "is neither a directory nor a JSON Lines file",
    }
    (world.bench.base / "file").write_text("x\n")
    a_file = world.run("grade", SLUG, "file", "--format", "json")
    assert a_file.returncode == 2
    error = json.loads(a_file.stdout)["error"]
    assert error["type"] == "SamplesInvalid"
    assert error["attributes"]["path"] == "file"
    assert [p["line"] for p in error["attributes"]["problems"]] == [1]


def test_a_bad_candidates_dir_is_reported_before_a_missing_manifest(tmp_path: Path) -> None:
    """Both wrong: the command line's mistake (2) comes first, as before the bench is read."""

    def grade_here(*args: str) -> subprocess.CompletedProcess[str]:
        command = [script(), "grade", SLUG, "nowhere", *args]
        return subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
        )

    done = grade_here()
    assert done.returncode == 2, done.stderr
    assert "candidates directory nowhere does not exist" in done.stderr
    settings = grade_here("--show-settings")
    assert settings.returncode == 4, (
        settings.stderr
    )  # no manifest, so no place to look for settings


def test_an_unknown_slug_exits_3_with_suggestions_like_show(world: World) -> None:
    """An undeclared slug is reported exactly as show reports it."""
    grade_run = world.run("grade", "grder", "candidates")
    show_run = world.run("show", "grder")
    assert grade_run.returncode == show_run.returncode == 3
    assert grade_run.stderr == show_run.stderr
    assert "did you mean 'grader'?" in grade_run.stderr


def test_a_broken_registration_exits_1(world: World) -> None:
    """A registration that raises is reported as show reports it: exit 1."""
    world.bench.add(SLUG, before="raise ValueError('bad value')", parts=False)
    result = world.grade()
    assert result.returncode == 1
    assert "error[import-failed]" in result.stderr
    assert result.stdout == ""


def test_a_bad_manifest_exits_4(world: World) -> None:
    """An invalid manifest is exit 4, and a JSON document under --format json."""
    world.bench.manifest.write_text("schema-version = 2\n")
    assert world.grade().returncode == 4
    result = world.grade("--format", "json")
    assert result.returncode == 4
    assert json.loads(result.stdout)["error"]["code"] == "manifest-invalid"


def test_invalid_cases_exit_4_as_in_plan(world: World) -> None:
    """A case with a problem is BenchCasesInvalid (exit 4) with plan's diagnostics; nothing runs."""
    world.case("good", "pass")
    world.case("bad", "pass", "timeout = 0\n")
    result = world.grade()
    plan = world.run("plan")
    assert result.returncode == plan.returncode == 4
    assert (
        "case.toml:1:11: error[case-invalid]: case 'bad' of 'grader': timeout: must be greater than 0"
        in result.stderr
    )
    assert result.stderr == plan.stderr.split("1 of 1 task classes")[0]
    assert result.stdout == ""
    document = json.loads(world.grade("--format", "json").stdout)
    assert document["error"]["type"] == "BenchCasesInvalid"


# -- nothing changed, nothing left behind ---------------------------------------------------


def test_bench_and_candidates_are_unchanged_and_no_temporary_directory_is_left(
    world: World,
) -> None:
    """A rubric that deletes its inputs changes neither tree; TMPDIR is empty afterwards."""
    world.case("deletes", "delete")
    world.case("crashes", "crash")
    world.case("fails", "fail")
    before = tree_digest(world.bench.base / "bench"), tree_digest(world.candidates)
    result = world.grade("--jobs", "2")
    assert result.returncode == 1
    assert "passed   deletes" in result.stdout
    assert (tree_digest(world.bench.base / "bench"), tree_digest(world.candidates)) == before
    assert list(world.tmp.iterdir()) == []


def test_control_characters_in_a_reason_are_escaped_in_text(world: World) -> None:
    """A reason holding ESC and a newline prints as escapes on one line; JSON keeps the string."""
    world.case("ctl", "ctl")
    result = world.grade()
    assert "\x1b" not in result.stdout
    assert "evil\\x1b[31m\\nforged line" in result.stdout
    assert len(result.stdout.splitlines()) == 2
    document = json.loads(world.grade("--format", "json").stdout)
    assert document["results"][0]["reason"] == "evil\x1b[31m\nforged line"


# -- progress and interruption ------------------------------------------------------------


def _stderr_on_a_terminal(world: World, *args: str) -> tuple[str, str, int]:
    """Run grade with stderr on a pseudo-terminal: return stdout, what the terminal showed, status."""
    stdout, shown, status = on_a_terminal(
        [script(), "grade", SLUG, "candidates", *args],
        cwd=world.bench.base,
        env=world.env(),
        stdout_too=False,
    )
    return stdout.decode(), shown, status


def test_progress_shows_on_a_terminal_and_is_cleared(world: World) -> None:
    """On a terminal, stderr shows [done/total] grading SLUG…, rewritten with \\r and erased."""
    world.case("one", "pass")
    world.case("two", "fail")
    stdout, shown, status = _stderr_on_a_terminal(world)
    assert status == 1
    assert "[0/2] grading grader…" in shown
    assert "[2/2] grading grader…" in shown
    assert shown.endswith("\r")
    assert "grading" not in stdout
    _, quiet, _ = _stderr_on_a_terminal(world, "-q")
    assert "grading" not in quiet


def test_no_progress_when_stderr_is_a_pipe(world: World) -> None:
    """Piped stderr gets no progress line (and JSON stdout never does)."""
    world.case("one", "pass")
    result = world.grade()
    assert result.stderr == ""
    assert "grading" not in result.stdout
    assert "grading" not in world.grade("--format", "json").stdout


def _written(pids: Path) -> list[Path]:
    """The pid files the rubrics have written whole (a file is made empty, then written)."""
    return [path for path in pids.iterdir() if path.read_text().strip()]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_leaves_no_rubric_process_and_no_temporary_directory(
    world: World, signum: int
) -> None:
    """Ctrl-C, SIGTERM or SIGHUP while rubrics run exits 128 + the signal; rubrics and copies go."""
    pids = world.base / "pids"
    pids.mkdir()
    for case_id in ("first", "second", "third"):
        world.case(case_id, "hang")
    process = subprocess.Popen(
        # Under none: the test reads the rubrics' pids from a file outside the sandbox.
        [script(), "grade", SLUG, "candidates", "--jobs", "2", "--sandbox", "none"],
        cwd=world.bench.base,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=world.env(GRADE_PIDS=str(pids)),
    )
    deadline = time.monotonic() + 60
    while len(_written(pids)) < 2:
        assert time.monotonic() < deadline, "the rubrics never started"
        time.sleep(0.05)
    time.sleep(0.1)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signum
    assert b"Traceback" not in stderr
    assert stdout == b""
    started = sorted(path.name for path in pids.iterdir())
    assert started == ["first", "second"]  # the third never started
    for path in pids.iterdir():
        assert gone(int(path.read_text()))
    assert list(world.tmp.iterdir()) == []


def test_a_second_signal_during_the_clean_up_leaves_nothing_behind(world: World) -> None:
    """SIGTERM then SIGINT 15 to 30 ms apart, ten times: no rubric process and no copy is left."""
    pids = world.base / "pids"
    pids.mkdir()
    for case_id in ("first", "second", "third"):
        world.case(case_id, "hang")
    for attempt in range(10):
        for path in pids.iterdir():
            path.unlink()
        process = subprocess.Popen(
            [script(), "grade", SLUG, "candidates", "--jobs", "2", "--sandbox", "none"],
            cwd=world.bench.base,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=world.env(GRADE_PIDS=str(pids)),
        )
        deadline = time.monotonic() + 60
        while len(_written(pids)) < 2:
            assert time.monotonic() < deadline, "the rubrics never started"
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.015 + 0.015 * attempt / 9)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode in {128 + signal.SIGTERM, 128 + signal.SIGINT}, stderr
        assert b"Traceback" not in stderr
        for path in pids.iterdir():
            assert gone(int(path.read_text()), within=10), f"attempt {attempt}: {path.name} runs"
        assert list(world.tmp.iterdir()) == [], f"attempt {attempt}"


# -- the shipped bench: every rubric passes its own expected/ --------------------------------


@pytest.mark.shipped_bench
def test_every_shipped_task_class_passes_copies_of_its_expected(tmp_path: Path) -> None:
    """grade, through the CLI, passes every case of every declared task class on copies of expected/."""
    manifest = BenchManifest.load(REPO / "bench.toml")
    assert manifest.slugs()
    for slug in manifest.slugs():
        shown = subprocess.run(
            [script(), "show", slug, "--format", "json"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        document = json.loads(shown.stdout)
        candidates = tmp_path / slug
        candidates.mkdir()
        for case_id in document["case_ids"]:
            shutil.copytree(Path(document["cases"]) / case_id / "expected", candidates / case_id)
        result = subprocess.run(
            [script(), "grade", slug, str(candidates), "--format", "json"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stdout
        graded = json.loads(result.stdout)
        assert [entry["case"] for entry in graded["results"]] == document["case_ids"]
        assert graded["passed"] == graded["total"] == len(document["case_ids"])


# -- show and the case ids --------------------------------------------------------------


def test_show_prints_the_case_ids(world: World) -> None:
    """show ends with case_ids: the ids, comma-separated, or (none); JSON has case_ids."""
    assert world.run("show", SLUG).stdout.splitlines()[-1] == "case_ids:    (none)"
    world.case("beta", None)
    world.case("alpha", None)
    assert world.run("show", SLUG).stdout.splitlines()[-1] == "case_ids:    alpha, beta"
    document = json.loads(world.run("show", SLUG, "--format", "json").stdout)
    assert_shape(document, "show")
    assert document["case_ids"] == ["alpha", "beta"]


def test_show_with_an_invalid_case_fails_as_plan_does(world: World) -> None:
    """show reports invalid cases with plan's diagnostics and exit 4, printing no task class."""
    world.case("bad", None, "tags = 1\n")
    show = world.run("show", SLUG)
    plan = world.run("plan", SLUG)
    assert show.returncode == plan.returncode == 4
    assert show.stdout == plan.stdout == ""
    assert "error[case-invalid]: case 'bad' of 'grader': tags: expected an array" in show.stderr
    assert show.stderr == plan.stderr.split("1 of 1 task classes")[0]


# -- the library -------------------------------------------------------------------------


def _case(tmp_path: Path, case_id: str) -> Case:
    return Case(task_class="t", id=case_id, directory=tmp_path / "cases" / case_id, timeout=30)


def test_a_timeout_is_an_error_and_the_rest_keep_their_status() -> None:
    """GradeResult.from_rubric: passed and failed stay, timeout and error become error."""
    for status, expected in [
        ("passed", "passed"),
        ("failed", "failed"),
        ("error", "error"),
        ("timeout", "error"),
    ]:
        rubric = RubricResult(case="c", status=status, reason="r", duration_s=0.5)
        assert GradeResult.from_rubric(rubric).status == expected


def test_summary_counts_what_did_not_pass() -> None:
    """The summary line names failed, error and missing counts, in that order, when not zero; errors are plural."""
    results = (
        GradeResult(case="a", status="passed", duration_s=0.1),
        GradeResult(case="b", status="missing"),
        GradeResult(case="c", status="error", duration_s=0.1),
        GradeResult(case="d", status="error", duration_s=0.1),
    )
    report = GradeReport(task_class="t", results=results)
    assert report.summary() == "1/4 passed (2 errors, 1 missing)"
    assert GradeReport(task_class="t", results=results[:3]).summary() == (
        "1/3 passed (1 error, 1 missing)"
    )
    assert not report.ok
    assert GradeReport(task_class="t", results=results[:1]).summary() == "1/1 passed"
    assert GradeReport(task_class="t", results=results[:1]).ok
    assert not GradeReport(task_class="t", results=()).ok


def test_select_cases_refuses_an_unknown_id(tmp_path: Path) -> None:
    """select_cases returns the named cases sorted, each once; an unknown id is CaseNotFound."""
    cases = [_case(tmp_path, "b"), _case(tmp_path, "a"), _case(tmp_path, "c")]
    assert [c.id for c in select_cases("t", cases, None)] == ["a", "b", "c"]
    assert [c.id for c in select_cases("t", cases, ["c", "a", "c"])] == ["a", "c"]
    with pytest.raises(CaseNotFound) as raised:
        select_cases("t", cases, ["a", "d"])
    assert raised.value.case == "d"
    assert raised.value.available_ids == ("a", "b", "c")


@pytest.mark.parametrize("jobs", [0, -1, True, 1.5])
def test_grade_refuses_a_bad_jobs(tmp_path: Path, jobs: Any) -> None:
    """jobs must be a whole number of at least 1."""
    with pytest.raises(ValueError, match="jobs"):
        grade("t", tmp_path / "rubric.py", [], tmp_path, jobs=jobs)


FAST_RUBRIC = textwrap.dedent(
    """\
    import json, sys
    from pathlib import Path
    passed = (Path(sys.argv[2]) / "ok").exists()
    print(json.dumps({"passed": passed}))
    sys.exit(0 if passed else 1)
    """
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ids=st.sets(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,6}", fullmatch=True), max_size=5),
    jobs=st.integers(min_value=1, max_value=4),
    data=st.data(),
)
def test_results_are_in_case_id_order_whatever_the_jobs(
    tmp_path_factory: pytest.TempPathFactory, ids: set[str], jobs: int, data: st.DataObject
) -> None:
    """For any set of case ids and any jobs, results come back once each, sorted by id."""
    base = tmp_path_factory.mktemp("order")
    rubric = base / "rubric.py"
    rubric.write_text(FAST_RUBRIC, encoding="utf-8")
    cases = []
    for case_id in ids:
        write_case(base / "cases", case_id)
        cases.append(_case(base, case_id))
        kind = data.draw(st.sampled_from(["ok", "not-ok", "missing"]), label=case_id)
        if kind != "missing":
            (base / "candidates" / case_id).mkdir(parents=True)
            if kind == "ok":
                (base / "candidates" / case_id / "ok").write_text("")
    seen: list[int] = []
    report = grade(
        "t", rubric, cases, base / "candidates", jobs=jobs, on_result=lambda i, _: seen.append(i)
    )
    assert [result.case for result in report.results] == sorted(ids)
    assert sorted(seen) == list(range(len(ids)))


# -- found by attacking grade from the outside ---------------------------------------------


def test_more_jobs_than_the_open_file_limit_allows_still_grades_every_case(world: World) -> None:
    """--jobs far past `ulimit -n`: every case is graded as if run alone; nothing is left behind."""
    import resource

    for number in range(40):
        world.case(f"c{number:02}", "pass")

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    result = subprocess.run(
        [script(), "grade", SLUG, "candidates", "--jobs", "1000"],
        cwd=world.bench.base,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=world.env(),
        preexec_fn=low_limit,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "40/40 passed"
    assert "internal error" not in result.stderr
    assert list(world.tmp.iterdir()) == []


def test_a_huge_reason_is_shortened_in_text_and_whole_in_json(world: World) -> None:
    """A 900 KB reason is one short text line (bounded output); JSON keeps every character."""
    rubric = world.package / "rubric.py"
    rubric.write_text(
        'import json\nprint(json.dumps({"passed": True, "reason": "why " * 225_000}))\n',
        encoding="utf-8",
    )
    world.case("big", "pass")
    result = world.grade()
    assert result.returncode == 0
    line = result.stdout.splitlines()[0]
    assert len(line) < 400
    assert line.endswith("… (899800 more characters; --format json shows all)")
    document = json.loads(world.grade("--format", "json").stdout)
    assert document["results"][0]["reason"] == "why " * 225_000
