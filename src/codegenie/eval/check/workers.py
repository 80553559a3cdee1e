"""Import registrations out of process, in parallel, each slug in a process of its own.

``import_all`` starts up to ``jobs`` worker interpreters
(:mod:`codegenie.eval.check._worker`), each a clean parent that forks one
disposable child per slug; this process keeps each worker two slugs ahead
(the one it runs and the next, so that it never waits for this process
between two slugs) and waits for the answers of all of them at once, in one
thread. A worker that dies (a registration that kills its parent) or stops
answering is killed with its process tree and replaced; the slug it was on
is reported as crashed or timed out, and the remaining slugs are still
checked.

Workers are started and ended by the process supervisor
(:mod:`codegenie.eval._process.supervisor`); what they answer is checked on
receipt (:func:`codegenie.eval.check._protocol.parse_answer`), and an answer
that breaks the protocol is its slug's problem (``"tampered"``: it cannot be
judged).

No registration can reach another slug's answer. The channels to each worker
are pairs of Unix sockets, which no process can open again through ``/proc``
(a pipe can be, by any process of the same user); this process and the
workers are not dumpable while the imports run, so no process of the user
without ``CAP_SYS_PTRACE`` can take their descriptors or read their memory;
and no worker is started while a registration runs, so none is ever open to
them (a process is dumpable from its start until it closes itself). See
``docs/security.md`` for what remains.

As many workers run as ``jobs`` asks, and no more than the open-file limit
(``ulimit -n``) leaves room for; when the system refuses a worker or a
worker's fork (out of descriptors or processes), the check goes on with the
workers it has, and raises :class:`~codegenie.eval.errors.CheckUnavailable`
only when it has none — never a diagnostic about a slug.

Whatever happens here — an exception, ``KeyboardInterrupt`` — no worker and no
process a registration started outlives :func:`import_all`: each worker is
asked to stop (SIGINT, on which it kills everything below it), then killed
with everything in its session. A worker also ends by itself when this
process dies.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import select
import signal
import socket
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Final, Literal, final

from codegenie.eval._process.limits import most_at_once
from codegenie.eval._process.output import Bounds
from codegenie.eval._process.supervisor import Child, NotStarted, spawn, undumpable
from codegenie.eval.check._protocol import (
    Done,
    Failed,
    Failure,
    Malformed,
    Parts,
    Request,
    parse_answer,
)
from codegenie.eval.check.static import ImportTarget
from codegenie.eval.errors import CheckUnavailable

__all__ = ("Outcome", "import_all", "most_workers")

STARTUP_TIMEOUT: Final = 60.0
#: How long past a slug's own timeout the worker has to report it.
GRACE: Final = 10.0
STOP_WAIT: Final = 2.0
# poll() takes milliseconds in a C int; waits are cut into slices no longer than this.
_LONGEST_WAIT: Final = 3600.0
_STDERR_TAIL: Final = 400
_READY: Final = b'{"ready": true}'
# How many requests a worker holds at once: the one it runs and the next, so that
# it never waits for this process between two slugs.
_WINDOW: Final = 2
# What a slug left running, when only the processes it left behind tell.
_ESCAPED: Final = "a process that left the check's process group"
# How much of an answer is read at a time: an answer lists every case of its task class.
_READ_SIZE: Final = 1 << 20
# Descriptors one worker holds in this process (its two sockets, the pipe of its
# stderr, its pidfd) and as many again while it starts. More workers than the
# open-file limit allows would end the check on "Too many open files".
_FDS_PER_WORKER: Final = 8

# The worker starts isolated (-I): neither the current directory nor PYTHONPATH
# is on its sys.path, so nothing of the repository can shadow what it imports.
# It still has to find this very copy of codegenie, installed or not.
_BOOTSTRAP: Final = (
    "import sys\n"
    "if {home!r} not in sys.path: sys.path.append({home!r})\n"
    "from codegenie.eval.check._worker import main\n"
    "sys.exit(main(sys.argv))\n"
)


def _codegenie_home() -> str:
    import codegenie.eval  # noqa: PLC0415 - the package this module belongs to

    return os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(codegenie.eval.__file__)))
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What importing one registration came to.

    ``kind`` is ``"done"`` (see ``registered``, ``error``, ``not_registered``,
    ``rubric``, ``left_running``, and ``parts``: the rubric and cases of a
    task class that loaded; :class:`~codegenie.eval.check._protocol.Probed`
    says what each holds), ``"crashed"`` (the process died; ``detail`` says
    how), ``"timeout"``, or ``"tampered"`` (the registration wrote to the
    check's private result pipe, or its answer breaks the protocol, so it
    cannot be trusted; ``detail`` says which).
    """

    slug: str
    kind: Literal["done", "crashed", "timeout", "tampered"]
    registered: tuple[str, ...] = ()
    error: Failure | None = None
    not_registered: bool = False
    rubric: tuple[str, ...] = ()
    left_running: str = ""
    detail: str = ""
    parts: Parts | None = None


class _WorkerGone(Exception):
    pass


class _NoWorker(Exception):
    """A worker could not be started: the system refused (``reason`` says what)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _as_this_process_decodes() -> tuple[list[str], dict[str, str] | None]:
    """Interpreter options and environment that make a worker decode names as this process does.

    Paths cross between this process and its workers as strings, and a
    string names the same file in both only when both decode file names
    alike. A worker runs isolated (``-I``), so it would not see
    ``PYTHONUTF8=0`` or ``PYTHONCOERCECLOCALE=0``: in the C locale it would
    switch to UTF-8 while this process decodes names as ASCII (each byte
    beyond it a lone surrogate), and a path from one would name nothing in
    the other. ``-X utf8`` says this process's UTF-8 mode; under an ASCII
    file-system encoding (the C locale, not coerced), ``LC_ALL=C`` keeps the
    worker's locale from being coerced to UTF-8, as this process's was not.
    """
    options = ["-X", f"utf8={sys.flags.utf8_mode}"]
    if sys.flags.utf8_mode or sys.getfilesystemencoding().lower() not in _ASCII_NAMES:
        return options, None
    return options, {**os.environ, "LC_ALL": "C"}


# What sys.getfilesystemencoding() says under the C locale.
_ASCII_NAMES: Final = frozenset({"ascii", "us-ascii", "ansi_x3.4-1968"})


def most_workers() -> int | None:
    """Return how many workers fit in the open-file limit (``None``: no limit known)."""
    return most_at_once(_FDS_PER_WORKER)


@final
class _Worker:
    """One worker interpreter, the two pipes to talk to it, and the slug it is on."""

    def __init__(self, home: str) -> None:
        """Start a worker; raise :class:`_NoWorker` when the system refuses one."""
        try:
            request_read, request_write = _socket_pair()
        except OSError as exc:
            raise _NoWorker(exc.strerror or str(exc)) from exc
        try:
            answer_read, answer_write = _socket_pair()
        except OSError as exc:
            os.close(request_read)
            os.close(request_write)
            raise _NoWorker(exc.strerror or str(exc)) from exc
        options, env = _as_this_process_decodes()
        try:
            self.child: Final[Child] = spawn(
                [
                    sys.executable,
                    "-I",
                    *options,
                    # The check writes nothing into the repository, bytecode included.
                    "-B",
                    "-c",
                    _BOOTSTRAP.format(home=home),
                    str(request_read),
                    str(answer_write),
                ],
                env=env,
                pass_fds=(request_read, answer_write),
                stderr=Bounds(tail=4 * _STDERR_TAIL),
            )
        except (NotStarted, OSError) as exc:
            os.close(request_write)
            os.close(answer_read)
            reason = exc.reason if isinstance(exc, NotStarted) else exc.strerror or str(exc)
            raise _NoWorker(reason) from exc
        finally:
            os.close(request_read)
            os.close(answer_write)
        self.requests: Final = request_write
        self.answers: Final = answer_read
        self.buffer = bytearray()
        self.ready = False
        self.started: Final = time.monotonic()
        # The requests sent and not answered yet, oldest (the one running) first.
        self.inflight: deque[tuple[ImportTarget, str]] = deque()
        # When the oldest request's answer is overdue.
        self.deadline: float | None = None

    def send(self, target: ImportTarget, request_id: str, timeout: float) -> None:
        """Queue ``target`` on the worker; raise ``_WorkerGone`` if it cannot take it.

        The worker runs its requests one after the other: the clock of the
        oldest one runs, the others wait (see :meth:`answered`).
        """
        request: Request = {
            "id": request_id,
            "slug": target.slug,
            "module": target.module,
            "root": target.root,
            "manifest": target.manifest,
            "timeout": timeout,
        }
        data = json.dumps(request).encode() + b"\n"
        if not self.inflight:
            self._start_clock(timeout)
        self.inflight.append((target, request_id))
        try:
            while data:
                data = data[os.write(self.requests, data) :]
        except OSError:
            raise _WorkerGone from None

    def answered(self, timeout: float) -> None:
        """Forget the oldest request, answered; start the clock of the next one."""
        self.inflight.popleft()
        self.deadline = None
        if self.inflight:
            self._start_clock(timeout)

    def _start_clock(self, timeout: float) -> None:
        self.deadline = None if math.isinf(timeout) else time.monotonic() + timeout + GRACE

    def receive(self) -> list[bytes]:
        """Read what is there; return the complete lines. ``_WorkerGone`` on end of file.

        An answer can be megabytes long (it lists every case of its task
        class): the buffer grows in place and is split only once a line ends.
        """
        try:
            chunk = os.read(self.answers, _READ_SIZE)
        except OSError:
            chunk = b""
        if not chunk:
            raise _WorkerGone
        self.buffer += chunk
        if b"\n" not in chunk:
            return []
        *lines, rest = self.buffer.split(b"\n")
        self.buffer = rest
        return [bytes(line) for line in lines]

    def stop(self, *, gently: bool) -> str:
        """End the worker and everything under it; return how it ended.

        Gently: close its request pipe and let it exit. Otherwise SIGINT, on
        which it kills its current child's tree. When it lingers past
        :data:`STOP_WAIT`, or once it has exited, the supervisor kills what
        is left of its tree.
        """
        with contextlib.suppress(OSError):
            os.close(self.requests)
        if not gently:
            self.child.send_signal(signal.SIGINT)
        try:
            ending = self.child.wait(STOP_WAIT)
        finally:
            with contextlib.suppress(OSError):
                os.close(self.answers)
        tail = "" if ending.stderr is None else ending.stderr.text()[-_STDERR_TAIL:]
        return f"{ending.how}; stderr: {tail}" if tail else ending.how


def _socket_pair() -> tuple[int, int]:
    """Return a connected pair of Unix sockets, as descriptors: a channel no process can reopen."""
    one, other = socket.socketpair()
    return one.detach(), other.detach()


def _outcome(target: ImportTarget, answer: Done | Failed) -> Outcome:
    """Return what the answer says, with what the worker saw itself where the process said less."""
    if answer["kind"] == "done":
        threads = answer["threads"]
        seen = f"{threads} thread{'s' if threads != 1 else ''}" if threads else ""
        return Outcome(
            target.slug,
            "done",
            registered=tuple(answer["registered"]),
            error=answer["error"],
            not_registered=answer["not_registered"],
            rubric=tuple(answer["rubric"]),
            left_running=answer["left_running"] or seen or (_ESCAPED if answer["orphans"] else ""),
            parts=answer["parts"],
        )
    if answer["kind"] == "unavailable":
        raise CheckUnavailable(answer["detail"])
    return Outcome(target.slug, answer["kind"], detail=answer["detail"])


def _answer_id(line: bytes) -> object:
    """Return the ``id`` of an answer line that is a JSON object, else ``None``."""
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    return answer.get("id") if isinstance(answer, dict) else None


@final
class _Pool:
    """Up to ``jobs`` workers, fed from one queue, watched from one thread."""

    def __init__(self, targets: list[ImportTarget], jobs: int, timeout: float) -> None:
        self.pending = deque(targets)
        self.timeout = timeout
        self.size = max(1, min(jobs, len(targets), most_workers() or jobs))
        self.home = _codegenie_home()
        self.workers: list[_Worker] = []
        self.outcomes: dict[str, Outcome] = {}
        # Workers lost and not replaced yet: a worker starts only while no slug runs.
        self.owed = 0

    def run(self) -> dict[str, Outcome]:
        """Serve every target; return each outcome.

        A worker is started only while no registration runs (a process is
        open to the other processes of its user from its start until it
        closes itself): all of them at first, and a lost one once the slugs
        already running have answered. None is fed until all are ready.
        """
        self._start(min(self.size, len(self.pending)))
        while self.pending or any(w.inflight for w in self.workers):
            if self.owed and not any(w.inflight for w in self.workers):
                self._start(min(self.owed, len(self.pending)))
                self.owed = 0
            if not self.owed and all(w.ready for w in self.workers):
                for worker in list(self.workers):
                    self._feed(worker)
            if not self.workers:
                break
            self._listen()
            self._expire()
        return self.outcomes

    def _start(self, count: int) -> None:
        """Start up to ``count`` workers, as many as the system allows.

        Raises :class:`~codegenie.eval.errors.CheckUnavailable` when there is
        then no worker at all.
        """
        for _ in range(count):
            try:
                self.workers.append(_Worker(self.home))
            except _NoWorker as exc:
                if not self.workers:
                    raise CheckUnavailable(f"cannot start a worker process: {exc.reason}") from exc
                return

    def _listen(self) -> None:
        """Wait for the workers' answers (reading their stderr meanwhile); handle what came."""
        poller = select.poll()
        # descriptor -> (worker, True for its answers, False for its stderr)
        owners: dict[int, tuple[_Worker, bool]] = {}
        for worker in self.workers:
            owners[worker.answers] = (worker, True)
            owners |= dict.fromkeys(worker.child.fds(), (worker, False))
        for fd in owners:
            poller.register(fd, select.POLLIN)
        wait = self._wait()
        for fd, _ in poller.poll(None if wait is None else wait * 1000):
            worker, answers = owners[fd]
            if worker not in self.workers:  # lost meanwhile
                continue
            if answers:
                self._hear(worker)
            else:
                worker.child.read(fd)

    def _feed(self, worker: _Worker) -> None:
        """Give ``worker`` requests up to its window; retire it when no work is left."""
        if not self.pending and not worker.inflight:
            self._retire(worker, gently=True)
            return
        while self.pending and len(worker.inflight) < _WINDOW:
            target = self.pending.popleft()
            # Unguessable, so that a registration cannot forge its own answer blindly.
            request_id = secrets.token_hex(16)
            try:
                worker.send(target, request_id, self.timeout)
            except _WorkerGone:
                self._lost(worker, "crashed")
                return

    def _wait(self) -> float | None:
        now = time.monotonic()
        deadlines = [w.deadline if w.ready else w.started + STARTUP_TIMEOUT for w in self.workers]
        finite = [d for d in deadlines if d is not None]
        return min(_LONGEST_WAIT, max(0.0, min(finite) - now)) if finite else None

    def _hear(self, worker: _Worker) -> None:
        try:
            lines = worker.receive()
        except _WorkerGone:
            self._lost(worker, "crashed")
            return
        for line in lines:
            if not worker.ready:
                if line != _READY:
                    self._lost(worker, "crashed")
                    return
                worker.ready = True
                continue
            if not worker.inflight:
                self._lost(worker, "crashed")
                return
            target, request_id = worker.inflight[0]
            try:
                answer = parse_answer(line)
            except Malformed as exc:
                if _answer_id(line) != request_id:
                    self._lost(worker, "crashed")
                    return
                detail = f"its answer breaks the check's protocol ({exc.problem})"
                self.outcomes[target.slug] = Outcome(target.slug, "tampered", detail=detail)
            else:
                if answer["id"] != request_id:
                    self._lost(worker, "crashed")
                    return
                self.outcomes[target.slug] = _outcome(target, answer)
            worker.answered(self.timeout)

    def _expire(self) -> None:
        now = time.monotonic()
        for worker in list(self.workers):
            if not worker.ready and now >= worker.started + STARTUP_TIMEOUT:
                self._lost(worker, "crashed")
            elif worker.deadline is not None and worker.inflight and now >= worker.deadline:
                self._lost(worker, "timeout")

    def _lost(self, worker: _Worker, kind: Literal["crashed", "timeout"]) -> None:
        """Report the slug of a worker that died or hung; owe a replacement.

        The slug it was running is reported; those queued behind it never
        started, and go back to the front of the queue. The replacement
        starts once no slug runs (see :meth:`run`).
        """
        queued = [target for target, _ in worker.inflight]
        target = queued.pop(0) if queued else None
        self.pending.extendleft(reversed(queued))
        detail = self._retire(worker, gently=False)
        if not worker.ready and target is None:
            msg = f"a check worker did not start: {detail}"
            raise RuntimeError(msg)
        if target is not None:
            if kind == "timeout":
                detail = f"no answer within {self.timeout:g} s"
            else:
                detail = f"the check's worker process died: {detail}"
            self.outcomes[target.slug] = Outcome(target.slug, kind, detail=detail)
        self.owed += 1

    def _retire(self, worker: _Worker, *, gently: bool) -> str:
        self.workers.remove(worker)
        return worker.stop(gently=gently)

    def close(self) -> None:
        """Stop every worker still running (after an interruption or an error)."""
        while self.workers:
            self._retire(self.workers[0], gently=False)


def import_all(targets: list[ImportTarget], *, jobs: int, timeout: float) -> dict[str, Outcome]:
    """Import every target, each in a fresh process, ``jobs`` at a time; return each outcome.

    ``timeout`` (seconds, ``math.inf`` for none) bounds each slug. At most
    :func:`most_workers` run at once. Raises
    :class:`~codegenie.eval.errors.CheckUnavailable` when the system gives
    it no worker, or no process for a slug (out of file descriptors or
    processes), ``RuntimeError`` when a worker interpreter breaks at its start.
    """
    if not targets:
        return {}
    pool = _Pool(targets, jobs, timeout)
    with undumpable():
        try:
            return pool.run()
        finally:
            pool.close()
