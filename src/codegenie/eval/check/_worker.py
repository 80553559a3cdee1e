"""A check worker: a clean parent that forks one disposable process per slug.

Started by :mod:`codegenie.eval.check.workers` as an isolated interpreter
(``python -I``: no current directory, no ``PYTHON*`` variables, no user site
packages on ``sys.path``). At start it imports everything it and its children
will need — the standard library modules, pydantic, ``codegenie.eval`` — and
exercises the code paths once, so that nothing is imported after a bench's
directory has been put on ``sys.path``. It never imports bench code itself.

For each request (one JSON line on ``REQUEST_FD``) it forks a child, which
imports that one registration (:func:`codegenie.eval.check._probe.probe`),
writes one JSON document to a pipe of its own and exits. Nothing a
registration does to its process — warnings filters, environment, working
directory, signal handlers, monkeypatches, ``sys.modules``, closed file
descriptors — survives it, so every slug is checked in the same clean state
whatever ran before it. The worker watches the child itself (not only its
pipe), enforces the timeout, kills the child's process group and anything it
left behind, and answers with one JSON line on ``ANSWER_FD`` that carries the
request's ``id``. The child's file descriptors 1 and 2 go to a pipe of which
only the last few KiB are kept.

The worker dies with its parent: ``PR_SET_PDEATHSIG`` where the platform has
it, and in any case when the request pipe reaches end of file while a child
runs. SIGINT makes it kill its current child's group and exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import importlib.machinery
import importlib.util
import json
import linecache
import os
import select
import signal
import sys
import tempfile
import time
import tokenize
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, NoReturn

import pydantic

from codegenie.eval import cases, loader, models, registry
from codegenie.eval._tracebacks import describe_failure
from codegenie.eval.check._probe import probe, request_manifest
from codegenie.eval.errors import TaskClassRegistrationFailed

__all__ = ("main",)

RESULT_LIMIT: Final = 1 << 20
OUTPUT_TAIL: Final = 4096
_PR_SET_PDEATHSIG: Final = 1
_PR_SET_CHILD_SUBREAPER: Final = 36
_POLL: Final = 0.05
_CHILD_FAILED: Final = 70

# What a child uses after the registration ran, bound now: a registration that
# monkeypatches json.dumps or os.write must not garble its own answer.
_dumps: Final = json.dumps
_write: Final = os.write
_exit: Final = os._exit
_getpid: Final = os.getpid

# Modules the children use lazily; imported here, before any bench is on sys.path.
_PRELOADED: Final = (contextlib, importlib, importlib.machinery, importlib.util, json, linecache)
_PRELOADED_TOO: Final = (tokenize, traceback, pydantic, cases, loader, models, registry)


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


# Looked up once: a child calls it right after the fork, where every object it
# touches costs a copied page.
_PRCTL: Final = _load_prctl()


def _prctl(option: int, value: int) -> None:
    if _PRCTL is not None:
        _PRCTL(option, value, 0, 0, 0)


def _warm_up() -> None:
    """Run the loader's error and success paths once, so their lazy imports happen now."""
    try:
        raise RuntimeError("warm-up")
    except RuntimeError as exc:
        traceback.format_exception(exc)
        describe_failure(exc, os.path.dirname(__file__))
        TaskClassRegistrationFailed("warm-up", "RuntimeError", "warm-up", Path(__file__), 1)
    request_manifest(
        {"slug": "warm-up", "module": "bench.warm_up.registration", "root": "bench"}
        | {"manifest": str(Path.cwd() / "bench.toml")}
    )
    json.loads(json.dumps({"warm": [1.5, None, True]}))
    # The case reader's path, on a throwaway case: tomllib, the common-keys
    # model (built once here, not in every child) and the problem positions.
    with tempfile.TemporaryDirectory() as scratch:
        for name, text in (("good", 'description = "x"\n'), ("bad", "timeout = -1\n")):
            case = Path(scratch, "cases", name)
            (case / "input").mkdir(parents=True)
            (case / "expected").mkdir()
            (case / "case.toml").write_text(text)

        class WarmUp:
            pass

        cases.scan_cases(
            models.TaskClass(
                name="warm-up",
                module=__name__,
                source=None,
                description=None,
                rubric=None,
                cases=Path(scratch, "cases"),
                cls=WarmUp,
            )
        )


def _children() -> list[int]:
    """Return the pids of this process's children (processes it adopted included)."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children", "rb") as file:
                pids += [int(pid) for pid in file.read().split()]
        except OSError:
            continue
    return pids


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def _reap_strays() -> bool:
    """Kill and reap every child left (adopted orphans); return whether there were any."""
    strays = _children()
    for pid in strays:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in strays:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    return bool(strays)


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by signal {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


class _Tail:
    """The last ``OUTPUT_TAIL`` bytes written to a pipe."""

    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > OUTPUT_TAIL:
            del self.data[: len(self.data) - OUTPUT_TAIL]

    def text(self) -> str:
        return self.data.decode("utf-8", "replace").strip()


class _Limited:
    """At most ``RESULT_LIMIT`` bytes of what a child wrote to its result pipe."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.overflow = False

    def add(self, chunk: bytes) -> None:
        room = RESULT_LIMIT - len(self.data)
        self.data += chunk[:room]
        self.overflow |= len(chunk) > room


def _drain(fd: int, sink: Callable[[bytes], None]) -> bool:
    """Read what ``fd`` holds now into ``sink``; return whether it reached end of file."""
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if not chunk:
            return True
        sink(chunk)


class _Server:
    """Serves requests: one forked child per slug."""

    def __init__(self, request_fd: int, answer_fd: int) -> None:
        self.requests = request_fd
        self.answers = answer_fd
        self.current: int | None = None
        self.pidfd_works = hasattr(os, "pidfd_open")

    def stop(self, status: int) -> NoReturn:
        """End: kill the current child's group and whatever it left, then exit."""
        if self.current is not None:
            _kill_group(self.current)
        _reap_strays()
        os._exit(status)

    def warm(self, request: dict[str, Any]) -> None:
        """Fill the import system's directory caches for the request's bench, once.

        The children inherit them, so each does not list the bench's
        directories again. This reads directory listings (validated by their
        modification time on every lookup, as always); it imports nothing.
        """
        root = os.path.join(os.path.dirname(request["manifest"]), request["root"])
        for directory in (os.path.dirname(root), root):
            if directory in sys.path_importer_cache or not os.path.isdir(directory):
                continue
            for hook in sys.path_hooks:
                try:
                    finder = hook(directory)
                except ImportError:
                    continue
                sys.path_importer_cache[directory] = finder
                finder.find_spec("codegenie_eval_warm_up")
                break

    def serve(self) -> None:
        """Answer requests until the request pipe closes."""
        buffer = b""
        while True:
            while b"\n" not in buffer:
                chunk = os.read(self.requests, 1 << 16)
                if not chunk:
                    return
                buffer += chunk
            line, _, buffer = buffer.partition(b"\n")
            request = json.loads(line)
            self.warm(request)
            answer = {"id": request["id"], **self.run(request)}
            os.write(self.answers, json.dumps(answer).encode() + b"\n")

    # -- one slug ---------------------------------------------------------------

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """Check one slug in a fresh fork; return the answer for the parent."""
        manifest = request_manifest(request)
        fresh = registry.TaskClassRegistry()
        result_read, result_write = os.pipe()
        output_read, output_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns here
            os.close(result_read)
            os.close(output_read)
            self._child(
                request, result_write, output_write, lambda: probe(request["slug"], manifest, fresh)
            )
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # as the child does: whichever runs first, killpg works
        self.current = pid
        os.close(result_write)
        os.close(output_write)
        try:
            return self._watch(request, pid, result_read, output_read)
        finally:
            self.current = None
            os.close(result_read)
            os.close(output_read)

    def _child(
        self,
        request: dict[str, Any],
        result_fd: int,
        output_fd: int,
        work: Callable[[], dict[str, Any]],
    ) -> None:
        """Become the slug's process: import, answer, exit. Never returns."""
        status = _CHILD_FAILED
        me = os.getpid()
        try:
            os.setpgid(0, 0)
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            os.close(self.requests)
            os.close(self.answers)
            os.dup2(output_fd, 1)
            os.dup2(output_fd, 2)
            os.close(output_fd)
            document = work()
            if _getpid() != me:
                # A fork made by the registration came back through its import:
                # it is left running on purpose, for the real child to count.
                while True:
                    signal.pause()
            document["id"] = request["id"]
            document["pid"] = me
            data = _dumps(document).encode() + b"\n"
            while data:
                data = data[_write(result_fd, data) :]
            status = 0
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(BaseException):
                    stream.flush()
            _exit(status if _getpid() == me else _CHILD_FAILED)

    def _watch(
        self, request: dict[str, Any], pid: int, result_fd: int, output_fd: int
    ) -> dict[str, Any]:
        """Wait for the child (its exit, not its pipes); kill it at the deadline."""
        timeout = float(request["timeout"])
        deadline = None if timeout == float("inf") else time.monotonic() + timeout
        result, output = _Limited(), _Tail()
        sinks = {result_fd: result.add, output_fd: output.add}
        pidfd = self._pidfd(pid)
        watched = [*sinks, self.requests] + ([pidfd] if pidfd is not None else [])
        status: int | None = None
        try:
            while status is None:
                wait = None if deadline is None else min(3600.0, deadline - time.monotonic())
                wait = None if wait is None else max(0.0, wait)
                if pidfd is None:
                    wait = _POLL if wait is None else min(wait, _POLL)
                ready, _, _ = select.select(watched, [], [], wait)
                for fd in ready:
                    if fd in sinks and _drain(fd, sinks[fd]):
                        watched.remove(fd)
                if self.requests in ready:  # the parent is gone: stop everything
                    self.stop(1)
                if pidfd is None or pidfd in ready:
                    done, raw = os.waitpid(pid, os.WNOHANG)
                    if done:
                        status = raw
                        continue
                if deadline is not None and time.monotonic() >= deadline:
                    _kill_group(pid)
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return {"kind": "timeout", "detail": f"no answer within {timeout:g} s"}
        finally:
            if pidfd is not None:
                os.close(pidfd)
            _kill_group(pid)
            escaped = _reap_strays()
        for fd, sink in sinks.items():
            _drain(fd, sink)
        return self._answer(request, pid, status, result, output, escaped=escaped)

    def _pidfd(self, pid: int) -> int | None:
        if not self.pidfd_works:
            return None
        try:
            return os.pidfd_open(pid)
        except OSError:
            self.pidfd_works = False
            return None

    def _answer(
        self,
        request: dict[str, Any],
        pid: int,
        status: int,
        result: _Limited,
        output: _Tail,
        *,
        escaped: bool,
    ) -> dict[str, Any]:
        """Turn what the child left into the answer: one document from it, or a crash."""
        documents = []
        junk = result.overflow
        for line in bytes(result.data).splitlines():
            try:
                document = json.loads(line)
            except ValueError:
                junk = True
                continue
            if (
                isinstance(document, dict)
                and document.get("id") == request["id"]
                and document.get("pid") == pid
            ):
                documents.append(document)
            else:
                junk = True
        clean_exit = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if not clean_exit or len(documents) != 1:
            if junk or len(documents) > 1:
                return {"kind": "tampered", "detail": "it wrote to the check's private result pipe"}
            how = _describe_status(status)
            tail = output.text()
            return {"kind": "crashed", "detail": f"{how}; output: {tail}" if tail else how}
        if junk:
            return {"kind": "tampered", "detail": "it wrote to the check's private result pipe"}
        [document] = documents
        left = document["left_running"]
        if escaped and not left:
            left = "a process that left the check's process group"
        return {**document, "kind": "done", "left_running": left}


def main(argv: list[str]) -> int:
    """Start the worker: preload, announce readiness, serve requests until told to stop."""
    # SIGINT (KeyboardInterrupt) is how the worker is told to stop, by its
    # parent or by the parent's death: its signal handlers stay Python's
    # defaults, which is what each forked child must start with.
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGINT)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent:
        return 1  # the parent died before the death signal was armed
    server = _Server(int(argv[1]), int(argv[2]))
    try:
        _serve(server)
    except BaseException:
        server.stop(130)
    return 0


def _serve(server: _Server) -> None:
    _warm_up()
    gc.collect()
    gc.freeze()  # children share these pages instead of copying them when the GC walks them
    os.write(server.answers, b'{"ready": true}\n')
    server.serve()
