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
import dataclasses
import datetime
import difflib
import json
import math
import os
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypedDict, Unpack, final

from pydantic import BaseModel, ConfigDict, model_validator

from codegenie.eval._command import RubricCommand
from codegenie.eval._env.store import Environment
from codegenie.eval._exec.local import LocalExecutor
from codegenie.eval._ledger.reuse import Ledger, LedgerSummary
from codegenie.eval._run.digest import labelled, tree_digest
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._samples.candidates import Candidates, Sample
from codegenie.eval._sandbox.choices import ProviderName
from codegenie.eval._sandbox.policy import Interpreter
from codegenie.eval._selection import Selection
from codegenie.eval._stats.passk import default_ks, pass_at_k_of_case
from codegenie.eval._version import __version__
from codegenie.eval.cases import Case
from codegenie.eval.errors import CaseNotFound
from codegenie.eval.models import OverLimit
from codegenie.eval.rubrics import (
    RubricResult,
    Sandbox,
    choose_sandbox,
    rubric_traceback,
    verdict_gist,
)

if TYPE_CHECKING:
    from codegenie.eval._env.spec import EnvironmentSpec
    from codegenie.eval._exec import Executor
    from codegenie.eval.errors import BenchCasesInvalid
    from codegenie.eval.manifest import BenchManifest
    from codegenie.eval.models import TaskClass

__all__ = (
    "VERDICT_LIMIT",
    "EnvironmentInfo",
    "GradeEvents",
    "GradeOptions",
    "GradeReport",
    "GradeResult",
    "GradeStatus",
    "PassAtTooHigh",
    "RunInfo",
    "SampleResult",
    "SampleStatus",
    "TaskClassGrading",
    "default_jobs",
    "grade",
    "grade_bench",
    "grade_task_class",
    "pass_at_problem",
    "select",
    "select_cases",
    "task_class_environment",
)

GradeStatus = Literal["passed", "failed", "missing", "error"]

# The order the summary line counts what did not pass in.
_NOT_PASSED: tuple[GradeStatus, ...] = ("failed", "error", "missing")
# The order of the JSON document's counts.
_STATUSES: tuple[GradeStatus, ...] = ("passed", "failed", "missing", "error")


#: What one run of a candidate can come to: a sample is never ``"missing"``.
SampleStatus = Literal["passed", "failed", "error"]


class _Outcome(BaseModel):
    """What one run came to, or (for a case of several samples) what its runs came to together.

    ``status``: ``"passed"`` and ``"failed"`` are the rubric's verdict;
    ``"error"`` is a rubric that broke its protocol, crashed or ran out of
    time (``reason`` says which: a timeout's reason says so), unless the
    task class or the case declares that a candidate over a limit has
    failed (``over-limit = "failed"``): then that run is ``"failed"``, its
    ``limit`` (or reason) saying why. ``score`` is the verdict's score, when
    it gave one. ``wall_s``, ``cpu_s`` and ``peak_memory_mib`` are what the
    run used; ``limit`` names the limit a run exceeded (``"memory"``,
    ``"processes"``, ``"file-size"``, ``"cpu-time"``, ``"disk"``,
    ``"disk-files"``): as an ``"error"``, not the candidate's fault, so the
    summary counts it apart. An ``"error"`` keeps the end of the rubric's
    stderr (``stderr_tail``) and, when it raised, its ``traceback``.
    ``verdict`` is the JSON object the rubric printed, its own keys
    (``tests_run``, ``coverage``…) included, when it printed one and it
    takes at most :data:`VERDICT_LIMIT` bytes as JSON; a larger one keeps
    ``passed``, ``score`` and ``reason`` and says, under ``"omitted"``, how
    large the rest was. ``candidate_digest`` identifies the candidate tree
    graded (``None``: none, or beyond the bounds of a copy); ``reused`` says
    the result was answered from the store of earlier runs, its times those
    of the run that made it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

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
    candidate_digest: str | None = None
    reused: bool = False
    node: str | None = None

    def _dumped(self, *, exclude: set[str] | None = None) -> dict[str, Any]:
        """Return the fields as JSON values, ``node`` left out when the run was made here."""
        document = self.model_dump(exclude=exclude)
        if document.get("node", "") is None:
            del document["node"]
        return document


def _of_run(
    result: RubricResult, *, over_limit: OverLimit, candidate_digest: str | None, reused: bool
) -> dict[str, Any]:
    """Return the fields of the outcome of one rubric run (see :class:`_Outcome`)."""
    over = result.status == "timeout" or (result.status == "error" and result.limit is not None)
    status: GradeStatus
    if over:
        status = "failed" if over_limit == "failed" else "error"
    else:
        status = "error" if result.status == "timeout" else result.status
    return {
        "status": status,
        "score": result.score,
        "reason": result.reason,
        "duration_s": result.duration_s,
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,
        "peak_memory_mib": result.peak_memory_mib,
        "limit": result.limit,
        "stderr_tail": result.stderr_tail if status == "error" else None,
        "traceback": rubric_traceback(result.stderr_tail) if status == "error" else None,
        "verdict": _bounded(result.verdict),
        "candidate_digest": candidate_digest,
        "reused": reused,
        "node": result.node,
    }


@final
class SampleResult(_Outcome):
    """What grading found for one sample of a case, ``sample`` its id (see :class:`_Outcome`).

    A sample is a run: its ``status`` is never ``"missing"``.
    """

    sample: str
    status: SampleStatus

    @classmethod
    def from_rubric(
        cls,
        sample: str,
        result: RubricResult,
        *,
        over_limit: OverLimit = "error",
        candidate_digest: str | None = None,
        reused: bool = False,
    ) -> SampleResult:
        """Return the grade of one sample's rubric run."""
        return cls(
            sample=sample,
            **_of_run(
                result, over_limit=over_limit, candidate_digest=candidate_digest, reused=reused
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """Return one entry of a result's ``samples``: ``sample``, then the outcome's keys."""
        document = self._dumped()
        return {"sample": document.pop("sample"), **document}


@final
class GradeResult(_Outcome):
    """What grading found for one case (the outcome's fields: see :class:`_Outcome`).

    ``"missing"`` is a case without a candidate, whose rubric was not run
    (``duration_s`` is ``None``). ``tags`` are the case's. A case graded
    from several samples has them in ``samples``, in id order, and its own
    fields sum them up: ``"missing"`` without any, ``"error"`` when a sample
    was one, ``"passed"`` when every sample passed, else ``"failed"``; the
    mean of their scores, the sums of their times, the largest peak memory,
    and a reason counting them. ``samples`` is ``None`` for a case graded
    from one candidate. :attr:`samples_total` and :attr:`samples_passed`
    count either way (one candidate is one sample).
    """

    case: str
    tags: tuple[str, ...] = ()
    samples: tuple[SampleResult, ...] | None = None

    @model_validator(mode="before")
    @classmethod
    def _counts_are_derived(cls, values: Any) -> Any:
        """Accept a JSON result back: its sample counts are computed, not fields."""
        if isinstance(values, dict) and ("samples_total" in values or "samples_passed" in values):
            values = {k: v for k, v in values.items() if k not in _DERIVED}
        return values

    @property
    def samples_total(self) -> int:
        """How many samples the case was graded from (1 for one candidate, 0 when missing)."""
        if self.samples is not None:
            return len(self.samples)
        return 0 if self.status == "missing" else 1

    @property
    def samples_passed(self) -> int:
        """How many of its samples passed."""
        if self.samples is not None:
            return sum(sample.status == "passed" for sample in self.samples)
        return int(self.status == "passed")

    @classmethod
    def from_rubric(
        cls,
        result: RubricResult,
        *,
        over_limit: OverLimit = "error",
        tags: tuple[str, ...] = (),
        candidate_digest: str | None = None,
        reused: bool = False,
    ) -> GradeResult:
        """Return the grade of a rubric run: passed, failed, or error (a timeout is an error)."""
        return cls(
            case=result.case,
            tags=tags,
            **_of_run(
                result, over_limit=over_limit, candidate_digest=candidate_digest, reused=reused
            ),
        )

    @classmethod
    def missing(cls, case: str, candidate: Path, *, tags: tuple[str, ...] = ()) -> GradeResult:
        """Return the grade of a case with nothing at ``candidate``."""
        return cls(
            case=case, status="missing", reason=f"no candidate directory {candidate}", tags=tags
        )

    @classmethod
    def of_samples(
        cls, case: str, samples: Sequence[SampleResult], *, tags: tuple[str, ...] = ()
    ) -> GradeResult:
        """Return the grade of a case from its samples' (see the class)."""
        if not samples:
            return cls(case=case, status="missing", reason="no samples", tags=tags, samples=())
        passed = sum(sample.status == "passed" for sample in samples)
        errors = [sample for sample in samples if sample.status == "error"]
        status: GradeStatus = (
            "error" if errors else "passed" if passed == len(samples) else "failed"
        )
        reason = f"{passed}/{len(samples)} samples passed"
        if errors:
            first = errors[0]
            reason += f"; sample {first.sample}: {first.reason or 'error'}"
        scores = [sample.score for sample in samples if sample.score is not None]
        return cls(
            case=case,
            status=status,
            score=math.fsum(scores) / len(scores) if scores else None,
            reason=reason,
            duration_s=_total(sample.duration_s for sample in samples),
            wall_s=_total(sample.wall_s for sample in samples),
            cpu_s=_total(sample.cpu_s for sample in samples),
            peak_memory_mib=max(
                (s.peak_memory_mib for s in samples if s.peak_memory_mib is not None),
                default=None,
            ),
            reused=all(sample.reused for sample in samples),
            tags=tags,
            samples=tuple(sorted(samples, key=lambda sample: sample.sample)),
        )

    def to_json(self) -> dict[str, Any]:
        """Return one entry of ``grade``'s JSON ``results``.

        ``case``, then the outcome's keys in order (status, score, reason,
        duration_s, wall_s, cpu_s, peak_memory_mib, limit, stderr_tail,
        traceback, verdict, candidate_digest, reused, and ``node`` when a
        cluster node made the run), then ``tags``, ``samples_total``,
        ``samples_passed`` and ``samples`` (``null`` for a case graded from
        one candidate).
        """
        document = self._dumped(exclude={"case", "tags", "samples"})
        return {
            "case": self.case,
            **document,
            "tags": list(self.tags),
            "samples_total": self.samples_total,
            "samples_passed": self.samples_passed,
            "samples": None
            if self.samples is None
            else [sample.to_json() for sample in self.samples],
        }


_DERIVED: Final = frozenset({"samples_total", "samples_passed"})


def _total(values: Iterable[float | None]) -> float | None:
    """Return the sum of the values given, ``None`` when none is."""
    given = [value for value in values if value is not None]
    return math.fsum(given) if given else None


@final
class RunInfo(BaseModel):
    """What a grading run was: the identity every report carries as ``run``.

    ``name`` is what the user called it (``--run-name``, the model say);
    ``candidates_digest`` the digest of everything it was given to grade
    (every case's candidates, not only those selected: two shards of one
    run carry the same); ``started_at`` and ``finished_at`` are UTC, as
    ISO 8601 (``2026-12-02T07:01:02Z``); ``tool_version`` is this package's,
    ``python`` the version of the interpreter that ran the rubrics and
    ``sandbox`` the provider that contained them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    name: str | None = None
    candidates_digest: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    tool_version: str = __version__
    python: str | None = None
    sandbox: ProviderName = "bwrap"

    def to_json(self) -> dict[str, Any]:
        """Return the report's ``run`` object."""
        return self.model_dump()

    @classmethod
    def of_runs(
        cls, runs: Sequence[RunInfo], *, name: str | None, candidates_digest: str | None
    ) -> RunInfo | None:
        """Return the identity of one run made of ``runs`` (``grade --all``), ``None`` for none.

        It started when the first of them started and finished when the last
        finished; its interpreter and sandbox are the first run's.
        """
        if not runs:
            return None
        return cls(
            name=name,
            candidates_digest=candidates_digest,
            started_at=min((r.started_at for r in runs if r.started_at), default=None),
            finished_at=max((r.finished_at for r in runs if r.finished_at), default=None),
            python=runs[0].python,
            sandbox=runs[0].sandbox,
        )


@final
class EnvironmentInfo(BaseModel):
    """The environment a task class's rubrics ran in, when it declares one: ``environment``.

    ``digest`` is the built environment's (``blake2b-256:<hex>``: its
    requirements' bytes, its interpreter, uv's version), ``python`` its
    interpreter's full version (``3.12.1``), ``requirements`` the file it
    was built from (``None``: the entry declares only ``python``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    digest: str
    python: str
    requirements: str | None = None

    @classmethod
    def of(cls, environment: Environment) -> EnvironmentInfo:
        """Return what a report says of ``environment``."""
        return cls(
            digest=environment.digest,
            python=environment.python,
            requirements=environment.requirements,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the report's ``environment`` object."""
        return self.model_dump()


@final
class GradeReport(BaseModel):
    """Every result of one ``grade`` run, in case-id order.

    Without samples, ``ok`` is true when there was at least one case and
    every case passed: a missing candidate or a rubric error is not a pass,
    and grading no case at all proves nothing (so it is not ok either).
    With samples (``sampled``), or a ``fail_under`` threshold, the verdict
    is pass@k's: ``ok`` unless there was no case, a case was missing or a
    sample was an ``"error"``, or pass@1 is below ``fail_under``. ``stopped``
    says that the grading stopped early (``grade(..., stop_after=N)``):
    ``results`` then hold only the cases graded before it stopped.
    ``reused`` counts the runs answered from the store, however the grading
    ended, and ``ledger`` says how the store answered (runs looked up,
    reused, and those stored only for another interpreter, with what
    changed; ``None`` when nothing was looked up). ``pass_at`` are the k of
    :attr:`pass_at_k` (``None``: 1, and 10 and 100 where every graded case
    has that many samples); ``run`` is the run's identity; ``environment``
    the task class's declared environment the rubrics ran in (``None``: the
    harness's own interpreter); ``reads_expected`` whether the task class
    declared that its rubric reads the case's reference, so that its runs'
    ``CASE_DIR`` held ``expected/``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    task_class: str
    results: tuple[GradeResult, ...]
    sandbox: ProviderName = "bwrap"
    reused: int = 0
    ledger: LedgerSummary | None = None
    stopped: bool = False
    sampled: bool = False
    pass_at: tuple[int, ...] | None = None
    fail_under: float | None = None
    run: RunInfo | None = None
    environment: EnvironmentInfo | None = None
    reads_expected: bool = False

    @property
    def passed(self) -> int:
        """How many cases passed."""
        return self.count("passed")

    @property
    def total(self) -> int:
        """How many cases were graded (missing ones included)."""
        return len(self.results)

    @property
    def samples_total(self) -> int:
        """How many samples were graded, over every case."""
        return sum(result.samples_total for result in self.results)

    @property
    def samples_passed(self) -> int:
        """How many samples passed, over every case."""
        return sum(result.samples_passed for result in self.results)

    @property
    def ok(self) -> bool:
        """The verdict (see the class): exit status 0 or 1."""
        if not self.sampled and self.fail_under is None:
            return self.total > 0 and self.passed == self.total
        if self.total == 0 or self.count("missing") or self.count("error"):
            return False
        if self.fail_under is None:
            return True
        first = self._pass_at(1)  # pass@1 whatever k are reported (--pass-at 10)
        return first is not None and first >= self.fail_under

    def ks(self) -> tuple[int, ...]:
        """Return the k pass@k is reported for: ``pass_at``, else the default ones."""
        if self.pass_at is not None:
            return self.pass_at
        graded = [r.samples_total for r in self.results if r.samples_total]
        return default_ks(graded)

    def pass_at_k(self) -> dict[str, float | None]:
        """Return pass@k for each of :meth:`ks`, keyed by k as text.

        The mean over every case of the unbiased estimate from its samples;
        a case without any (missing) counts as 0, as a problem a model gave
        no answer to. ``None`` when there is no case, or when a graded case
        has fewer than k samples (pass@k of it is not defined; ``grade``
        refuses such a ``--pass-at`` before it runs anything).
        """
        return {str(k): self._pass_at(k) for k in self.ks()}

    def _pass_at(self, k: int) -> float | None:
        """Return pass@k over every case (see :meth:`pass_at_k`), ``None`` when not defined."""
        counts = [(r.samples_total, r.samples_passed) for r in self.results]
        if not counts or any(0 < n < k for n, _ in counts):
            return None
        estimates = [pass_at_k_of_case(n, c, k) if n else 0.0 for n, c in counts]
        return math.fsum(estimates) / len(estimates)

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
        over = sum(r.limit is not None and r.status == "error" for r in self.results)
        others = [
            shown(status, _counted(count, status))
            for status in _NOT_PASSED
            if (count := self.count(status) - (over if status == "error" else 0))
        ]
        if over:
            others.append(shown("error", f"{over} over a limit"))
        return line + (f" ({', '.join(others)})" if others else "")

    def pass_at_line(self) -> str:
        """Return the pass@k line: ``pass@1 0.583, pass@10 0.910 (1,640 samples, 956 passed)``."""
        values = ", ".join(
            f"pass@{k} " + ("n/a" if value is None else f"{value:.3f}")
            for k, value in self.pass_at_k().items()
        )
        line = f"{values} ({self.samples_total:,} samples, {self.samples_passed:,} passed)"
        if self.fail_under is not None:
            line += f"; --fail-under {self.fail_under:g}"
        return line

    def to_json(self) -> dict[str, Any]:
        """Return ``grade``'s JSON document.

        ``task_class``, ``sandbox``, ``reused``, ``ledger``, ``run``, ``environment``,
        ``reads_expected``, ``results``, ``passed``, ``total``, then ``counts`` (every status,
        zeros included), ``ok``, ``mean_score``, ``sampled``, ``pass_at_k``
        and ``fail_under``.
        """
        return {
            "task_class": self.task_class,
            "sandbox": self.sandbox,
            "reused": self.reused,
            "ledger": None if self.ledger is None else self.ledger.to_json(),
            "run": None if self.run is None else self.run.to_json(),
            "environment": None if self.environment is None else self.environment.to_json(),
            "reads_expected": self.reads_expected,
            "results": [result.to_json() for result in self.results],
            "passed": self.passed,
            "total": self.total,
            "counts": self.counts(),
            "ok": self.ok,
            "mean_score": self.mean_score,
            "sampled": self.sampled,
            "pass_at_k": self.pass_at_k(),
            "fail_under": self.fail_under,
        }


#: The most bytes of a rubric's verdict (as compact JSON) a result keeps whole.
VERDICT_LIMIT: Final = 64 * 1024


def _bounded(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return ``verdict`` whole when it takes at most :data:`VERDICT_LIMIT` bytes, else its gist.

    A verdict holding a number that is not finite (one the store of results
    kept from before the rubric protocol refused them) keeps only
    ``passed`` and ``reason``: no report holds such a number.
    """
    if verdict is None:
        return None
    try:
        text = json.dumps(verdict, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        kept = {key: verdict[key] for key in ("passed", "reason") if key in verdict}
        return kept | {"omitted": "the verdict holds a number that is not finite"}
    size = len(text.encode())
    if size <= VERDICT_LIMIT:
        return verdict
    return verdict_gist(
        verdict, f"the verdict took {size:,} bytes as JSON, more than {VERDICT_LIMIT:,}"
    )


def _counted(count: int, status: GradeStatus) -> str:
    """``2 errors``, ``1 error``, ``2 failed``: a count and its status, as English says it."""
    noun = "errors" if status == "error" and count != 1 else status
    return f"{count} {noun}"


def default_jobs() -> int:
    """Return how many rubrics run at once when not told: the number of CPUs (at least 1)."""
    return os.cpu_count() or 1


def pass_at_problem(
    given: Candidates, cases: Sequence[Case], ks: Sequence[int]
) -> tuple[int, Case, int] | None:
    """Return ``(k, case, samples)`` for the largest k of ``ks`` a case has fewer samples than.

    The first such case, in the order given; ``None`` when every case that
    has samples has at least every k (pass@k of such a case is not defined).
    """
    for case in cases:
        count = len(given.samples(case.id))
        high = [k for k in ks if 0 < count < k]
        if high:
            return max(high), case, count
    return None


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


def _check_arguments(
    jobs: int, stop_after: int | None, pass_at: Sequence[int] | None, fail_under: float | None
) -> None:
    """Raise ``ValueError`` for an argument of :func:`grade` outside its range."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        msg = f"jobs must be a whole number of at least 1, got {jobs!r}"
        raise ValueError(msg)
    if stop_after is not None and (isinstance(stop_after, bool) or stop_after < 1):
        msg = f"stop_after must be a whole number of at least 1, got {stop_after!r}"
        raise ValueError(msg)
    if pass_at is not None and (
        not pass_at or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in pass_at)
    ):
        msg = f"pass_at must be whole numbers of at least 1, got {pass_at!r}"
        raise ValueError(msg)
    if fail_under is not None and not 0 <= fail_under <= 1:
        msg = f"fail_under must be a fraction between 0 and 1, got {fail_under!r}"
        raise ValueError(msg)


@final
@dataclass(frozen=True, slots=True)
class GradeOptions:
    """How one grading run is made: :func:`grade`'s settings, in one frozen value.

    ``jobs`` rubrics run at once (``None``: :func:`default_jobs`); with
    ``reuse``, a run the store of results holds is answered from it;
    ``stop_after=N`` stops once ``N`` cases did not pass (``grade -x`` is
    1); ``over_limit`` is the task class's word for a candidate over a
    limit (``"error"`` or ``"failed"``; a case's own word wins);
    ``run_name`` names the run in its identity (:class:`RunInfo`);
    ``pass_at`` are the k of pass@k (``None``: the default ones) and
    ``fail_under`` the pass@1 below which the report is not ok;
    ``sandbox`` is the word (``auto``, ``bwrap``, ``none``) of the provider
    :func:`grade` chooses when it is given none by value. Raises
    ``ValueError`` for a ``jobs`` or ``stop_after`` below 1, a k below 1, a
    ``fail_under`` outside 0..1, an ``over_limit`` that is neither word and
    a ``sandbox`` no provider is registered as
    (:func:`codegenie.eval.sandboxes.register_sandbox`).
    """

    jobs: int | None = None
    reuse: bool = True
    stop_after: int | None = None
    over_limit: OverLimit = "error"
    run_name: str | None = None
    pass_at: tuple[int, ...] | None = None
    fail_under: float | None = None
    sandbox: str = "auto"

    def __post_init__(self) -> None:
        from codegenie.eval._sandbox.provider import REGISTRY  # noqa: PLC0415 - the providers registered when the options are made

        jobs = 1 if self.jobs is None else self.jobs
        _check_arguments(jobs, self.stop_after, self.pass_at, self.fail_under)
        if self.over_limit not in typing.get_args(OverLimit):
            msg = f"over_limit must be 'error' or 'failed', got {self.over_limit!r}"
            raise ValueError(msg)
        if self.sandbox != "auto" and self.sandbox not in REGISTRY:
            known = ", ".join(("auto", *REGISTRY))
            msg = f"sandbox must be one of {known}, got {self.sandbox!r}"
            raise ValueError(msg)


#: :func:`grade`'s options when it is given none: every default.
DEFAULT_OPTIONS: Final = GradeOptions()


class _Settings(TypedDict, total=False):
    """The fields of :class:`GradeOptions`, as :func:`grade` takes them one by one."""

    jobs: int | None
    reuse: bool
    stop_after: int | None
    over_limit: OverLimit
    run_name: str | None
    pass_at: Sequence[int] | None
    fail_under: float | None


class _Stop(Exception):
    """Enough cases did not pass (``stop_after``): the cases not started never start."""


def grade(
    task_class: str,
    rubric: Path | None,
    cases: Sequence[Case],
    candidates: Path | Candidates,
    options: GradeOptions = DEFAULT_OPTIONS,
    *,
    on_result: Callable[[int, GradeResult], None] | None = None,
    shown_as: Path | None = None,
    sandbox: Sandbox | str | None = None,
    environment: Environment | None = None,
    executor: Executor | None = None,
    command: RubricCommand | None = None,
    warm: bool = True,
    reads_expected: bool = False,
    **settings: Unpack[_Settings],
) -> GradeReport:
    """Grade each of ``cases`` from its candidates with ``rubric``; return the report.

    ``candidates`` is a directory holding one candidate directory per case
    (``CANDIDATES/<case-id>/``), or the
    :class:`~codegenie.eval._samples.candidates.Candidates` that
    :func:`~codegenie.eval._samples.candidates.open_candidates` read
    (samples: ``CANDIDATES/<case-id>/<sample-id>/``, or a JSON Lines file).
    Each sample is one rubric run; a case's result sums up its samples'
    (:class:`GradeResult`).

    ``options`` holds the run's settings (:class:`GradeOptions`); each of
    them may be given as a keyword instead (``grade(..., jobs=4)``), which
    replaces the field of ``options``. ``jobs`` rubrics run at once
    (default :func:`default_jobs`), in threads, never more than the
    open-file limit (``ulimit -n``) leaves room for.
    A case without any candidate is ``"missing"`` at once, its rubric not
    run; a candidate that is not a directory is a rubric ``"error"``
    (``run_rubric`` says so), and so is every run of a task class whose
    ``rubric`` is ``None`` (defined where no file exists). Results come
    back in case-id order, whatever order the runs finish in.
    ``on_result(index, result)`` is called in the calling thread as each
    case's result is complete (``index`` into the sorted cases), for
    progress. ``shown_as`` is how reasons name the candidates (default:
    ``candidates``), such as the relative path a user typed. Every run
    happens in ``sandbox``, a provider chosen by value
    (:func:`codegenie.eval.sandboxes.choose_sandbox`; see
    :func:`codegenie.eval.rubrics.run_rubric`); ``None`` chooses the one
    ``options.sandbox`` names, once, before any run
    (``SandboxUnavailable`` is raised when bubblewrap cannot start). With
    ``reuse``, a run whose rubric, task class, case and candidate are byte
    for byte as when it was last made (same interpreter, packages, limits
    and sandbox) is answered from the user's store of results without
    running anything (``GradeReport.reused`` counts them, and each such
    result says ``reused``); a pass or a fail is stored, an error never.

    ``over_limit`` is the task class's word for a candidate over its
    timeout or another limit (a case's ``over_limit`` overrides it):
    ``"error"`` or ``"failed"``. ``run_name`` names the run in its
    identity (:class:`RunInfo`); ``pass_at`` are the k of pass@k (``None``:
    the default ones) and ``fail_under`` the pass@1 below which the
    report is not ok. ``environment`` is the task class's built
    environment (:func:`codegenie.eval._env.declared.ready_environment`):
    every rubric runs with its interpreter, which the sandbox mounts
    read-only in place of the harness's own, and its digest is part of
    each run's key in the store of results. ``None``: the harness's own
    interpreter.
    ``command`` is the rubric's command, as the task class's entry
    declares it (``None``: the rubric protocol's, ``{python} {rubric}
    {case} {candidate}``); its words are part of each run's key.
    ``executor`` makes the runs the store does not answer
    (:mod:`codegenie.eval.executors`; ``None``: this machine's threads, the
    local executor); the report is the same whichever made them.
    ``warm=False`` (the task class's ``warm``) makes every run start an
    interpreter of its own, never a warm worker's fork.
    ``reads_expected`` (the task class's) leaves the case's ``expected/``
    in each run's ``CASE_DIR``; without it, no run sees the reference.

    ``stop_after=N`` stops the grading once ``N`` cases did not pass
    (``grade -x`` is ``stop_after=1``): the cases not started never start,
    the running rubrics are stopped as below, and the report holds the
    results that arrived, in case-id order, with ``stopped`` set and
    ``reused`` counting those answered from the store.

    ``KeyboardInterrupt`` (or any exception, from ``on_result`` say) stops
    the grading: runs not started never start, the running rubrics are
    killed with their process groups and their temporary directories
    removed, the threads are joined, and then the exception propagates.
    Raises ``ValueError`` for a ``jobs`` or a ``stop_after`` below 1, a k
    below 1, or a ``fail_under`` outside 0..1.
    """
    started = _now()
    if settings:  # the earlier form: each setting a keyword of its own
        fields: dict[str, Any] = dict(settings)
        if fields.get("pass_at") is not None:
            fields["pass_at"] = tuple(fields["pass_at"])
        options = dataclasses.replace(options, **fields)
    jobs = default_jobs() if options.jobs is None else options.jobs
    stop_after, pass_at, fail_under = options.stop_after, options.pass_at, options.fail_under
    _check_arguments(jobs, stop_after, pass_at, fail_under)
    interpreter = Interpreter.current() if environment is None else environment.interpreter()
    box = sandbox if isinstance(sandbox, Sandbox) else choose_sandbox(sandbox or options.sandbox)
    given = (
        candidates
        if isinstance(candidates, Candidates)
        else Candidates.directory(candidates, shown_as=shown_as)
    )
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

    cases_runs: list[_CaseRuns] = []
    for index, case in enumerate(ordered):
        samples = given.samples(case.id)
        if samples:
            policy = case.over_limit or options.over_limit
            cases_runs.append(_CaseRuns(index, case, samples, policy, sampled=given.sampled))
        elif given.sampled:
            record(index, GradeResult.of_samples(case.id, (), tags=case.tags))
        else:
            record(index, GradeResult.missing(case.id, given.shown(case.id), tags=case.tags))
    reused = 0
    summary: LedgerSummary | None = None
    if rubric is None:
        reason = f"task class {task_class!r} has no rubric file"
        for runs in cases_runs:
            failed = RubricResult(case=runs.case.id, status="error", reason=reason, duration_s=0.0)
            for position in range(len(runs.samples)):
                runs.arrived(position, failed, None, reused=False, record=record)
    elif cases_runs and not stopped:
        with Ledger.open(enabled=options.reuse) as ledger, contextlib.suppress(_Stop):
            try:
                _grade_runs(
                    rubric,
                    cases_runs,
                    jobs=jobs,
                    sandbox=box,
                    ledger=ledger,
                    record=record,
                    stopped=lambda: stopped,
                    interpreter=interpreter,
                    declared=None if environment is None else environment.declared,
                    executor=LocalExecutor() if executor is None else executor,
                    command=RubricCommand() if command is None else command,
                    warm=warm,
                    reads_expected=reads_expected,
                )
            finally:  # however the runs end, the results answered from the store count
                reused, summary = ledger.reused, ledger.summary()
    done = tuple(result for result in results if result is not None)
    assert stopped or len(done) == len(ordered)
    run = RunInfo(
        name=options.run_name,
        candidates_digest=given.digest,
        started_at=started,
        finished_at=_now(),
        python=interpreter.version,
        sandbox=box.mode,
    )
    return GradeReport(
        task_class=task_class,
        results=done,
        sandbox=box.mode,
        reused=reused,
        ledger=summary,
        stopped=stopped,
        sampled=given.sampled,
        pass_at=None if pass_at is None else tuple(sorted(set(pass_at))),
        fail_under=fail_under,
        run=run,
        environment=None if environment is None else EnvironmentInfo.of(environment),
        reads_expected=reads_expected,
    )


def grade_bench(
    slug: str,
    candidates: Path,
    *,
    bench_root: Path | None = None,
    options: GradeOptions = DEFAULT_OPTIONS,
    executor: Executor | None = None,
    sandbox: Sandbox | None = None,
    cases: Iterable[str] | None = None,
    samples: bool = False,
    build: bool = True,
    on_result: Callable[[int, GradeResult], None] | None = None,
) -> GradeReport:
    """Grade ``candidates`` for the task class ``slug`` of a bench; return the report.

    What ``codegenie-bench grade SLUG CANDIDATES`` does, without printing:
    the manifest is the nearest ``bench.toml`` at or above ``bench_root``
    (default: the working directory); ``slug`` is resolved through it (its
    registration imported, never its rubric) and its cases read;
    ``cases`` are the ids to grade (``None``: every case), chosen as
    ``--case`` chooses them: an invalid case they leave out is not graded
    and refuses nothing (:func:`grade_task_class`). ``candidates``
    is a directory of one candidate directory per case
    (``CANDIDATES/<case-id>/``; with ``samples``, one directory per sample
    below it) or a JSON Lines file of samples. The task class's declared
    environment is made ready first (built unless ``build`` is false); the
    runs the store of results does not answer are made by ``executor``
    (:mod:`codegenie.eval.executors`; ``None``: a local executor, closed
    when the grading ends: an executor given is left open for the caller),
    each in ``sandbox`` (:mod:`codegenie.eval.sandboxes`; ``None``: the one
    ``options.sandbox`` names, chosen here for an executor that runs here,
    named for one that does not). ``options`` and ``on_result`` are
    :func:`grade`'s, but for ``options.over_limit``: the task class's own
    word is in force, as under the command.

    Raises what the command's resolution raises (``BenchManifestNotFound``,
    ``TaskClassNotFound``, ``BenchCasesInvalid``, ``RubricMissing``,
    ``CaseNotFound``, ``CandidatesDirInvalid``, ``SamplesInvalid``, the
    environment's errors) and ``SandboxUnavailable``, each before any rubric
    runs.
    """
    from codegenie.eval._exec import executor_named  # noqa: PLC0415 - start-up: only a harness pays for it
    from codegenie.eval._manifest.model import BenchManifest  # noqa: PLC0415 - as above
    from codegenie.eval._manifest.read import find_manifest  # noqa: PLC0415 - as above
    from codegenie.eval._sandbox.provider import named_sandbox  # noqa: PLC0415 - as above
    from codegenie.eval.errors import CandidatesDirInvalid  # noqa: PLC0415 - as above

    if not os.path.lexists(candidates):  # what is there, opening it says what is wrong with it
        raise CandidatesDirInvalid(candidates, "does not exist")
    manifest = BenchManifest.load(find_manifest(Path.cwd() if bench_root is None else bench_root))
    # A slug the manifest lacks: resolving it says what is wrong, before anything is built.
    environment = task_class_environment(manifest, slug, build=build) if slug in manifest else None
    made = executor is None
    chosen = executor_named("local") if executor is None else executor
    try:
        if sandbox is None:
            word = options.sandbox
            sandbox = choose_sandbox(word) if chosen.runs_here else named_sandbox(word)
        return grade_task_class(
            manifest,
            slug,
            candidates.absolute(),
            options,
            sandbox,
            chosen,
            environment=environment,
            selection=None if cases is None else Selection(ids=tuple(cases)),
            samples=samples,
            events=_Quiet(on_result),
        ).report
    finally:
        if made:
            chosen.close()


class GradeEvents(Protocol):
    """What grading a task class of a bench tells its caller as it goes; the library prints nothing.

    :func:`grade_task_class` calls, in this order: :meth:`note` (``--lf``
    found nothing known to have failed), :meth:`invalid_apart` (invalid
    cases the selection leaves out), :meth:`started` (the cases to grade,
    before any rubric runs), :meth:`warning` (each entry of the candidates
    that names no case), :meth:`arrived` for each result as it arrives (in
    any order), :meth:`ended` (whether grading ran to its end: ``False``
    when it raised), then :meth:`note` once more when it stopped after the
    first case that did not pass.
    """

    def note(self, text: str) -> None:
        """Say ``text``, a note (``codegenie-bench: note: …`` on the command line)."""

    def warning(self, text: str) -> None:
        """Warn of ``text``: part of what was given is not graded."""

    def invalid_apart(self, error: BenchCasesInvalid) -> None:
        """Say which invalid cases were not selected, and so not graded: ``error`` lists them."""

    def started(self, task_class: TaskClass, cases: Sequence[Case]) -> None:
        """Start grading ``cases`` (selected, sorted by id) of ``task_class``."""

    def arrived(self, index: int, result: GradeResult) -> None:
        """Take the result of the case at ``index`` of the started cases, as it arrives."""

    def ended(self, *, completed: bool) -> None:
        """End grading: it ran to its end (``completed``) or raised."""


class _Quiet:
    """Events nobody listens to, but for each result (:func:`grade_bench`'s ``on_result``)."""

    def __init__(self, on_result: Callable[[int, GradeResult], None] | None) -> None:
        self._on_result = on_result

    def note(self, text: str) -> None:
        pass

    def warning(self, text: str) -> None:
        pass

    def invalid_apart(self, error: BenchCasesInvalid) -> None:
        pass

    def started(self, task_class: TaskClass, cases: Sequence[Case]) -> None:
        pass

    def arrived(self, index: int, result: GradeResult) -> None:
        if self._on_result is not None:
            self._on_result(index, result)

    def ended(self, *, completed: bool) -> None:
        pass


@final
class PassAtTooHigh(ValueError):
    """A k of ``pass_at`` above the samples of a case: ``k``, the ``case`` and its ``samples``."""

    def __init__(self, k: int, case: Case, samples: int) -> None:
        self.k = k
        self.case = case
        self.samples = samples
        super().__init__(
            f"pass@{k} needs at least {k} samples of every case; case {case.id!r} has {samples}"
        )


@final
@dataclass(frozen=True, slots=True)
class TaskClassGrading:
    """What :func:`grade_task_class` gave: its ``report``, ``task_class`` and valid ``cases``."""

    report: GradeReport
    task_class: TaskClass
    cases: tuple[Case, ...]


def grade_task_class(  # noqa: PLR0915, PLR0917 - one grading of a bench's task class, in order
    manifest: BenchManifest,
    slug: str,
    candidates: Path,
    options: GradeOptions,
    sandbox: Sandbox,
    executor: Executor,
    *,
    environment: Environment | None = None,
    selection: Selection | None = None,
    last_failed: bool = False,
    samples: bool = False,
    shown_as: Path | None = None,
    remember: bool = False,
    events: GradeEvents | None = None,
) -> TaskClassGrading:
    """Grade ``candidates`` for ``slug`` of ``manifest``, as ``codegenie-bench grade`` does.

    ``slug`` is resolved through the manifest (its registration imported,
    never its rubric); its cases are read, and a problem of an invalid case
    refuses (``BenchCasesInvalid``) unless ``selection`` leaves the case out
    (then ``events.invalid_apart`` is told). ``selection`` chooses the cases
    (``None``: every one); ``last_failed`` narrows it to the cases that did
    not pass the last time these candidates were graded (``--lf``: when
    nothing is known, every case is graded and ``events.note`` says so).
    ``candidates`` is a directory or a JSON Lines file (``samples``: one
    directory per sample; ``shown_as``: how it is named to the user); where
    nothing is, every case is missing. ``options`` are :func:`grade`'s, but
    for ``options.over_limit``: the task class's own is in force;
    ``options.pass_at`` must not ask for more samples than a case has
    (:class:`PassAtTooHigh`). With ``remember``, which cases did not pass is
    kept for the next ``last_failed`` (only the cases graded: under
    ``stop_after``, the others keep what was known of them).

    Raises what resolving and reading raise (``TaskClassNotFound``,
    ``BenchCasesInvalid``, ``RubricMissing``, ``CaseNotFound``,
    ``CandidatesDirInvalid``, ``SamplesInvalid``) before any rubric runs.
    """
    from codegenie.eval._cache.last_failed import read_last_failed, write_last_failed  # noqa: PLC0415 - start-up: only grading pays for it
    from codegenie.eval._resolve import resolve  # noqa: PLC0415 - as above
    from codegenie.eval._samples.candidates import open_candidates  # noqa: PLC0415 - as above
    from codegenie.eval.errors import BenchCasesInvalid, RubricMissing  # noqa: PLC0415 - as above
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415 - as above

    told: GradeEvents = _Quiet(None) if events is None else events
    found = resolve(slug, manifest, registry=TaskClassRegistry())
    task_class = found.task_class
    chosen = Selection() if selection is None else selection
    if last_failed:
        known = read_last_failed(manifest.path, task_class.name, candidates) if remember else None
        if not known:
            told.note(
                f"--lf: no case of {task_class.name!r} is known to have failed with these "
                "candidates; grading every case"
            )
            known = None
        chosen = dataclasses.replace(chosen, last_failed=known)
    scan = found.cases
    if not chosen.narrowed:
        valid = scan.raise_for_problems()
    else:
        refused = tuple(
            p for p in scan.problems if p.case is None or chosen.may_select_invalid(p.case)
        )
        if refused:
            raise BenchCasesInvalid(scan.task_class, refused)
        if scan.problems:
            told.invalid_apart(BenchCasesInvalid(scan.task_class, scan.problems))
        valid = scan.cases
    if task_class.rubric is None or not task_class.rubric.is_file():
        raise RubricMissing(task_class.name, task_class.rubric)
    selected = select(task_class.name, valid, chosen)
    told.started(task_class, selected)
    shown = candidates if shown_as is None else shown_as
    opened = (
        open_candidates(candidates, [case.id for case in valid], sampled=samples, shown_as=shown)
        if os.path.lexists(candidates)  # a task class of grade --all may have none: all missing
        else contextlib.nullcontext(
            Candidates(root=candidates, shown_as=shown, sampled=samples, digest=None)
        )
    )
    with opened as given:
        for entry in given.unmatched:
            close = f"; did you mean {', '.join(map(repr, entry.close))}?" if entry.close else ""
            told.warning(
                f"{given.shown_as / entry.name} matches no case of {task_class.name!r}, "
                f"and is not graded{close}"
            )
        if options.pass_at is not None:
            problem = pass_at_problem(given, selected, options.pass_at)
            if problem is not None:
                raise PassAtTooHigh(*problem)
        completed = False
        try:
            report = grade(
                task_class.name,
                task_class.rubric,
                selected,
                given,
                dataclasses.replace(options, over_limit=task_class.over_limit),
                on_result=told.arrived,
                sandbox=sandbox,
                environment=environment,
                executor=executor,
                command=manifest.entry(task_class.name).rubric_command,
                warm=task_class.warm,
                reads_expected=task_class.reads_expected,
            )
            completed = True
        finally:
            told.ended(completed=completed)
    if report.stopped:
        told.note(
            f"stopped at the first case that did not pass (-x): "
            f"{len(selected) - len(report.results)} of {len(selected)} cases not graded"
        )
    if remember:
        graded = [r.case for r in report.results]
        not_passed = [r.case for r in report.results if r.status != "passed"]
        write_last_failed(manifest.path, task_class.name, graded, not_passed, candidates)
    return TaskClassGrading(report, task_class, valid)


def task_class_environment(
    manifest: BenchManifest,
    slug: str,
    *,
    build: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Environment | None:
    """Return the environment ``slug``'s entry of ``manifest`` declares, ready for :func:`grade`.

    ``None`` when the entry declares neither ``environment`` nor ``python``
    (its rubrics run in the harness's interpreter). Otherwise the built
    environment: kept, or built now (``progress`` is told, in one line,
    when a build starts); with ``build`` false, one not built raises
    ``EnvironmentNotBuilt``. Raises ``PythonUnavailable`` for a Python this
    machine lacks, ``EnvironmentBuildFailed`` for a requirements file that
    cannot be used (``step`` ``"requirements"``) or a build that failed, and
    ``TaskClassNotFound`` for a slug the manifest does not declare.
    """
    entry = manifest.entry(slug)
    if entry.environment is None and entry.python is None:
        return None
    from codegenie.eval._env.declared import declared_spec, ready_environment  # noqa: PLC0415 - start-up: only benches with environments pay for it

    spec = declared_spec(manifest.path.parent, entry.environment, entry.python, task_class=slug)
    if spec is None:  # pragma: no cover - the entry declares one
        return None
    return ready_environment(
        spec, task_class=slug, manifest=manifest.path, build=build, progress=progress
    )


def _now() -> str:
    """Return the time now, UTC, as ISO 8601 to the second: ``2026-12-02T07:01:02Z``."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    return now.isoformat().replace("+00:00", "Z")


class _CaseRuns:
    """The runs of one case's samples, and its result once every one has arrived."""

    def __init__(
        self,
        index: int,
        case: Case,
        samples: tuple[Sample, ...],
        over_limit: OverLimit,
        *,
        sampled: bool,
    ) -> None:
        self.index = index
        self.case = case
        self.samples = samples
        self.over_limit = over_limit
        self.sampled = sampled
        self._arrived: dict[int, SampleResult | GradeResult] = {}

    def arrived(
        self,
        position: int,
        result: RubricResult,
        candidate_digest: str | None,
        *,
        reused: bool,
        record: Callable[[int, GradeResult], None],
    ) -> None:
        """Take the result of sample ``position``; record the case's once every sample's is in."""
        sample = self.samples[position]
        if not self.sampled:
            record(
                self.index,
                GradeResult.from_rubric(
                    result,
                    over_limit=self.over_limit,
                    tags=self.case.tags,
                    candidate_digest=candidate_digest,
                    reused=reused,
                ),
            )
            return
        assert sample.id is not None
        self._arrived[position] = SampleResult.from_rubric(
            sample.id,
            result,
            over_limit=self.over_limit,
            candidate_digest=candidate_digest,
            reused=reused,
        )
        if len(self._arrived) == len(self.samples):
            samples = [self._arrived[p] for p in range(len(self.samples))]
            assert all(isinstance(s, SampleResult) for s in samples)
            record(
                self.index,
                GradeResult.of_samples(
                    self.case.id,
                    [s for s in samples if isinstance(s, SampleResult)],
                    tags=self.case.tags,
                ),
            )


def _grade_runs(
    rubric: Path,
    cases_runs: list[_CaseRuns],
    *,
    jobs: int,
    sandbox: Sandbox,
    ledger: Ledger,
    record: Callable[[int, GradeResult], None],
    stopped: Callable[[], bool],
    interpreter: Interpreter,
    declared: EnvironmentSpec | None,
    executor: Executor,
    command: RubricCommand,
    warm: bool = True,
    reads_expected: bool = False,
) -> None:
    """Grade every sample of ``cases_runs``: from ``ledger`` what it holds, the rest by running."""
    requests: list[tuple[_CaseRuns, int, RunSpec, str | None]] = []

    def recorded(
        runs: _CaseRuns, position: int, result: RubricResult, digest: str | None, *, reused: bool
    ) -> None:
        runs.arrived(position, result, digest, reused=reused, record=record)
        if stopped():
            raise _Stop  # out of the runs: those not started never start

    for runs in cases_runs:
        for position, sample in enumerate(runs.samples):
            spec = RunSpec.of(
                rubric,
                runs.case,
                sample.path,
                sandbox=sandbox.policy,
                interpreter=interpreter,
                environment=declared,
                command=command,
                warm=warm,
                reads_expected=reads_expected,
            )
            if ledger.enabled:
                spec, key = ledger.keyed(spec)
                stored = ledger.lookup(key)
                if stored is not None:
                    recorded(
                        runs, position, stored[0], labelled(spec.candidate.digest), reused=True
                    )
                    continue
            else:  # nothing is looked up: only the candidate's digest is needed
                spec = spec.with_candidate_digest(tree_digest(sample.path))
                key = None
            requests.append((runs, position, spec, key))

    def arrived(index: int, result: RubricResult) -> None:
        runs, position, spec, key = requests[index]
        ledger.record(key, [result])
        recorded(runs, position, result, labelled(spec.candidate.digest), reused=False)

    specs = [spec for _, _, spec, _ in requests]
    executor.run(specs, jobs=jobs, sandbox=sandbox, on_result=arrived)
