"""The public grading API given hostile or confused arguments: typed errors, nothing left behind.

``GradeOptions`` refuses a value out of range when it is made (``ValueError``);
``grade_bench`` raises one of the documented errors before any rubric runs,
never blocks on a FIFO, and leaves nothing in the temporary directory.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.errors import CandidatesDirInvalid, TaskClassNotFound
from codegenie.eval.grading import GradeOptions, grade_bench

from .test_rubric_command import RUBRIC_SH, SHELL, SLUG, Bench


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """One shell task class and its candidates, plus odd candidate paths beside them."""
    made = Bench(tmp_path_factory.mktemp("public"), "rubric.sh", RUBRIC_SH, SHELL)
    os.mkfifo(made.base / "fifo")
    (made.base / "loop-a").symlink_to(made.base / "loop-b")
    (made.base / "loop-b").symlink_to(made.base / "loop-a")
    return made


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of the test's own: what a grading leaves there is seen."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    monkeypatch.setenv("TMPDIR", str(directory))
    return directory


@pytest.mark.parametrize(
    "settings",
    [
        {"jobs": 0},
        {"jobs": -1},
        {"jobs": True},
        {"jobs": 2.5},
        {"stop_after": 0},
        {"pass_at": (0,)},
        {"pass_at": ()},
        {"fail_under": math.nan},
        {"fail_under": math.inf},
        {"fail_under": -0.1},
    ],
)
def test_an_option_out_of_range_is_refused_when_made(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(settings))):
        GradeOptions(**settings)


@pytest.mark.parametrize("settings", [{"sandbox": "docker"}, {"over_limit": "bogus"}])
def test_a_word_no_option_knows_is_refused_when_made(settings: dict[str, Any]) -> None:
    """docs/api.md: "a value out of range raises ValueError when it is made"."""
    with pytest.raises(ValueError, match=next(iter(settings))):
        GradeOptions(**settings)


def test_an_unknown_sandbox_word_is_refused_before_any_run(bench: Bench, scratch: Path) -> None:
    with pytest.raises(ValueError, match="sandbox must be one of auto, bwrap, none, got 'docker'"):
        grade_bench(
            SLUG,
            bench.base / "candidates",
            bench_root=bench.base,
            options=GradeOptions(sandbox="docker"),
        )
    assert list(scratch.iterdir()) == []


def test_an_undeclared_slug_is_task_class_not_found(bench: Bench, scratch: Path) -> None:
    with pytest.raises(TaskClassNotFound) as raised:
        grade_bench("sh-tsak", bench.base / "candidates", bench_root=bench.base)
    assert "did you mean 'sh-task'?" in str(raised.value)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "samples", "said"),
    [
        ("fifo", False, "is neither a directory nor a JSON Lines file"),
        ("fifo", True, "is neither a directory nor a JSON Lines file"),
        ("loop-a", False, "cannot be read: Too many levels of symbolic links"),
        ("loop-a", True, "cannot be read: Too many levels of symbolic links"),
        ("nothing-here", False, "does not exist"),
    ],
)
def test_candidates_that_are_no_directory_are_refused_without_blocking(
    bench: Bench, scratch: Path, name: str, samples: bool, said: str
) -> None:
    """A FIFO is never opened (it would wait for a writer); a symbolic-link loop is named."""
    with pytest.raises(CandidatesDirInvalid) as raised:
        grade_bench(
            SLUG,
            bench.base / name,
            bench_root=bench.base,
            samples=samples,
            options=GradeOptions(sandbox="none"),
        )
    assert said in str(raised.value)
    assert list(scratch.iterdir()) == []
