"""The repository's own bench, whatever task classes it holds: each loads, and its rubric grades."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codegenie.eval import BenchManifest, TaskClassRegistry
from codegenie.eval.loader import load_task_class

pytestmark = pytest.mark.shipped_bench

REPO = Path(__file__).resolve().parent.parent
MANIFEST = BenchManifest.load(REPO / "bench.toml")


@pytest.mark.parametrize("slug", MANIFEST.slugs())
def test_shipped_task_class_resolves_without_importing_its_rubric(slug: str) -> None:
    """Each shipped slug loads from its root, with an existing rubric and at least one case."""
    task_class = load_task_class(slug, MANIFEST.root_dir(slug), registry=TaskClassRegistry())
    assert task_class.name == slug
    assert task_class.description
    assert task_class.rubric is not None
    assert task_class.rubric.is_file()
    assert task_class.cases is not None
    assert [p for p in task_class.cases.iterdir() if p.is_dir()]
    assert not [name for name in sys.modules if name.endswith(".rubric")]


def _cases() -> list[tuple[str, Path]]:
    found = []
    for slug, entry in MANIFEST:
        case_root = entry.case_dir(REPO / entry.root) / "cases"
        found += [(slug, case) for case in sorted(case_root.iterdir()) if case.is_dir()]
    return found


@pytest.mark.parametrize(("slug", "case"), _cases(), ids=lambda v: getattr(v, "name", v))
def test_rubric_runs_as_a_subprocess_and_grades_each_case(slug: str, case: Path) -> None:
    """The rubric, run as a script, passes the expected solution and fails the untouched input."""
    rubric = case.parent.parent / "rubric.py"
    verdicts = {}
    for candidate in ("expected", "input"):
        result = subprocess.run(
            [sys.executable, str(rubric), str(case), str(case / candidate)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        verdict = json.loads(result.stdout)
        assert verdict["case"] == case.name
        verdicts[candidate] = (result.returncode, verdict["passed"])
    assert verdicts == {"expected": (0, True), "input": (1, False)}


@pytest.mark.parametrize("slug", MANIFEST.slugs())
def test_rubric_usage_error_exits_2(slug: str) -> None:
    """A rubric called without its arguments prints usage and exits 2."""
    rubric = MANIFEST.entry(slug).case_dir(REPO / MANIFEST.entry(slug).root) / "rubric.py"
    result = subprocess.run(
        [sys.executable, str(rubric)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "Usage" in result.stderr
