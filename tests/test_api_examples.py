"""The examples of docs/api.md's checking, reports and environments sections run, on real benches.

Each section's Python example is run as a script, in a subprocess, in a bench
made from nothing in ``tmp_path`` by the console script (``init``, ``new``)
with whatever the example reads made the way a user makes it: grade reports
by ``codegenie-bench grade``, an environment declared in ``bench.toml``.
This module imports nothing of the package: the fence tests hold it to that.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
API = REPO / "docs" / "api.md"
BIN = Path(sys.executable).parent
SLUG = "demo-task"
CASES = Path("bench") / "demo_task" / "cases"


def section_examples(title: str) -> list[str]:
    """The ```python blocks of the docs/api.md section headed ``## {title}``."""
    text = API.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEGENIE")}
    env |= {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "CODEGENIE_ENV_DIR": str(tmp_path / "environments"),
        "NO_COLOR": "1",
    }
    return env


def tool(
    home: Path, env: dict[str, str], *args: str, codes: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    """Run the installed console script in ``home``; fail unless it exits with one of ``codes``."""
    done = subprocess.run(
        [str(BIN / "codegenie-bench"), *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in codes, (args, done.stdout, done.stderr)
    return done


def new_bench(tmp_path: Path, env: dict[str, str]) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    tool(home, env, "init")
    tool(home, env, "new", SLUG)
    return home


def run_examples(title: str, home: Path, env: dict[str, str]) -> list[str]:
    """Run each example of the section as a script in ``home``; return what each printed."""
    examples = section_examples(title)
    assert examples, title
    printed = []
    for example in examples:
        script = home / "example.py"
        script.write_text(example, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (example, done.stdout, done.stderr)
        printed.append(done.stdout)
    return printed


def test_the_checking_example_runs(tmp_path: Path) -> None:
    """The checking example checks a fresh bench and finds it ok."""
    env = environment(tmp_path)
    home = new_bench(tmp_path, env)
    (printed,) = run_examples("Checking", home, env)
    assert "checked 1 task class" in printed


def _candidates(home: Path, name: str, tree: str) -> Path:
    """A directory of one candidate per case, each a copy of the case's ``tree`` (input, expected)."""
    candidates = home / name
    for case in sorted((home / CASES).iterdir()):
        shutil.copytree(case / tree, candidates / case.name)
    return candidates


def test_the_reports_example_reads_compares_and_merges(tmp_path: Path) -> None:
    """The reports example compares a failing run with a passing one and merges two shards."""
    env = environment(tmp_path)
    home = new_bench(tmp_path, env)
    base, new = _candidates(home, "base", "input"), _candidates(home, "new", "expected")
    common = ("--format", "json", "--sandbox", "none", "-q")
    # A run that does not pass (and a shard of no case) exits 1, its report written all the same.
    tool(home, env, "grade", SLUG, str(base), *common, "--output-file", "base.json", codes=(1,))
    tool(home, env, "grade", SLUG, str(new), *common, "--output-file", "new.json")
    for index in (1, 2):
        shard = ("--shard", f"{index}/2", "--output-file", f"shard-{index}.json")
        tool(home, env, "grade", SLUG, str(new), *common, *shard, codes=(0, 1))
    (printed,) = run_examples("Reports: reading, comparing, merging", home, env)
    assert "example improved" in printed


def test_the_environments_example_lists_and_builds(tmp_path: Path) -> None:
    """The environments example builds the environment a task class declares, then finds it built."""
    env = environment(tmp_path)
    home = new_bench(tmp_path, env)
    manifest = home / "bench.toml"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    text = manifest.read_text(encoding="utf-8")
    declared = text.replace(
        f"[task-classes.{SLUG}]\n", f'[task-classes.{SLUG}]\npython = "{version}"\n'
    )
    assert declared != text
    manifest.write_text(declared, encoding="utf-8")
    (printed,) = run_examples("Environments", home, env)
    assert printed.startswith(f"{SLUG} {sys.version.split()[0]} not built\n")


@pytest.mark.parametrize(
    "title", ["Checking", "Reports: reading, comparing, merging", "Environments"]
)
def test_each_section_has_an_example(title: str) -> None:
    """Each section of the public modules shows one example (which the tests above run)."""
    assert len(section_examples(title)) == 1
