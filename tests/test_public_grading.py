"""A harness grades from Python with public names only: the shipped bench, and docs/api.md's example."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import BenchManifest
from codegenie.eval.executors import Executor, get_executor
from codegenie.eval.grading import GradeOptions, GradeReport, grade_bench
from codegenie.eval.loader import load_cases
from codegenie.eval.sandboxes import Sandbox, choose_sandbox

REPO = Path(__file__).resolve().parent.parent
API = REPO / "docs" / "api.md"


def _grading_example() -> str:
    """The Python example of docs/api.md's ``## Grading`` section."""
    text = API.read_text(encoding="utf-8")
    section = text[text.index("## Grading") :]
    following = section.find("\n## ", 1)
    if following != -1:
        section = section[:following]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the Grading section has one Python example"
    return str(blocks[0])


def _private_imports(source: str) -> list[str]:
    """Every ``codegenie.eval._…`` module (or ``codegenie.eval`` private name) ``source`` imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [
            name
            for name in names
            if name.startswith("codegenie.") and any(p.startswith("_") for p in name.split("."))
        ]
    return found


def test_the_scanner_sees_a_private_import() -> None:
    """The fence's scanner catches each form of a private import."""
    source = (
        "import codegenie.eval._exec\n"
        "from codegenie.eval._env.store import Environment\n"
        "from codegenie.eval import _settings\n"
        "from codegenie.eval.grading import grade\n"
    )
    found = set(_private_imports(source))
    assert {
        "codegenie.eval._exec",
        "codegenie.eval._env.store",
        "codegenie.eval._settings",
    } <= found
    assert not any(name.startswith("codegenie.eval.grading") for name in found)


@pytest.mark.parametrize("where", ["this test", "docs/api.md"])
def test_the_public_grading_uses_no_private_name(where: str) -> None:
    """Neither this test nor the documented example imports a private module."""
    source = (
        Path(__file__).read_text(encoding="utf-8") if where == "this test" else _grading_example()
    )
    assert _private_imports(source) == []


def _expected_candidates(manifest: BenchManifest, slug: str, into: Path) -> int:
    """Copy each case's ``expected/`` to ``into/<case-id>/``; return how many cases."""
    cases = load_cases(slug, manifest.root_dir(slug), manifest=manifest)
    for case in cases:
        shutil.copytree(case.expected, into / case.id)
    return len(cases)


@pytest.mark.shipped_bench
def test_a_harness_grades_the_shipped_bench_with_public_names(tmp_path: Path) -> None:
    """The first task class of the shipped bench, its cases' expected/ as candidates: every one passes."""
    manifest = BenchManifest.load(REPO / "bench.toml")
    slug = manifest.slugs()[0]
    count = _expected_candidates(manifest, slug, tmp_path / "candidates")
    executor: Executor = get_executor("local")
    sandbox: Sandbox = choose_sandbox("auto")
    seen: list[int] = []
    try:
        report = grade_bench(
            slug,
            tmp_path / "candidates",
            bench_root=REPO,
            options=GradeOptions(jobs=2, reuse=False, run_name="expected"),
            executor=executor,
            sandbox=sandbox,
            on_result=lambda index, _: seen.append(index),
        )
    finally:
        executor.close()
    assert isinstance(report, GradeReport)
    assert report.task_class == slug
    assert report.total == count > 0
    assert report.ok, report.summary()
    assert sorted(seen) == list(range(count))
    assert report.run is not None
    assert report.run.name == "expected"
    assert report.sandbox == sandbox.mode


@pytest.mark.shipped_bench
def test_grade_bench_chooses_what_it_is_not_given(tmp_path: Path) -> None:
    """Without an executor or a sandbox, grade_bench makes a local one and the options' sandbox."""
    manifest = BenchManifest.load(REPO / "bench.toml")
    slug = manifest.slugs()[0]
    _expected_candidates(manifest, slug, tmp_path / "candidates")
    first = sorted(path.name for path in (tmp_path / "candidates").iterdir())[0]
    report = grade_bench(
        slug,
        tmp_path / "candidates",
        bench_root=REPO,
        options=GradeOptions(reuse=False, sandbox="none"),
        cases=[first],
    )
    assert [(r.case, r.status) for r in report.results] == [(first, "passed")]
    assert report.sandbox == "none"


@pytest.mark.shipped_bench
def test_the_api_docs_grading_example_runs() -> None:
    """docs/api.md's grading example, run as written from the repository's root, succeeds."""
    done = subprocess.run(
        [sys.executable, "-c", _grading_example()],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"(\d+)/\1 passed\n", done.stdout), done.stdout
