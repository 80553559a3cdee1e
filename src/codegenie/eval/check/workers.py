"""Import registrations out of process, in parallel, each slug in a process of its own.

``import_all`` starts up to ``jobs`` worker interpreters
(:mod:`codegenie.eval.check._worker`), each a clean parent that forks one
disposable child per slug; this process hands each idle worker the next
slug and waits for the answers of all of them at once, in one thread. A
worker that dies (a registration that kills its parent) or stops answering
is killed with its process group and replaced; its slug is reported as
crashed or timed out and the remaining slugs are still checked.

Whatever happens here — an exception, ``KeyboardInterrupt`` — no worker and no
process a registration started outlives :func:`import_all`: each worker is
asked to stop (SIGINT, on which it kills its current child's group and
every process it adopted), then killed with its process group. A worker also
ends by itself when this process dies.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Final, Literal, final

from codegenie.eval.check.static import ImportTarget

__all__ = ("Outcome", "import_all")

STARTUP_TIMEOUT: Final = 60.0
#: How long past a slug's own timeout the worker has to report it.
GRACE: Final = 10.0
STOP_WAIT: Final = 2.0
# select() refuses timeouts past time_t; waits are cut into slices no longer than this.
_LONGEST_WAIT: Final = 3600.0
_STDERR_TAIL: Final = 400

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
    task class that loaded, as :func:`codegenie.eval.check._probe.probe`
    describes them), ``"crashed"`` (the process died;
    ``detail`` says how), ``"timeout"``, or ``"tampered"`` (the registration
    wrote to the check's private result pipe, so its answer cannot be trusted).
    """

    slug: str
    kind: Literal["done", "crashed", "timeout", "tampered"]
    registered: tuple[str, ...] = ()
    error: dict[str, Any] | None = None
    not_registered: bool = False
    rubric: tuple[str, ...] = ()
    left_running: str = ""
    detail: str = ""
    parts: dict[str, Any] | None = None


class _WorkerGone(Exception):
    pass


@final
class _Worker:
    """One worker interpreter, the two pipes to talk to it, and the slug it is on."""

    def __init__(self, home: str) -> None:
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    # The check writes nothing into the repository, bytecode included.
                    "-B",
                    "-c",
                    _BOOTSTRAP.format(home=home),
                    str(request_read),
                    str(answer_write),
                ],
                pass_fds=(request_read, answer_write),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                start_new_session=True,
            )
        finally:
            os.close(request_read)
            os.close(answer_write)
        self.requests = request_write
        self.answers = answer_read
        self.buffer = b""
        self.ready = False
        self.started = time.monotonic()
        self.target: ImportTarget | None = None
        self.request_id = ""
        self.deadline: float | None = None

    def fileno(self) -> int:
        return self.answers

    def send(self, target: ImportTarget, request_id: str, timeout: float) -> None:
        """Hand the worker ``target``; raise ``_WorkerGone`` if it cannot take it."""
        request = {
            "id": request_id,
            "slug": target.slug,
            "module": target.module,
            "root": target.root,
            "manifest": target.manifest,
            "timeout": timeout,
        }
        data = json.dumps(request).encode() + b"\n"
        self.target, self.request_id = target, request_id
        self.deadline = None if math.isinf(timeout) else time.monotonic() + timeout + GRACE
        try:
            while data:
                data = data[os.write(self.requests, data) :]
        except OSError:
            raise _WorkerGone from None

    def receive(self) -> list[dict[str, Any]]:
        """Read what is there; return the complete answers. ``_WorkerGone`` on end of file."""
        try:
            chunk = os.read(self.answers, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            raise _WorkerGone
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        answers = []
        for line in lines:
            try:
                answer = json.loads(line)
            except ValueError:
                raise _WorkerGone from None
            if not isinstance(answer, dict):
                raise _WorkerGone
            answers.append(answer)
        return answers

    def stop(self, *, gently: bool) -> str:
        """End the worker and everything under it; return how it ended.

        Gently: close its request pipe and let it exit. Otherwise (or when it
        lingers) SIGINT, on which it kills its current child and what that
        left; then SIGKILL to its whole process group.
        """
        with contextlib.suppress(OSError):
            os.close(self.requests)
        if not gently and self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=STOP_WAIT)
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait()
        with contextlib.suppress(OSError):
            os.close(self.answers)
        tail = self._stderr_tail()
        self._stderr.close()
        return _describe_exit(code, tail)

    def _stderr_tail(self) -> str:
        """Return the end of the worker's own stderr, reading no more than the tail."""
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - 4 * _STDERR_TAIL))
        text = self._stderr.read().decode("utf-8", "replace").strip()
        return text[-_STDERR_TAIL:]


def _describe_exit(code: int, stderr_tail: str) -> str:
    if code < 0:
        try:
            how = f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exited with status {code}"
    return f"{how}; stderr: {stderr_tail}" if stderr_tail else how


def _outcome(target: ImportTarget, answer: dict[str, Any]) -> Outcome:
    kind = answer.get("kind")
    if kind == "done":
        return Outcome(
            target.slug,
            "done",
            registered=tuple(answer["registered"]),
            error=answer["error"],
            not_registered=bool(answer["not_registered"]),
            rubric=tuple(answer["rubric"]),
            left_running=answer["left_running"],
            parts=answer if "cases" in answer else None,
        )
    if kind in ("crashed", "timeout", "tampered"):
        return Outcome(target.slug, kind, detail=str(answer.get("detail", "")))
    return Outcome(target.slug, "crashed", detail=f"unexpected answer {answer!r:.200}")


@final
class _Pool:
    """Up to ``jobs`` workers, fed from one queue, watched from one thread."""

    def __init__(self, targets: list[ImportTarget], jobs: int, timeout: float) -> None:
        self.pending = deque(targets)
        self.timeout = timeout
        self.size = max(1, min(jobs, len(targets)))
        self.home = _codegenie_home()
        self.workers: list[_Worker] = []
        self.outcomes: dict[str, Outcome] = {}

    def run(self) -> dict[str, Outcome]:
        while len(self.workers) < min(self.size, len(self.pending)):
            self.workers.append(_Worker(self.home))
        while self.pending or any(w.target is not None for w in self.workers):
            for worker in list(self.workers):
                if worker.ready and worker.target is None:
                    self._feed(worker)
            if not self.workers:
                break
            wait = self._wait()
            ready, _, _ = select.select(self.workers, [], [], wait)
            for worker in ready:
                self._hear(worker)
            self._expire()
        return self.outcomes

    def _feed(self, worker: _Worker) -> None:
        if not self.pending:
            self._retire(worker, gently=True)
            return
        target = self.pending.popleft()
        # Unguessable, so that a registration cannot forge its own answer blindly.
        request_id = secrets.token_hex(16)
        try:
            worker.send(target, request_id, self.timeout)
        except _WorkerGone:
            self._lost(worker, "crashed")

    def _wait(self) -> float | None:
        now = time.monotonic()
        deadlines = [w.deadline if w.ready else w.started + STARTUP_TIMEOUT for w in self.workers]
        finite = [d for d in deadlines if d is not None]
        return min(_LONGEST_WAIT, max(0.0, min(finite) - now)) if finite else None

    def _hear(self, worker: _Worker) -> None:
        try:
            answers = worker.receive()
        except _WorkerGone:
            self._lost(worker, "crashed")
            return
        for answer in answers:
            if not worker.ready:
                if answer != {"ready": True}:
                    self._lost(worker, "crashed")
                    return
                worker.ready = True
                continue
            target = worker.target
            if target is None or answer.get("id") != worker.request_id:
                self._lost(worker, "crashed")
                return
            self.outcomes[target.slug] = _outcome(target, answer)
            worker.target = None

    def _expire(self) -> None:
        now = time.monotonic()
        for worker in list(self.workers):
            if not worker.ready and now >= worker.started + STARTUP_TIMEOUT:
                self._lost(worker, "crashed")
            elif (
                worker.deadline is not None and worker.target is not None and now >= worker.deadline
            ):
                self._lost(worker, "timeout")

    def _lost(self, worker: _Worker, kind: Literal["crashed", "timeout"]) -> None:
        """Report the slug of a worker that died or hung; replace it if work remains."""
        target = worker.target
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
        if self.pending:
            self.workers.append(_Worker(self.home))

    def _retire(self, worker: _Worker, *, gently: bool) -> str:
        self.workers.remove(worker)
        return worker.stop(gently=gently)

    def close(self) -> None:
        """Stop every worker still running (after an interruption or an error)."""
        while self.workers:
            self._retire(self.workers[0], gently=False)


def import_all(targets: list[ImportTarget], *, jobs: int, timeout: float) -> dict[str, Outcome]:
    """Import every target, each in a fresh process, ``jobs`` at a time; return each outcome.

    ``timeout`` (seconds, ``math.inf`` for none) bounds each slug. Raises
    ``RuntimeError`` when a worker interpreter cannot start at all.
    """
    if not targets:
        return {}
    pool = _Pool(targets, jobs, timeout)
    try:
        return pool.run()
    finally:
        pool.close()
