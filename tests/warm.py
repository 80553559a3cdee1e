"""What the warm workers' tests share: the sandbox, a spy on the warm path, a bench of probes.

A test makes runs through :func:`codegenie.eval.rubrics.run_rubrics` (the
batch path ``grade`` takes, which uses warm workers under bubblewrap); the
:func:`spy` fixture lists the case ids of the runs a warm worker made, so a
test cannot pass on the plain path by accident.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval import rubrics
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval._sandbox.warm import worker as warm
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import RubricResult

from .factory import write_case


@pytest.fixture
def bwrap() -> rubrics.Sandbox:
    """The sandbox, or the test is skipped where bubblewrap cannot start."""
    try:
        return rubrics.choose_sandbox("bwrap")
    except Exception as exc:
        pytest.skip(f"no sandbox here: {exc}")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The case ids of the runs warm workers made."""
    made: list[str] = []
    original = warm.WarmWorker.run

    def run(self: warm.WarmWorker, prepared: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(os.path.basename(command[3]))
        return original(self, prepared, command, *args, **kwargs)

    monkeypatch.setattr(warm.WarmWorker, "run", run)
    return made


def bench(
    tmp_path: Path,
    rubric: str,
    cases: list[str],
    *,
    toml: str = "",
    limits: Limits | None = None,
    name: str = "probe",
) -> tuple[Path, list[Case]]:
    """Write a task class ``name`` whose rubric is ``rubric``, with ``cases``; return both."""
    task_class = tmp_path / "bench" / name
    task_class.mkdir(parents=True, exist_ok=True)
    (task_class / "rubric.py").write_text(textwrap.dedent(rubric), encoding="utf-8")
    made = []
    extra: dict[str, Any] = {} if limits is None else {"limits": limits}
    for case_id in cases:
        directory = write_case(task_class / "cases", case_id, toml, input_files={"x.txt": "x\n"})
        made.append(Case(task_class=name, id=case_id, directory=directory, timeout=60, **extra))
    return task_class / "rubric.py", made


def grade(
    rubric: Path, cases: list[Case], box: rubrics.Sandbox, *, jobs: int = 1
) -> list[RubricResult]:
    """Run ``rubric`` on each case's ``input/``, ``jobs`` at a time: ``grade``'s way."""
    runs = [RunSpec.of(rubric, case, case.input, sandbox=box.policy) for case in cases]
    return rubrics.run_rubrics(runs, jobs=jobs, sandbox=box)
