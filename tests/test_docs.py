"""The documents a user reads first stay true to the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from codegenie.eval import errors
from codegenie.eval.cli import UsageError

REPO = Path(__file__).resolve().parent.parent
# Every error a command can end with: the library's, and the command line's own.
ERROR_CLASSES = [
    *(
        getattr(errors, name)
        for name in errors.__all__
        if isinstance(getattr(errors, name), type)
        and issubclass(getattr(errors, name), errors.EvalError)
        and getattr(errors, name) is not errors.EvalError
    ),
    UsageError,
]


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_error_table_lists_each_error_with_code_and_exit_code(cls: type[errors.EvalError]) -> None:
    """docs/errors.md has a row for every error: its name, code, attributes and exit code."""
    table = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    row = next(
        (line for line in table.splitlines() if line.startswith(f"| `{cls.__name__}` ")), None
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


# -- every example of README.md and docs/cli.md, replayed against the real tool ---------

#: Where the documents say their console examples ran: an empty directory.
EXAMPLE_HOME = "/home/curator/my-bench"
REPLAYED = ("README.md", "docs/cli.md")


@dataclass(frozen=True)
class Block:
    """One fenced block of a document: its language, its text, and the block before it."""

    document: str
    line: int
    language: str
    text: str
    previous: Block | None

    def __str__(self) -> str:
        return f"{self.document}:{self.line}"


def _blocks(document: str) -> list[Block]:
    text = (REPO / document).read_text(encoding="utf-8")
    found: list[Block] = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        line = text.count("\n", 0, match.start()) + 1
        previous = found[-1] if found else None
        found.append(Block(document, line, match.group(1), match.group(2), previous))
    return found


BLOCKS = [block for document in REPLAYED for block in _blocks(document)]


def _environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )


def _steps(text: str) -> list[tuple[str, list[str]]]:
    """Split a console block into (command, output lines); a here-document belongs to its command."""
    steps: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    while lines:
        line = lines.pop(0)
        if not line.startswith("$ "):
            steps[-1][1].append(line)
            continue
        command = line[2:]
        here = re.search(r"<<'?(\w+)'?\s*$", command)
        if here is not None:
            body = []
            while lines and lines[0] != here.group(1):
                body.append(lines.pop(0))
            lines.pop(0)
            command = "\n".join([command, *body, here.group(1)])
        steps.append((command, []))
    return steps


def _replay_console(block: Block, home: Path) -> None:
    """Run each command in ``home`` (stdout and stderr as a terminal interleaves them)."""
    last = 0
    for command, expected in _steps(block.text):
        if command == "echo $?":
            output = f"{last}\n"
        else:
            result = _shell(command, home)
            output, last = result.stdout, result.returncode
            if command.startswith("codegenie-bench grade"):
                # How long a rubric ran differs from run to run; the document shows 0.03s.
                output = re.sub(r"\b\d\.\d\ds\b", "0.03s", output)
        wanted = "".join(line + "\n" for line in expected).replace(EXAMPLE_HOME, str(home))
        assert output == wanted, f"{block}: $ {command}"


def _bench_with(home: Path, *slugs: str) -> None:
    for command in ("init", *(f"new {slug}" for slug in slugs)):
        assert _shell(f"codegenie-bench {command}", home).returncode == 0


def _replay(block: Block, home: Path) -> None:
    if block.language == "console":
        _replay_console(block, home)
    elif block.language == "sh":
        # Installing and testing from a fresh checkout: .ci/run runs exactly these.
        ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
        for command in block.text.strip().splitlines():
            assert command.split(" && ")[-1] in ci, command
    elif block.language == "text":
        # The main job's output for the task classes it names, in a bench holding them.
        before = block.previous
        while before is not None and not before.text.strip().endswith("codegenie-bench plan"):
            before = before.previous
        assert before is not None, f"{block}: output of no command"
        _bench_with(home, *(line.split()[0] for line in block.text.splitlines()))
        assert _shell("codegenie-bench plan", home).stdout == block.text
    elif block.language == "toml":
        (home / "bench.toml").write_text(block.text, encoding="utf-8")
        assert _shell("codegenie-bench list", home).returncode == 0
    elif block.language == "python":
        path = block.text.splitlines()[0].removeprefix("# ")
        slug = Path(path).parent.name.replace("_", "-")
        _bench_with(home, slug)
        (home / path).write_text(block.text, encoding="utf-8")
        shown = _shell(f"codegenie-bench show {slug} --format json", home)
        assert shown.returncode == 0, shown.stdout
    elif block.language == "pycon":
        _bench_with(home, "vuln-remediation")
        (home / "example.txt").write_text(block.text, encoding="utf-8")
        result = _shell(f"{sys.executable} -m doctest example.txt", home)
        assert result.returncode == 0, result.stdout
    else:
        pytest.fail(f"{block}: no way to replay a {block.language or 'plain'} block")


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_every_example_replays_against_the_real_tool(tmp_path: Path, block: Block) -> None:
    """Each example block of README.md and docs/cli.md is what the tool does, replayed in an empty directory."""
    home = tmp_path / "my-bench"
    home.mkdir()
    _replay(block, home)


def test_the_walkthrough_starts_from_an_empty_directory() -> None:
    """The README walk-through's first command is init: it needs nothing but an empty directory."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    walkthrough = readme.split("## Curator walk-through", 1)[1]
    assert re.search(r"```console\n\$ codegenie-bench init\n", walkthrough)
