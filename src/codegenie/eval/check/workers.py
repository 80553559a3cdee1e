"""Import registrations out of process, in parallel, surviving whatever they do.

``import_all`` runs up to ``jobs`` worker interpreters; each imports many
registrations in turn (so a large bench is not one interpreter start per
slug) and hands back one answer per slug. A worker that dies (``os._exit``, a
signal) or does not answer within the per-slug timeout is killed with its
process group and replaced; its slug is reported as crashed or timed out and
the remaining slugs are still checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Final, Literal, final

from codegenie.eval.check.static import ImportTarget

__all__ = ("Outcome", "import_all")

STARTUP_TIMEOUT: Final = 60.0
_STDERR_TAIL = 400


@dataclass(frozen=True, slots=True)
class Outcome:
    """What importing one registration came to.

    ``kind`` is ``"done"`` (the worker answered: see ``registered``, ``error``
    and ``rubric``), ``"crashed"`` (the worker died; ``detail`` says how) or
    ``"timeout"``.
    """

    slug: str
    kind: Literal["done", "crashed", "timeout"]
    registered: tuple[str, ...] = ()
    error: dict[str, Any] | None = None
    rubric: tuple[str, ...] = ()
    detail: str = ""


class _WorkerDied(Exception):
    pass


@final
class _Worker:
    """One worker interpreter and the two pipes to talk to it."""

    def __init__(self) -> None:
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "codegenie.eval.check._worker",
                    str(request_read),
                    str(result_write),
                ],
                pass_fds=(request_read, result_write),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                start_new_session=True,
            )
        finally:
            os.close(request_read)
            os.close(result_write)
        self._requests = os.fdopen(request_write, "wb")
        self._results = result_read
        self._buffer = b""
        try:
            answer = self._read(time.monotonic() + STARTUP_TIMEOUT)
        except (_WorkerDied, TimeoutError):
            answer = None
        if answer != {"ready": True}:
            detail = self.kill()
            msg = f"a check worker did not start: {detail}"
            raise RuntimeError(msg)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._results], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(self._results, 1 << 16)
            if not chunk:
                raise _WorkerDied
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            raise _WorkerDied from None
        if not isinstance(answer, dict):
            raise _WorkerDied
        return answer

    def ask(self, target: ImportTarget, timeout: float) -> Outcome:
        """Have the worker import ``target``; report a crash or a timeout as such."""
        request = {
            "slug": target.slug,
            "module": target.module,
            "path_entry": target.path_entry,
            "expected_file": target.expected_file,
        }
        try:
            self._requests.write(json.dumps(request).encode() + b"\n")
            self._requests.flush()
            answer = self._read(time.monotonic() + timeout)
        except TimeoutError:
            self.kill()
            return Outcome(target.slug, "timeout", detail=f"no answer within {timeout:g} s")
        except (_WorkerDied, BrokenPipeError):
            return Outcome(target.slug, "crashed", detail=self.kill())
        if answer.get("slug") != target.slug:
            return Outcome(target.slug, "crashed", detail=self.kill())
        return Outcome(
            target.slug,
            "done",
            registered=tuple(answer["registered"]),
            error=answer["error"],
            rubric=tuple(answer["rubric"]),
        )

    def kill(self) -> str:
        """Kill the worker and its process group; return how it ended."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait()
        self._close_pipes()
        tail = self._stderr_tail()
        self._stderr.close()
        return _describe_exit(code, tail)

    def close(self) -> None:
        """Let the worker finish (end of requests); kill it if it lingers."""
        self._close_pipes()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)  # leftovers of its registrations
        self._stderr.close()

    def _close_pipes(self) -> None:
        if not self._requests.closed:
            with contextlib.suppress(OSError):
                self._requests.close()
        if self._results >= 0:
            os.close(self._results)
            self._results = -1

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
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


def import_all(targets: list[ImportTarget], *, jobs: int, timeout: float) -> dict[str, Outcome]:
    """Import every target in up to ``jobs`` workers; return each slug's outcome."""
    pending = deque(targets)
    outcomes: dict[str, Outcome] = {}
    lock = threading.Lock()
    live: set[_Worker] = set()
    failures: list[BaseException] = []

    def serve() -> None:
        worker: _Worker | None = None
        try:
            while True:
                with lock:
                    if not pending or failures:
                        break
                    target = pending.popleft()
                if worker is None:
                    worker = _Worker()
                    with lock:
                        live.add(worker)
                outcome = worker.ask(target, timeout)
                if outcome.kind != "done":
                    with lock:
                        live.discard(worker)
                    worker = None  # killed by ask(); the next slug gets a new one
                with lock:
                    outcomes[target.slug] = outcome
        except BaseException as exc:  # re-raised in the calling thread
            with lock:
                failures.append(exc)
        finally:
            if worker is not None:
                worker.close()
                with lock:
                    live.discard(worker)

    threads = [
        threading.Thread(target=serve, name=f"check-worker-{n}", daemon=True)
        for n in range(max(1, min(jobs, len(targets))))
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        with lock:
            pending.clear()
            stragglers = list(live)
        for worker in stragglers:
            worker.kill()
    if failures:
        raise failures[0]
    return outcomes
