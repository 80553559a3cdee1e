"""What `new` writes passes ruff (its defaults, and this project's rules) and mypy, as written."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval.scaffold import python_string, registration_source

from .test_cli import run

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

DESCRIPTIONS = {
    "secret-rotation": "Rotate a leaked credential out of a repository.",
    "quoting": "Say \"hello\" to 'them' \\ and a backslash",
    "long-description": "Rotate every leaked credential " * 12,
    "unicode": "Réparer l\u2019accès \u2013 naïve 日本語 \U0001f600, \x1b[2J\nsecond line\ttab",
    "one-long-word": "x" * 230,
    "a" + "-b" * 31 + "c": "The longest slug there is.",
    "between-widths": "Rotate a leaked credential out of a repository, and make sure it is gone.",
    "just-over": "x" * 84,
}


def _tool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def _scaffold_every_description(tmp_path: Path) -> None:
    assert run("init", cwd=tmp_path).returncode == 0
    for slug, description in DESCRIPTIONS.items():
        created = run("new", slug, "--description", description, cwd=tmp_path)
        assert created.returncode == 0, created.stderr


def test_scaffolds_pass_ruff_with_its_default_settings(tmp_path: Path) -> None:
    """`new` output passes `ruff format --check` and `ruff check` in a repository without ruff settings."""
    _scaffold_every_description(tmp_path)
    ruff = str(BIN / "ruff")
    formatted = _tool(ruff, "format", "--isolated", "--check", "--diff", "bench", cwd=tmp_path)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    checked = _tool(ruff, "check", "--isolated", "bench", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_scaffolds_pass_ruff_format_ruff_check_and_mypy_strict(tmp_path: Path) -> None:
    """`new` output passes this project's ruff rules (at ruff's default line length) and `mypy --strict`."""
    settings = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    # What `new` writes is formatted for ruff's default width, the one a curator's repository has.
    settings = settings.replace("line-length = 100", "line-length = 88")
    (tmp_path / "pyproject.toml").write_text(settings, encoding="utf-8")
    assert run("init", cwd=tmp_path).returncode == 0
    for slug, description in DESCRIPTIONS.items():
        created = run("new", slug, "--description", description, cwd=tmp_path)
        assert created.returncode == 0, created.stderr
    formatted = _tool(str(BIN / "ruff"), "format", "--check", "--diff", "bench", cwd=tmp_path)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    checked = _tool(str(BIN / "ruff"), "check", "bench", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    typed = _tool(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--cache-dir",
        str(tmp_path / ".mypy_cache"),
        "bench",
        cwd=tmp_path,
    )
    assert typed.returncode == 0, typed.stdout + typed.stderr
    shown = run("show", "unicode", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert '"description": "R\\u00e9parer l\\u2019acc\\u00e8s' in shown.stdout


@given(st.text(max_size=300))
def test_a_description_is_written_as_a_literal_of_itself(text: str) -> None:
    """Whatever the description, the generated literal evaluates back to it (property)."""
    assert ast.literal_eval(python_string(text)) == text


@pytest.mark.parametrize("description", DESCRIPTIONS.values())
def test_registration_source_keeps_every_line_within_the_limit(description: str) -> None:
    """No generated line is longer than ruff's default line length (88), unless it is one word."""
    source = registration_source("a" + "-b" * 31 + "c", description)
    ast.parse(source)
    for line in source.splitlines():
        assert len(line) <= 88 or " " not in line.strip(), line
