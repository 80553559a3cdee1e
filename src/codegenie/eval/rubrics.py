"""Run a task class's rubric on one candidate: the one runner of the rubric protocol.

The protocol (``docs/rubrics.md``, the verdict's JSON Schema in
``docs/rubric-verdict.schema.json``)::

    python rubric.py CASE_DIR CANDIDATE_DIR

prints one JSON object on stdout, ``{"passed": bool, "score": number in
[0, 1] (optional), "reason": string (optional), …}``, and exits 0 when
passed, 1 when not. Anything else is a rubric error, never a pass.

:func:`execute` makes one run as a :class:`~codegenie.eval._run.spec.RunSpec`
says (``grade`` and ``check --rubrics`` build the specs, :func:`run_rubrics`
makes many); :func:`run_rubric` builds the spec of one run and makes it. The
rubric runs as the spec's command says (by default the protocol's, with the
spec's interpreter — the harness's own, ``sys.executable``, unless the task
class has an environment — with ``-B`` so that no ``__pycache__`` is written
into the bench; a task class may declare another command, such as ``sh
rubric.sh``: :mod:`codegenie.eval._command`), in a sandbox provider's run, in a fresh temporary
working directory, with stdin at end of file, in a session of its own that
is killed whole when the case's timeout expires (and once the rubric has
exited, so that nothing it started outlives it): the process supervisor of
:mod:`codegenie.eval._process.supervisor` starts, watches, kills and reaps
it. stdout and stderr are read as they come: the first 1 MiB of stdout and
the last 64 KiB of stderr are kept, whatever the rubric writes. The rubric
receives *copies* of the case directory and of the candidate directory, made
in the temporary directory (the case's without its ``expected/``, the
bench's answer key, unless the task class declares ``reads_expected``, and
without its ``exploits/``; symbolic links copied as links, never followed,
and only when they resolve inside the tree they are in; a candidate that is
itself a link, special files, other file systems and trees beyond
:data:`COPY_ENTRIES_LIMIT` entries, :data:`COPY_BYTES_LIMIT` bytes or
:data:`COPY_DEPTH_LIMIT` levels refused as rubric errors), so a rubric that
writes or deletes cannot change the bench or the candidate, and no path in a
candidate leads to the case, the bench or another candidate. The temporary
directory is removed in every case — verdict, error, timeout,
``KeyboardInterrupt``.

POSIX only (process groups); importing the module works everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, final

from pydantic import BaseModel, ConfigDict

from codegenie.eval._process import procfs
from codegenie.eval._process.limits import most_at_once
from codegenie.eval._process.output import Bounds
from codegenie.eval._process.supervisor import (
    AnyOf,
    Ending,
    NotStarted,
    open_pidfd,
    signal_name,
    spawn,
)
from codegenie.eval._run.digest import (
    COPY_DIRECTORY_MODE,
    COPY_TIME_NS,
    UNKEYED_NAMES,
    copy_mode,
)
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox.choices import CHOICES, ProviderName
from codegenie.eval._sandbox.keyring import run_in_new_keyring
from codegenie.eval._sandbox.limits import Breach
from codegenie.eval._sandbox.preparation import PreparedRun
from codegenie.eval._sandbox.provider import Sandbox, choose_sandbox
from codegenie.eval._sandbox.runs import Place, Runs
from codegenie.eval._tree import (
    BYTES_LIMIT,
    DEPTH_LIMIT,
    ENTRIES_LIMIT,
    NO_BOUNDS,
    Descent,
    Entry,
    TreeBeyondBounds,
    TreeBounds,
    Walk,
    special_kind,
)
from codegenie.eval.cases import Case, case_id_problem

__all__ = (
    "CANCELLED_REASON",
    "COPY_BYTES_LIMIT",
    "COPY_DEPTH_LIMIT",
    "COPY_ENTRIES_LIMIT",
    "SANDBOX_CHOICES",
    "STDERR_TAIL_LIMIT",
    "STDOUT_LIMIT",
    "VERDICT_DEPTH",
    "RubricResult",
    "RubricStatus",
    "Sandbox",
    "choose_sandbox",
    "execute",
    "remove_tree",
    "rubric_traceback",
    "run_rubric",
    "run_rubrics",
    "verdict_gist",
    "verdict_problem",
)

if TYPE_CHECKING:
    import queue

#: The most of a rubric's stdout that is kept; a longer stdout is a rubric error.
STDOUT_LIMIT: Final = 1024 * 1024
#: How much of the end of a rubric's stderr is kept (for the error report).
STDERR_TAIL_LIMIT: Final = 64 * 1024
#: The most bytes of regular files copied from one tree (a case, a candidate);
#: a larger tree is a rubric error, not a copy that fills the disk. The bounds
#: of the copies are those of every walk of a tree (:mod:`codegenie.eval._tree`).
COPY_BYTES_LIMIT: Final = BYTES_LIMIT
#: The most entries (files, directories, links) copied from one tree.
COPY_ENTRIES_LIMIT: Final = ENTRIES_LIMIT
#: The most levels of one tree copied (``a/b/c`` is 3 levels down).
COPY_DEPTH_LIMIT: Final = DEPTH_LIMIT

RubricStatus = Literal["passed", "failed", "error", "timeout"]
#: What ``--sandbox`` takes: ``auto`` (bubblewrap, where it starts), ``bwrap``, ``none``.
SANDBOX_CHOICES: Final = CHOICES

# How much of a file the copy reads at a time.
_COPY_CHUNK: Final = 1024 * 1024
# How the rubric's exit is watched: a pidfd where the platform has one. Looked
# up at each run, so that the polling of platforms without one is tested here too.
_pidfd: Callable[[int], int | None] = open_pidfd
#: The reason of the error result of a run stopped by its ``cancel`` event.
CANCELLED_REASON: Final = "the run was cancelled before the rubric decided"


@final
class RubricResult(BaseModel):
    """The outcome of one rubric run on one candidate.

    ``status`` is ``"passed"`` (exit 0 with ``"passed": true``), ``"failed"``
    (exit 1 with ``"passed": false``), ``"timeout"`` (the case's timeout
    expired; the rubric's process group was killed) or ``"error"`` (anything
    else: another exit status, a signal, stdout that is not one verdict
    object, a verdict that contradicts the exit status or breaks the schema,
    a rubric or candidate that cannot be run or copied). ``reason`` is the
    verdict's reason for a pass or a fail, and says what went wrong for an
    error or a timeout. ``score`` is the verdict's score, if it gave one.
    ``verdict`` is the parsed JSON object when stdout was one (also for some
    errors, such as a contradicting exit status). ``exit_status`` is the
    rubric's exit status (negative: killed by that signal; ``None``: it did
    not run). ``stderr_tail`` is the end of its stderr (at most 64 KiB,
    decoded as UTF-8 with replacement). ``duration_s`` counts from the start
    of the copies to the end of the run.

    What the run used, once it ran: ``wall_s`` (seconds from the rubric's
    start to its end), ``cpu_s`` (user and system CPU seconds of the rubric
    and all it started) and ``peak_memory_mib`` (the most memory it held).
    ``sandbox`` is where it ran (``"bwrap"`` or ``"none"``); ``limit`` names
    the limit a run that exceeded one exceeded (``"memory"``,
    ``"processes"``, ``"file-size"``, ``"cpu-time"``): such a run is an
    ``"error"``, never ``"failed"``, whatever the rubric printed. ``node``
    is the node of a cluster that made the run (the Ray executor: its node
    id), ``None`` for a run made by this process.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    case: str
    status: RubricStatus
    score: float | None = None
    reason: str | None = None
    duration_s: float
    verdict: dict[str, Any] | None = None
    exit_status: int | None = None
    stderr_tail: str = ""
    wall_s: float | None = None
    cpu_s: float | None = None
    peak_memory_mib: float | None = None
    sandbox: ProviderName | None = None
    limit: str | None = None
    node: str | None = None

    @property
    def passed(self) -> bool:
        """Whether the rubric passed the candidate."""
        return self.status == "passed"


def run_rubric(
    rubric: Path | str,
    case: Case,
    candidate: Path | str,
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    sandbox: Sandbox | str = "auto",
    reads_expected: bool = False,
) -> RubricResult:
    """Run ``rubric`` on a copy of ``candidate`` for ``case``; return what it decided.

    The run happens in ``sandbox`` (a :class:`Sandbox`, or a ``--sandbox``
    word for :func:`choose_sandbox`, which raises ``SandboxUnavailable``
    when bubblewrap cannot start): under bubblewrap it has no network, sees
    the system read-only, its task class's directory read-only (without
    ``cases/``) and nothing else of the machine, writes only its temporary
    directory, gets an allow-listed environment, and everything it starts
    dies with it. The case's limits (``memory``, ``processes``,
    ``file-size``, ``cpu-time``) apply; a run that exceeds one is an
    ``"error"`` naming the limit.

    ``rubric`` is the task class's ``rubric.py`` (``TaskClass.rubric``);
    ``candidate`` a directory (``CANDIDATES_DIR/<case-id>``, or
    ``case.expected``/``case.input`` for ``check --rubrics``). ``timeout``
    (seconds) defaults to ``case.timeout``. The rubric is run as
    ``python -B RUBRIC CASE_COPY CANDIDATE_COPY`` with the running
    interpreter (``sys.executable``), where the copies
    keep the names of the originals (the case copy is named by the case id),
    with the working directory and ``TMPDIR`` in a fresh temporary directory.
    The case's copy holds no ``expected/`` (the bench's answer key) unless
    ``reads_expected`` (the task class's ``reads_expected``), nor its
    ``exploits/``.

    Never raises for what the rubric, the case or the candidate do or hold:
    every such outcome is a :class:`RubricResult` (see its ``status``); a
    missing rubric file or candidate directory is an ``"error"`` result.
    Raises ``ValueError`` for a ``timeout`` that is not a positive number,
    ``NotImplementedError`` off POSIX. ``KeyboardInterrupt`` propagates, after
    the rubric's process group is killed and the temporary directory removed.

    ``cancel``: once this event is set, the run stops within a fraction of
    a second — the rubric's process group is killed, the temporary directory
    removed — and the result is an ``"error"`` whose reason is
    :data:`CANCELLED_REASON`; a run whose event is set before it starts
    starts nothing. This is how a caller running it in threads stops them:
    only the main thread receives ``KeyboardInterrupt``.

    Thread-safe and blocking: ``grade --jobs N`` runs it from N threads. The
    clean-up runs in ``finally`` clauses: a caller that must also survive
    ``SIGTERM`` turns it into an exception (as Python does ``SIGINT``); a
    caller killed outright (``SIGKILL``) leaves the rubric to finish alone,
    since it runs in a session of its own.
    """
    limit = case.timeout if timeout is None else timeout
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0:
        msg = f"timeout must be a positive number of seconds, got {limit!r}"
        raise ValueError(msg)
    if case_id_problem(case.id) is not None:
        msg = f"case id {case.id!r} is not a valid case id; use the cases load_cases returns"
        raise ValueError(msg)
    box = sandbox if isinstance(sandbox, Sandbox) else choose_sandbox(sandbox)
    spec = RunSpec.of(
        rubric,
        case,
        candidate,
        sandbox=box.policy,
        timeout=float(limit),
        reads_expected=reads_expected,
    )
    return execute(spec, box, cancel=cancel)


def execute(
    spec: RunSpec,
    sandbox: Sandbox,
    *,
    cancel: threading.Event | None = None,
    runs: Runs | None = None,
) -> RubricResult:
    """Make the run ``spec`` says, in ``sandbox``; return what the rubric decided.

    What :func:`run_rubric` does, from a :class:`~codegenie.eval._run.spec.RunSpec`
    (which it builds): the same copies, sandbox, limits, supervision and
    verdict, the same contract. ``sandbox`` must be the provider whose
    policy the spec names. Raises ``NotImplementedError`` off POSIX.

    ``runs``: the way the batch the run belongs to makes its runs
    (:meth:`Sandbox.runs`; a warm worker's fork, say, where the sandbox
    has one: what the run sees, its limits and its verdict are the same);
    by default, the sandbox's way of making a single run. Only a Python
    rubric (its command ``{python} {rubric} …``, its task class not
    ``warm=False``) may be a warm worker's fork; any other is made the
    plain way.
    """
    if os.name != "posix":  # pragma: no cover - process groups are POSIX
        msg = "rubrics are run in a process group of their own, which needs POSIX"
        raise NotImplementedError(msg)
    started = time.monotonic()

    def error(reason: str) -> RubricResult:
        elapsed = time.monotonic() - started
        return RubricResult(
            case=spec.case_id,
            status="error",
            reason=reason,
            duration_s=elapsed,
            sandbox=sandbox.mode,
        )

    rubric_file = spec.rubric
    candidate_dir = spec.candidate.path
    if not os.path.isfile(rubric_file):
        return error(f"the rubric {rubric_file} does not exist")
    if not os.path.isdir(candidate_dir):
        return error(f"the candidate {candidate_dir} is not a directory")
    if cancel is not None and cancel.is_set():
        return error(CANCELLED_REASON)
    way = sandbox.runs(many=False) if runs is None else runs
    # What the run runs: by content where it was read (a node unpacks each run's trees at
    # paths of their own), else by path.
    run = (
        spec.rubric,
        spec.case.digest or spec.case.path,
        spec.candidate.digest or spec.candidate.path,
    )
    place = way.place(spec, run, python=spec.command.python and spec.warm)
    try:
        workspace = tempfile.mkdtemp(prefix="codegenie-rubric-", dir=place.directory)
    except OSError as exc:
        return error(f"cannot create a temporary directory: {exc.strerror or exc}")
    try:
        case_copy = os.path.join(workspace, "case", spec.case_id)
        candidate_copy = os.path.join(workspace, "candidate", spec.candidate_name)
        try:
            for name in ("case", "candidate"):
                os.mkdir(os.path.join(workspace, name))
            _copy_tree(spec.case.path, case_copy, "case", leave_out=spec.left_out_of_case)
            _copy_tree(candidate_dir, candidate_copy, "candidate", follow=False)
        except _CopyRefused as exc:
            return error(f"cannot copy {exc.path}: {exc.reason}")
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            return error(f"cannot copy{where}: {exc.strerror or type(exc).__name__}")
        if cancel is not None and cancel.is_set():  # while the copies were made
            return error(CANCELLED_REASON)
        command = spec.command.render(
            python=str(spec.interpreter.executable),
            rubric=rubric_file,
            case=case_copy,
            candidate=candidate_copy,
        )
        try:
            return _run_in(spec, (way, place), Path(workspace), command, cancel, (started, error))
        except NotStarted as exc:
            return error(f"cannot start the rubric: {exc.reason}")
        except OSError as exc:  # out of file descriptors, say; the rubric was killed
            return error(f"cannot run the rubric: {exc.strerror or type(exc).__name__}")
    finally:
        remove_tree(workspace)


def _run_in(  # noqa: PLR0917 - execute's own steps
    spec: RunSpec,
    where: tuple[Runs, Place],
    workspace: Path,
    command: list[str],
    cancel: threading.Event | None,
    since: tuple[float, Callable[[str], RubricResult]],
) -> RubricResult:
    """Make the run in ``workspace`` (its copies made), the way ``where`` says; judge it."""
    started, error = since
    runs, place = where

    def plain(prepared: PreparedRun) -> Ending:
        return _start_and_watch(prepared, command, spec.timeout, cancel)

    def judge(ending: Ending, prepared: PreparedRun) -> RubricResult:
        return _ended(spec, ending, prepared, started, error)

    output = (Bounds(head=STDOUT_LIMIT), Bounds(tail=STDERR_TAIL_LIMIT))
    return runs.make(
        place,
        spec,
        workspace,
        command,
        spec.timeout,
        cancel,
        output=output,
        plain=plain,
        judge=judge,
    )


def _ended(
    spec: RunSpec,
    ending: Ending,
    prepared: PreparedRun,
    started: float,
    error: Callable[[str], RubricResult],
) -> RubricResult:
    if ending.cancelled and prepared.disk.breach is None:
        return error(CANCELLED_REASON)
    return _judge(spec.case_id, ending, _Run(prepared, spec.timeout, started))


def _start_and_watch(
    prepared: PreparedRun, command: list[str], limit: float, cancel: threading.Event | None
) -> Ending:
    """Start ``command`` in its prepared sandbox, in a new session keyring; watch it to its end.

    The run is started and watched by a thread of its own that joined a new,
    empty session keyring (:mod:`codegenie.eval._sandbox.keyring`).
    """
    stop = threading.Event()

    def start_and_watch() -> Ending:
        with spawn(
            prepared.argv(command),
            cwd=str(prepared.cwd),
            env=prepared.env,
            stdout=Bounds(head=STDOUT_LIMIT),
            stderr=Bounds(tail=STDERR_TAIL_LIMIT),
            pass_fds=prepared.pass_fds,
            pidfd=_pidfd,
        ) as child:
            prepared.started(lambda: [child.pid, *procfs.descendants(child.pid)])
            either = stop if cancel is None else AnyOf(cancel, stop)
            return child.wait(limit, cancel=either, watch=prepared.watch())

    ending, _ = run_in_new_keyring(start_and_watch, stop=stop.set)
    return ending


# -- many runs ------------------------------------------------------------------

# File descriptors one rubric run holds at most (its pipes and those Popen makes, the
# selector, the pidfd; the copies; the removal of its directory).
_FDS_PER_RUN = 12


def run_rubrics(
    runs: Sequence[RunSpec],
    *,
    jobs: int,
    sandbox: Sandbox,
    on_result: Callable[[int, RubricResult], None] | None = None,
) -> list[RubricResult]:
    """Make the runs ``runs`` specify, ``jobs`` at a time, in ``sandbox``; return the results.

    The runs happen in threads (each is a subprocess), never more at once
    than the open-file limit (``ulimit -n``) leaves room for.
    ``on_result(index, result)`` is called in the calling thread as each run
    ends, in the order they end. ``KeyboardInterrupt`` (or any exception,
    from ``on_result`` say) stops them all: runs not started never start,
    the running rubrics are killed with everything they started and their
    copies removed, and the runs waited for to their end — a second
    interrupt during that clean-up does not cut it short — and then the
    exception propagates.
    """
    # Deferred for the check's workers, which import this module but never run
    # rubrics: concurrent.futures brings logging, whose fork handlers would run
    # at the fork of every slug.
    import queue  # noqa: PLC0415 - as concurrent.futures below: only a batch of runs needs it
    from concurrent.futures import Future, ThreadPoolExecutor  # noqa: PLC0415 - see the comment above

    results: list[RubricResult | None] = [None] * len(runs)
    if not runs:
        return []
    cancel = threading.Event()
    workers = max(1, min(jobs, len(runs), most_at_once(_FDS_PER_RUN) or jobs))
    way = sandbox.runs()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rubric")
    submitted: list[Future[RubricResult]] = []
    # Each run says when it ends: waiting on every pending future after each
    # end (concurrent.futures.wait) costs a pass over all of them, quadratic
    # in the runs, which a bench of 20,000 runs felt.
    ended: queue.SimpleQueue[int] = queue.SimpleQueue()
    try:
        for index, run in enumerate(runs):
            future = pool.submit(execute, run, sandbox, cancel=cancel, runs=way)
            future.add_done_callback(functools.partial(_say_ended, ended, index))
            submitted.append(future)
        for _ in submitted:
            while True:
                try:  # a timeout, so that the main thread wakes up for KeyboardInterrupt
                    index = ended.get(timeout=0.25)
                except queue.Empty:
                    continue
                break
            results[index] = result = submitted[index].result()
            if on_result is not None:
                on_result(index, result)
    except BaseException:
        _stop_through_interrupts(pool, submitted, cancel)
        raise
    finally:
        pool.shutdown(wait=True)
        way.close()
    return [result for result in results if result is not None]


def _say_ended(ended: queue.SimpleQueue[int], index: int, _: object) -> None:
    """Put ``index`` on ``ended``: a run's done callback, in whichever thread ends it."""
    ended.put(index)


def _stop_through_interrupts(pool: Any, submitted: Sequence[Any], cancel: threading.Event) -> None:
    """Stop every run of ``pool`` and wait until each has returned, whatever interrupts arrive.

    Runs not started are cancelled; the running ones see ``cancel``, kill
    their rubric and remove their copies, and only then return. What is
    waited for is each run's future — a run's clean-up is over when it is
    done — not ``Thread.join``: on Python 3.11 a join cut short by
    ``KeyboardInterrupt`` can mark a thread that still runs as ended, and
    no later join waits for it again. A second Ctrl-C (or SIGTERM) during
    the wait starts the wait again; the threads are joined once every run
    is done. Only the runs that started are waited on: a future the pool's
    shutdown cancelled never notifies a waiter (no thread picks it up), so
    a wait that counts it would last its whole timeout — a stop then took
    that much longer.
    """
    from concurrent.futures import wait  # noqa: PLC0415 - see run_rubrics

    while True:
        try:
            cancel.set()
            pool.shutdown(wait=False, cancel_futures=True)
            started = [future for future in submitted if not future.cancelled()]
            while not all(future.done() for future in started):
                wait(started, timeout=0.25)
            pool.shutdown(wait=True)
        except KeyboardInterrupt:  # a second Ctrl-C (or SIGTERM): finish the clean-up first
            continue
        return


# -- the verdict ----------------------------------------------------------------


def verdict_problem(verdict: object) -> str | None:
    """Return what is wrong with a parsed ``verdict``, or ``None`` if it follows the protocol.

    The rules of ``docs/rubric-verdict.schema.json``: a JSON object with
    ``passed`` a boolean, ``score`` (optional) a number — not a boolean — in
    [0, 1], ``reason`` (optional) a string; other keys are allowed.
    """
    if not isinstance(verdict, dict):
        return f"the verdict is {_json_type(verdict)}, not a JSON object"
    if "passed" not in verdict:
        return 'the verdict has no "passed" key'
    passed = verdict["passed"]
    if not isinstance(passed, bool):
        return f'"passed" must be true or false, not {_json_type(passed)}'
    if "score" in verdict:
        score = verdict["score"]
        if isinstance(score, bool) or not isinstance(score, int | float):
            return f'"score" must be a number in [0, 1], not {_json_type(score)}'
        if not 0 <= score <= 1:
            return f'"score" must be a number in [0, 1], not {score!r}'
    if "reason" in verdict and not isinstance(verdict["reason"], str):
        return f'"reason" must be a string, not {_json_type(verdict["reason"])}'
    return None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            msg = f"the key {key!r} appears twice"
            raise ValueError(msg)
        result[key] = value
    return result


def _no_constant(name: str) -> float:
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def _finite_float(text: str) -> float:
    """Return a JSON number as a float; refuse ``1e309`` (Python: ``inf``): JSON has no infinity."""
    value = float(text)
    if not math.isfinite(value):
        msg = f"{text} is beyond the range of a number: a verdict holds only finite numbers"
        raise ValueError(msg)
    return value


def _finite_int(text: str) -> int:
    """Return a JSON integer; refuse one beyond a float's range, as every report reader does."""
    value = int(text)
    try:
        float(value)
    except OverflowError:
        shown = text if len(text) <= 24 else f"{text[:12]}… ({len(text)} digits)"
        msg = f"{shown} is beyond the range of a number: a verdict holds only finite numbers"
        raise ValueError(msg) from None
    return value


# A JSON escape that may be half of a surrogate pair, or a lone one: \ud800 to \udfff.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _as_text(text: str) -> str:
    r"""``text`` with each lone surrogate written as its escape (``\udcff``): UTF-8 can write it."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _without_lone_surrogates(value: Any) -> Any:
    r"""``value`` (parsed JSON, changed in place) with no lone surrogate in any string or key.

    JSON may escape one (``"\udcff"``: a rubric's ``json.dumps`` of a file
    name that is not UTF-8), and no UTF-8 writer takes it: the ledger, the
    reports and the output could not say the verdict. Each is kept as the
    text of its escape. Raises ``ValueError`` when two keys become one.
    """
    if isinstance(value, str):
        return _as_text(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for at, item in enumerate(node):
                if isinstance(item, str):
                    node[at] = _as_text(item)
                elif isinstance(item, list | dict):
                    stack.append(item)
        elif isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for key, item in items:
                text = _as_text(key)
                if text in node:
                    msg = f"the key {text!r} appears twice"
                    raise ValueError(msg)
                if isinstance(item, str):
                    item = _as_text(item)  # noqa: PLW2901 - the value kept
                elif isinstance(item, list | dict):
                    stack.append(item)
                node[text] = item
    return value


def verdict_gist(verdict: dict[str, Any], why: str) -> dict[str, Any]:
    """Return what is kept of a verdict too large to keep whole: the protocol's keys, ``why``."""
    kept: dict[str, Any] = {k: verdict[k] for k in ("passed", "score", "reason") if k in verdict}
    kept["omitted"] = why
    return kept


#: The deepest a verdict may nest (objects and arrays) and be kept whole.
VERDICT_DEPTH: Final = 64


def _within_depth(value: Any) -> Any:
    """``value``, or where it nests deeper than :data:`VERDICT_DEPTH`, its gist.

    Every writer of a verdict (the ledger, the JSON and HTML reports)
    recurses into it: one nested hundreds of levels deep would stop them
    all, and with them every other case's result. The gist keeps
    ``passed``, ``score`` and ``reason`` and says under ``"omitted"`` why.
    """
    if not isinstance(value, dict):
        return value
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > VERDICT_DEPTH:
            return verdict_gist(value, f"the verdict nests more than {VERDICT_DEPTH} levels deep")
        children = node.values() if isinstance(node, dict) else node
        stack += [(child, depth + 1) for child in children if isinstance(child, dict | list)]
    return value


def _parse_verdict(stdout: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Return ``(verdict, None)``, or ``(None or what was parsed, why it is not a verdict)``."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None, "stdout is not UTF-8 text; a rubric prints one JSON object"
    if not text.strip():
        return None, "the rubric printed nothing on stdout; it must print one JSON object"
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_finite_int,
        )
        if _SURROGATE_ESCAPE.search(text):
            value = _without_lone_surrogates(value)
        value = _within_depth(value)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return None, "stdout holds more than one JSON value; a rubric prints one JSON object"
        return None, f"stdout is not one JSON object ({exc.msg} at line {exc.lineno})"
    except (ValueError, RecursionError) as exc:
        return None, f"stdout is not one JSON object ({exc})"
    problem = verdict_problem(value)
    if problem is not None:
        return (value if isinstance(value, dict) else None), problem
    return value, None


@final
@dataclass(frozen=True, slots=True)
class _Run:
    """What judging a finished run needs besides how it ended: its sandbox, timeout, start."""

    prepared: PreparedRun
    limit: float
    started: float


def _judge(case_id: str, ending: Ending, run: _Run) -> RubricResult:
    stdout, stderr = ending.stdout, ending.stderr
    assert stdout is not None  # both streams were captured
    assert stderr is not None
    tail = stderr.tail.decode("utf-8", "replace")
    usage = run.prepared.usage(ending.usage)
    # The rubric's own exit status: under bubblewrap, from bubblewrap's status channel,
    # outside the sandbox (None: the rubric never started, or was killed with its sandbox).
    status = run.prepared.exit_status(ending.returncode)
    code = ending.returncode if status is None else status
    killed_by = run.prepared.killed_by(code)
    result: dict[str, Any] = {
        "case": case_id,
        "duration_s": time.monotonic() - run.started,
        "exit_status": code if killed_by is None else -killed_by,
        "stderr_tail": tail,
        "wall_s": ending.usage.wall_s,
        "cpu_s": usage.cpu_time,
        "peak_memory_mib": _mib(usage.peak_memory),
        "sandbox": run.prepared.provider,
    }
    if ending.timed_out:
        reason = f"the rubric ran longer than the case's timeout of {run.limit:g} s and was killed"
        return RubricResult(status="timeout", reason=reason, **result)
    verdict, problem = (None, None) if stdout.overflowed else _parse_verdict(stdout.head)
    claims_pass = code == 0 and problem is None and verdict is not None and verdict["passed"]
    breach: Breach | None = run.prepared.verdict_of_limits(
        code, stderr_tail=stderr.tail, waited=ending.usage, passed=claims_pass
    )
    if breach is not None:
        return RubricResult(status="error", reason=breach.reason, limit=breach.limit, **result)
    last = _last_line(tail)
    said = f"; its stderr ends with: {last}" if last else ""
    if status is None and run.prepared.contained:
        reason = f"the sandbox did not run the rubric to its end{said}"
        return RubricResult(status="error", reason=reason, **result)
    if killed_by is not None:
        return RubricResult(
            status="error", reason=f"the rubric was killed by {signal_name(killed_by)}", **result
        )
    if stdout.overflowed:
        reason = f"the rubric printed more than {STDOUT_LIMIT // 1024} KiB on stdout"
        return RubricResult(status="error", reason=reason, **result)
    if code not in (0, 1):
        reason = f"the rubric exited with status {code} (0 is a pass, 1 a fail){said}"
        return RubricResult(status="error", reason=reason, verdict=verdict, **result)
    if problem is not None or verdict is None:
        return RubricResult(status="error", reason=f"{problem}{said}", verdict=verdict, **result)
    passed = verdict["passed"]
    if passed != (code == 0):
        reason = (
            f'the rubric exited with status {code} but its verdict says "passed": '
            f"{'true' if passed else 'false'}"
        )
        return RubricResult(status="error", reason=reason, verdict=verdict, **result)
    score = verdict.get("score")
    if score is not None:
        score = float(score) + 0.0  # -0 is 0: never printed as "-0.00"
    return RubricResult(
        status="passed" if passed else "failed",
        score=score,
        reason=verdict.get("reason"),
        verdict=verdict,
        **result,
    )


def _mib(size: int | None) -> float | None:
    """Return ``size`` bytes in MiB, to a hundredth; ``None`` when unknown."""
    return None if not size else round(size / (1024 * 1024), 2)


def rubric_traceback(stderr: str) -> str | None:
    """Return the last Python traceback in a rubric's ``stderr``, if it printed one."""
    start = stderr.rfind("Traceback (most recent call last):")
    return None if start < 0 else stderr[start:].rstrip() + "\n"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


# -- the copies -------------------------------------------------------------------


@final
class _CopyRefused(Exception):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _copy_tree(
    source: str,
    target: str,
    what: str,
    *,
    follow: bool = True,
    leave_out: frozenset[str] = frozenset(),
) -> None:
    """Copy the directory ``source`` (the ``what``: ``"case"``, ``"candidate"``) to ``target``.

    The copy carries what the run's key covers and nothing else
    (:mod:`codegenie.eval._run.digest`): names, contents, executable bits
    and link texts. Regular files are copied as ``0o644``, or ``0o755``
    when executable; directories are recreated ``0o755``; every file,
    directory and link has the time :data:`COPY_TIME_NS`; owners and
    extended attributes are the harness's, never the source's. (What a
    source's other permission bits or times would have made a rubric do
    cannot be served from the ledger for a candidate that differs in
    them only: no run sees them.) Symbolic links are copied as links — never followed by the copy,
    and only when they stay inside the tree: a link that, resolved in the
    copy (through the links it meets, as the kernel would), leads outside it
    is refused, and so is a loop of links (the kernel gives up on it; this
    copy does not guess). That covers absolute links, ``..`` chains that climb out
    (into the run's other copy, the case's ``expected/`` say, through the
    documented layout), links to links and to directories that do. So no
    path in one tree reaches another tree, the bench or the host through
    the copy. Refused too (:class:`_CopyRefused`), because the copy could
    block, never end or fill the disk: a FIFO, socket or device; a directory
    on another file system than ``source`` (a mount point: ``/proc`` under
    a case that links to ``/``); a tree beyond the bounds of
    :class:`~codegenie.eval._tree.Walk` — more than :data:`COPY_ENTRIES_LIMIT`
    entries, :data:`COPY_BYTES_LIMIT` bytes (counted as read, so a file that
    grows, or says it is empty and is not, is bounded too) or
    :data:`COPY_DEPTH_LIMIT` levels. ``source`` is read and ``target``
    written one name at a time from a directory descriptor, so neither path
    length nor depth costs a Python frame or more than a few descriptors.
    ``follow``: whether ``source`` itself may be a link to a directory (a
    case may; a candidate may not: its content must be its own).
    ``leave_out``: names of ``source``'s own entries not copied (a case's
    ``expected/``): a link of the copy that led into one leads nowhere.
    """
    if not follow and os.path.islink(source):
        shown = os.readlink(source)
        raise _CopyRefused(
            source, f"the {what} is a symbolic link (to {shown!r}), not a directory of its own"
        )
    # Read here, not bound at import: a test lowers them on this module.
    bounds = TreeBounds(entries=COPY_ENTRIES_LIMIT, bytes=COPY_BYTES_LIMIT, depth=COPY_DEPTH_LIMIT)
    os.mkdir(target, 0o700)
    # (path in the copy, path in the source, text) of each link.
    links: list[tuple[str, str, str]] = []
    try:
        # Not copied: what the run's key does not cover (tree_digest leaves __pycache__ out).
        # A .pyc the interpreter would load for an unchanged source is a verdict unkeyed.
        with (
            Walk(source, bounds=bounds, follow=follow, skip=_skipping(leave_out)) as walk,
            Descent(target) as made,
        ):
            device = walk.top_status.st_dev
            # How many directories below the top are being filled.
            for entry in walk:
                while made.depth >= entry.depth:  # the directories it is not in are full
                    _finish_directory(made)
                if entry.kind == "link":
                    text = entry.readlink()
                    os.symlink(text, entry.name, dir_fd=made.fd())
                    _fixed_time(entry.name, made.fd(), link=True)
                    links.append((entry.relative, entry.path, text))
                elif entry.kind == "directory":
                    status = entry.lstat()
                    if status.st_dev != device:
                        raise _CopyRefused(entry.path, "it is on another file system (a mount)")
                    os.mkdir(entry.name, 0o700, dir_fd=made.fd())
                    made.enter(entry.name)
                elif entry.kind == "file":
                    _copy_file(entry, made.fd())
                else:
                    kind = special_kind(entry.lstat().st_mode)
                    raise _CopyRefused(entry.path, f"it is {kind}, not a regular file")
            while made.depth > 0:
                _finish_directory(made)
    except TreeBeyondBounds as exc:
        raise _CopyRefused(exc.path, exc.reason) from None
    # Judged on the copy, whole: what the rubric will resolve, not what the source says now.
    for copied, original, shown in sorted(links):
        where = _where_it_leads(target, copied, shown)
        if where is not None:
            raise _CopyRefused(
                original, f"it is a symbolic link to {shown!r}, {_LEADS[where].format(what=what)}"
            )
    # The top's time last: filling a directory sets its time.
    os.chmod(target, COPY_DIRECTORY_MODE)
    os.utime(target, ns=(COPY_TIME_NS, COPY_TIME_NS))


def _skipping(leave_out: frozenset[str]) -> Callable[[Entry], bool]:
    """Return the walk's ``skip``: what no key covers, and ``leave_out`` at the top."""
    if not leave_out:
        return _uncovered
    return lambda entry: _uncovered(entry) or (entry.depth == 1 and entry.name in leave_out)


def _uncovered(entry: Entry) -> bool:
    """Whether a copy leaves ``entry`` out: what no run's key covers (``__pycache__``)."""
    return entry.name in UNKEYED_NAMES


def _finish_directory(made: Descent) -> None:
    """Leave the full directory ``made`` is in, giving it the copies' mode and time."""
    name = made.name
    made.leave()
    # Once full: filling a directory sets its time.
    os.chmod(name, COPY_DIRECTORY_MODE, dir_fd=made.fd())
    _fixed_time(name, made.fd())


def _fixed_time(name: str, directory: int, *, link: bool = False) -> None:
    """Give ``name`` in ``directory`` (a link itself, when ``link``) the copies' time."""
    os.utime(name, ns=(COPY_TIME_NS, COPY_TIME_NS), dir_fd=directory, follow_symlinks=not link)


# How many links one resolution may go through, as Linux's path walk (MAXSYMLINKS).
_LINK_HOPS: Final = 40
# Why a link that does not stay inside its tree is refused.
_LEADS: Final = {
    "outside": "which leads outside the {what}",
    "loop": f"which goes through more than {_LINK_HOPS} links (a loop)",
    "unresolvable": "which this copy cannot follow to its end (a path too long, say)",
}


def _where_it_leads(
    root: str, link: str, target: str
) -> Literal["outside", "loop", "unresolvable"] | None:
    """Whether the symbolic link ``link`` (to ``target``) in the tree ``root`` leaves it.

    ``link`` is the link's path relative to ``root``; ``None`` means it stays.
    Resolved as the kernel resolves a path, one name at a time from the
    link's directory: ``..`` leaves the directory actually reached (so after
    a link to a directory, not the link's own), every link met is followed
    (its target read from the tree). ``"outside"``: an absolute target
    anywhere on the way, or a ``..`` above ``root``. ``"loop"``: more than
    :data:`_LINK_HOPS` links (the kernel gives up there too; refused rather
    than guessed). A name that is missing, or is not a directory, is walked
    by name from there on (the rubric may create it; what the rest of the
    path says must still stay inside). ``"unresolvable"``: a name on the way
    that cannot be looked at (a path longer than ``PATH_MAX``, say): the
    kernel may still follow it, so it is refused rather than guessed too.
    """
    where = [name for name in os.path.dirname(link).split(os.sep) if name]
    if os.path.isabs(target):
        return "outside"
    todo = target.split(os.sep)[::-1]  # the next name last
    hops = 1
    while todo:
        name = todo.pop()
        if name in ("", os.curdir):
            continue
        if name == os.pardir:
            if not where:
                return "outside"
            where.pop()
            continue
        where.append(name)
        path = os.path.join(root, *where)
        try:
            if not stat.S_ISLNK(os.lstat(path).st_mode):
                continue
            inner = os.readlink(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return "unresolvable"
        hops += 1
        if hops > _LINK_HOPS:
            return "loop"
        if os.path.isabs(inner):
            return "outside"
        where.pop()
        todo += inner.split(os.sep)[::-1]
    return None


def _copy_file(entry: Entry, directory: int) -> None:
    """Copy one regular file (content, x bit) into ``directory``, within the walk's bounds."""
    with entry.open() as reader:
        if not reader.regular:  # swapped since it was listed
            raise _CopyRefused(entry.path, "it is no longer a regular file")
        writer = os.open(
            entry.name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0),
            0o600,
            dir_fd=directory,
        )
        try:
            for chunk in reader.chunks(_COPY_CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(writer, view) :]
            os.fchmod(writer, copy_mode(reader.status.st_mode))
            os.utime(writer, ns=(COPY_TIME_NS, COPY_TIME_NS))
        finally:
            os.close(writer)


def remove_tree(path: str) -> None:
    """Remove ``path`` whatever the rubric did to it; raise nothing but an interrupt, after.

    It runs in ``finally`` clauses, where an exception would replace the
    run's result (or the ``KeyboardInterrupt`` being handled). Whatever the
    rubric left: read-only files and directories, a tree deeper than Python's
    recursion limit or than ``PATH_MAX`` (so not ``shutil.rmtree``, which
    recurses and, out of file descriptors, fails). A few attempts, in case
    something outside the group kept writing or descriptors ran short. A
    ``KeyboardInterrupt`` that arrives meanwhile (a second Ctrl-C, in the
    main thread) does not cut the removal short: the removal goes on, and
    the interrupt is raised once the tree is gone.
    """
    interrupted: KeyboardInterrupt | None = None
    attempts = 0
    while attempts < 3:
        try:
            with contextlib.suppress(OSError):
                _remove_all(path)
            if not os.path.lexists(path):
                break
            attempts += 1
        except KeyboardInterrupt as exc:  # what was removed stays removed: go on from there
            interrupted = exc
    if interrupted is not None:
        raise interrupted


def _remove_all(path: str) -> None:
    """Remove the tree ``path`` in one walk: entries as they come, directories on the way up.

    The walk (:class:`~codegenie.eval._tree.Walk`, without bounds) gives
    each directory back its owner's permissions before it enters it, never
    follows a link, and holds a few descriptors whatever the depth. What
    appears meanwhile makes a directory's removal fail (``OSError``); the
    caller tries again.
    """
    if not os.path.isdir(path) or os.path.islink(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    walk = Walk(
        path, bounds=NO_BOUNDS, follow=False, unreadable="skip", leave=Entry.rmdir, repair=True
    )
    with walk:
        for entry in walk:
            if entry.kind != "directory":
                entry.unlink()
    os.rmdir(path)
