"""Settings in pyproject.toml: found, validated with locations, shown, and beaten by the command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval._settings import load_settings, resolve
from codegenie.eval.errors import SettingsInvalid

from .factory import Bench, make_bench


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
