"""Warm workers: one sandbox per worker, one warm interpreter in it, a fork per run.

Starting a run the plain way costs a bubblewrap (a user namespace, ~25
mounts) and an interpreter (site, the rubric's imports) every time: about
two thirds of a cheap run. A warm worker pays both once. It is a bubblewrap
sandbox with the run policy's mounts around a Python (the run's
interpreter) that runs :mod:`codegenie.eval._sandbox.warm.zygote`; for each run
the worker forks a process that takes new mount, PID, IPC, network and
cgroup namespaces, a fresh ``/tmp`` and ``/dev/shm`` and ``/proc``, the
run's cgroups and rlimits, a new session keyring, no capabilities and the
seccomp filter, and runs the rubric as ``python RUBRIC CASE CANDIDATE``
would — forked from an interpreter that has run nothing of any run.

The harness side (this module): :class:`WarmWorkers` keeps one
:class:`WarmWorker` per thread, for the kind of run (interpreter, task
class) the thread made last, started on first use; :meth:`WarmWorker.run` hands a prepared run
to its worker (argv, environment, working directory, cgroups, rlimits, and
the run's stdin, stdout and stderr as descriptors) and watches it as the
supervisor watches a child: its output within bounds, its deadline, the
cancel event, the disk watch; it ends in the same
:class:`~codegenie.eval._process.supervisor.Ending`. What a run may see and
do is what :mod:`codegenie.eval._sandbox.policy` says, as for a plain run;
the worker's process and the other runs are out of its reach (another PID
namespace; the filter denies ``ptrace``).

Where a worker cannot start (a bubblewrap or kernel that refuses the
capabilities or a nested mount), :class:`WarmWorkers` says why once
(:attr:`WarmWorkers.unavailable`) and every run takes the plain path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn, final

from codegenie.eval._logging import LazyLogger
from codegenie.eval._process import procfs
from codegenie.eval._process.output import Bounds, Sink
from codegenie.eval._process.supervisor import (
    DRAIN_GRACE,
    Ending,
    Flag,
    NotStarted,
    Usage,
    open_pidfd,
)
from codegenie.eval._sandbox import confining
from codegenie.eval._sandbox.bwrap import Bubblewrap, isolation_args
from codegenie.eval._sandbox.bwrap_run import render
from codegenie.eval._sandbox.cgroups import discover
from codegenie.eval._sandbox.confinement import confinement
from codegenie.eval._sandbox.keyring import keyctl_join
from codegenie.eval._sandbox.plan import Confinement, Mount, Namespace, ProcView
from codegenie.eval._sandbox.policy import Interpreter, SandboxPolicy
from codegenie.eval._sandbox.seccomp import program as seccomp_program

if TYPE_CHECKING:
    from codegenie.eval._sandbox.preparation import PreparedRun

__all__ = ("WarmWorker", "WarmWorkers")

_ZYGOTE: Final = Path(__file__).with_name("zygote.py")
# What the fork of each run mounts afresh (the zygote): a worker's directory there would be
# out of its runs' sight. (/tmp is not: the runs' binds under it are carried over.)
_REMOUNTED: Final = ("/dev", "/proc", "/sys")
# The capabilities the worker keeps in its user namespace, for the fork of each run:
# new namespaces and mounts, the loopback up, the bounding set cleared. Each run drops them all.
_CAPABILITIES: Final = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETPCAP")
_READ: Final = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_POLL_S: Final = 0.05
# How long a worker may take to start (its first run waits for it).
_START_WITHIN: Final = 30.0
_STATUS: Final = struct.Struct("!idd")
# The worker's -c program: it reads the worker's program from the descriptor named first
# (a pipe: the source of confine, a NUL, the zygote's), and runs the zygote as __main__ with
# the other two (its control socket, the filter); the zygote makes a module of the first part.
_BOOTSTRAP: Final = (
    "import sys;_CONFINE,_,_ZYGOTE=open(int(sys.argv[1]),'rb').read().partition(b'\\0');"
    "exec(compile(_ZYGOTE,'codegenie-warm-worker','exec'))"
)
_log = LazyLogger(__name__)
# Why a run was not made when its worker was gone (killed, or out of step).
_ENDED: Final = "the warm worker ended"


@dataclass(frozen=True, slots=True)
class _Key:
    interpreter: Interpreter
    task_class: str
    hidden: tuple[str, ...]


def _worker_args(plan: Confinement, bwrap: Bubblewrap, cgroup_parents: Sequence[Path]) -> list[str]:
    """Bubblewrap's arguments for a worker: its plan's, with capabilities and no filter.

    The worker keeps :data:`_CAPABILITIES` in its user namespace and may make
    the nested namespaces of each run (no ``--disable-userns``: the filter
    each run loads denies new user namespaces, as it does on a bubblewrap
    without that option). The directories the runs' cgroups are made in are
    bound at their own paths, so that a run joins its own; each run covers
    ``/sys`` before the rubric starts. The worker's ``/proc`` is left whole
    (nothing of it hidden or masked, not read-only): the kernel lets a
    namespace mount a new ``/proc`` only where one is already fully visible
    to it, and each run's init mounts its own, with what its plan hides
    (:func:`_setup`), on top of it.
    """
    cgroups = tuple(Mount("bind", str(p), str(p), writable=True) for p in cgroup_parents)
    worker = dataclasses.replace(
        plan,
        proc=ProcView(hidden=(), masked=(), read_only=False),
        nested_userns=True,
        binds=plan.binds + cgroups,
    )
    args = [str(bwrap.path), *isolation_args(bwrap, worker.namespaces, nested_userns=True)]
    at = args.index("--cap-drop")
    caps: list[str] = []
    for name in _CAPABILITIES:
        caps += ["--cap-add", name]
    args[at : at + 2] = caps
    return [*args, *render(worker, bwrap)]


# What the worker's own sandbox gives every run it forks: its user namespace (which owns
# the run's others) and its UTS namespace (the plan's host name). Each run makes the others.
_WORKER_GIVES: Final[frozenset[Namespace]] = frozenset({"user", "uts"})


def _setup(plan: Confinement) -> dict[str, object]:
    """Render ``plan`` as the zygote's setup of one run: what the fork of a run makes afresh.

    The namespaces the run makes itself (the plan's, but those of the
    worker's sandbox, :data:`_WORKER_GIVES`), its ``/proc`` (what of it is
    hidden, masked, whether read-only), its ``/dev`` and scratch file
    systems (tmpfs, sized as the plan says), its working directory and
    environment (bubblewrap's ``--chdir`` also sets ``PWD``, which a plain
    run therefore has), the cgroups it joins and its rlimits. And the call
    that joins the run a new session keyring, as a plain run's starting
    thread joins one (:func:`~codegenie.eval._sandbox.keyring.keyctl_join`).
    The plan's seccomp program is not in it: the worker was given it once,
    when it started (:meth:`WarmWorker.run` refuses a plan with another).
    """
    return {
        "keyctl": keyctl_join(),
        "unshare": [name for name in plan.namespaces if name not in _WORKER_GIVES],
        "proc": {
            "hidden": list(plan.proc.hidden),
            "masked": list(plan.proc.masked),
            "read_only": plan.proc.read_only,
        },
        "dev": plan.dev,
        "scratch": [mount.target for mount in plan.scratch],
        "tmp_size": plan.scratch_size,
        "cwd": plan.cwd,
        "env": {**plan.env, "PWD": plan.cwd},
        "join": list(plan.joins),
        "rlimits": [list(each) for each in plan.rlimits],
    }


@final
class WarmWorker:
    """A worker sandbox: bubblewrap around a warm interpreter that forks one run at a time.

    Made by :meth:`start`; :meth:`run` makes one run (one at a time: a
    worker belongs to one thread); :meth:`close` ends it and removes its
    directory. :attr:`directory` is where runs' directories are made.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        control: socket.socket,
        directory: Path,
        seccomp: bytes,
    ) -> None:
        self.process: Final = process
        self.directory: Final = directory
        self._seccomp: Final = seccomp
        self._control = control
        self._buffer = b""
        #: The worker is gone or out of step: start another.
        self.broken = False
        #: A run was set up here: a later setup failure is that run's, not the worker's.
        self.succeeded = False
        #: What each run given to this worker ran (see :meth:`WarmWorkers.worker`).
        self.served: set[Hashable] = set()

    @classmethod
    def start(
        cls,
        interpreter: Interpreter,
        task_class: Path,
        hidden: Sequence[Path],
        bwrap: Bubblewrap,
    ) -> WarmWorker:
        """Start a worker for runs of ``interpreter`` on ``task_class``; raise ``NotStarted``.

        The worker's directory is made in the temporary directory; the
        worker has the policy's mounts and environment (its ``HOME`` and
        ``TMPDIR`` are its own directory's, empty), and its stdin, stdout
        and stderr are ``/dev/null``, as a run's stdin and pipes are not
        terminals either.
        """
        code = seccomp_program()
        if code is None:
            msg = f"there is no seccomp filter for this machine ({os.uname().machine})"
            raise NotStarted(msg)
        base = os.path.realpath(tempfile.gettempdir())
        remounted = next((top for top in _REMOUNTED if _under(base, top)), None)
        if remounted is not None:
            msg = (
                f"the temporary directory {base} is under {remounted}, which each warm run "
                "mounts afresh (set TMPDIR elsewhere to use warm workers)"
            )
            raise NotStarted(msg)
        # At its real path: each run covers it by that name, and finds its own directory in it.
        directory = Path(tempfile.mkdtemp(prefix="codegenie-worker-", dir=base))
        parents = sorted({h.parent for h in discover().values()})
        policy = SandboxPolicy(
            "bwrap", directory, task_class, hidden=tuple(hidden), interpreter=interpreter
        )
        for each in (policy.workdir, policy.tmpdir, policy.home):
            each.mkdir(mode=0o700, exist_ok=True)
        plan = confinement(policy)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        filter_read, filter_write = os.pipe()
        program_read = -1
        process = None
        try:
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            view = memoryview(code)
            while view:
                view = view[os.write(filter_write, view) :]
            os.close(filter_write)
            filter_write = -1
            argv = _worker_args(plan, bwrap, parents)
            program_read = _pipe_holding(confining.source().encode() + b"\0" + _ZYGOTE.read_bytes())
            passed = (program_read, theirs.fileno(), filter_read)
            argv += [str(interpreter.executable), "-B", "-c", _BOOTSTRAP, *map(str, passed)]
            try:
                process = subprocess.Popen(
                    argv,
                    env=dict(plan.env),
                    cwd=plan.cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    pass_fds=passed,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise NotStarted(exc.strerror or type(exc).__name__) from exc
        except BaseException:
            ours.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        finally:
            theirs.close()
            os.close(filter_read)
            if program_read != -1:
                os.close(program_read)
            if filter_write != -1:
                os.close(filter_write)
        return cls(process, ours, directory, code)

    def run(
        self,
        prepared: PreparedRun,
        command: Sequence[str],
        limit: float,
        *,
        cancel: Flag | None = None,
        stdout: Bounds,
        stderr: Bounds,
    ) -> Ending:
        """Make the run ``prepared`` describes, ``command`` its argv; watch it to its end.

        As :meth:`Child.wait <codegenie.eval._process.supervisor.Child.wait>`:
        killed at ``limit`` seconds or once ``cancel`` is set or the disk
        watch asks; its output kept within the bounds. Raises
        :class:`NotStarted` when the worker could not set the run up (its
        reason), or when the worker itself is gone (then it is
        :attr:`broken`, and the caller starts another).
        """
        started = time.monotonic()
        out_sink, err_sink = Sink(stdout), Sink(stderr)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        stdin = os.open(os.devnull, os.O_RDONLY)
        sinks = {out_read: out_sink, err_read: err_sink}
        try:
            for fd in sinks:
                os.set_blocking(fd, False)
            if prepared.plan is None:
                msg = "a warm worker makes contained runs only"
                raise ValueError(msg)
            if prepared.plan.seccomp != self._seccomp:
                msg = "a run's seccomp program is not the one its worker loads for each run"
                raise ValueError(msg)
            request = {
                **_setup(prepared.plan),
                "argv": list(command),
                "run_dir": str(prepared.policy.run_dir),
                "worker_dir": str(self.directory),
            }
            body = json.dumps(request).encode()
            try:
                self._control.sendmsg(
                    [struct.pack("!I", len(body)) + body],
                    [
                        (
                            socket.SOL_SOCKET,
                            socket.SCM_RIGHTS,
                            struct.pack("3i", stdin, out_write, err_write),
                        )
                    ],
                )
            except OSError as exc:
                self.broken = True
                raise NotStarted(_ENDED) from exc
            finally:
                for fd in (stdin, out_write, err_write):
                    os.close(fd)
            run = _Watched(prepared, select.poll())
            try:
                ending = self._watch(run, (out_sink, err_sink), sinks, limit, cancel, started)
            except NotStarted:
                raise
            except BaseException:
                # Out of step with the worker (an interrupt, a descriptor short): end it all.
                run.kill()
                self.broken = True
                with contextlib.suppress(OSError):
                    self.process.kill()
                raise
            finally:
                if run.pidfd is not None:
                    os.close(run.pidfd)
            self.succeeded = True
            return ending
        finally:
            for fd in sinks:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _watch(  # noqa: PLR0917 - one loop, as Child.wait's
        self,
        run: _Watched,
        outputs: tuple[Sink, Sink],
        sinks: dict[int, Sink],
        limit: float,
        cancel: Flag | None,
        started: float,
    ) -> Ending:
        deadline = started + limit
        poller = run.poller
        open_ = dict(sinks)
        for fd in open_:
            poller.register(fd, _READ)
        control = self._control.fileno()
        poller.register(control, _READ)
        while run.status is None:
            if not run.killed:
                if cancel is not None and cancel.is_set():
                    run.cancelled = True
                elif time.monotonic() >= deadline:
                    run.timed_out = True
                if run.cancelled or run.timed_out:
                    run.kill()
            if run.pidfd is None and time.monotonic() > deadline + _START_WITHIN:
                self._abandon()  # it never said which process runs the run
            wait = (
                min(_POLL_S, max(0.0, deadline - time.monotonic())) if not run.killed else _POLL_S
            )
            for fd, _ in poller.poll(wait * 1000):
                if fd == control:
                    got = self._read_control()
                    if got is None:
                        self._abandon()
                    for kind, value in got:
                        run.told(kind, value)
                elif fd in run.watch:
                    if run.watch[fd]() and not run.killed:
                        run.cancelled = True
                        run.kill()
                elif fd in open_ and _read_into(fd, open_[fd]):
                    poller.unregister(fd)
                    del open_[fd]
        if run.failure is not None:
            if not self.succeeded:
                self.broken = True
            raise NotStarted(run.failure)
        _drain(poller, open_, DRAIN_GRACE)
        wait_status, user_s, system_s = run.status
        return Ending(
            pid=run.pid or 0,
            returncode=os.waitstatus_to_exitcode(wait_status),
            usage=Usage(time.monotonic() - started, user_s, system_s, 0),
            timed_out=run.timed_out,
            cancelled=run.cancelled,
            stdout=outputs[0].output(),
            stderr=outputs[1].output(),
        )

    def _abandon(self) -> NoReturn:
        """Give up on the worker (gone, or out of step): kill it; raise ``NotStarted``."""
        self.broken = True
        with contextlib.suppress(OSError):
            self.process.kill()
        raise NotStarted(_ENDED)

    def _read_control(self) -> list[tuple[str, object]] | None:
        """Read what the worker sent (``S`` pid, ``F`` reason, ``E`` status); ``None`` at EOF."""
        found: list[tuple[str, object]] = []
        try:
            data, ancillary, _, _ = self._control.recvmsg(
                4096, socket.CMSG_SPACE(12), socket.MSG_DONTWAIT
            )
        except BlockingIOError:
            return found
        except OSError:
            return None
        if not data:
            return None
        pid = None
        for level, what, cred in ancillary:
            if level == socket.SOL_SOCKET and what == socket.SCM_CREDENTIALS and len(cred) >= 12:
                pid = struct.unpack("3i", cred[:12])[0]
        self._buffer += data
        while self._buffer:
            kind = self._buffer[:1]
            if kind == b"S":
                found.append(("S", pid))
                self._buffer = self._buffer[1:]
            elif kind == b"F" and len(self._buffer) >= 5:
                (size,) = struct.unpack("!I", self._buffer[1:5])
                if len(self._buffer) < 5 + size:
                    break
                found.append(("F", self._buffer[5 : 5 + size].decode("utf-8", "replace")))
                self._buffer = self._buffer[5 + size :]
            elif kind == b"E" and len(self._buffer) >= 1 + _STATUS.size:
                found.append(("E", _STATUS.unpack(self._buffer[1 : 1 + _STATUS.size])))
                self._buffer = self._buffer[1 + _STATUS.size :]
            elif kind in (b"F", b"E"):
                break
            else:
                self.broken = True
                return None
        return found

    def hang_up(self) -> None:
        """Tell the worker to end (its socket closed), without waiting: :meth:`close` waits."""
        with contextlib.suppress(OSError):
            self._control.close()

    def close(self) -> None:
        """End the worker (its socket closed, a kill if it lingers); remove its directory."""
        self.hang_up()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


@final
class _Watched:
    """What is known of a run while it is watched: its process, its status, how it was ended."""

    def __init__(self, prepared: PreparedRun, poller: select.poll) -> None:
        self.prepared = prepared
        self.poller = poller
        self.pid: int | None = None
        self.pidfd: int | None = None
        self.watch: Mapping[int, Callable[[], bool]] = {}
        self.status: tuple[int, float, float] | None = None
        self.failure: str | None = None
        self.timed_out = self.cancelled = self.killed = False

    def told(self, kind: str, value: object) -> None:
        """Take a message of the worker's: ``S`` (the run's pid), ``F`` (a failure), ``E``."""
        if kind == "S" and isinstance(value, int):
            self.pid = value
            self.pidfd = open_pidfd(value)
            self.prepared.started(functools.partial(_tree, value))
            self.watch = self.prepared.watch()
            for fd in self.watch:
                self.poller.register(fd, _READ)
            if self.timed_out or self.cancelled:  # asked to stop before it said who it is
                self.kill()
        elif kind == "F" and isinstance(value, str):
            self.failure = value
        elif kind == "E" and isinstance(value, tuple):
            self.status = value

    def kill(self) -> None:
        """Kill the run: its init, and with it every process of its namespace."""
        if self.pidfd is None:
            return
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        self.killed = True


def _pipe_holding(data: bytes) -> int:
    """Return the read end of a pipe that holds ``data`` whole, its write end closed.

    Written by a thread, so that a program larger than the pipe's buffer
    does not block: the worker reads it as it starts.
    """
    reader, writer = os.pipe()

    def write() -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(writer, view) :]
        except OSError:
            pass  # the worker did not start: nothing reads it
        finally:
            os.close(writer)

    threading.Thread(target=write, name="warm-worker-program", daemon=True).start()
    return reader


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants: the run's processes, where no cgroup lists them."""
    return [pid, *procfs.descendants(pid)]


def _read_into(fd: int, sink: Sink) -> bool:
    """Read what ``fd`` holds into ``sink``; return whether it is at its end."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return False
    except OSError:
        return True
    if chunk:
        sink.feed(chunk)
        return False
    return True


def _drain(poller: select.poll, open_: dict[int, Sink], grace: float) -> None:
    until = time.monotonic() + grace
    while open_:
        events = poller.poll(max(0.0, until - time.monotonic()) * 1000)
        if not events:
            return
        for fd, _ in events:
            if fd in open_ and _read_into(fd, open_[fd]):
                poller.unregister(fd)
                del open_[fd]


@final
class WarmWorkers:
    """The warm workers of a batch of runs: one per thread, for its kind of run, started on use.

    :meth:`worker` returns the calling thread's worker for a run, or
    ``None`` when warm workers cannot be used here (then
    :attr:`unavailable` says why, once). :meth:`close` ends them all.
    """

    def __init__(self, bwrap: Bubblewrap) -> None:
        self.bwrap: Final = bwrap
        self.unavailable: str | None = None
        self._lock = threading.Lock()
        # One worker a thread at most, for the kind of run it made last: a batch over many
        # task classes (grade --all, check --rubrics) keeps N workers, not N per task class.
        self._workers: dict[int, tuple[_Key, WarmWorker]] = {}

    def worker(
        self,
        interpreter: Interpreter,
        task_class: Path,
        hidden: Sequence[Path],
        run: Hashable = None,
    ) -> WarmWorker | None:
        """Return the calling thread's worker for a run of ``interpreter`` on ``task_class``.

        Starts one where the thread has none for this kind of run, ending the
        thread's worker for another kind; ``None`` where none can start.
        ``run`` says what the run runs (its rubric, case and candidate): a
        worker never makes two runs of the same, so that no two of them share
        the worker's hash seed (Python seeds string hashing once per
        interpreter; plain runs each have their own): a rubric whose verdict
        hangs on the order of a set differs across repeats as plainly.
        """
        if self.unavailable is not None:
            return None
        thread = threading.get_ident()
        key = _Key(interpreter, str(task_class), tuple(map(str, hidden)))
        with self._lock:
            found = self._workers.pop(thread, None)
        if found is not None:
            kept = found[1]
            if found[0] == key and not kept.broken and (run is None or run not in kept.served):
                kept.served.add(run)
                with self._lock:
                    self._workers[thread] = found
                return kept
            kept.close()
        try:
            made = WarmWorker.start(interpreter, task_class, hidden, self.bwrap)
        except NotStarted as exc:
            self.give_up(exc.reason)
            return None
        made.served.add(run)
        with self._lock:
            self._workers[thread] = (key, made)
        return made

    def give_up(self, reason: str) -> None:
        """Use no warm worker from now on, for ``reason``; say so once (a log event, ``-v``)."""
        with self._lock:
            if self.unavailable is not None:
                return
            self.unavailable = reason
        _log.info(
            "warm-workers-unavailable",
            reason=reason,
            consequence="each rubric run starts its own bubblewrap and interpreter",
        )

    def close(self) -> None:
        """End every worker and remove their directories, all at once.

        Every worker is told to end first, then each is waited for and its
        directory removed in a thread of its own: a batch's end (a stop, most
        of all, on a loaded machine) waits for the slowest worker, not for
        the sum of them. An interrupt meanwhile does not cut it short.
        """
        with self._lock:
            workers = [worker for _, worker in self._workers.values()]
            self._workers.clear()
        for each in workers:
            each.hang_up()
        if len(workers) < 2:
            for each in workers:
                each.close()
            return
        done = [threading.Event() for _ in workers]

        def close(worker: WarmWorker, event: threading.Event) -> None:
            try:
                worker.close()
            finally:
                event.set()

        for worker, event in zip(workers, done, strict=True):
            threading.Thread(
                target=close, args=(worker, event), name="codegenie-worker-close", daemon=True
            ).start()
        interrupted: KeyboardInterrupt | None = None
        for event in done:
            while not event.is_set():
                try:
                    event.wait()
                except KeyboardInterrupt as exc:  # a second Ctrl-C: the workers end first
                    interrupted = exc
        if interrupted is not None:
            raise interrupted
