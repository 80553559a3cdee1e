"""The project's own CI stays green when a curator adds or removes a task class."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import BenchManifest

from .factory import make_bench
from .test_cli import run

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing says which files are the repository's")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (REPO / name).is_file()]


def _copy_of_the_repository(target: Path) -> Path:
    for name in _tracked_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    return target


def _undeclared_slug(repo: Path) -> str:
    """Return a slug that `new` can add to the copy: no declared slug, module or directory is its."""
    manifest = BenchManifest.load(repo / "bench.toml")
    modules = {entry.module for _, entry in manifest}
    for n in itertools.count(1):
        slug = f"curator-added-{n}"
        package = slug.replace("-", "_")
        if (
            slug not in manifest
            and f"bench.{package}.registration" not in modules
            and not (repo / "bench" / package).exists()
        ):
            return slug
    raise AssertionError("unreachable")


def _remove_first_task_class(repo: Path) -> str:
    """Delete the first declared task class, its table and its package; return its slug."""
    text = (repo / "bench.toml").read_text(encoding="utf-8")
    table = re.search(r"^\[task-classes\.([a-z0-9-]+)\]\n(?:[^\[\n].*\n|\n)*", text, re.MULTILINE)
    assert table is not None
    slug = table.group(1)
    (repo / "bench.toml").write_text(text.replace(table.group(0), "", 1), encoding="utf-8")
    shutil.rmtree(repo / "bench" / slug.replace("-", "_"))
    return slug


def test_shipped_bench_tests_pass_whatever_task_classes_it_holds(tmp_path: Path) -> None:
    """In a copy with one task class added by `new` and another removed, the shipped-bench tests and the linters pass.

    The added slug is one the repository does not declare: a curator who
    followed the README's walk-through in this repository already has its
    `secret-rotation`.
    """
    repo = _copy_of_the_repository(tmp_path / "repo")
    slug = _undeclared_slug(repo)
    added = run("new", slug, "--description", "A task class a curator added.", cwd=repo)
    assert added.returncode == 0, added.stderr
    removed = _remove_first_task_class(repo)
    listed = run("list", cwd=repo).stdout
    assert slug in listed.split()
    assert removed not in listed
    marked = sorted(
        str(path.relative_to(repo))
        for path in (repo / "tests").glob("test_*.py")
        if "shipped_bench" in path.read_text(encoding="utf-8")
    )
    tests = subprocess.run(
        [
            sys.executable,
            *("-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "shipped_bench"),
            *marked,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout
    for lint in (["format", "--check"], ["check"]):
        linted = subprocess.run(
            [str(BIN / "ruff"), *lint, "bench"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr


def test_the_added_slug_is_never_one_the_repository_declares(tmp_path: Path) -> None:
    """The slug the test adds skips declared slugs, their modules and existing directories."""
    bench = make_bench(tmp_path, "curator-added-1")
    bench.add("other", module="bench.curator_added_2.registration")
    (bench.root / "curator_added_3").mkdir()
    assert _undeclared_slug(tmp_path) == "curator-added-4"
