"""A task class's declared rubric command, end to end: a shell rubric graded, checked, keyed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval._command import RubricCommand
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox.runs import Runs
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import choose_sandbox, execute

from .factory import write_case

SLUG = "sh-task"
# The rubric protocol, in POSIX shell: a verdict on stdout, 0 for a pass and 1 for a fail.
RUBRIC_SH = """\
case_dir=$1
candidate=$2
test -d "$case_dir" || { echo "no case directory" >&2; exit 2; }
if [ -f "$candidate/answer.txt" ]; then
  printf '{"passed": true, "reason": "sh saw answer.txt"}\\n'
  exit 0
fi
printf '{"passed": false, "reason": "sh saw no answer.txt"}\\n'
exit 1
"""
RUBRIC_PY = """\
import json, sys
from pathlib import Path
solved = (Path(sys.argv[2]) / "answer.txt").is_file()
print(json.dumps({"passed": solved, "reason": "python"}))
sys.exit(0 if solved else 1)
"""
SHELL = '["sh", "{rubric}", "{case}", "{candidate}"]'


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


class Bench:
    """One task class whose rubric is ``rubric`` (a file name) and whose entry says ``command``."""

    def __init__(self, base: Path, rubric: str, source: str, command: str | None) -> None:
        self.base = base
        self.package = base / "bench" / SLUG.replace("-", "_")
        self.package.mkdir(parents=True)
        (self.package / "registration.py").write_text(
            "from codegenie.eval.registry import register_task_class\n\n\n"
            f"@register_task_class({SLUG!r}, rubric={rubric!r})\n"
            "class ShTask:\n    pass\n",
            encoding="utf-8",
        )
        (self.package / rubric).write_text(source, encoding="utf-8")
        for case_id in ("good", "bad"):
            write_case(
                self.package / "cases",
                case_id,
                "",
                input_files={"README.txt": "nothing yet\n"},
                expected_files={"answer.txt": "solved\n"},
            )
        candidates = base / "candidates"
        (candidates / "good").mkdir(parents=True)
        (candidates / "good" / "answer.txt").write_text("42\n", encoding="utf-8")
        (candidates / "bad").mkdir()
        self.declare(command)

    def declare(self, command: str | None) -> None:
        """Write the manifest with ``command`` (``None``: no ``command`` key)."""
        text = (
            f"schema-version = 1\n\n[task-classes.{SLUG}]\n"
            f'module = "bench.{SLUG.replace("-", "_")}.registration"\nroot = "bench"\n'
        )
        if command is not None:
            text += f"command = {command}\n"
        (self.base / "bench.toml").write_text(text, encoding="utf-8")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script(), *args],
            cwd=self.base,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**os.environ, "NO_COLOR": "1"},
        )

    def grade(self, *args: str) -> tuple[int, dict[str, Any]]:
        done = self.run("grade", SLUG, "candidates", "--format", "json", *args)
        return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_a_shell_rubric_grades_end_to_end(tmp_path: Path, sandbox: str) -> None:
    """``sh rubric.sh CASE CANDIDATE`` passes one candidate and fails the other, in either sandbox."""
    bench = Bench(tmp_path, "rubric.sh", RUBRIC_SH, SHELL)
    code, report = bench.grade("--sandbox", sandbox, "--no-cache")
    outcomes = {r["case"]: (r["status"], r["reason"]) for r in report["results"]}
    assert outcomes == {
        "bad": ("failed", "sh saw no answer.txt"),
        "good": ("passed", "sh saw answer.txt"),
    }
    assert code == 1  # a case did not pass
    assert report["sandbox"] == ("bwrap" if sandbox == "auto" else "none")


def test_check_runs_a_shell_rubric_s_golden_and_input_sides(tmp_path: Path) -> None:
    bench = Bench(tmp_path, "rubric.sh", RUBRIC_SH, SHELL)
    done = bench.run("check", "--rubrics", "--no-cache")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_a_changed_command_runs_again(tmp_path: Path) -> None:
    """The same bench and candidates with another command: nothing is served from the store."""
    bench = Bench(tmp_path, "rubric.sh", RUBRIC_SH, SHELL)
    assert bench.grade("--sandbox", "none")[1]["reused"] == 0
    assert bench.grade("--sandbox", "none")[1]["reused"] == 2
    bench.declare('["sh", "-e", "{rubric}", "{case}", "{candidate}"]')
    code, report = bench.grade("--sandbox", "none")
    assert (code, report["reused"]) == (1, 0)
    assert {r["status"] for r in report["results"]} == {"passed", "failed"}
    assert bench.grade("--sandbox", "none")[1]["reused"] == 2


def test_the_declared_default_command_is_the_same_run_as_none(tmp_path: Path) -> None:
    """Writing out the default command changes nothing: the runs stored without it are reused."""
    bench = Bench(tmp_path, "rubric.py", RUBRIC_PY, None)
    assert bench.grade("--sandbox", "none")[1]["reused"] == 0
    bench.declare('["{python}", "{rubric}", "{case}", "{candidate}"]')
    code, report = bench.grade("--sandbox", "none")
    assert (code, report["reused"]) == (1, 2)


class _NoWarmWorkers:
    """Warm workers that must never be asked: any request fails the test."""

    def worker(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a warm worker was asked for a run that is not a Python rubric")


def test_a_command_that_is_not_a_python_rubric_takes_the_plain_path(tmp_path: Path) -> None:
    """Under bubblewrap, a shell rubric is made plainly: no warm worker is asked for it."""
    bench = Bench(tmp_path, "rubric.sh", RUBRIC_SH, SHELL)
    box = choose_sandbox("auto")
    case = Case(task_class=SLUG, id="good", directory=bench.package / "cases" / "good")
    spec = RunSpec.of(
        bench.package / "rubric.sh",
        case,
        tmp_path / "candidates" / "good",
        sandbox=box.policy,
        command=RubricCommand(("sh", "{rubric}", "{case}", "{candidate}")),
    )
    runs = Runs(box.prepare, _NoWarmWorkers())  # type: ignore[arg-type]
    result = execute(spec, box, runs=runs)
    assert (result.status, result.reason, result.sandbox) == (
        "passed",
        "sh saw answer.txt",
        "bwrap",
    )
