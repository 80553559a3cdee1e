"""Grading and checking under attack: no false green, no hang, nothing left behind.

Each test drives the installed console script against a bench built in
``tmp_path`` and pins what a user sees: the exit status, stdout, stderr.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .factory import Bench, make_bench, write_case


def cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    return subprocess.run(
        [script, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def raising_case_model(raised: str) -> str:
    return f'''\
from pydantic import BaseModel, field_validator

from codegenie.eval.registry import register_task_class


class Shape(BaseModel):
    size: int = 0

    @field_validator("size")
    @classmethod
    def _size(cls, value: int) -> int:
        if value < 0:
            raise {raised}
        return value


@register_task_class("shapes", case_model=Shape)
class Shapes:
    """Shapes."""
'''


def shapes_bench(base: Path, raised: str) -> Bench:
    bench = make_bench(base, "shapes", source=raising_case_model(raised), parts=True)
    cases = bench.root / "shapes" / "cases"
    write_case(cases, "good", "size = 1\n", expected_files={"answer.txt": "solved\n"})
    write_case(cases, "bad", "size = -1\n", expected_files={"answer.txt": "solved\n"})
    return bench


BASE_EXCEPTIONS = ["SystemExit(0)", "SystemExit(1)", "GeneratorExit()", "BaseException('x')"]


@pytest.mark.parametrize("raised", BASE_EXCEPTIONS)
@pytest.mark.parametrize("command", ["show", "plan"])
def test_a_case_model_raising_any_base_exception_is_case_invalid(
    tmp_path: Path, raised: str, command: str
) -> None:
    """show and plan: a validator's SystemExit or GeneratorExit is BenchCasesInvalid, exit 4."""
    bench = shapes_bench(tmp_path, raised)
    done = cli(command, "shapes", cwd=bench.base)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "case-invalid" in done.stderr
    assert "bad/case.toml" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("raised", BASE_EXCEPTIONS)
def test_a_case_model_raising_gives_one_json_document(tmp_path: Path, raised: str) -> None:
    """--format json: the failure is one JSON error document on stdout, never a traceback."""
    bench = shapes_bench(tmp_path, raised)
    done = cli("--format", "json", "show", "shapes", cwd=bench.base)
    assert done.returncode == 4
    document = json.loads(done.stdout)
    assert document["error"]["type"] == "BenchCasesInvalid"
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("raised", ["SystemExit(0)", "GeneratorExit()"])
def test_check_reports_a_raising_case_model_as_case_invalid(tmp_path: Path, raised: str) -> None:
    """check: the raising case is the case's case-invalid problem, not import-crashed."""
    bench = shapes_bench(tmp_path, raised)
    done = cli("check", cwd=bench.base)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "case-invalid" in done.stdout
    assert "import-crashed" not in done.stdout


LEAVES_A_THREAD = """\
import threading, time

threading.Thread(target=time.sleep, args=(3600,), name="left-behind").start()
"""


@pytest.mark.parametrize(
    "args",
    [("show", "lingering"), ("plan", "lingering"), ("plan",)],
    ids=["show", "plan-slug", "plan-all"],
)
def test_commands_exit_whatever_threads_a_registration_left(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A registration's non-daemon thread never keeps a command from exiting; stderr says so."""
    bench = make_bench(tmp_path, "lingering", before=LEAVES_A_THREAD)
    done = cli(*args, cwd=bench.base, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "lingering" in done.stdout
    assert "left-behind" in done.stderr
    assert "thread" in done.stderr


def test_grade_exits_whatever_threads_a_registration_left(tmp_path: Path) -> None:
    """grade prints its results and exits with its status though a thread is still running."""
    bench = make_bench(tmp_path, "lingering", before=LEAVES_A_THREAD, parts=True)
    candidates = tmp_path / "runs"
    shutil.copytree(
        bench.root / "lingering" / "cases" / "example" / "expected", candidates / "example"
    )
    done = cli("grade", "lingering", str(candidates), cwd=bench.base, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout
    assert "left-behind" in done.stderr


CHANGES_DIRECTORY = """\
import os, tempfile

os.chdir(tempfile.gettempdir())
"""


def test_a_relative_candidates_dir_is_resolved_before_any_bench_code_runs(tmp_path: Path) -> None:
    """A registration that changes directory at import turns no candidate into `missing`."""
    bench = make_bench(tmp_path, "wanderer", before=CHANGES_DIRECTORY, parts=True)
    expected = bench.root / "wanderer" / "cases" / "example" / "expected"
    shutil.copytree(expected, bench.base / "runs" / "example")
    done = cli("grade", "wanderer", "runs", cwd=bench.base)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("passed")
    assert "missing" not in done.stdout


ASCII_ONLY = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}


@pytest.mark.parametrize(
    "args",
    [
        ("show", "cafe"),
        ("plan",),
        ("check",),
        ("-v", "check"),
        ("--format", "github", "check"),
        ("--format", "json", "show", "cafe"),
        ("list",),
        ("show", "caf\u00e9"),
    ],
    ids=" ".join,
)
def test_an_ascii_only_locale_escapes_and_never_crashes(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """stdout in ASCII: non-ASCII paths, descriptions and messages are escaped, never a crash."""
    import os

    base = tmp_path / "b\u00e9nch"
    failing = 'DESCRIPTION = "Caf\u00e9 \u2014 na\u00efve"\nraise ValueError("\u00e9chec")\n'
    bench = make_bench(base, "cafe", after=failing, parts=True)
    env = {**os.environ, **ASCII_ONLY}
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    done = subprocess.run(
        [script, "--manifest", str(bench.manifest), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in {0, 1, 2, 3, 4}, done.stderr
    output = done.stdout + done.stderr
    assert b"internal error" not in output
    if "-v" not in args:  # JSON carries a traceback as data; stderr shows one only under -v
        assert b"Traceback (most recent call last)" not in done.stderr
    assert done.stdout.isascii()
    assert done.stderr.isascii()


def test_check_json_on_a_fifo_manifest_or_a_fifo_in_a_case_never_blocks(tmp_path: Path) -> None:
    """check --format json (which digests the bench for merge) never opens a FIFO."""
    import os

    fifo_bench = tmp_path / "fifo-manifest"
    fifo_bench.mkdir()
    os.mkfifo(fifo_bench / "bench.toml")
    done = cli("--manifest", str(fifo_bench / "bench.toml"), "check", "--format", "json",
               cwd=tmp_path, timeout=60)  # fmt: skip
    assert done.returncode == 4
    assert json.loads(done.stdout)["ok"] is False
    bench = make_bench(tmp_path / "fifo-case", "piped", parts=True)
    os.mkfifo(bench.root / "piped" / "cases" / "example" / "input" / "pipe")
    done = cli("check", "--format", "json", cwd=bench.base, timeout=60)
    assert json.loads(done.stdout)["bench_digest"].startswith("sha256:")


def test_merge_never_blocks_on_a_fifo_report(tmp_path: Path) -> None:
    """merge REPORT where REPORT is a FIFO: refused at once, exit 1, the reason on stderr."""
    import os

    os.mkfifo(tmp_path / "report.json")
    done = cli("merge", "report.json", cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert "FIFO" in done.stderr
