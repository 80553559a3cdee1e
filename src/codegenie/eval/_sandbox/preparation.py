"""Setting up one run's sandbox, and judging afterwards whether it broke a limit.

The rubric runner's side of the sandbox, independent of how the process is
supervised::

    with prepare(policy) as run:
        child = start(run.argv(command), env=run.env, cwd=run.cwd, pass_fds=run.pass_fds)
        run.started()
        outcome = child.wait(watch=run.watch())
        code = run.exit_status(outcome.returncode)
        breach = run.verdict_of_limits(code, stderr_tail=outcome.stderr_tail, passed=...)
        usage = run.usage()

:func:`prepare` creates the run's cgroups (where the machine allows), the
run directory's ``work``, ``tmp`` and ``home``, and measures that directory
(the baseline of the disk limits); under bubblewrap it also hands
bubblewrap the seccomp filter and a status channel. :class:`PreparedRun`
holds the argv head (cgroup join, rlimits, bubblewrap), the environment
and the descriptors to pass, watches the run's directory while it runs,
and, after the run, says how the rubric ended, what it used and whether it
breached a limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Protocol, final

from codegenie.eval._sandbox.bwrap import RUN_FEATURES, Bubblewrap, bubblewrap
from codegenie.eval._sandbox.bwrap_run import bwrap_args
from codegenie.eval._sandbox.cgroups import RunCgroup
from codegenie.eval._sandbox.choices import ProviderName
from codegenie.eval._sandbox.confinement import confinement
from codegenie.eval._sandbox.devices import check_device_nodes
from codegenie.eval._sandbox.disk import DiskWatch, Footprint
from codegenie.eval._sandbox.env import sandbox_environment
from codegenie.eval._sandbox.launch import launcher_args
from codegenie.eval._sandbox.limits import LIMIT_NAMES, Breach, LimitName, Limits
from codegenie.eval._sandbox.plan import Confinement
from codegenie.eval._sandbox.policy import SandboxPolicy
from codegenie.eval._sandbox.rlimits import Rlimit, rlimits_for
from codegenie.eval._sandbox.seccomp import program as seccomp_program

__all__ = ("Enforcement", "PreparedRun", "Usage", "prepare")

#: How a limit is enforced for a run: on the whole tree by a cgroup, per
#: process by an rlimit, by watching the run's directory (the disk limits),
#: not at all (a limit the machine cannot enforce), or there is no limit.
Enforcement = Literal["cgroup-v1", "cgroup-v2", "rlimit", "watched", "none", "unlimited"]

# What programs print when an rlimit refused them memory, a process, a file size.
# Only read for a limit enforced by an rlimit: a cgroup's counters are exact.
_MEMORY_SAID: Final = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc")
_PROCESS_SAID: Final = (
    b"Cannot fork",
    b"fork: retry",
    b"fork: Resource temporarily unavailable",
    b"can't start new thread",
    b"BlockingIOError: [Errno 11]",
)
_FILE_SIZE_SAID: Final = (b"File too large",)
# bubblewrap's exit status for a command killed by a signal: this plus its number.
_SIGNALLED: Final = 128
# How close to its limit a run's peak memory (a cgroup's count) must come to
# say that the run reached it: a few pages, as the counter stands at the limit
# when a charge is refused, while reclaimed page cache keeps it further below.
_AT_LIMIT: Final = 64 * 1024
# The most of bubblewrap's status read: two short JSON objects.
_STATUS_LIMIT: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Usage:
    """What a run used: CPU seconds of all its processes, and its peak memory in bytes.

    ``measured_by`` says where the figures come from: ``"cgroup"`` (the
    whole tree; peak memory includes page cache the run caused), ``"rusage"``
    (the processes that were waited for; peak memory is that of the largest
    single process), or ``"none"``. A figure is ``None`` when not measured.
    """

    cpu_time: float | None
    peak_memory: int | None
    measured_by: Literal["cgroup", "rusage", "none"]


class Waited(Protocol):
    """What the process that was waited for used (``os.wait4``'s accounting).

    The supervisor's ``Usage`` is one: CPU seconds, user and system, of it and
    of the descendants it reaped itself, and its largest resident set.
    """

    @property
    def user_s(self) -> float: ...
    @property
    def system_s(self) -> float: ...
    @property
    def peak_rss_bytes(self) -> int: ...


@final
class PreparedRun:
    """One run's sandbox, set up: what to start, with what, and what it did afterwards.

    ``prefix`` goes in front of the rubric's argv (:meth:`argv`); ``env``
    and ``cwd`` are the environment and working directory to start it with,
    ``pass_fds`` the descriptors its first process must inherit (bubblewrap
    reads the seccomp filter from one and writes its status to the other);
    call :meth:`started` once it is started. ``enforcement`` says, for each
    limit, how it is enforced here. ``bwrap`` is the bubblewrap used
    (``None`` under ``none``). ``disk`` watches the run's directory
    (:meth:`watch`). Close it (:meth:`close`, or ``with``) once the run is
    reaped and read: that removes the run's cgroups and closes the
    descriptors. ``plan`` is what a contained run sees (``None`` under
    ``none``), whichever way it is started.
    """

    def __init__(
        self,
        policy: SandboxPolicy,
        *,
        prefix: Sequence[str],
        env: dict[str, str],
        cgroup: RunCgroup,
        enforcement: dict[LimitName, Enforcement],
        bwrap: Bubblewrap | None,
        disk: DiskWatch,
        pass_fds: Sequence[int] = (),
        status_fd: int | None = None,
        warm: bool = False,
        plan: Confinement | None = None,
    ) -> None:
        self.policy: Final = policy
        self.plan: Final = plan
        self.warm: Final = warm
        self.prefix: Final = tuple(prefix)
        self.env: Final = env
        self.cwd: Final = policy.workdir
        self.cgroup: Final = cgroup
        self.enforcement: Final = dict(enforcement)
        self.bwrap: Final = bwrap
        self.disk: Final = disk
        self.pass_fds: tuple[int, ...] = tuple(pass_fds)
        self._status_fd = status_fd
        self._status: dict[str, int] | None = None
        self._final: tuple[Breach | None, Footprint] | None = None
        # Files written by the run are this new or newer; the copies all have one time of 2000.
        self._prepared_ns: Final = time.time_ns()

    @property
    def contained(self) -> bool:
        """Whether the run is contained (bubblewrap), as opposed to a plain subprocess."""
        return self.bwrap is not None

    @property
    def provider(self) -> ProviderName:
        """The provider that runs it, as reports name it (``"bwrap"``, ``"none"``)."""
        return self.policy.mode

    def __repr__(self) -> str:
        return (
            f"PreparedRun(mode={self.policy.mode!r}, run_dir={str(self.policy.run_dir)!r}, "
            f"enforcement={self.enforcement!r})"
        )

    def __enter__(self) -> PreparedRun:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def killed_by(self, returncode: int) -> int | None:
        """Return the signal that killed the rubric, from its run's exit status, or ``None``.

        A negative status is the signal itself. Under bubblewrap the rubric
        is not the process the supervisor waits for: bubblewrap exits with
        128 + the signal's number when the rubric dies of one (so a rubric
        that exits with such a status on purpose reads the same; either way
        the run is an error).
        """
        if returncode < 0:
            return -returncode
        if self.bwrap is not None and _SIGNALLED < returncode < _SIGNALLED + signal.NSIG:
            return returncode - _SIGNALLED
        return None

    def argv(self, command: Sequence[str]) -> list[str]:
        """Return the argv to start: the sandbox's head, then ``command`` (unchanged)."""
        return [*self.prefix, *command]

    def started(self, processes: Callable[[], Iterable[int]] | None = None) -> None:
        """Say that the run started; close this process's copies of :attr:`pass_fds`.

        The disk watch counts the files the run's processes hold without a
        name: the processes of the run's cgroup, else those ``processes``
        returns (the supervisor's view of the run's tree).
        """
        _close(self.pass_fds)
        self.pass_fds = ()
        cgroup = self.cgroup
        if not cgroup.directories:
            self.disk.processes = processes
            return

        def in_cgroup() -> Iterable[int]:
            # Read when the watch looks (most runs end before it does), not now.
            found = cgroup.processes()
            if found is None:  # the cgroup cannot be read: the supervisor's view
                return () if processes is None else processes()
            return found

        self.disk.processes = in_cgroup

    def watch(self) -> dict[int, Callable[[], bool]]:
        """Start watching the run's directory; return what the supervisor serves meanwhile.

        A descriptor and its callback (``Child.wait``'s ``watch``): the
        callback asks for the run to be stopped once it broke a disk limit.
        """
        return self.disk.watch()

    def exit_status(self, returncode: int) -> int | None:
        """Return the rubric's exit status, from the status bubblewrap wrote; call once reaped.

        Under bubblewrap ``returncode`` (bubblewrap's own) is not believed:
        the status comes from bubblewrap's ``--json-status-fd``, written by
        its monitor outside the sandbox, and is ``None`` when bubblewrap
        never started the rubric (it failed to set the sandbox up, or was
        killed first). Under ``none``, and for a warm worker's run (whose
        worker reports the status of the run's init, 128 + the signal for a
        rubric killed by one, from outside the run's namespaces), ``returncode``
        is the rubric's.
        """
        if self.bwrap is None or self.warm:
            return returncode
        return self.status().get("exit-code")

    def status(self) -> dict[str, int]:
        """Return what bubblewrap said of the run (``child-pid``, ``exit-code``), read once."""
        if self._status is None:
            self._status = _read_status(self._status_fd)
            _close((self._status_fd,) if self._status_fd is not None else ())
            self._status_fd = None
        return self._status

    def close(self) -> None:
        """Kill what is left in the run's cgroups and remove them, close the descriptors.

        Idempotent; never raises but a ``KeyboardInterrupt`` that came meanwhile,
        once all is done.
        """
        try:
            self.disk.close()
        finally:
            self.cgroup.remove()
            _close((*self.pass_fds, *((self._status_fd,) if self._status_fd is not None else ())))
            self.pass_fds = ()
            self._status_fd = None

    def usage(self, waited: Waited | None = None) -> Usage:
        """Return what the run used: from its cgroups, else from ``waited`` (``os.wait4``'s).

        Call after the run was reaped and before :meth:`close`; ``waited`` is
        what the process the runner waited for used. Under ``none`` that is
        the rubric, and it fills in a figure no cgroup gives. Under
        bubblewrap it is not used: bubblewrap's first process exits on the
        status its sandbox reports, without waiting for the sandbox's PID 1,
        so its accounting is bubblewrap's own; only the cgroups measure the
        run, and a figure no cgroup gives is ``None``.
        """
        cpu = self.cgroup.cpu_time()
        peak = self.cgroup.peak_memory()
        if self.bwrap is not None:
            waited = None
        if waited is not None:
            cpu_s = waited.user_s + waited.system_s
            if cpu is None and peak is None:
                return Usage(cpu_s, waited.peak_rss_bytes, "rusage")
            cpu = cpu if cpu is not None else cpu_s
            peak = peak if peak is not None else waited.peak_rss_bytes
        if cpu is not None or peak is not None:
            return Usage(cpu, peak, "cgroup")
        return Usage(None, None, "none")

    def verdict_of_limits(
        self,
        returncode: int,
        *,
        stderr_tail: bytes = b"",
        waited: Waited | None = None,
        passed: bool = False,
    ) -> Breach | None:
        """Return the limit the run exceeded, or ``None``; call once it is reaped, before closing.

        ``returncode`` is the rubric's exit status (negative: killed by that
        signal; under bubblewrap 128 + the signal that killed it:
        :meth:`killed_by`); ``stderr_tail`` the end of its stderr;
        ``waited`` what the process waited for used (see :meth:`usage`);
        ``passed`` whether the rubric said the candidate passed. A breach
        makes the run an ``error`` whatever the rubric printed: the rubric
        may have seen a refused allocation, fork or write and reported
        ``failed``.

        Evidence, most certain first: a cgroup's counters (out-of-memory
        kills, refused forks, CPU time); the signal the rubric died of
        (``SIGXCPU``, ``SIGXFSZ``); a file in the run's directory written
        during the run and as large as the file-size limit; what the run
        added to its directory, seen while it ran or after (the disk
        limits); for a limit only an rlimit enforced, what the rubric's
        stderr says (``MemoryError``, ``Cannot fork``, ``File too large``),
        which the rubric could print on purpose, turning its own ``failed``
        into an ``error``, never into a pass. Last, for a run that did not
        pass, a memory cgroup whose peak stood at the limit: the kernel
        refused the run memory (a write to ``/tmp`` or ``/dev/shm``, which
        are memory, fails so without killing anything).
        """
        limits = self.policy.limits
        for name in LIMIT_NAMES:
            if limits.value(name) is None:
                continue
            evidence = self._evidence(name, returncode, stderr_tail, waited)
            if evidence is not None:
                return Breach(name, f"{limits.describe(name)} exceeded", evidence)
        memory = limits.memory_bytes
        peak = self.cgroup.peak_memory()
        if not passed and memory is not None and peak is not None and peak >= memory - _AT_LIMIT:
            evidence = f"the run's memory stood at its limit ({peak:,} bytes, cgroup)"
            return Breach("memory", f"{limits.describe('memory')} reached", evidence)
        return None

    def _final_disk(self) -> tuple[Breach | None, Footprint]:
        """Return the disk limits' verdict: a breach seen while the run ran, else a last look."""
        if self._final is None:
            breach, found = self.disk.check(since_ns=self._prepared_ns)
            self._final = (self.disk.breach or breach, found)
        return self._final

    def _evidence(
        self,
        name: LimitName,
        returncode: int,
        stderr_tail: bytes,
        waited: Waited | None,
    ) -> str | None:
        limits = self.policy.limits
        by_rlimit = self.enforcement[name] == "rlimit"
        if name == "memory":
            kills = self.cgroup.oom_kills()
            if kills:
                return f"the kernel killed {kills} process(es) of the run out of memory (cgroup)"
            return _said(stderr_tail, _MEMORY_SAID) if by_rlimit else None
        if name == "processes":
            refused = self.cgroup.refused_forks()
            if refused:
                return f"{refused} fork(s) refused at the limit (cgroup pids.events)"
            return _said(stderr_tail, _PROCESS_SAID) if by_rlimit else None
        if name == "cpu-time":
            assert limits.cpu_time is not None
            if self.killed_by(returncode) == signal.SIGXCPU:
                return "the rubric was killed by SIGXCPU"
            used = self.usage(waited).cpu_time
            if used is not None and used > limits.cpu_time:
                return f"the run used {used:.2f} s of CPU time"
            return None
        if name in ("disk", "disk-files"):
            breach = self._final_disk()[0]
            return breach.evidence if breach is not None and breach.limit == name else None
        if self.killed_by(returncode) == signal.SIGXFSZ:
            return "the rubric was killed by SIGXFSZ"
        assert limits.file_size_bytes is not None
        # A file that was that large before the run (a copied data file) is not its doing.
        largest = self._final_disk()[1].largest_new
        if largest is not None and largest[1] >= limits.file_size_bytes:
            return f"{largest[0]} reached the limit"
        return _said(stderr_tail, _FILE_SIZE_SAID)


def _said(stderr_tail: bytes, markers: tuple[bytes, ...]) -> str | None:
    for marker in markers:
        if marker in stderr_tail:
            return f"the rubric's stderr says {marker.decode()!r}"
    return None


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _read_status(fd: int | None) -> dict[str, int]:
    """Return the integers of bubblewrap's JSON status lines on ``fd`` (never blocking)."""
    if fd is None:
        return {}
    data = b""
    with contextlib.suppress(OSError):
        while len(data) < _STATUS_LIMIT and (chunk := os.read(fd, _STATUS_LIMIT)):
            data += chunk
    found: dict[str, int] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.update(
                (key, number)
                for key, number in value.items()
                if isinstance(number, int) and not isinstance(number, bool)
            )
    return found


def _enforcement(limits: Limits, cgroup: RunCgroup) -> dict[LimitName, Enforcement]:
    def by_cgroup(controller: Literal["memory", "pids"]) -> Enforcement | None:
        version = cgroup.version(controller)
        return None if version is None else ("cgroup-v1" if version == 1 else "cgroup-v2")

    result: dict[LimitName, Enforcement] = {}
    for name in LIMIT_NAMES:
        if limits.value(name) is None:
            result[name] = "unlimited"
        elif name == "memory":
            result[name] = by_cgroup("memory") or "rlimit"
        elif name == "processes":
            result[name] = by_cgroup("pids") or ("rlimit" if os.getuid() != 0 else "none")
        elif name in ("disk", "disk-files"):
            result[name] = "watched"
        else:
            result[name] = "rlimit"
    return result


def prepare(
    policy: SandboxPolicy,
    *,
    bwrap: Bubblewrap | None = None,
    cgroups: bool = True,
    warm: bool = False,
) -> PreparedRun:
    """Set up the sandbox of one run described by ``policy``; return what to start it with.

    Creates ``workdir``, ``tmpdir`` and ``home`` in the run's directory (it
    must exist, holding the copies) and measures it (the disk limits count
    what the run adds); under ``bwrap`` the run's cgroups where this machine
    allows (``cgroups=False`` skips them: rlimits only), and two pipes for
    bubblewrap: one holding the seccomp filter, one for its status.
    ``bwrap`` defaults to :func:`bubblewrap`, which raises
    :class:`SandboxUnavailable` when none can start (or this machine has no
    seccomp filter), and when a device node every sandbox binds is missing or
    is not the device it must be (:mod:`codegenie.eval._sandbox.devices`).
    Under ``none`` nothing is contained and only rlimits and the disk limits
    apply.

    A contained run's cgroups, rlimits and seccomp filter are its plan's
    (:attr:`PreparedRun.plan`), which each way of starting it renders: a
    plain run's argv head joins and limits it and bubblewrap's reads the
    filter from a pipe; ``warm``: the run is made by a warm worker
    (:mod:`codegenie.eval._sandbox.warm.worker`), which does all three
    itself: no argv head and no pipes for bubblewrap.
    """
    if policy.mode == "bwrap":
        check_device_nodes("bwrap")  # before anything of the run: a node may have gone since
    for directory in (policy.workdir, policy.tmpdir, policy.home):
        directory.mkdir(mode=0o700, exist_ok=True)
    used: Bubblewrap | None = None
    cgroup = RunCgroup({})
    if policy.mode == "bwrap":
        used = bubblewrap("bwrap", needs=RUN_FEATURES) if bwrap is None else bwrap
        if cgroups:
            cgroup = RunCgroup.create(policy.limits)
    opened: list[int] = []
    disk: DiskWatch | None = None
    try:
        disk = DiskWatch.start(str(policy.run_dir), policy.limits)
        enforcement = _enforcement(policy.limits, cgroup)
        covered = [name for name, how in enforcement.items() if how.startswith("cgroup")]
        rlimits = rlimits_for(policy.limits, covered)
        plan = None
        if used is not None:
            plan = confinement(
                policy, joins=cgroup.join_files, rlimits=rlimits, seccomp=_seccomp_program()
            )
        head = [] if warm else _launcher(plan, cgroup, rlimits)
        status_fd: int | None = None
        if plan is not None and used is not None and not warm:
            filter_fd = _filter_pipe(plan.seccomp, opened)
            status_fd, status_write = os.pipe()
            opened += [status_fd, status_write]
            os.set_blocking(status_fd, False)
            head += bwrap_args(
                policy, used, seccomp_fd=filter_fd, status_fd=status_write, plan=plan
            )
            pass_fds: tuple[int, ...] = (filter_fd, status_write)
        else:
            pass_fds = ()
        env = sandbox_environment(policy) if plan is None else dict(plan.env)
    except BaseException:
        if disk is not None:
            disk.close()
        _close(opened)
        cgroup.remove()
        raise
    return PreparedRun(
        policy,
        prefix=head,
        env=env,
        cgroup=cgroup,
        enforcement=enforcement,
        bwrap=used,
        disk=disk,
        pass_fds=pass_fds,
        status_fd=status_fd,
        warm=warm,
        plan=plan,
    )


def _seccomp_program() -> bytes:
    """Return the seccomp filter of every contained run (:func:`.seccomp.program`)."""
    code = seccomp_program()
    if code is None:  # bubblewrap() refuses such a machine before any run
        msg = f"there is no seccomp filter for this machine ({os.uname().machine})"
        raise RuntimeError(msg)
    return code


def _launcher(plan: Confinement | None, cgroup: RunCgroup, rlimits: Sequence[Rlimit]) -> list[str]:
    """Return the head of a plain run's argv: it joins the cgroups and sets the rlimits.

    A contained run's, from its plan; an uncontained run's (``none``: no
    plan, no cgroups), its rlimits alone.
    """
    if plan is None:
        return launcher_args(cgroup.join_files, rlimits)
    return launcher_args([Path(each) for each in plan.joins], plan.rlimits)


def _filter_pipe(code: bytes, opened: list[int]) -> int:
    """Return the read end of a pipe that holds ``code``, whole (its write end closed).

    The seccomp filter is a few kilobytes: it fits in the pipe at once.
    """
    reader, writer = os.pipe()
    opened.append(reader)
    try:
        view = memoryview(code)
        while view:
            view = view[os.write(writer, view) :]
    finally:
        os.close(writer)
    return reader
