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
registration (:func:`codegenie.eval.check._probe.probe`), writes its answer
on a channel of its own (a pair of Unix sockets, which no other process can
open) and stops itself (:func:`~codegenie.eval._process.supervisor.stop_here`).
The worker believes the answer only from a child it has seen stopped after
writing exactly that: a registration that writes an answer of its own and
exits before the probe's code runs (``os._exit``) is its own failure. Nothing
a registration does to its process — warnings filters, environment, working
directory, signal handlers, monkeypatches, ``sys.modules``, closed file
descriptors — survives it, so every slug is checked in the same clean state
whatever ran before it. The supervisor watches the child itself (not only its
channels), enforces the timeout, and kills the child and everything it left
behind: the worker adopts orphans (``PR_SET_CHILD_SUBREAPER``) and sweeps
everything below it until none is left, after every slug and when it ends,
so even a chain of processes that made sessions of their own is found. The
worker answers with one JSON line on ``ANSWER_FD`` (an
:data:`~codegenie.eval.check._protocol.Answer`) that carries the request's
``id``. The child's file descriptors 1 and 2 go to a pipe of which only the
last few KiB are kept.

The worker is not dumpable (``PR_SET_DUMPABLE``): no other process of the
user — its children included — can open its descriptors through ``/proc``,
read its memory or ``ptrace`` it (root can). It dies with its parent:
``PR_SET_PDEATHSIG`` where the platform has it, and in any case when the
request channel reaches end of file, while a child runs or not. SIGINT makes
it kill everything below it and exit.
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
import stat
import sys
import tempfile
import tokenize
import traceback
from pathlib import Path
from typing import Final, Literal, NoReturn

import pydantic

from codegenie.eval import cases, loader, models, registry
from codegenie.eval._paths import fs_path
from codegenie.eval._process.output import Bounds, Output
from codegenie.eval._process.supervisor import (
    Ending,
    NotStarted,
    Reach,
    become_subreaper,
    die_with_parent,
    fork,
    kill_children,
    set_dumpable,
    stop_here,
)
from codegenie.eval._tracebacks import describe_failure
from codegenie.eval.cases import case_id_problem
from codegenie.eval.check._probe import probe, request_manifest
from codegenie.eval.check._protocol import Failed, Request
from codegenie.eval.errors import TaskClassRegistrationFailed

__all__ = ("main",)

#: The most an answer's first line may hold: everything but its cases (at most
#: 1,000 case problems of bounded size, the names registered, a traceback).
HEAD_LIMIT: Final = 16 << 20
#: The most one case of an answer may take: its id (at most 100 characters), its
#: directory's path, five numbers.
CASE_LIMIT: Final = 16 << 10
OUTPUT_TAIL: Final = 4096

# What a child uses after the registration ran, bound now: a registration that
# monkeypatches json.dumps or os.write must not garble its own answer.
_dumps: Final = json.dumps
_write: Final = os.write
_getpid: Final = os.getpid
_pause: Final = signal.pause
_close: Final = os.close

# Modules the children use lazily; imported here, before any bench is on sys.path.
_PRELOADED: Final = (contextlib, importlib, importlib.machinery, importlib.util, json, linecache)
_PRELOADED_TOO: Final = (tokenize, traceback, pydantic, cases, loader, models, registry)

# Made once: each slug's fork gets the same bounds.
_OUTPUT: Final = Bounds(tail=OUTPUT_TAIL)

_TAMPERED: Final = "what it wrote on the check's private result channel is not its answer"
# How the head of an answer with cases ends: the document's last key is parts.cases.
_EMPTY_CASES: Final = b'"cases": []}}'


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


class _Result:
    """One child's answer, read as it comes, within what the bench on disk warrants.

    The child writes a head line — its request's ``id``, its ``pid``, how
    many ``cases`` follow, then the :class:`~codegenie.eval.check._protocol.Probed`
    document whose last key is an empty ``parts.cases`` — and then one line
    per valid case. The head may take :data:`HEAD_LIMIT` bytes and each
    case :data:`CASE_LIMIT`; a case counts only when it names, by its own
    valid id, a directory that exists, beside the answer's other cases, and
    only once. So an answer can list every case a task class has, and no
    more than its cases directory holds: it grows with the bench, not with
    what a registration writes. Anything else — a line too long, another
    head, a case that is not there, a line more than announced — is refused
    (``refused`` says why), and the rest of the stream is only counted.
    """

    __slots__ = (
        "buffer",
        "cases",
        "expected",
        "folder",
        "head",
        "ids",
        "prefix",
        "refused",
        "scanned",
        "size",
    )

    def __init__(self) -> None:
        self.prefix = b""
        self.buffer = bytearray()
        self.scanned = 0
        self.head: bytes | None = None
        self.expected = 0
        self.cases: list[bytes] = []
        self.ids: set[str] = set()
        self.folder: str | None = None
        self.refused: str | None = None
        self.size = 0

    def expect(self, request_id: str, pid: int) -> None:
        """Say whose answer this is: the request's and the child's."""
        self.prefix = b'{"id": "%s", "pid": %d, "cases": ' % (request_id.encode(), pid)

    def complete(self) -> bool:
        """Whether the whole answer came, and nothing else."""
        return (
            self.refused is None
            and self.head is not None
            and len(self.cases) == self.expected
            and not self.buffer
        )

    def settled(self) -> bool:
        """Whether nothing more on the channel can change the verdict: complete, or refused.

        Either way the child's stop is then looked for, so that a refused
        answer is concluded when the child stops or ends, not at the timeout.
        """
        return self.refused is not None or self.complete()

    def feed(self, chunk: bytes) -> None:
        """Take the next chunk of the channel; never raises."""
        self.size += len(chunk)
        if self.refused is not None:
            return
        buffer = self.buffer
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", max(start, self.scanned))) >= 0:
            if not self._line(bytes(buffer[start:end])):
                return
            start = end + 1
        del buffer[:start]
        self.scanned = len(buffer)
        limit = HEAD_LIMIT if self.head is None else CASE_LIMIT
        if len(buffer) > limit:
            self._refuse(f"a line of its answer is longer than {limit >> 10} KiB")

    def output(self) -> Output:
        """Return what the supervisor reports of the channel: its size (the answer is kept here)."""
        return Output(size=self.size)

    def _refuse(self, why: str) -> None:
        self.refused = why
        self.buffer.clear()

    def _line(self, line: bytes) -> bool:
        """Take one line; return whether it was taken (else the answer is refused)."""
        if self.head is None:
            self._head(line)
        elif len(self.cases) == self.expected:
            self._refuse("it wrote more than its answer")
        else:
            self._case(line)
        return self.refused is None

    def _head(self, line: bytes) -> None:
        if not line.startswith(self.prefix):
            self._refuse("its first line is not this process's answer to this request")
            return
        count, comma, _ = line[len(self.prefix) : len(self.prefix) + 12].partition(b", ")
        if not comma or not count.isdigit() or not count.isascii():
            self._refuse("its answer does not say how many cases follow")
            return
        self.expected = int(count)
        if self.expected and not line.endswith(_EMPTY_CASES):
            self._refuse("its answer announces cases but has no place for them")
            return
        self.head = line

    def _case(self, line: bytes) -> None:
        if len(line) > CASE_LIMIT:
            self._refuse(f"a case of its answer is longer than {CASE_LIMIT >> 10} KiB")
            return
        try:
            case = json.loads(line)
        except (ValueError, RecursionError):
            case = None
        case_id = case.get("id") if isinstance(case, dict) else None
        directory = case.get("directory") if isinstance(case, dict) else None
        if not isinstance(case_id, str) or not isinstance(directory, str):
            self._refuse("a case of its answer is not a case")
            return
        folder, name = os.path.split(directory)
        if (
            name != case_id
            or case_id in self.ids
            or case_id_problem(case_id) is not None
            or (self.folder is not None and folder != self.folder)
            or not _is_directory(directory)
        ):
            self._refuse(f"its answer names a case that is not in its cases directory: {case_id!r}")
            return
        self.folder = folder
        self.ids.add(case_id)
        self.cases.append(line)


def _is_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class _Server:
    """Serves requests: one forked child per slug."""

    def __init__(self, request_fd: int, answer_fd: int, *, adopts_orphans: bool) -> None:
        self.requests: Final = request_fd
        self.answers: Final = answer_fd
        # What was read from the request pipe and not served yet: the parent may
        # send the next request while a slug runs, so that none waits for a round trip.
        self.buffer = b""
        # Where this process adopts orphans, its children's leftovers are found cheaply
        # (below it); elsewhere through their session.
        self.reach: Final[Reach] = "adopted" if adopts_orphans else "session"
        # Whether the request channel reached its end while a child ran.
        self.closed = False

    def stop(self, status: int) -> NoReturn:
        """End: kill everything below this process, then exit."""
        kill_children()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(status)

    def warm(self, request: Request) -> None:
        """Fill the import system's directory caches for the request's bench, once.

        The children inherit them, so each does not list the bench's
        directories again. This reads directory listings (validated by their
        modification time on every lookup, as always); it imports nothing.
        """
        root = os.path.join(os.path.dirname(request["manifest"]), fs_path(request["root"]))
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
            answer = memoryview(self.run(request) + b"\n")
            while answer:
                answer = answer[os.write(self.answers, answer) :]

    def _read_requests(self) -> bool:
        """Read what the request channel holds into the buffer; return whether it is closed."""
        chunk = os.read(self.requests, 1 << 16)
        self.buffer += chunk
        self.closed = not chunk
        return self.closed

    # -- one slug ---------------------------------------------------------------

    def run(self, request: Request) -> bytes:
        """Check one slug in a fresh fork; return the answer line for the parent (no newline).

        The worker does as little as it can per slug: after each fork, every
        page it writes to is copied (or at least faulted in) again, so even
        the slug's manifest and registry are built in the child.
        """
        request_id = request["id"]
        result = _Result()

        def body(channels: tuple[int, ...]) -> int:
            return self._child(request, channels[0])

        try:
            child = fork(
                body,
                stdout=_OUTPUT,
                stderr="stdout",
                pipes=(result,),
                parent_death_signal=signal.SIGKILL,
                reach=self.reach,
            )
        except (NotStarted, OSError) as exc:  # out of descriptors or processes: not the slug's
            reason = exc.reason if isinstance(exc, NotStarted) else exc.strerror or str(exc)
            return _failed(request_id, "unavailable", f"cannot start its process: {reason}")
        result.expect(request_id, child.pid)
        timeout = float(request["timeout"])
        # Requests that come meanwhile are kept; the request channel's end is the parent's.
        watch = {self.requests: self._read_requests}
        ending = child.wait(timeout, watch=watch, drain_grace=0.0, answered=result.settled)
        if self.closed:
            self.stop(1)
        return _answer(request_id, ending, result, timeout)

    def _child(self, request: Request, result_fd: int) -> int:
        """Be the slug's process: import, answer, and stop where the worker can see it."""
        me = _getpid()
        _close(self.requests)
        _close(self.answers)
        manifest = request_manifest(request)
        slug, request_id = request["slug"], request["id"]
        document = probe(slug, manifest.root_dir(slug), manifest, registry.TaskClassRegistry())
        if _getpid() != me:
            # A fork made by the registration came back through its import:
            # it is left running on purpose, for the real child to count.
            while True:
                _pause()
        found = []
        parts = document["parts"]
        if parts is not None:
            found = parts["cases"]
            parts["cases"] = []  # the last key: the worker puts the cases back there
        # What the registration printed goes out first: nothing is written after the answer.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        # The id, the pid and the count first: the worker reads them without decoding the rest.
        lines = [_dumps({"id": request_id, "pid": me, "cases": len(found), **document})]
        lines += [_dumps(case) for case in found]
        data = memoryview(("\n".join(lines) + "\n").encode())
        while data:
            data = data[_write(result_fd, data) :]
        stop_here()


def _failed(
    request_id: str,
    kind: Literal["crashed", "timeout", "tampered", "unavailable"],
    detail: str,
) -> bytes:
    return json.dumps(Failed(id=request_id, kind=kind, detail=detail)).encode()


def _answer(request_id: str, ending: Ending, result: _Result, timeout: float) -> bytes:
    """Turn what the child left into the answer line: its answer, or what went wrong.

    The answer counts only when the child was seen stopped after writing
    exactly one answer (:class:`_Result`) — stopped where the probe's code
    stops it, not ended by itself. It is passed on without its head being
    decoded: ``kind``, ``orphans`` and ``threads`` (what the worker saw) in
    place of ``pid`` and ``cases``, each case put back in ``parts.cases``
    (a :class:`~codegenie.eval.check._protocol.Done`, whose shape the parent
    checks: a registration could have broken the code that made it).
    """
    if result.refused is not None:
        return _failed(request_id, "tampered", f"{_TAMPERED}: {result.refused}")
    if ending.timed_out:
        return _failed(request_id, "timeout", f"no answer within {timeout:g} s")
    if not ending.stopped or not result.complete() or result.head is None:
        if result.size:
            detail = f"{_TAMPERED}: it wrote there and then {ending.how} instead of stopping"
            return _failed(request_id, "tampered", detail)
        return _failed(request_id, "crashed", _crash(ending, ending.stdout))
    head = result.head
    _, _, rest = head[len(result.prefix) :].partition(b", ")
    threads = max(0, ending.threads - 1)
    front = b'{"id": "%s", "kind": "done", "orphans": %d, "threads": %d, ' % (
        request_id.encode(),
        ending.orphans,
        threads,
    )
    if not result.cases:
        return front + rest
    return b"".join(
        (front, rest[: -len(_EMPTY_CASES)], b'"cases": [', b", ".join(result.cases), b"]}}")
    )


def _crash(ending: Ending, output: Output | None) -> str:
    tail = "" if output is None else output.text()
    return f"{ending.how}; output: {tail}" if tail else ending.how


def main(argv: list[str]) -> int:  # noqa: RET503 - stop() ends the process
    """Start the worker: preload, announce readiness, serve requests until told to stop."""
    # SIGINT (KeyboardInterrupt) is how the worker is told to stop, by its
    # parent or by the parent's death: its signal handlers stay Python's
    # defaults, which is what each forked child must start with.
    parent = os.getppid()
    # First: no other process of the user may reach into this one (its descriptors
    # through /proc, its memory, ptrace), its children included (they inherit it).
    set_dumpable(False)
    die_with_parent(signal.SIGINT)
    adopts = become_subreaper()
    if os.getppid() != parent:
        return 1  # the parent died before the death signal was armed
    server = _Server(int(argv[1]), int(argv[2]), adopts_orphans=adopts)
    try:
        _serve(server)
    except BaseException:
        server.stop(130)
    server.stop(0)  # everything below it swept here too, as on SIGINT


def _serve(server: _Server) -> None:
    _warm_up()
    gc.collect()
    gc.freeze()  # children share these pages instead of copying them when the GC walks them
    os.write(server.answers, b'{"ready": true}\n')
    server.serve()
