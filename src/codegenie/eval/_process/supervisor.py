"""The one supervisor of child processes: start, watch, kill whole, reap, describe.

Every process that runs code the harness does not trust goes through here:
a rubric (:func:`codegenie.eval.rubrics.run_rubric`), a check worker
interpreter, and the fork in which that worker imports one slug. The same
rules hold for all of them:

- **A session of its own.** The child leads a new session, so also a new
  process group (its pid is both ids); stdin is ``/dev/null`` for a spawned
  command.
- **The child is watched, not its pipes.** Its exit is seen through a pidfd
  (Linux 5.3+) or, elsewhere, by polling ``waitid`` without reaping, so a
  child that dies while a grandchild holds its pipes is seen at once; a
  deadline and a cancellation (a :class:`threading.Event` set from another
  thread, or a descriptor that becomes readable) stop it early.
- **Output is read as it comes and kept within bounds**
  (:class:`~codegenie.eval._process.output.Bounds`): a flood costs no memory.
- **It dies whole.** Once the child has ended, timed out or been cancelled,
  or the caller is interrupted (``KeyboardInterrupt``), everything it started
  is killed with ``SIGKILL`` while the child is still unreaped — its pid,
  which names its group and session, cannot have been reused by then. How
  far the kill reaches is the child's :data:`Reach`.
- **It is reaped** with ``wait4``, which gives what it used (:class:`Usage`),
  and **described** by an :class:`Ending`.
- **A forked child can answer and then stop** (:func:`stop_here`): its parent
  believes what it wrote only once it has seen it stopped — alive, at the
  place that answers — never from a child that ended by itself.

The supervisor does not care what the command is: a later layer (a sandbox)
can wrap the argv, set the environment and pass descriptors or a pre-exec
hook. POSIX only (importing works everywhere); the process-tree searches
use Linux's ``/proc`` and find nothing elsewhere (the group kill remains).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, NoReturn, Protocol, final

from codegenie.eval._process import procfs
from codegenie.eval._process.output import Bounds, Output, Receiver, Sink

if TYPE_CHECKING:
    import resource  # POSIX only: importing this module works everywhere

__all__ = (
    "DRAIN_GRACE",
    "AnyOf",
    "Child",
    "Ending",
    "Flag",
    "NotStarted",
    "Reach",
    "Usage",
    "become_subreaper",
    "die_with_parent",
    "fork",
    "kill_children",
    "open_pidfd",
    "run",
    "set_dumpable",
    "signal_name",
    "spawn",
    "stop_here",
    "undumpable",
)

#: How far the kill of a child reaches once it has ended.
#:
#: ``"session"``: the processes below it while they are still attached to it,
#: its process group, and every other member of its session (found by
#: scanning ``/proc``: processes that moved to a group of their own with
#: ``setpgid``, as a shell with job control does). Only a process that made
#: a session of its own (``setsid``) and whose parent has already ended is
#: beyond reach.
#:
#: ``"adopted"``: for a process that adopts orphans (:func:`become_subreaper`)
#: and runs one child at a time: the child's group, then every other process
#: below the calling process — what the child left behind, adopted when its
#: parent ended, ``setsid`` or not, and everything below that — swept round
#: after round until none is left (:func:`kill_children`).
Reach = Literal["session", "adopted"]

#: How long, by default, the pipes may take to reach end of file once the
#: child's tree was killed: only a process beyond reach can hold them longer.
DRAIN_GRACE: Final = 2.0

_CHUNK: Final = 64 * 1024
# select.poll takes milliseconds in a C int; a longer wait is made in several turns.
_LONGEST_WAIT: Final = 3600.0
# Without a pidfd, how often the child's exit is looked for.
_EXIT_POLL: Final = 0.005
# With a cancel event, how often it is looked at.
_CANCEL_POLL: Final = 0.05
# How many rounds of killing what a child left in its session (each round finds what
# forked meanwhile).
_KILL_ROUNDS: Final = 10
# The most rounds of a sweep of everything below this process. Each round kills every
# process it finds, so only what forked during the round is left for the next one: a
# chain of any depth goes in one; the bound is for a tree that forks faster than it is
# killed, round after round.
_SWEEP_ROUNDS: Final = 10_000
# Once a child has answered, how soon its stop is looked for again (seconds), at
# first and at most: its stop wakes no poll.
_STOP_POLL: Final = (0.00002, 0.001)
# The exit status of a forked child whose body raised.
_BODY_FAILED: Final = 70
_PR_SET_PDEATHSIG: Final = 1
_PR_GET_DUMPABLE: Final = 3
_PR_SET_DUMPABLE: Final = 4
_PR_SET_CHILD_SUBREAPER: Final = 36
# Looked up with a default: importing this module works where poll is missing (Windows).
_READ_EVENTS: Final = getattr(select, "POLLIN", 1) | getattr(select, "POLLPRI", 2)

# What a forked child calls after its body ran, bound now: the body may run
# code that monkeypatches os._exit (or os.kill and os.getpid).
_exit: Final = os._exit
_signal: Final = os.kill
_getpid: Final = os.getpid
# Missing on macOS before Python 3.13: there the exit is found by reaping it.
_waitid: Final = getattr(os, "waitid", None)


@final
class NotStarted(Exception):
    """The child could not be started (no such program, out of processes, …).

    ``reason`` says why, in words (``strerror``); the cause is chained.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __reduce__(self) -> tuple[type[NotStarted], tuple[str]]:
        return (type(self), (self.reason,))


@dataclass(frozen=True, slots=True)
class Usage:
    """What a reaped child used.

    ``wall_s``: seconds from its start to its reaping. ``user_s`` and
    ``system_s``: CPU seconds of the child and of the descendants it reaped
    itself (``wait4``'s accounting; what it left behind is not counted).
    ``peak_rss_bytes``: the largest resident set among them.
    """

    wall_s: float
    user_s: float
    system_s: float
    peak_rss_bytes: int

    @property
    def cpu_s(self) -> float:
        """CPU seconds in all, user and system."""
        return self.user_s + self.system_s


@dataclass(frozen=True, slots=True)
class Ending:
    """How a supervised child ended.

    ``returncode`` follows :mod:`subprocess`: the exit status, or minus the
    signal that killed it. ``timed_out``: its deadline passed and it was
    killed; ``cancelled``: it was stopped by its cancel event or descriptor.
    ``stdout`` and ``stderr`` are what was kept of those streams (``None``
    when not captured, or, for ``stderr``, when it went to the stdout pipe);
    ``pipes`` what was kept of each extra pipe of a forked child. ``orphans``
    counts the processes it left behind that this process had adopted and
    killed (reach ``"adopted"`` only). ``stopped``: the child had answered and
    stopped itself (:func:`stop_here`) when it was killed — see
    :meth:`Child.wait`'s ``answered`` — and ``threads`` is how many threads
    it had then (``/proc``'s count; 0 when it did not stop, or where
    ``/proc`` cannot tell).
    """

    pid: int
    returncode: int
    usage: Usage
    timed_out: bool = False
    cancelled: bool = False
    stopped: bool = False
    stdout: Output | None = None
    stderr: Output | None = None
    pipes: tuple[Output, ...] = ()
    orphans: int = 0
    threads: int = 0

    @property
    def exit_status(self) -> int | None:
        """The status it exited with, or ``None`` when a signal killed it."""
        return self.returncode if self.returncode >= 0 else None

    @property
    def signal(self) -> int | None:
        """The number of the signal that killed it, or ``None`` when it exited."""
        return -self.returncode if self.returncode < 0 else None

    @property
    def how(self) -> str:
        """``"exited with status N"`` or ``"killed by signal NAME"`` (``"signal N"`` if unnamed)."""
        if self.returncode < 0:
            return f"killed by signal {signal_name(-self.returncode, bare=True)}"
        return f"exited with status {self.returncode}"


def signal_name(number: int, *, bare: bool = False) -> str:
    """Return the name of signal ``number`` (``"SIGKILL"``), or ``"signal N"`` when it has none.

    ``bare``: a number without a name is just ``"N"`` (for "killed by signal N").
    """
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number) if bare else f"signal {number}"


class Flag(Protocol):
    """What :meth:`Child.wait` takes as its ``cancel``: a :class:`threading.Event`, or any."""

    def is_set(self) -> bool:
        """Whether the watch is to stop."""
        ...


@final
class AnyOf:
    """A flag set when any of its flags is: a run stopped by its batch or by its own reason."""

    def __init__(self, *flags: Flag) -> None:
        self.flags: Final = flags

    def is_set(self) -> bool:
        """Whether any of the flags is set."""
        return any(flag.is_set() for flag in self.flags)


# -- process-wide settings (Linux) ------------------------------------------------------------


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


# Looked up once: a forked child calls it right after the fork, where every
# object it touches costs a copied page.
_PRCTL: Final = _load_prctl()


def die_with_parent(signum: int) -> bool:
    """Have this process receive ``signum`` when its parent ends; return whether that is armed.

    Linux only (``PR_SET_PDEATHSIG``); elsewhere it does nothing and returns
    ``False``. The caller checks ``os.getppid()`` afterwards: a parent that
    ended before the call sends nothing.
    """
    return _PRCTL is not None and _PRCTL(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0


def become_subreaper() -> bool:
    """Make this process adopt the orphans of its descendants; return whether it does.

    Linux only (``PR_SET_CHILD_SUBREAPER``). A process that does, and runs one
    child at a time, gives its children the reach ``"adopted"``.
    """
    return _PRCTL is not None and _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def set_dumpable(dumpable: bool) -> bool:
    """Open this process to other processes of its user, or close it; return whether that is done.

    Linux only (``PR_SET_DUMPABLE``). A process that is not dumpable has its
    ``/proc/PID`` entries owned by root: no process without
    ``CAP_SYS_PTRACE`` — any process of the same user, its own children
    included — can open ``/proc/PID/fd/N``, read or write its memory,
    ``ptrace`` it or take a descriptor of it (``pidfd_getfd``). Its forks
    inherit the setting; ``execve`` resets it. Root keeps ``CAP_SYS_PTRACE``:
    for root this closes nothing.
    """
    return _PRCTL is not None and _PRCTL(_PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) == 0


@contextlib.contextmanager
def undumpable() -> Iterator[bool]:
    """Close this process to other processes of its user while the block runs (Linux).

    See :func:`set_dumpable`; yields whether it is closed, and restores the
    setting found on the way out (a process that was dumpable is again).
    """
    was = _PRCTL(_PR_GET_DUMPABLE, 0, 0, 0, 0) if _PRCTL is not None else -1
    closed = was >= 0 and set_dumpable(False)
    try:
        yield closed
    finally:
        if closed and was > 0:
            set_dumpable(True)


def stop_here() -> NoReturn:
    """Stop this process for good: what a forked body calls once it has answered.

    ``SIGSTOP``, which nothing can catch, ignore or block; should anything
    continue it, it stops again. Its parent, watching with
    :meth:`Child.wait`'s ``answered``, sees it stopped and kills it. The
    body flushes what it wrote before it answers: nothing runs here after.
    """
    while True:
        _signal(_getpid(), signal.SIGSTOP)


def open_pidfd(pid: int) -> int | None:
    """Return a descriptor that becomes readable when ``pid`` exits (Linux 5.3+), or ``None``."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def kill_children(exclude: Sequence[int] = ()) -> int:
    """Kill every process below this one but ``exclude``, reap them; return how many there were.

    For a process that adopts orphans (:func:`become_subreaper`): what a
    child left behind are processes below this one, however deep, in any
    session. Each round finds every process below this one (its children
    and theirs, through ``/proc``), kills them all at once (``SIGKILL``, and
    the process group each leads) and reaps its own children; what the
    killed ones leave — their zombies, and whatever they forked during the
    round — is adopted by this process and found by the next round. The
    sweep ends when a round finds nothing, so a chain of any depth is gone
    when it returns. ``exclude``: children not to touch (and not counted).
    Never raises for a process that is gone meanwhile.
    """
    found: set[int] = set()
    for _ in range(_SWEEP_ROUNDS):
        children = [pid for pid in procfs.children() if pid not in exclude]
        if not children:
            break
        below = [pid for child in children for pid in procfs.descendants(child)]
        for pid in children:
            _kill(pid)
        for pid in below:
            _kill(pid)
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                continue
        found.update(children)
        found.update(below)
    return len(found)


def _kill(pid: int) -> None:
    """Kill ``pid`` and the process group it leads (if any); never raise."""
    # try/except, not contextlib.suppress: the check's worker runs this between two
    # forks, where every object touched is a page fault.
    try:  # noqa: SIM105 - see above
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:  # noqa: SIM105 - see above
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# -- the child ----------------------------------------------------------------------------


@final
class Child:
    """A started child that leads a session of its own, and the pipes it writes to.

    Made by :func:`spawn` or :func:`fork`. :meth:`wait` watches it to its end
    and returns its :class:`Ending`; a caller that watches it in its own loop
    reads its pipes with :meth:`fds` and :meth:`read`. Not thread-safe: one
    thread drives a child (:meth:`wait`'s ``cancel`` event is how another
    thread stops it). Closing it (``with``, :meth:`close`) kills and reaps it
    if it was not waited for.
    """

    def __init__(
        self,
        pid: int,
        *,
        reach: Reach,
        pidfd: int | None,
        sinks: Mapping[int, Receiver],
        stdout: Sink | None,
        stderr: Sink | None,
        pipes: Sequence[Receiver],
        popen: subprocess.Popen[bytes] | None = None,
        started: float | None = None,
    ) -> None:
        self.pid: Final = pid
        self.reach: Final = reach
        self.started: Final = time.monotonic() if started is None else started
        self._pidfd = pidfd
        self._open = dict(sinks)  # read end -> sink, while not at end of file
        self._stdout = stdout
        self._stderr = stderr
        self._pipes = tuple(pipes)
        self._popen = popen
        self._ending: Ending | None = None
        # Where waitid is missing, the exit is found by reaping: (status, usage) kept here.
        self._reaped: tuple[int, resource.struct_rusage] | None = None

    def __repr__(self) -> str:
        state = "running" if self._ending is None else self._ending.how
        return f"<Child pid={self.pid} reach={self.reach!r} {state}>"

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- for a caller's own loop --------------------------------------------------------

    def fds(self) -> list[int]:
        """Return the read ends of its pipes that have not reached end of file."""
        return list(self._open)

    def read(self, fd: int) -> bool:
        """Read what pipe ``fd`` holds now (never blocking); return whether it is at its end."""
        sink = self._open.get(fd)
        if sink is None:
            return True
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if chunk:
            sink.feed(chunk)
            return False
        del self._open[fd]
        os.close(fd)
        return True

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the child alone, unless it was reaped already."""
        if self._ending is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signum)

    def has_exited(self) -> bool:
        """Whether the child has exited; where the platform allows, it stays unreaped."""
        if self._ending is not None or self._reaped is not None:
            return True
        if _waitid is None:  # pragma: no cover - macOS before Python 3.13
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self._reaped = (status, usage)
            return bool(pid)
        try:
            return _waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # pragma: no cover - reaped behind the supervisor's back
            return True

    # -- to its end ---------------------------------------------------------------------

    def wait(
        self,
        timeout: float | None = None,
        *,
        cancel: Flag | None = None,
        watch: Mapping[int, Callable[[], bool]] | None = None,
        drain_grace: float = DRAIN_GRACE,
        answered: Callable[[], bool] | None = None,
    ) -> Ending:
        """Watch the child until it exits, ``timeout`` seconds pass, or it is cancelled; end it.

        ``timeout``: ``None`` (or infinity) for none. ``cancel``: an event
        another thread may set, looked at every 50 ms. ``watch``: other
        descriptors to serve meanwhile: when one is readable its callback
        runs, and the child is cancelled if it returns true (a callback that
        returns false must have read what made it readable, end of file
        included). ``answered``: for a forked child that answers and then
        stops itself (:func:`stop_here`): once it returns true (it is asked
        after each event), the watch also ends when the child is seen
        stopped (``Ending.stopped``); a stop before that is not looked for.
        Then its tree is killed (see :data:`Reach`), its pipes
        are read until end of file for at most ``drain_grace`` seconds, it
        is reaped, and its pipes are closed. Returns the :class:`Ending`
        (the same one if called again). An exception (``KeyboardInterrupt``)
        propagates after the tree is killed and the child reaped.
        """
        if self._ending is not None:
            return self._ending
        deadline: float | None = None
        if timeout is not None and timeout != float("inf"):
            deadline = time.monotonic() + timeout
        timed_out = cancelled = stopped = False
        poller = select.poll()
        watch = watch or {}
        try:
            for fd in (*self._open, *((self._pidfd,) if self._pidfd is not None else ()), *watch):
                poller.register(fd, _READ_EVENTS)
            longest = _LONGEST_WAIT if cancel is None else _CANCEL_POLL
            if self._pidfd is None:
                longest = min(longest, _EXIT_POLL)
            # Once the child has answered: how long to sleep before looking for its stop again.
            pause = 0.0
            while True:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                wait = longest if not pause else 0.0
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        timed_out = True
                        break
                    wait = min(wait, left)
                exited = False
                for fd, _ in poller.poll(wait * 1000):
                    if fd == self._pidfd:
                        exited = True
                    elif fd in watch:
                        cancelled = watch[fd]() or cancelled
                    elif self.read(fd):
                        poller.unregister(fd)
                if cancelled or exited or (self._pidfd is None and self.has_exited()):
                    break
                if answered is not None and answered():
                    stopped = self._has_stopped()
                    if stopped or self._reaped is not None:
                        break
                    # A stop wakes no poll: look again soon, a little later each time.
                    time.sleep(pause)
                    pause = min(max(2 * pause, _STOP_POLL[0]), _STOP_POLL[1])
            # Counted before the kill: what a stopped child still ran, whatever it said.
            threads = len(procfs.threads(self.pid)) if stopped else 0
            orphans = self._kill_tree()
            self._drain(poller, drain_grace)
            return self._reap(
                timed_out=timed_out,
                cancelled=cancelled,
                orphans=orphans,
                stopped=stopped,
                threads=threads,
            )
        except BaseException:
            self._end_through_interrupts()
            raise
        finally:
            self._close_fds()

    def _has_stopped(self) -> bool:
        """Whether the child is stopped now (and still unreaped); never blocks."""
        if self._reaped is not None:
            return False
        if _waitid is None:  # pragma: no cover - macOS before Python 3.13
            pid, status, usage = os.wait4(self.pid, os.WNOHANG | os.WUNTRACED)
            if pid and os.WIFSTOPPED(status):
                return True
            if pid:
                self._reaped = (status, usage)
            return False
        try:
            found = _waitid(os.P_PID, self.pid, os.WSTOPPED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # pragma: no cover - reaped behind the supervisor's back
            return False
        return found is not None and found.si_code == os.CLD_STOPPED

    def close(self) -> None:
        """Kill the child's tree and reap it if that was not done yet; close its pipes.

        Never raises for a child that is gone.
        """
        try:
            self._end_through_interrupts()
        finally:
            self._close_fds()

    def _end_through_interrupts(self) -> None:
        """Kill the tree and reap the child, as cancelled, unless done; raise an interrupt after.

        A ``KeyboardInterrupt`` arriving meanwhile (a second Ctrl-C, in the
        main thread) does not leave the tree running: the kill and the reap
        are made again, and the interrupt raised once they are done.
        """
        interrupted: KeyboardInterrupt | None = None
        while self._ending is None:
            try:
                self._reap(timed_out=False, cancelled=True, orphans=self._kill_tree())
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted

    def _kill_tree(self) -> int:
        """Kill all within the child's reach (it is still unreaped); return the orphans killed."""
        pid = self.pid
        if self.reach == "adopted":
            _kill(pid)
            if _waitid is not None and self._reaped is None:
                # Its children are adopted once it has ended: wait for that, without reaping it.
                try:  # noqa: SIM105 - between two forks: see _kill
                    _waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                except ChildProcessError:  # pragma: no cover - reaped behind the supervisor's back
                    pass
            return kill_children(exclude=(pid,))
        below = procfs.descendants(pid)
        _kill(pid)
        for other in below:
            _kill(other)
        for _ in range(_KILL_ROUNDS):
            members = procfs.session_members(pid)
            if not members:
                break
            for other in members:
                _kill(other)
        return 0

    def _drain(self, poller: select.poll, grace: float) -> None:
        """Read the pipes to end of file, for at most ``grace`` seconds (0: what is there now)."""
        until = time.monotonic() + grace
        while self._open:
            events = poller.poll(max(0.0, until - time.monotonic()) * 1000)
            if not events:
                break
            for fd, _ in events:
                # The pidfd and the watched descriptors are of no more interest.
                if fd not in self._open or self.read(fd):
                    poller.unregister(fd)

    def _reap(
        self,
        *,
        timed_out: bool,
        cancelled: bool,
        orphans: int,
        stopped: bool = False,
        threads: int = 0,
    ) -> Ending:
        if self._reaped is None:  # kept: a reap interrupted after this is made again
            _, status, usage = os.wait4(self.pid, 0)
            self._reaped = (status, usage)
        status, usage = self._reaped
        returncode = os.waitstatus_to_exitcode(status)
        if self._popen is not None:
            self._popen.returncode = returncode  # so that Popen does not think it still runs
        wall = time.monotonic() - self.started
        # Linux counts kibibytes, macOS bytes.
        rss = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
        self._ending = Ending(
            pid=self.pid,
            returncode=returncode,
            usage=Usage(
                wall_s=wall, user_s=usage.ru_utime, system_s=usage.ru_stime, peak_rss_bytes=rss
            ),
            timed_out=timed_out,
            cancelled=cancelled,
            stdout=None if self._stdout is None else self._stdout.output(),
            stderr=None if self._stderr is None else self._stderr.output(),
            pipes=tuple(sink.output() for sink in self._pipes),
            orphans=orphans,
            stopped=stopped,
            threads=threads,
        )
        return self._ending

    def _close_fds(self) -> None:
        _close_all(self._open)
        self._open.clear()
        if self._pidfd is not None:
            _close_all((self._pidfd,))
            self._pidfd = None


# -- starting a child -------------------------------------------------------------------------


def _close_all(fds: Iterable[int]) -> None:
    """Close every descriptor of ``fds``; never raise."""
    # try/except, not contextlib.suppress: the check's worker runs this between two
    # forks, where every object touched is a page fault.
    for fd in fds:
        try:  # noqa: SIM105 - see above
            os.close(fd)
        except OSError:
            pass


@final
class _Pipes:
    """The pipes made for one child: read ends kept here, write ends given to the child."""

    __slots__ = ("sinks", "write_ends")

    def __init__(self) -> None:
        self.sinks: dict[int, Receiver] = {}
        self.write_ends: list[int] = []

    def make(self, bounds: Bounds) -> tuple[Sink, int]:
        """Make a pipe whose stream is kept within ``bounds``; return its sink and write end."""
        sink = Sink(bounds)
        return sink, self.channel(sink, socket_pair=False)

    def channel(self, receiver: Receiver, *, socket_pair: bool) -> int:
        """Make a channel read into ``receiver``; return its write end.

        ``socket_pair``: a connected pair of Unix sockets rather than a pipe.
        A pipe's ends can be opened again through ``/proc/PID/fd/N`` by any
        process allowed to look there (the same user, root); a socket's
        cannot be opened at all, so only the processes that hold one of its
        descriptors can use it.
        """
        if socket_pair:
            reader, writer = socket.socketpair()
            read_end, write_end = reader.detach(), writer.detach()
        else:
            read_end, write_end = os.pipe()
        self.write_ends.append(write_end)
        os.set_blocking(read_end, False)
        self.sinks[read_end] = receiver
        return write_end

    def close_write_ends(self) -> None:
        _close_all(self.write_ends)
        self.write_ends.clear()

    def close(self) -> None:
        self.close_write_ends()
        _close_all(self.sinks)
        self.sinks.clear()


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdout: Bounds | None = None,
    stderr: Bounds | Literal["stdout"] | None = None,
    pass_fds: Sequence[int] = (),
    preexec: Callable[[], object] | None = None,
    reach: Reach = "session",
    pidfd: Callable[[int], int | None] = open_pidfd,
) -> Child:
    """Start ``argv`` in a session of its own; return it as a :class:`Child`.

    ``env`` (default: this process's), ``cwd``; stdin is ``/dev/null``;
    ``stdout`` and ``stderr`` are captured within their bounds when given
    (``stderr="stdout"``: into the same pipe), else sent to ``/dev/null``.
    Every descriptor but those and ``pass_fds`` is closed in the child.
    ``preexec`` runs in the child just before the program (as
    :class:`subprocess.Popen`'s ``preexec_fn``: not in a multi-threaded
    program unless it is async-signal-safe). ``pidfd`` opens the exit watch;
    one returning ``None`` makes :meth:`Child.wait` poll instead.

    Raises :class:`NotStarted` when the program cannot be started.
    """
    started = time.monotonic()
    pipes = _Pipes()
    process: subprocess.Popen[bytes] | None = None
    try:
        out_sink = err_sink = None
        out_fd: int = subprocess.DEVNULL
        err_fd: int = subprocess.DEVNULL
        if stdout is not None:
            out_sink, out_fd = pipes.make(stdout)
        if stderr == "stdout":
            err_fd = out_fd if stdout is not None else subprocess.DEVNULL
        elif stderr is not None:
            err_sink, err_fd = pipes.make(stderr)
        try:
            process = subprocess.Popen(
                list(argv),
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out_fd,
                stderr=err_fd,
                pass_fds=tuple(pass_fds),
                preexec_fn=preexec,  # noqa: PLW1509 - the caller's hook; its contract says when
                start_new_session=True,  # its own session and process group (both its pid)
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else None
            raise NotStarted(reason or str(exc) or type(exc).__name__) from exc
        pipes.close_write_ends()
    except BaseException:  # KeyboardInterrupt, say: what was started does not outlive the call
        if process is not None:
            _abandon(process.pid, process)
        pipes.close()
        raise
    return _adopt(process.pid, pipes, out_sink, err_sink, (), reach, pidfd, process, started)


def fork(
    body: Callable[[tuple[int, ...]], int],
    *,
    stdout: Bounds | None = None,
    stderr: Bounds | Literal["stdout"] | None = None,
    pipes: Sequence[Bounds | Receiver] = (),
    parent_death_signal: int | None = None,
    reach: Reach = "session",
    pidfd: Callable[[int], int | None] = open_pidfd,
) -> Child:
    """Fork a child that leads a session of its own and runs ``body``; return it as a Child.

    In the child: a new session; ``parent_death_signal`` armed (Linux; the
    child exits at once if this process already ended); descriptors 1 and 2
    sent to the ``stdout`` and ``stderr`` pipes when captured (else
    inherited); then ``body(write_ends)``, with the write end of each of
    ``pipes`` in order, whose return value is the exit status. Each of
    ``pipes`` is a pair of Unix sockets (which no process can open again
    through ``/proc``), read as it comes into a :class:`Sink` within the
    given :class:`Bounds`, or into the caller's own :class:`Receiver`. When it
    returns or raises, ``sys.stdout`` and ``sys.stderr`` are flushed and the
    child exits (``os._exit``: no ``atexit``, no ``finally`` of the caller
    runs there); a raise exits with status 70. (This process's own
    ``sys.stdout`` and ``sys.stderr`` are flushed before the fork, so the
    child never writes what they held.) Everything else is inherited
    as the fork leaves it: ``body`` closes what it must not keep.

    Raises :class:`NotStarted` when the fork fails.
    """
    started = time.monotonic()
    made = _Pipes()
    pid = 0
    try:
        out_sink = err_sink = None
        out_fd: int | None = None
        err_fd: int | None = None
        if stdout is not None:
            out_sink, out_fd = made.make(stdout)
        if stderr == "stdout":
            err_fd = out_fd
        elif stderr is not None:
            err_sink, err_fd = made.make(stderr)
        extra: list[tuple[Receiver, int]] = []
        for given in pipes:
            receiver = Sink(given) if isinstance(given, Bounds) else given
            extra.append((receiver, made.channel(receiver, socket_pair=True)))
        parent = os.getpid()
        # What this process has buffered would otherwise be written twice: the
        # child flushes what it inherits.
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            raise NotStarted(exc.strerror or type(exc).__name__) from exc
        if pid == 0:  # pragma: no cover - the child never returns; coverage sees no exit
            _run_body(
                body,
                parent=parent,
                parent_death_signal=parent_death_signal,
                read_ends=tuple(made.sinks),
                stdout=out_fd,
                stderr=err_fd,
                extra=tuple(fd for _, fd in extra),
            )
        made.close_write_ends()
    except BaseException:  # KeyboardInterrupt, say: what was started does not outlive the call
        if pid:
            _abandon(pid, None)
        made.close()
        raise
    sinks = [sink for sink, _ in extra]
    return _adopt(pid, made, out_sink, err_sink, sinks, reach, pidfd, None, started)


def _run_body(
    body: Callable[[tuple[int, ...]], int],
    *,
    parent: int,
    parent_death_signal: int | None,
    read_ends: tuple[int, ...],
    stdout: int | None,
    stderr: int | None,
    extra: tuple[int, ...],
) -> NoReturn:
    """Be the forked child: set it up, run ``body``, exit with its status. Never returns."""
    status = _BODY_FAILED
    try:
        os.setsid()
        if parent_death_signal is not None:
            die_with_parent(parent_death_signal)
            if os.getppid() != parent:  # it ended before the signal was armed
                _exit(_BODY_FAILED)
        for fd in read_ends:
            os.close(fd)
        for target, given in ((1, stdout), (2, stderr)):
            if given is not None:
                os.dup2(given, target)
        for given in {stdout, stderr}:
            if given is not None and given > 2:
                os.close(given)
        status = body(extra)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        _exit(status)


def _adopt(  # noqa: PLR0917 - one private call site per way of starting
    pid: int,
    pipes: _Pipes,
    stdout: Sink | None,
    stderr: Sink | None,
    extra: Sequence[Receiver],
    reach: Reach,
    pidfd: Callable[[int], int | None],
    popen: subprocess.Popen[bytes] | None,
    started: float,
) -> Child:
    """Wrap a started child; if even that fails (out of descriptors), kill and reap it first."""
    try:
        return Child(
            pid,
            reach=reach,
            pidfd=pidfd(pid),
            sinks=pipes.sinks,
            stdout=stdout,
            stderr=stderr,
            pipes=extra,
            popen=popen,
            started=started,
        )
    except BaseException:
        _abandon(pid, popen)
        pipes.close()
        raise


def _abandon(pid: int, popen: subprocess.Popen[bytes] | None) -> None:
    """Kill and reap a child that could not be handed over; never raise for a child gone."""
    _kill(pid)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    if popen is not None:
        popen.returncode = -signal.SIGKILL


def run(
    argv: Sequence[str],
    *,
    timeout: float | None = None,
    cancel: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdout: Bounds | None = None,
    stderr: Bounds | Literal["stdout"] | None = None,
    pidfd: Callable[[int], int | None] = open_pidfd,
) -> Ending:
    """Start ``argv`` (see :func:`spawn`) and watch it to its end (see :meth:`Child.wait`).

    Raises :class:`NotStarted` when it cannot be started; an exception while
    it runs (``KeyboardInterrupt``) propagates after its tree is killed and
    it is reaped.
    """
    with spawn(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr, pidfd=pidfd) as child:
        return child.wait(timeout, cancel=cancel)
