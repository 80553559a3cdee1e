"""Grade candidates: a task class's rubric on ``CANDIDATES_DIR/<case-id>/`` for each case.

:func:`grade` runs :func:`codegenie.eval.rubrics.run_rubric`
on every selected case whose candidate directory is there, ``jobs`` at a time
in threads (each run is a subprocess, so threads are enough to drive them),
and returns a :class:`GradeReport` whose results are in case-id order
whatever order the runs finished in. A case without a candidate is
``"missing"`` and its rubric is not run. The bench and the candidates are
left byte for byte as they were: the rubric only ever sees copies.

:func:`select_cases` turns ``grade --case ID…`` into cases, refusing an id
the task class does not have (``CaseNotFound``, with suggestions);
:func:`select` applies a whole :class:`~codegenie.eval._selection.Selection`
(``--case``, ``-k``, ``--tag``, ``--lf``, ``--shard``) once.

Nothing here prints: the command line (``codegenie-bench grade``) shows
progress through :func:`grade`'s ``on_result`` callback.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Literal, final

from pydantic import BaseModel, ConfigDict

from codegenie.eval._ledger.reuse import Ledger
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox.choices import ProviderName
from codegenie.eval._selection import Selection
from codegenie.eval.cases import Case
from codegenie.eval.errors import CaseNotFound
from codegenie.eval.rubrics import (
    RubricResult,
    Sandbox,
    choose_sandbox,
    rubric_traceback,
    run_rubrics,
)

__all__ = (
    "VERDICT_LIMIT",
    "GradeReport",
    "GradeResult",
    "GradeStatus",
    "default_jobs",
    "grade",
    "select",
    "select_cases",
)

GradeStatus = Literal["passed", "failed", "missing", "error"]

# The order the summary line counts what did not pass in.
_NOT_PASSED: tuple[GradeStatus, ...] = ("failed", "error", "missing")
# The order of the JSON document's counts.
_STATUSES: tuple[GradeStatus, ...] = ("passed", "failed", "missing", "error")


@final
class GradeResult(BaseModel):
    """What grading found for one case.

    ``status``: ``"passed"`` and ``"failed"`` are the rubric's verdict;
    ``"error"`` is a rubric that broke its protocol, crashed or ran out of
    time (``reason`` says which: a timeout's reason says so); ``"missing"``
    is a case without a candidate directory, whose rubric was not run
    (``duration_s`` is ``None``). ``score`` is the verdict's score, when it
    gave one. ``wall_s``, ``cpu_s`` and ``peak_memory_mib`` are what the run
    used; ``limit`` names the limit an ``"error"`` run exceeded (``"memory"``,
    ``"processes"``, ``"file-size"``, ``"cpu-time"``, ``"disk"``,
    ``"disk-files"``): not the candidate's
    fault, so the summary counts it apart. An ``"error"`` keeps the end of
    the rubric's stderr (``stderr_tail``) and, when it raised, its
    ``traceback``. ``verdict`` is the JSON object the rubric printed, its
    own keys (``tests_run``, ``coverage``…) included, when it printed one
    and it takes at most :data:`VERDICT_LIMIT` bytes as JSON; a larger one
    keeps ``passed``, ``score`` and ``reason`` and says, under ``"omitted"``,
    how large the rest was.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    case: str
    status: GradeStatus
    score: float | None = None
    reason: str | None = None
    duration_s: float | None = None
    wall_s: float | None = None
    cpu_s: float | None = None
    peak_memory_mib: float | None = None
    limit: str | None = None
    stderr_tail: str | None = None
    traceback: str | None = None
    verdict: dict[str, Any] | None = None

    @classmethod
    def from_rubric(cls, result: RubricResult) -> GradeResult:
        """Return the grade of a rubric run: passed, failed, or error (a timeout is an error)."""
        status: GradeStatus = "error" if result.status == "timeout" else result.status
        return cls(
            case=result.case,
            status=status,
            score=result.score,
            reason=result.reason,
            duration_s=result.duration_s,
            wall_s=result.wall_s,
            cpu_s=result.cpu_s,
            peak_memory_mib=result.peak_memory_mib,
            limit=result.limit,
            stderr_tail=result.stderr_tail if status == "error" else None,
            traceback=rubric_traceback(result.stderr_tail) if status == "error" else None,
            verdict=_bounded(result.verdict),
        )

    @classmethod
    def missing(cls, case: str, candidate: Path) -> GradeResult:
        """Return the grade of a case with nothing at ``candidate``."""
        return cls(case=case, status="missing", reason=f"no candidate directory {candidate}")

    def to_json(self) -> dict[str, Any]:
        """Return one entry of ``grade``'s JSON ``results``.

        Its keys are the model's fields, in order: case, status, score,
        reason, duration_s, wall_s, cpu_s, peak_memory_mib, limit, for an
        ``"error"`` the end of the rubric's stderr and its traceback, if it
        raised (``null`` otherwise), and the rubric's verdict object.
        """
        return self.model_dump()


@final
class GradeReport(BaseModel):
    """Every result of one ``grade`` run, in case-id order.

    ``ok`` is true when there was at least one case and every case passed:
    a missing candidate or a rubric error is not a pass, and grading no case
    at all proves nothing (so it is not ok either). ``stopped`` says that
    the grading stopped early (``grade(..., stop_after=N)``): ``results``
    then hold only the cases graded before it stopped. ``reused`` counts the
    results answered from the store, however the grading ended.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    task_class: str
    results: tuple[GradeResult, ...]
    sandbox: ProviderName = "bwrap"
    reused: int = 0
    stopped: bool = False

    @property
    def passed(self) -> int:
        """How many cases passed."""
        return self.count("passed")

    @property
    def total(self) -> int:
        """How many cases were graded (missing ones included)."""
        return len(self.results)

    @property
    def ok(self) -> bool:
        """Whether there was a case to grade and every one passed."""
        return self.total > 0 and self.passed == self.total

    def count(self, status: GradeStatus) -> int:
        """How many results have ``status``."""
        return sum(result.status == status for result in self.results)

    @property
    def mean_score(self) -> float | None:
        """The mean of the scores the rubric gave, over the cases that have one; else ``None``."""
        scores = [result.score for result in self.results if result.score is not None]
        return sum(scores) / len(scores) if scores else None

    def counts(self) -> dict[GradeStatus, int]:
        """How many results have each status: passed, failed, missing, error (zeros included)."""
        return {status: self.count(status) for status in _STATUSES}

    def summary(self, paint: Callable[[GradeStatus, str], str] | None = None) -> str:
        """Return the summary line: ``3/6 passed (1 failed, 2 errors, 1 missing)``.

        ``paint(status, words)`` may decorate each count's words (the command
        line colours them); by default they are left as they are.
        """

        def shown(status: GradeStatus, words: str) -> str:
            return paint(status, words) if paint is not None else words

        line = f"{self.passed}/{self.total} " + shown("passed", "passed")
        if not self.results:
            return line + " (no cases to grade)"
        # Errors of runs that exceeded a limit are counted apart: not the candidate's fault.
        over = sum(result.limit is not None for result in self.results)
        others = [
            shown(status, _counted(count, status))
            for status in _NOT_PASSED
            if (count := self.count(status) - (over if status == "error" else 0))
        ]
        if over:
            others.append(shown("error", f"{over} over a limit"))
        return line + (f" ({', '.join(others)})" if others else "")

    def to_json(self) -> dict[str, Any]:
        """Return ``grade``'s JSON document.

        ``task_class``, ``results``, ``passed``, ``total``, then ``counts``
        (every status, zeros included), ``ok`` and ``mean_score``.
        """
        return {
            "task_class": self.task_class,
            "sandbox": self.sandbox,
            "reused": self.reused,
            "results": [result.to_json() for result in self.results],
            "passed": self.passed,
            "total": self.total,
            "counts": self.counts(),
            "ok": self.ok,
            "mean_score": self.mean_score,
        }


#: The most bytes of a rubric's verdict (as compact JSON) a result keeps whole.
VERDICT_LIMIT: Final = 64 * 1024
# The keys of the protocol, kept of a verdict too large to keep whole.
_PROTOCOL_KEYS: Final = ("passed", "score", "reason")


def _bounded(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return ``verdict`` whole when it takes at most :data:`VERDICT_LIMIT` bytes, else its gist."""
    if verdict is None:
        return None
    size = len(json.dumps(verdict, separators=(",", ":"), ensure_ascii=False).encode())
    if size <= VERDICT_LIMIT:
        return verdict
    kept: dict[str, Any] = {key: verdict[key] for key in _PROTOCOL_KEYS if key in verdict}
    kept["omitted"] = f"the verdict took {size:,} bytes as JSON, more than {VERDICT_LIMIT:,}"
    return kept


def _counted(count: int, status: GradeStatus) -> str:
    """``2 errors``, ``1 error``, ``2 failed``: a count and its status, as English says it."""
    noun = "errors" if status == "error" and count != 1 else status
    return f"{count} {noun}"


def default_jobs() -> int:
    """Return how many rubrics run at once when not told: the number of CPUs (at least 1)."""
    return os.cpu_count() or 1


def select_cases(
    task_class: str, cases: Sequence[Case], ids: Iterable[str] | None
) -> tuple[Case, ...]:
    """Return the cases named by ``ids`` (``None``: all of them), sorted by id, each once.

    Raises ``CaseNotFound`` for the first id (in the order given) that no
    case has, with the closest existing ids as suggestions. The ids are
    expected to be valid case ids already (the command line checks them).
    """
    if ids is None:
        return tuple(sorted(cases, key=lambda case: case.id))
    by_id = {case.id: case for case in cases}
    wanted = dict.fromkeys(ids)
    for case_id in wanted:
        if case_id not in by_id:
            available = tuple(sorted(by_id))
            close = tuple(difflib.get_close_matches(case_id, available, n=5, cutoff=0.6))
            raise CaseNotFound(task_class, case_id, available, close)
    return tuple(sorted((by_id[case_id] for case_id in wanted), key=lambda case: case.id))


def select(task_class: str, cases: Sequence[Case], selection: Selection) -> tuple[Case, ...]:
    """Return the cases ``selection`` selects, sorted by id, each once.

    Raises ``CaseNotFound`` (as :func:`select_cases` does) for an id of
    ``selection.ids`` that no case has.
    """
    named = select_cases(task_class, cases, selection.ids)
    return tuple(case for case in named if selection.selects(case))


class _Stop(Exception):
    """Enough cases did not pass (``stop_after``): the cases not started never start."""


def grade(
    task_class: str,
    rubric: Path | None,
    cases: Sequence[Case],
    candidates: Path,
    *,
    jobs: int | None = None,
    on_result: Callable[[int, GradeResult], None] | None = None,
    shown_as: Path | None = None,
    sandbox: Sandbox | str = "auto",
    reuse: bool = True,
    stop_after: int | None = None,
) -> GradeReport:
    """Grade ``CANDIDATES/<case-id>/`` with ``rubric`` for each of ``cases``; return the report.

    ``jobs`` rubrics run at once (default :func:`default_jobs`), in threads,
    never more than the open-file limit (``ulimit -n``) leaves room for.
    A case with nothing at its candidate path is ``"missing"`` at once, its
    rubric not run; anything there that is not a directory is a rubric
    ``"error"`` (``run_rubric`` says so), and so is every run of a task class
    whose ``rubric`` is ``None`` (defined where no file exists). Results come back in case-id
    order, whatever order the runs finish in. ``on_result(index, result)``
    is called in the calling thread as each result arrives (``index`` into
    the sorted cases), for progress. ``shown_as`` is how reasons name the
    candidates directory (default: ``candidates``), such as the relative
    path a user typed for an absolute ``candidates``. Every run happens in
    ``sandbox`` (see :func:`codegenie.eval.rubrics.run_rubric`); a
    ``--sandbox`` word is chosen once, before any run, and
    ``SandboxUnavailable`` raised when bubblewrap cannot start. With
    ``reuse``, a case whose rubric, task class, case and candidate are byte
    for byte as when it was last graded (same interpreter, package version,
    limits and sandbox) is answered from the user's store of results
    without running anything (``GradeReport.reused`` counts them); a pass
    or a fail is stored, an error never.

    ``stop_after=N`` stops the grading once ``N`` cases did not pass
    (``grade -x`` is ``stop_after=1``): the cases not started never start,
    the running rubrics are stopped as below, and the report holds the
    results that arrived, in case-id order, with ``stopped`` set and
    ``reused`` counting those answered from the store.

    ``KeyboardInterrupt`` (or any exception, from ``on_result`` say) stops
    the grading: cases not started never start, the running rubrics are
    killed with their process groups and their temporary directories
    removed, the threads are joined, and then the exception propagates.
    Raises ``ValueError`` for a ``jobs`` or a ``stop_after`` below 1.
    """
    box = sandbox if isinstance(sandbox, Sandbox) else choose_sandbox(sandbox)
    if jobs is None:
        jobs = default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        msg = f"jobs must be a whole number of at least 1, got {jobs!r}"
        raise ValueError(msg)
    if stop_after is not None and (isinstance(stop_after, bool) or stop_after < 1):
        msg = f"stop_after must be a whole number of at least 1, got {stop_after!r}"
        raise ValueError(msg)
    ordered = sorted(cases, key=lambda case: case.id)
    results: list[GradeResult | None] = [None] * len(ordered)
    not_passed = 0
    stopped = False

    def record(index: int, result: GradeResult) -> None:
        nonlocal not_passed, stopped
        if stopped:  # stop_after was reached: nothing more is graded
            return
        results[index] = result
        if on_result is not None:
            on_result(index, result)
        not_passed += result.status != "passed"
        stopped = stop_after is not None and not_passed >= stop_after

    def ran(index: int, result: GradeResult) -> None:
        record(index, result)
        if stopped:
            raise _Stop  # out of the runs: those not started never start

    runs: list[tuple[int, Case, Path]] = []
    for index, case in enumerate(ordered):
        candidate = candidates / case.id
        if os.path.lexists(candidate):
            runs.append((index, case, candidate))
        else:
            record(index, GradeResult.missing(case.id, (shown_as or candidates) / case.id))
    reused = 0
    if rubric is None:
        for index, case, _ in runs:
            reason = f"task class {task_class!r} has no rubric file"
            record(index, GradeResult(case=case.id, status="error", reason=reason))
    elif runs and not stopped:
        with Ledger.open(enabled=reuse) as ledger, contextlib.suppress(_Stop):
            try:
                _grade_runs(rubric, runs, jobs=jobs, sandbox=box, ledger=ledger, record=ran)
            finally:  # however the runs end, the results answered from the store count
                reused = ledger.reused
    done = tuple(result for result in results if result is not None)
    assert stopped or len(done) == len(ordered)
    return GradeReport(
        task_class=task_class, results=done, sandbox=box.mode, reused=reused, stopped=stopped
    )


def _grade_runs(
    rubric: Path,
    runs: list[tuple[int, Case, Path]],
    *,
    jobs: int,
    sandbox: Sandbox,
    ledger: Ledger,
    record: Callable[[int, GradeResult], None],
) -> None:
    """Grade ``runs``: from ``ledger`` what it holds, the rest by running the rubric."""
    requests: list[tuple[int, RunSpec, str | None]] = []
    for index, case, candidate in runs:
        request = RunSpec.of(rubric, case, candidate, sandbox=sandbox.policy)
        key = ledger.key(request)
        stored = ledger.lookup(key)
        if stored is not None:
            record(index, GradeResult.from_rubric(stored[0]))
        else:
            requests.append((index, request, key))

    def arrived(position: int, result: RubricResult) -> None:
        index, _, key = requests[position]
        ledger.record(key, [result])
        record(index, GradeResult.from_rubric(result))

    run_rubrics(
        [request for _, request, _ in requests], jobs=jobs, sandbox=sandbox, on_result=arrived
    )
