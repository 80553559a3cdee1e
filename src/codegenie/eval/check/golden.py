"""``check --rubrics``: the validation ledger — every case's rubric on its solution and its input.

A case whose ``expected/`` fails its rubric (``golden-fails``) or whose
``input/`` already passes it (``input-passes``: solved by doing nothing)
corrupts every score measured on it; so does a case whose runs disagree
(``case-flaky``: ``--repeat N`` runs each side N times) or whose limits leave
its known-good solution no margin (``timeout-tight``, ``memory-tight``: the
slowest or largest ``expected/`` run used more than half of the case's
``timeout`` or ``memory``). Each run goes through
:func:`codegenie.eval.rubrics.run_rubrics`, which hands the rubric copies in
the sandbox, so the bench is left byte for byte as it was.

Every run is measured (wall time, CPU time, peak memory): the report carries,
per case and side, the minimum, median and maximum of each. A side whose
inputs are unchanged since its runs last agreed is answered from the store
(:class:`codegenie.eval._ledger.reuse.Ledger`) without running anything; a
flaky case, an error or a timeout is never stored. A rubric that raises is
reported at the deepest frame of its traceback inside the task class's
directory, with its traceback; a timeout at the ``timeout`` key of
``case.toml``.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from codegenie.eval import codes
from codegenie.eval._exec.local import LocalExecutor
from codegenie.eval._ledger.reuse import Ledger, LedgerSummary
from codegenie.eval._paths import FileRefused, read_regular_file
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._toml.positions import TomlPositions
from codegenie.eval.cases import CASE_FILE, CASE_FILE_SIZE_LIMIT
from codegenie.eval.check._sides import CaseRun, Side
from codegenie.eval.check.cheat import CheatSummary, exploit_diagnostics
from codegenie.eval.check.static import display_path
from codegenie.eval.codes import RUBRIC_VERBOSE_CLAUSE, diagnostic
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.rubrics import (
    RubricResult,
    Sandbox,
    rubric_traceback,
)

if TYPE_CHECKING:
    from codegenie.eval._env.store import Environment
    from codegenie.eval._exec import Executor

__all__ = ("CaseRun", "Envelope", "GoldenReport", "golden")

#: What the slowest (or largest) ``expected/`` run may use of a limit: a limit
#: should be at least twice what the known-good solution needs.
TIGHT_SHARE: Final = 0.5
_FRAME: Final = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Spread:
    """The minimum, median and maximum of one measure over a side's runs."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Spread | None:
        """Return the spread of the values that were measured; ``None`` when none was."""
        known = [value for value in values if value is not None]
        if not known:
            return None
        return cls(min(known), statistics.median(known), max(known))

    def to_json(self) -> dict[str, float]:
        """Return ``{"min", "median", "max"}``."""
        return {"min": self.min, "median": self.median, "max": self.max}


@dataclass(frozen=True, slots=True)
class Envelope:
    """What one side of one case did over its runs: verdicts and measures."""

    slug: str
    case: str
    side: Side
    statuses: tuple[str, ...]
    reused: bool
    wall_s: Spread | None
    cpu_s: Spread | None
    peak_memory_mib: Spread | None
    errors: tuple[dict[str, Any], ...] = ()
    exploit: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the JSON of one side: runs, statuses, measures, and each error's output.

        ``exploit`` names the exploit of an ``"exploit"`` side (``null`` for the others).
        """
        return {
            "slug": self.slug,
            "case": self.case,
            "side": self.side,
            "exploit": self.exploit,
            "runs": len(self.statuses),
            "statuses": list(self.statuses),
            "reused": self.reused,
            "wall_s": None if self.wall_s is None else self.wall_s.to_json(),
            "cpu_s": None if self.cpu_s is None else self.cpu_s.to_json(),
            "peak_memory_mib": (
                None if self.peak_memory_mib is None else self.peak_memory_mib.to_json()
            ),
            "errors": list(self.errors),
        }


@dataclass(frozen=True, slots=True)
class GoldenReport:
    """What ``check --rubrics`` found: diagnostics, each side's envelope, runs made and reused."""

    diagnostics: tuple[Diagnostic, ...] = ()
    envelopes: tuple[Envelope, ...] = ()
    ran: int = 0
    reused: int = 0
    ledger: LedgerSummary | None = None
    repeat: int = 1
    sandbox: str = "none"
    exploits: CheatSummary | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the ``rubrics`` part of ``check``'s JSON (``exploits``: the cheat run's)."""
        return {
            "sandbox": self.sandbox,
            "repeat": self.repeat,
            "ran": self.ran,
            "reused": self.reused,
            "ledger": None if self.ledger is None else self.ledger.to_json(),
            "exploits": None if self.exploits is None else self.exploits.to_json(),
            "cases": [envelope.to_json() for envelope in self.envelopes],
        }


def golden(
    runs: Sequence[CaseRun],
    *,
    jobs: int,
    sandbox: Sandbox,
    repeat: int = 1,
    reuse: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    environments: Mapping[str, Environment] | None = None,
    executor: Executor | None = None,
) -> GoldenReport:
    """Run each side of ``runs`` ``repeat`` times in ``sandbox``, ``jobs`` at a time; judge them.

    With ``reuse``, a side answered by the store runs nothing.
    ``on_progress(done, total)`` is called in this thread as runs end.
    ``KeyboardInterrupt`` stops every run (see :func:`run_rubrics`).
    ``executor`` makes the runs (``None``: the local executor, this
    machine's threads).
    """
    if repeat < 1:
        msg = f"repeat must be at least 1, got {repeat!r}"
        raise ValueError(msg)
    results: list[list[RubricResult | None]] = [[None] * repeat for _ in runs]
    reused = [False] * len(runs)
    chosen = environments or {}
    specs = [_spec(run, sandbox, chosen.get(run.slug)) for run in runs]
    with Ledger.open(enabled=reuse) as ledger:
        keys = [ledger.key(spec) for spec in specs]
        due: list[int] = []
        for index, key in enumerate(keys):
            stored = ledger.lookup(key, runs=repeat)
            if stored is None:
                due.append(index)
            else:
                results[index] = list(stored)
                reused[index] = True
        # Round by round: a warm worker never makes a run twice (each repeat has a hash
        # seed of its own), so that each thread starts a worker a round, not a run.
        pending = [(index, attempt) for attempt in range(repeat) for index in due]
        total = len(pending)
        done = [0]

        def arrived(position: int, result: RubricResult) -> None:
            index, attempt = pending[position]
            results[index][attempt] = result
            done[0] += 1
            if on_progress is not None:
                on_progress(done[0], total)

        (LocalExecutor() if executor is None else executor).run(
            [specs[index] for index, _ in pending],
            jobs=jobs,
            sandbox=sandbox,
            on_result=arrived,
        )
        complete = [[r for r in side if r is not None] for side in results]
        # A flaky case is never stored, neither of its sides: the next check runs it again.
        # (An exploit's runs may disagree, a limit hit one time and not the next: judged apart.)
        flaky = {
            (run.slug, run.case_id)
            for run, side in zip(runs, complete, strict=True)
            if run.side != "exploit" and len({r.status for r in side}) > 1
        }
        for index, key in enumerate(keys):
            if not reused[index] and (runs[index].slug, runs[index].case_id) not in flaky:
                ledger.record(key, complete[index])
        stored_count, summary = ledger.reused, ledger.summary()
    envelopes = tuple(
        _envelope(run, side, was_reused)
        for run, side, was_reused in zip(runs, complete, reused, strict=True)
    )
    return GoldenReport(
        diagnostics=tuple(_judge_all(runs, complete)),
        envelopes=envelopes,
        ran=total,
        reused=stored_count,
        ledger=summary,
        repeat=repeat,
        sandbox=sandbox.mode,
    )


def _spec(run: CaseRun, sandbox: Sandbox, environment: Environment | None) -> RunSpec:
    return RunSpec.of(
        run.rubric,
        run.case,
        run.tree,
        sandbox=sandbox.policy,
        interpreter=None if environment is None else environment.interpreter(),
        environment=None if environment is None else environment.declared,
        command=run.command,
        warm=run.warm,
        reads_expected=run.reads_expected,
    )


def _envelope(run: CaseRun, results: Sequence[RubricResult], reused: bool) -> Envelope:
    # An exploit's error says nothing of the bench (a forgery that kills its process group
    # ends its rubric), and its reason names the exploit's scratch tree: statuses only.
    errors = (
        ()
        if run.side == "exploit"
        else tuple(
            {
                "status": r.status,
                "reason": r.reason,
                "stderr_tail": r.stderr_tail,
                "traceback": rubric_traceback(r.stderr_tail),
            }
            for r in results
            if r.status in {"error", "timeout"}
        )
    )
    return Envelope(
        slug=run.slug,
        case=run.case_id,
        side=run.side,
        statuses=tuple(r.status for r in results),
        reused=reused,
        wall_s=Spread.of([r.wall_s for r in results]),
        cpu_s=Spread.of([r.cpu_s for r in results]),
        peak_memory_mib=Spread.of([r.peak_memory_mib for r in results]),
        errors=errors,
        exploit=run.exploit,
    )


def _judge_all(
    runs: Sequence[CaseRun], results: Sequence[Sequence[RubricResult]]
) -> Iterator[Diagnostic]:
    by_case: dict[tuple[str, str], list[int]] = {}
    exploits: list[int] = []
    # A case whose input/ passes is solved by doing nothing (input-passes): an exploit built
    # from its input/ passing says nothing more of the rubric.
    solved = set()
    for index, run in enumerate(runs):
        if run.side == "exploit":
            exploits.append(index)
            continue
        by_case.setdefault((run.slug, run.case_id), []).append(index)
        if run.side == "input" and any(r.status == "passed" for r in results[index]):
            solved.add((run.slug, run.case_id))
    for index in exploits:
        if (runs[index].slug, runs[index].case_id) not in solved:
            yield from exploit_diagnostics(runs[index], results[index])
    for indices in by_case.values():
        flaky = [i for i in indices if len({r.status for r in results[i]}) > 1]
        if flaky:
            yield _flaky(runs[indices[0]], [(runs[i], results[i]) for i in indices])
        found = [
            each
            for i in indices
            if i not in flaky and results[i]
            for each in _judge(runs[i], results[i])
        ]
        yield from _one_per_crash(found)


def _one_per_crash(found: list[Diagnostic]) -> Iterator[Diagnostic]:
    """Yield ``found``, a rubric that raised the same way on both sides reported once."""
    crashes: dict[tuple[object, ...], Diagnostic] = {}
    for each in found:
        if each.code != codes.RUBRIC_ERROR.name or each.traceback is None:
            yield each
            continue
        key = (each.file, each.line, each.message.replace("on input/", "on expected/"))
        if key in crashes:
            first = crashes[key]
            merged = first.message.replace("on expected/", "on expected/ and input/")
            crashes[key] = Diagnostic(**{**_fields(first), "message": merged})
        else:
            crashes[key] = each
    yield from crashes.values()


def _counts(run: CaseRun, results: Sequence[RubricResult]) -> str:
    wanted = "passed" if run.side == "expected" else "failed"
    good = sum(r.status == wanted for r in results)
    return f"{run.side}/ {wanted} {good} of {len(results)} run{'s' if len(results) != 1 else ''}"


def _flaky(first: CaseRun, sides: Sequence[tuple[CaseRun, Sequence[RubricResult]]]) -> Diagnostic:
    counts = "; ".join(_counts(run, results) for run, results in sides)
    differing = []
    for run, results in sides:
        usual = max({r.status for r in results}, key=[r.status for r in results].count)
        differing += [
            f"{run.side}/ run {n}: {r.status}" + (f" ({r.reason})" if r.reason else "")
            for n, r in enumerate(results, 1)
            if r.status != usual
        ]
    message = (
        f"case {first.case_id!r} of {first.slug!r} gives different verdicts on the same "
        f"input: {counts}; " + "; ".join(differing)
    )
    file, line, column = _case_place(first, None)
    return diagnostic(codes.CASE_FLAKY, message, file, line, column, slug=first.slug)


def _judge(run: CaseRun, results: Sequence[RubricResult]) -> Iterator[Diagnostic]:
    result = results[0]  # the runs agree
    name = f"case {run.case_id!r} of {run.slug!r}"
    reason = f": {result.reason}" if result.reason else ""
    if result.status == "timeout":
        file, line, column = _case_place(run, "timeout")
        yield diagnostic(
            codes.RUBRIC_TIMEOUT,
            f"the rubric did not decide on {run.side}/ of {name} within {run.timeout:g} s",
            file,
            line,
            column,
            slug=run.slug,
        )
    elif result.status == "error":
        yield _rubric_error(run, result, name)
    elif run.side == "expected" and result.status == "failed":
        file, line, column = _case_place(run, None)
        yield diagnostic(
            codes.GOLDEN_FAILS,
            f"the known-good solution (expected/) of {name} fails{reason}",
            file,
            line,
            column,
            slug=run.slug,
        )
    elif run.side == "input" and result.status == "passed":
        file, line, column = _case_place(run, None)
        yield diagnostic(
            codes.INPUT_PASSES,
            f"the unsolved input (input/) of {name} already passes{reason}",
            file,
            line,
            column,
            slug=run.slug,
        )
    if run.side == "expected" and result.status in {"passed", "failed"}:
        yield from _tight(run, results)


def _tight(run: CaseRun, results: Sequence[RubricResult]) -> Iterator[Diagnostic]:
    slowest = max((r.wall_s for r in results if r.wall_s is not None), default=None)
    if slowest is not None and slowest > TIGHT_SHARE * run.timeout:
        file, line, column = _case_place(run, "timeout")
        yield diagnostic(
            codes.TIMEOUT_TIGHT,
            f"the known-good solution of case {run.case_id!r} of {run.slug!r} took "
            f"{slowest:.2f} s, more than half of its timeout of {run.timeout:g} s",
            file,
            line,
            column,
            slug=run.slug,
        )
    largest = max(
        (r.peak_memory_mib for r in results if r.peak_memory_mib is not None), default=None
    )
    memory = run.case.limits.memory
    if largest is not None and memory is not None and largest > TIGHT_SHARE * memory:
        file, line, column = _case_place(run, "memory")
        yield diagnostic(
            codes.MEMORY_TIGHT,
            f"the known-good solution of case {run.case_id!r} of {run.slug!r} used "
            f"{largest:.0f} MiB, more than half of its memory limit of {memory} MiB",
            file,
            line,
            column,
            slug=run.slug,
        )


def _rubric_error(run: CaseRun, result: RubricResult, name: str) -> Diagnostic:
    traceback = rubric_traceback(result.stderr_tail)
    frame = _deepest_frame(traceback, os.path.dirname(os.path.abspath(run.rubric)))
    if traceback is not None and frame is not None:
        raised = traceback.rstrip().rsplit("\n", 1)[-1].strip()
        found = diagnostic(
            codes.RUBRIC_ERROR,
            f"the rubric raised {raised} on {run.side}/ of {name}",
            display_path(frame[0]),
            frame[1],
            1,
            slug=run.slug,
            hint="fix the rubric at this line" + RUBRIC_VERBOSE_CLAUSE,
        )
    else:
        reason = f": {result.reason}" if result.reason else ""
        file, line, column = _case_place(run, None)
        found = diagnostic(
            codes.RUBRIC_ERROR,
            f"the rubric broke its protocol on {run.side}/ of {name}{reason}",
            file,
            line,
            column,
            slug=run.slug,
        )
    return Diagnostic(**{**_fields(found), "traceback": traceback})


def _fields(found: Diagnostic) -> dict[str, Any]:
    return {name: getattr(found, name) for name in Diagnostic.__dataclass_fields__}


def _deepest_frame(traceback: str | None, directory: str) -> tuple[str, int] | None:
    """Return ``(file, line)`` of the traceback's deepest frame inside ``directory``."""
    if traceback is None:
        return None
    inside = os.path.join(os.path.realpath(directory), "")
    found = None
    for match in _FRAME.finditer(traceback):
        file = match.group("file")
        if os.path.realpath(file).startswith(inside):
            found = (file, int(match.group("line")))
    return found


def _case_place(run: CaseRun, key: str | None) -> tuple[str, int | None, int | None]:
    """Where to report a problem of the case: at ``key`` of its case.toml when it is written.

    Without the key (or with ``key`` ``None``): line 1 of case.toml when
    ``key`` is ``None``, the case directory itself when the key takes its
    default (nothing to point at in the file).
    """
    file = run.directory / CASE_FILE
    if key is None:
        return display_path(file), 1, 1
    try:
        data, _ = read_regular_file(str(file), CASE_FILE_SIZE_LIMIT)
        text = data.decode("utf-8")
        positions = TomlPositions(text)
    except (OSError, FileRefused, UnicodeDecodeError, ValueError, RecursionError):
        return display_path(file), 1, 1
    if re.search(rf"^\s*{re.escape(key)}\s*=", text, re.MULTILINE) is None:
        return display_path(run.directory), None, None
    line, column = positions.find((key,))
    return display_path(file), line, column
