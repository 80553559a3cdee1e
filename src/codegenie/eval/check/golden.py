"""``check --rubrics``: every case's rubric on its known-good solution and on its input.

A case whose ``expected/`` fails its rubric (``golden-fails``) or whose
``input/`` already passes it (``input-passes``: solved by doing nothing)
corrupts every score measured on it. Each case's rubric runs twice through
:func:`codegenie.eval.rubrics.run_rubric`, which hands the rubric copies, so
the bench is left byte for byte as it was. Runs go ``jobs`` at a time; each is
a subprocess, so threads are enough to drive them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codegenie.eval.cases import CASE_FILE, Case
from codegenie.eval.check.codes import diagnostic
from codegenie.eval.check.static import display_path
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.rubrics import RubricResult, Sandbox, run_rubric

__all__ = ("CaseRun", "golden_diagnostics")

Side = Literal["expected", "input"]


@dataclass(frozen=True, slots=True)
class CaseRun:
    """One rubric run to make: ``case`` of ``slug`` on its ``side``."""

    slug: str
    rubric: Path
    case: Case
    side: Side

    @property
    def case_id(self) -> str:
        """The case's id."""
        return self.case.id

    @property
    def directory(self) -> Path:
        """The case's directory."""
        return self.case.directory

    @property
    def timeout(self) -> float:
        """The case's timeout, in seconds."""
        return self.case.timeout


def _judge(run: CaseRun, result: RubricResult) -> Iterator[Diagnostic]:
    def found(code: str, message: str) -> Diagnostic:
        file = display_path(run.directory / CASE_FILE)
        return diagnostic(code, message, file=file, line=1, column=1, slug=run.slug)

    name = f"case {run.case_id!r} of {run.slug!r}"
    reason = f": {result.reason}" if result.reason else ""
    if result.status == "timeout":
        yield found(
            "rubric-timeout",
            f"the rubric did not decide on {run.side}/ of {name} within {run.timeout:g} s",
        )
    elif result.status == "error":
        yield found(
            "rubric-error", f"the rubric broke its protocol on {run.side}/ of {name}{reason}"
        )
    elif run.side == "expected" and result.status == "failed":
        yield found("golden-fails", f"the known-good solution (expected/) of {name} fails{reason}")
    elif run.side == "input" and result.status == "passed":
        yield found("input-passes", f"the unsolved input (input/) of {name} already passes{reason}")


def golden_diagnostics(runs: list[CaseRun], *, jobs: int, sandbox: Sandbox) -> list[Diagnostic]:
    """Run every rubric run in ``sandbox``, ``jobs`` at a time; return what they found wrong."""
    if not runs:
        return []
    # Deferred for the check's workers, which import this package but never run
    # rubrics: concurrent.futures brings logging, whose fork handlers would run
    # at the fork of every slug.
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    def one(run: CaseRun) -> RubricResult:
        return run_rubric(run.rubric, run.case, run.directory / run.side, sandbox=sandbox)

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(runs)))) as pool:
        results = list(pool.map(one, runs))
    return [
        found for run, result in zip(runs, results, strict=True) for found in _judge(run, result)
    ]
