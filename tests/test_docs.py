"""The documents a user reads first stay true to the code."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import errors

REPO = Path(__file__).resolve().parent.parent
ERROR_CLASSES = [
    getattr(errors, name)
    for name in errors.__all__
    if isinstance(getattr(errors, name), type)
    and issubclass(getattr(errors, name), errors.EvalError)
    and getattr(errors, name) is not errors.EvalError
]


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_error_table_lists_each_error_with_code_and_exit_code(cls: type[errors.EvalError]) -> None:
    """docs/errors.md has a row for every error: its name, code, attributes and exit code."""
    table = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    row = next(
        (line for line in table.splitlines() if line.startswith(f"| `{cls.__name__}` |")), None
    )
    assert row is not None
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == f"`{cls.code}`"
    for field in cls.fields:
        assert field in cells[2]
    if cls is not errors.RunPlanError:
        assert cells[3] == str(cls.exit_code)


def test_every_logged_event_is_documented() -> None:
    """Each event ID the loader logs appears in docs/errors.md, and no other."""
    source = (REPO / "src" / "codegenie" / "eval" / "loader.py").read_text(encoding="utf-8")
    logged = set(re.findall(r'_log\.\w+\(\s*"([a-z_.]+)"', source))
    documented = set(
        re.findall(r"\| `(loader\.[a-z_]+)` \|", (REPO / "docs" / "errors.md").read_text())
    )
    assert logged == documented
    for event in logged:
        assert re.fullmatch(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*", event)


def _readme_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quick_start)


def test_readme_quick_start_is_two_commands() -> None:
    """The quick start is exactly two commands: the main job and the tests."""
    commands = _readme_commands()
    assert len(commands) == 2
    assert commands[0].endswith(".venv/bin/codegenie-bench plan")
    assert commands[1].endswith("python -m pytest")


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs the README's test command, as written there."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert _readme_commands()[1] in ci.splitlines()
    assert ".venv/bin/codegenie-bench plan" in ci.splitlines()


WALKTHROUGH_HOME = "/home/curator/codegenie-eval"


def test_readme_curator_walkthrough_replays_exactly(tmp_path: Path) -> None:
    """Each command of the README walk-through prints exactly what the README shows."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Curator walk-through", 1)[1]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None
    steps: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    checkout = tmp_path / "codegenie-eval"
    checkout.mkdir()
    shutil.copy(REPO / "bench.toml", checkout)
    shutil.copytree(
        REPO / "bench", checkout / "bench", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    last = 0
    for command, expected in steps:
        if command == "echo $?":
            output = f"{last}\n"
        else:
            result = subprocess.run(
                ["bash", "-c", command + " 2>&1"],
                cwd=checkout,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            output, last = result.stdout, result.returncode
        wanted = "\n".join(expected).replace(WALKTHROUGH_HOME, str(checkout)) + "\n"
        assert output == wanted, command
