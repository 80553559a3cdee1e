"""Settings in pyproject.toml: found, validated with locations, shown, and beaten by the command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from codegenie.eval._settings import load_settings, resolve
from codegenie.eval.errors import SettingsInvalid

from .factory import Bench, make_bench, write_case


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the installed console script in ``cwd``."""
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    return subprocess.run(
        [script, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def settings_file(base: Path, body: str) -> Path:
    """Write a pyproject.toml with ``body`` as its [tool.codegenie-bench] table."""
    file = base / "pyproject.toml"
    file.write_text(f'[project]\nname = "a-bench"\n\n[tool.codegenie-bench]\n{body}', "utf-8")
    return file


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """A bench of one task class with parts, whose only problem is none."""
    return make_bench(tmp_path / "repo", "aa", parts=True)


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    """Without a pyproject.toml every setting is its default."""
    settings = resolve(load_settings(tmp_path), {})
    assert settings.file is None
    assert settings["timeout"] == 60.0
    assert {s.source for s in settings.values.values()} == {"default"}


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    """The nearest pyproject.toml that has the table is used, as ruff and pytest do."""
    settings_file(tmp_path, "strict = true\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n', "utf-8")
    settings = resolve(load_settings(inner), {})
    assert settings.file == tmp_path / "pyproject.toml"
    assert settings.values["strict"].origin == "pyproject.toml:5"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("strikt = true\n", "unknown key 'strikt'; did you mean 'strict'?"),
        ("jobs = 0\n", "must be greater than or equal to 1"),
        ("strict = 1\n", "expected a boolean, got an integer"),
        ("timeout = 0\n", "must be greater than 0"),
        ('sandbox = "docker"\n', "must be 'auto', 'bwrap' or 'none'"),
        ('ignore = ["cases-mising"]\n', "did you mean 'cases-missing'?"),
        ("jobs = ]\n", "TOML syntax error"),
    ],
)
def test_bad_table_is_located(tmp_path: Path, body: str, expected: str) -> None:
    """Every bad key or value is a problem at its line, worded in TOML's terms."""
    settings_file(tmp_path, body)
    with pytest.raises(SettingsInvalid) as caught:
        load_settings(tmp_path)
    (problem,) = caught.value.problems
    assert problem.line == 5
    assert expected in problem.message


def test_every_problem_is_reported_in_file_order(tmp_path: Path) -> None:
    """Two bad keys are two problems, sorted by line."""
    settings_file(tmp_path, "repeat = 0\nstrikt = true\n")
    with pytest.raises(SettingsInvalid) as caught:
        load_settings(tmp_path)
    assert [p.line for p in caught.value.problems] == [5, 6]


def test_the_table_sets_checks_options(bench: Bench) -> None:
    """strict = true in the table makes a warning fail the check (exit 1)."""
    (bench.root / "aa" / "cases" / "example" / "case.toml").unlink()
    shutil.rmtree(bench.root / "aa" / "cases")
    assert run("check", "--jobs", "1", cwd=bench.base).returncode == 0  # a warning only
    settings_file(bench.base, "strict = true\n")
    done = run("check", "--jobs", "1", cwd=bench.base)
    assert done.returncode == 1, done.stderr
    assert "cases-missing" in done.stdout


def test_a_bad_table_is_a_usage_error(bench: Bench) -> None:
    """A misspelt key exits 2, located, with did-you-mean; in JSON too."""
    settings_file(bench.base, "jbos = 2\n")
    done = run("check", cwd=bench.base)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "pyproject.toml:5:1: error[settings-invalid]" in done.stderr
    assert "did you mean 'jobs'?" in done.stderr
    done = run("check", "--format", "json", cwd=bench.base)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "settings-invalid"
    assert error["diagnostics"][0]["line"] == 5


def test_show_settings_says_where_each_value_came_from(bench: Bench) -> None:
    """--show-settings: the command line beats the file, which beats the default."""
    settings_file(bench.base, "jobs = 2\ntimeout = 5\n")
    done = run("check", "--show-settings", "--timeout", "9", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    lines = {line.split(" =")[0]: line for line in done.stdout.splitlines()}
    assert lines["jobs"].endswith("# pyproject.toml:5")
    assert "9.0" in lines["timeout"]
    assert lines["timeout"].endswith("# command line")
    assert lines["repeat"].endswith("# default")
    done = run("check", "--show-settings", "--format", "json", cwd=bench.base)
    document = json.loads(done.stdout)
    assert document["file"] == str(bench.base / "pyproject.toml")
    assert document["settings"]["timeout"] == {"value": 5, "source": "pyproject.toml", "line": 6}
    assert document["settings"]["format"]["source"] == "command line"


def test_format_from_the_table(bench: Bench) -> None:
    """format = "json" in the table makes check print JSON; --format text wins."""
    settings_file(bench.base, 'format = "json"\n')
    done = run("check", "--jobs", "1", cwd=bench.base)
    assert json.loads(done.stdout)["ok"] is True
    done = run("check", "--jobs", "1", "--format", "text", cwd=bench.base)
    assert not done.stdout.startswith("{")


def test_list_never_reads_the_table(bench: Bench) -> None:
    """list does not use a setting, so a broken table does not stop it."""
    settings_file(bench.base, "jbos = [\n")
    done = run("list", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    assert "aa" in done.stdout


# -- grade: jobs, sandbox and format from the table ---------------------------------------


def candidates(bench: Bench) -> Path:
    """Return a candidates directory that solves the bench's only case (aa's example)."""
    runs = bench.base / "runs"
    (runs / "example").mkdir(parents=True, exist_ok=True)
    (runs / "example" / "answer.txt").write_text("solved\n", "utf-8")
    return runs


def test_grade_takes_sandbox_and_format_from_the_table(bench: Bench) -> None:
    """sandbox and format in the table are grade's too: JSON, graded outside any sandbox."""
    candidates(bench)
    settings_file(bench.base, 'sandbox = "none"\nformat = "json"\n')
    done = run("--no-cache", "grade", "aa", "runs", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["sandbox"] == "none"
    assert (document["passed"], document["total"]) == (1, 1)
    assert "warning: --sandbox none" in done.stderr


def test_grade_command_line_beats_the_table(bench: Bench) -> None:
    """--format and --sandbox on the command line win over the table's."""
    candidates(bench)
    settings_file(bench.base, 'sandbox = "bwrap"\nformat = "json"\n')
    done = run("--no-cache", "grade", "aa", "runs", "--sandbox", "none", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sandbox"] == "none"
    graded = {
        fmt: run(
            "--no-cache",
            "grade",
            "aa",
            "runs",
            "--sandbox",
            "none",
            "--format",
            fmt,
            cwd=bench.base,
        )
        for fmt in ("junit", "text")
    }
    assert [done.returncode for done in graded.values()] == [0, 0], graded
    assert graded["junit"].stdout.startswith("<?xml"), graded["junit"].stdout
    assert graded["text"].stdout.splitlines()[-1] == "1/1 passed"


# Passes, and says whether another rubric ran at the same time: each one leaves a file
# in the directory its candidate names, then waits (a few seconds at most) for a second.
MEETING_RUBRIC = """\
import json, sys, tempfile, time
from pathlib import Path

place = Path((Path(sys.argv[2]) / "meet.txt").read_text("utf-8").strip())
tempfile.mkstemp(dir=place)
deadline = time.monotonic() + 5
while len(list(place.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.02)
met = len(list(place.iterdir())) >= 2
print(json.dumps({"passed": True, "reason": "met" if met else "alone"}))
"""


def test_grade_takes_jobs_from_the_table(tmp_path: Path) -> None:
    """jobs = 1 in the table: the rubrics of two cases never run at once; --jobs 2 wins."""
    bench = make_bench(tmp_path / "repo", "aa", parts=True)
    package = bench.root / "aa"
    (package / "rubric.py").write_text(MEETING_RUBRIC, "utf-8")
    write_case(package / "cases", "second", 'description = "A second case."\n')
    settings_file(bench.base, 'jobs = 1\nsandbox = "none"\nformat = "json"\n')

    def reasons(*options: str) -> list[str]:
        place = Path(tempfile.mkdtemp(dir=tmp_path))
        for case in ("example", "second"):
            candidate = bench.base / "runs" / case
            candidate.mkdir(parents=True, exist_ok=True)
            (candidate / "meet.txt").write_text(str(place), "utf-8")
        done = run("--no-cache", "grade", "aa", "runs", *options, cwd=bench.base)
        assert done.returncode == 0, done.stderr
        return sorted(result["reason"] for result in json.loads(done.stdout)["results"])

    # One at a time: the first waits alone; the second finds the first's file.
    assert reasons() == ["alone", "met"]
    assert reasons("--jobs", "2") == ["met", "met"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("jbos = 2\n", id="a misspelt key"),
        pytest.param("jobs = 0\n", id="a key grade uses"),
        pytest.param("timeout = 0\n", id="a key only check uses"),
        pytest.param('select = ["no-such-code"]\n', id="an unknown code"),
    ],
)
def test_grade_refuses_a_bad_table_with_exit_2(bench: Bench, body: str) -> None:
    """Any bad key is exit 2 in grade as in check (the same mistake), located, before grading."""
    candidates(bench)
    settings_file(bench.base, body)
    done = run("--no-cache", "grade", "aa", "runs", "--sandbox", "none", cwd=bench.base)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "pyproject.toml:5:" in done.stderr
    assert "error[settings-invalid]" in done.stderr
    assert "passed" not in done.stderr
    assert run("check", "--show-settings", cwd=bench.base).returncode == 2
    done = run("grade", "aa", "runs", "--format", "json", cwd=bench.base)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "settings-invalid"
    assert error["diagnostics"][0]["line"] == 5


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
@pytest.mark.parametrize("command", ["check", "grade"])
def test_a_pyproject_that_is_no_regular_file_is_refused_at_once(
    bench: Bench, kind: str, command: str
) -> None:
    """A FIFO (no writer), an endless device or a directory: exit 2, located, never a hang."""
    candidates(bench)
    target = bench.base / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to(kind)
    args = ["grade", "aa", "runs", "--sandbox", "none"] if command == "grade" else ["check"]
    done = run(*args, cwd=bench.base)  # run's timeout fails the test on a hang
    assert done.returncode == 2, done.stderr
    assert "pyproject.toml:1:1: error[settings-invalid]: the file is a" in done.stderr
    assert "Traceback" not in done.stderr


def test_grade_passes_over_a_table_format_it_does_not_write(bench: Bench) -> None:
    """format = "sarif", shared with check: check writes SARIF, grade its default, text.

    --show-settings says why; on the command line --format sarif is still a
    usage error in grade.
    """
    candidates(bench)
    settings_file(bench.base, 'format = "sarif"\nsandbox = "none"\n')
    done = run("--no-cache", "grade", "aa", "runs", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("passed   example")
    assert done.stdout.splitlines()[-1] == "1/1 passed"
    shown = run("grade", "aa", "runs", "--show-settings", cwd=bench.base)
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.startswith("format ="))
    assert line.startswith('format = "text"')
    assert line.endswith(
        '# default (pyproject.toml:5 sets "sarif", which this command does not write)'
    )
    checked = run("check", "--jobs", "1", cwd=bench.base)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["version"] == "2.1.0"
    typed = run("grade", "aa", "runs", "--format", "sarif", cwd=bench.base)
    assert typed.returncode == 2
    assert "--format sarif is only for check, merge" in typed.stderr


def test_grade_ignores_the_keys_only_check_uses(bench: Bench) -> None:
    """strict, select, ignore, timeout and repeat are check's: grade grades as without them."""
    candidates(bench)
    settings_file(
        bench.base,
        'strict = true\nselect = ["cases-missing"]\nignore = ["timeout-tight"]\n'
        'timeout = 0.001\nrepeat = 3\nsandbox = "none"\n',
    )
    done = run("--no-cache", "grade", "aa", "runs", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "1/1 passed"


def test_grade_show_settings_says_where_its_settings_came_from(bench: Bench) -> None:
    """grade --show-settings: its four settings only, each with its origin; nothing graded."""
    settings_file(bench.base, 'strict = true\njobs = 2\nformat = "json"\nexecutor = "ray"\n')
    done = run("grade", "aa", "nowhere", "--show-settings", "--sandbox", "none", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document == {
        "file": str(bench.base / "pyproject.toml"),
        "settings": {
            "jobs": {"value": 2, "source": "pyproject.toml", "line": 6},
            "sandbox": {"value": "none", "source": "command line", "line": None},
            "executor": {"value": "ray", "source": "pyproject.toml", "line": 8},
            "format": {"value": "json", "source": "pyproject.toml", "line": 7},
        },
    }
    assert "warning" not in done.stderr  # no rubric runs, so no word about the sandbox
    done = run("grade", "aa", "nowhere", "--show-settings", "--format", "text", cwd=bench.base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"# settings from {bench.base / 'pyproject.toml'}",
        "jobs = 2          # pyproject.toml:6",
        'sandbox = "auto"  # default',
        'executor = "ray"  # pyproject.toml:8',
        'format = "text"   # command line',
    ]


# -- which commands open pyproject.toml ---------------------------------------------------

# Runs the command in-process under an audit hook that counts every attempt to open a
# pyproject.toml (found or not), and prints the count last on stderr.
PROBE = """\
import sys
import tempfile
tries = []
def hook(event, args):
    if event == "open" and str(args[0]).endswith("pyproject.toml"):
        tries.append(args[0])
sys.addaudithook(hook)
from codegenie.eval.cli._app import main
main(sys.argv[1:])
sys.stderr.write(f"\\npyproject.toml opened {len(tries)} times\\n")
"""


def pyproject_opened(*args: str, cwd: Path) -> bool:
    """Whether the command ``args`` tries to open a pyproject.toml, anywhere."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    last = done.stderr.splitlines()[-1]
    assert last.startswith("pyproject.toml opened"), done.stderr
    return last != "pyproject.toml opened 0 times"


@pytest.mark.parametrize(
    ("command", "opens"),
    [
        pytest.param(("list",), False, id="list"),
        pytest.param(("show", "aa"), False, id="show"),
        pytest.param(("plan",), False, id="plan"),
        pytest.param(("explain", "cases-missing"), False, id="explain"),
        pytest.param(("schema",), False, id="schema"),
        pytest.param(("check", "--show-settings"), True, id="check"),
        pytest.param(("grade", "aa", "runs", "--show-settings"), True, id="grade"),
    ],
)
def test_only_the_commands_that_use_a_setting_open_pyproject(
    bench: Bench, command: tuple[str, ...], opens: bool
) -> None:
    """list, show, plan, explain and schema never open pyproject.toml; check and grade do."""
    settings_file(bench.base, "jobs = 2\n")
    assert pyproject_opened(*command, cwd=bench.base) is opens


def test_each_setting_is_declared_once_with_its_default() -> None:
    """The file's keys, the defaults and the options a command reads are one list of names."""
    from dataclasses import fields

    from codegenie.eval._settings import DEFAULTS, Options, SettingsFile
    from codegenie.eval.check import DEFAULT_TIMEOUT

    names = [field.name for field in fields(Options)]
    assert list(SettingsFile.model_fields) == names
    # The file writes a name of two words with a hyphen, Python with an underscore.
    assert [name.replace("-", "_") for name in DEFAULTS] == names
    assert [field.alias or name for name, field in SettingsFile.model_fields.items()] == list(
        DEFAULTS
    )
    assert Options().timeout == DEFAULT_TIMEOUT
    given = resolve(load_settings(Path("/")), {"jobs": 3, "ignore": ["rubric-imported"]})
    assert given.options == Options(jobs=3, ignore=("rubric-imported",))
