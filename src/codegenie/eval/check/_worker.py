"""A check worker: a clean parent that forks one disposable process per slug.

Started by :mod:`codegenie.eval.check.workers` as an isolated interpreter
(``python -I``: no current directory, no ``PYTHON*`` variables, no user site
packages on ``sys.path``). At start it imports everything it and its children
will need — the standard library modules, pydantic, ``codegenie.eval`` — and
exercises the code paths once, so that nothing is imported after a bench's
directory has been put on ``sys.path``. It never imports bench code itself.

For each :class:`~codegenie.eval.check._protocol.Request` (one JSON line on
``REQUEST_FD``) it forks a child through the process supervisor
(:func:`codegenie.eval._process.supervisor.fork`), which imports that one
registration (:func:`codegenie.eval.check._probe.probe`), writes one JSON
document to a pipe of its own and exits. Nothing a registration does to its
process — warnings filters, environment, working directory, signal handlers,
monkeypatches, ``sys.modules``, closed file descriptors — survives it, so
every slug is checked in the same clean state whatever ran before it. The
supervisor watches the child itself (not only its pipe), enforces the
timeout, and kills the child and everything it left behind: the worker adopts
orphans (``PR_SET_CHILD_SUBREAPER``), so even a process that made a session
of its own is found. The worker answers with one JSON line on ``ANSWER_FD``
(an :data:`~codegenie.eval.check._protocol.Answer`) that carries the
request's ``id``. The child's file descriptors 1 and 2 go to a pipe of which
only the last few KiB are kept.

The worker dies with its parent: ``PR_SET_PDEATHSIG`` where the platform has
it, and in any case when the request pipe reaches end of file, while a child
runs or not. SIGINT makes it kill its current child's tree and exit.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.machinery
import importlib.util
import json
import linecache
import os
import signal
import sys
import tempfile
import tokenize
import traceback
from pathlib import Path
from typing import Final, Literal, NoReturn

import pydantic

from codegenie.eval import cases, loader, models, registry
from codegenie.eval._process.output import Bounds, Output
from codegenie.eval._process.supervisor import (
    Ending,
    Reach,
    become_subreaper,
    die_with_parent,
    fork,
    kill_children,
)
from codegenie.eval._tracebacks import describe_failure
from codegenie.eval.check._probe import probe, request_manifest
from codegenie.eval.check._protocol import Failed, Request
from codegenie.eval.errors import TaskClassRegistrationFailed

__all__ = ("main",)

RESULT_LIMIT: Final = 1 << 20
OUTPUT_TAIL: Final = 4096

# What a child uses after the registration ran, bound now: a registration that
# monkeypatches json.dumps or os.write must not garble its own answer.
_dumps: Final = json.dumps
_write: Final = os.write
_getpid: Final = os.getpid
_pause: Final = signal.pause

# Modules the children use lazily; imported here, before any bench is on sys.path.
_PRELOADED: Final = (contextlib, importlib, importlib.machinery, importlib.util, json, linecache)
_PRELOADED_TOO: Final = (tokenize, traceback, pydantic, cases, loader, models, registry)

# Made once: each slug's fork gets the same bounds.
_OUTPUT: Final = Bounds(tail=OUTPUT_TAIL)
_RESULT: Final = (Bounds(head=RESULT_LIMIT),)

_TAMPERED: Final = "it wrote to the check's private result pipe"


def _warm_up() -> None:
    """Run the loader's error and success paths once, so their lazy imports happen now."""
    try:
        raise RuntimeError("warm-up")
    except RuntimeError as exc:
        traceback.format_exception(exc)
        describe_failure(exc, os.path.dirname(__file__))
        TaskClassRegistrationFailed("warm-up", "RuntimeError", "warm-up", Path(__file__), 1)
    request_manifest(
        {
            "id": "warm-up",
            "slug": "warm-up",
            "module": "bench.warm_up.registration",
            "root": "bench",
            "manifest": str(Path.cwd() / "bench.toml"),
            "timeout": 1.0,
        }
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


class _Server:
    """Serves requests: one forked child per slug."""

    def __init__(self, request_fd: int, answer_fd: int, *, adopts_orphans: bool) -> None:
        self.requests: Final = request_fd
        self.answers: Final = answer_fd
        # What was read from the request pipe and not served yet: the parent may
        # send the next request while a slug runs, so that none waits for a round trip.
        self.buffer = b""
        # Where this process adopts orphans, its children's leftovers are found cheaply
        # (among its own children); elsewhere through their session.
        self.reach: Final[Reach] = "adopted" if adopts_orphans else "session"

    def stop(self, status: int) -> NoReturn:
        """End: kill whatever is left of the current child's tree, then exit."""
        kill_children()
        os._exit(status)

    def warm(self, request: Request) -> None:
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
        """Answer requests, in order, until the request pipe closes."""
        while True:
            while b"\n" not in self.buffer:
                if self._read_requests():
                    return
            line, _, self.buffer = self.buffer.partition(b"\n")
            request: Request = json.loads(line.decode())  # from the parent, which is trusted
            self.warm(request)
            os.write(self.answers, self.run(request) + b"\n")

    def _read_requests(self) -> bool:
        """Read what the request pipe holds into the buffer; return whether it is closed."""
        chunk = os.read(self.requests, 1 << 16)
        self.buffer += chunk
        return not chunk

    # -- one slug ---------------------------------------------------------------

    def run(self, request: Request) -> bytes:
        """Check one slug in a fresh fork; return the answer line for the parent (no newline).

        The worker does as little as it can per slug: after each fork, every
        page it writes to is copied (or at least faulted in) again, so even
        the slug's manifest and registry are built in the child.
        """
        request_id = request["id"]

        def body(pipes: tuple[int, ...]) -> int:
            return self._child(request, pipes[0])

        child = fork(
            body,
            stdout=_OUTPUT,
            stderr="stdout",
            pipes=_RESULT,
            parent_death_signal=signal.SIGKILL,
            reach=self.reach,
        )
        timeout = float(request["timeout"])
        # The request pipe's hang-up is the parent's end; the next request may come
        # meanwhile, and waits in the pipe.
        ending = child.wait(timeout, hangup=(self.requests,), drain_grace=0.0)
        if ending.cancelled:
            self.stop(1)
        if ending.timed_out:
            return _failed(request_id, "timeout", f"no answer within {timeout:g} s")
        return _answer(request_id, ending)

    def _child(self, request: Request, result_fd: int) -> int:
        """Be the slug's process: import, write the one document, return the exit status."""
        me = _getpid()
        os.close(self.requests)
        os.close(self.answers)
        manifest = request_manifest(request)
        slug, request_id = request["slug"], request["id"]
        document = probe(slug, manifest.root_dir(slug), manifest, registry.TaskClassRegistry())
        if _getpid() != me:
            # A fork made by the registration came back through its import:
            # it is left running on purpose, for the real child to count.
            while True:
                _pause()
        # The id and the pid first: the worker checks them without decoding the rest.
        data = _dumps({"id": request_id, "pid": me, **document}).encode() + b"\n"
        while data:
            data = data[_write(result_fd, data) :]
        return 0


def _failed(request_id: str, kind: Literal["crashed", "timeout", "tampered"], detail: str) -> bytes:
    return json.dumps(Failed(id=request_id, kind=kind, detail=detail)).encode()


def _answer(request_id: str, ending: Ending) -> bytes:
    """Turn what the child left into the answer line: its one document, or what went wrong.

    A document is a line of the result pipe that starts with the request's
    id and the child's pid; it is passed on as the child wrote it, without
    being decoded, with ``kind`` and ``orphans`` in place of ``pid`` (a
    :class:`~codegenie.eval.check._protocol.Done`, whose shape the parent
    checks: a registration could have broken the code that made it). Any
    other line, or more than one document, is tampering.
    """
    [result] = ending.pipes
    prefix = b'{"id": "%s", "pid": %d, ' % (request_id.encode(), ending.pid)
    lines = result.head.splitlines()
    documents = [line for line in lines if line.startswith(prefix)]
    junk = result.overflowed or len(documents) != len(lines)
    if ending.exit_status != 0 or len(documents) != 1:
        if junk or len(documents) > 1:
            return _failed(request_id, "tampered", _TAMPERED)
        return _failed(request_id, "crashed", _crash(ending, ending.stdout))
    if junk:
        return _failed(request_id, "tampered", _TAMPERED)
    head = b'{"id": "%s", "kind": "done", "orphans": %d, ' % (request_id.encode(), ending.orphans)
    return head + documents[0][len(prefix) :]


def _crash(ending: Ending, output: Output | None) -> str:
    tail = "" if output is None else output.text()
    return f"{ending.how}; output: {tail}" if tail else ending.how


def main(argv: list[str]) -> int:
    """Start the worker: preload, announce readiness, serve requests until told to stop."""
    # SIGINT (KeyboardInterrupt) is how the worker is told to stop, by its
    # parent or by the parent's death: its signal handlers stay Python's
    # defaults, which is what each forked child must start with.
    parent = os.getppid()
    die_with_parent(signal.SIGINT)
    adopts = become_subreaper()
    if os.getppid() != parent:
        return 1  # the parent died before the death signal was armed
    server = _Server(int(argv[1]), int(argv[2]), adopts_orphans=adopts)
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
