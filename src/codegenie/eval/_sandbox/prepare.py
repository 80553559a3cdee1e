"""Setting up one run's sandbox, and judging afterwards whether it broke a limit.

The rubric runner's side of the sandbox, independent of how the process is
supervised::

    with prepare(policy) as run:
        outcome = supervise(run.argv(command), env=run.env, cwd=run.cwd)
        breach = run.verdict_of_limits(outcome.returncode, stderr_tail=outcome.stderr_tail)
        usage = run.usage()

:func:`prepare` creates the run's cgroups (where the machine allows) and
the run directory's ``work``, ``tmp`` and ``home``; :class:`PreparedRun`
holds the argv head (cgroup join, rlimits, bubblewrap), the environment,
and, after the run, reads what it used and whether it breached a limit.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, final

from codegenie.eval._sandbox.bwrap import Bubblewrap, bubblewrap
from codegenie.eval._sandbox.cgroups import RunCgroup
from codegenie.eval._sandbox.env import sandbox_environment
from codegenie.eval._sandbox.launch import launcher_args
from codegenie.eval._sandbox.limits import LIMIT_NAMES, Breach, LimitName, Limits
from codegenie.eval._sandbox.policy import SandboxPolicy, bwrap_args
from codegenie.eval._sandbox.rlimits import rlimits_for

__all__ = ("Enforcement", "PreparedRun", "Usage", "prepare")

#: How a limit is enforced for a run: on the whole tree by a cgroup, per
#: process by an rlimit, not at all (a limit the machine cannot enforce),
#: or there is no limit.
Enforcement = Literal["cgroup-v1", "cgroup-v2", "rlimit", "none", "unlimited"]

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
# The most entries of the run directory looked at for a file at the file-size limit.
_SCAN_LIMIT: Final = 100_000


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


@final
class PreparedRun:
    """One run's sandbox, set up: what to start, with what, and what it did afterwards.

    ``prefix`` goes in front of the rubric's argv (:meth:`argv`); ``env``
    and ``cwd`` are the environment and working directory to start it with.
    ``enforcement`` says, for each limit, how it is enforced here.
    ``bwrap`` is the bubblewrap used (``None`` under ``none``). Close it
    (:meth:`close`, or ``with``) once the run is reaped and read: that
    removes the run's cgroups.
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
    ) -> None:
        self.policy: Final = policy
        self.prefix: Final = tuple(prefix)
        self.env: Final = env
        self.cwd: Final = policy.workdir
        self.cgroup: Final = cgroup
        self.enforcement: Final = dict(enforcement)
        self.bwrap: Final = bwrap
        # Files written by the run are this new or newer; the copies keep their originals' times.
        self._prepared_ns: Final = time.time_ns()

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

    def close(self) -> None:
        """Kill whatever is left in the run's cgroups and remove them; idempotent, never raises."""
        self.cgroup.remove()

    def usage(self, rusage: resource.struct_rusage | None = None) -> Usage:
        """Return what the run used: from its cgroups, else from ``rusage`` (``os.wait4``'s).

        Call after the run was reaped and before :meth:`close`. Under
        ``none`` the rusage covers the processes that were waited for. Under
        bubblewrap it is not used: bubblewrap's first process exits on the
        status its sandbox reports, without waiting for the sandbox's PID 1,
        so its rusage is bubblewrap's own; only the cgroups measure the run,
        and a figure no cgroup gives is ``None``.
        """
        cpu = self.cgroup.cpu_time()
        peak = self.cgroup.peak_memory()
        if self.bwrap is not None:
            rusage = None
        if cpu is not None or peak is not None:
            if rusage is not None:
                cpu = cpu if cpu is not None else rusage.ru_utime + rusage.ru_stime
                peak = peak if peak is not None else rusage.ru_maxrss * 1024
            return Usage(cpu, peak, "cgroup")
        if rusage is not None:
            return Usage(rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss * 1024, "rusage")
        return Usage(None, None, "none")

    def verdict_of_limits(
        self,
        returncode: int,
        *,
        stderr_tail: bytes = b"",
        rusage: resource.struct_rusage | None = None,
    ) -> Breach | None:
        """Return the limit the run exceeded, or ``None``; call once it is reaped, before closing.

        ``returncode`` is the first process's (negative: killed by that
        signal; under bubblewrap, the rubric's exit status, or 128 + the
        signal that killed it: :meth:`killed_by`);
        ``stderr_tail`` the end of its stderr; ``rusage`` its ``os.wait4``
        rusage, if the supervisor has it. A breach makes the run an
        ``error`` whatever the rubric printed: the rubric may have seen a
        refused allocation or fork and reported ``failed``.

        Evidence, most certain first: a cgroup's counters (out-of-memory
        kills, refused forks, CPU time); the signal the rubric died of
        (``SIGXCPU``, ``SIGXFSZ``); a file in the run's directory written
        during the run and as large as the file-size limit; and, for a limit
        only an rlimit enforced, what the rubric's stderr says
        (``MemoryError``, ``Cannot fork``, ``File too large``) — which the
        rubric could print on purpose, turning its own ``failed`` into an
        ``error``, never into a pass.
        """
        limits = self.policy.limits
        for name in LIMIT_NAMES:
            if limits.value(name) is None:
                continue
            evidence = self._evidence(name, returncode, stderr_tail, rusage)
            if evidence is not None:
                return Breach(name, f"{limits.describe(name)} exceeded", evidence)
        return None

    def _evidence(
        self,
        name: LimitName,
        returncode: int,
        stderr_tail: bytes,
        rusage: resource.struct_rusage | None,
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
            used = self.usage(rusage).cpu_time
            if used is not None and used > limits.cpu_time:
                return f"the run used {used:.2f} s of CPU time"
            return None
        if self.killed_by(returncode) == signal.SIGXFSZ:
            return "the rubric was killed by SIGXFSZ"
        assert limits.file_size_bytes is not None
        full = _file_at_least(self.policy.run_dir, limits.file_size_bytes, self._prepared_ns)
        if full is not None:
            return f"{full} reached the limit"
        return _said(stderr_tail, _FILE_SIZE_SAID)


def _said(stderr_tail: bytes, markers: tuple[bytes, ...]) -> str | None:
    for marker in markers:
        if marker in stderr_tail:
            return f"the rubric's stderr says {marker.decode()!r}"
    return None


def _file_at_least(root: Path, size: int, since_ns: int) -> str | None:
    """Return a file under ``root`` of ``size`` bytes or more, modified since ``since_ns``.

    Links are not followed. A file that was that large before the run (a
    copied candidate's data file) is not the run's doing, and is skipped.
    """
    pending = [str(root)]
    seen = 0
    while pending and seen < _SCAN_LIMIT:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if info.st_size >= size and info.st_mtime_ns >= since_ns:
                        return entry.path
            except OSError:
                continue
    return None


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
        else:
            result[name] = "rlimit"
    return result


def prepare(
    policy: SandboxPolicy, *, bwrap: Bubblewrap | None = None, cgroups: bool = True
) -> PreparedRun:
    """Set up the sandbox of one run described by ``policy``; return what to start it with.

    Creates ``workdir``, ``tmpdir`` and ``home`` in the run's directory (it
    must exist, holding the copies), and under ``bwrap`` the run's cgroups
    where this machine allows (``cgroups=False`` skips them: rlimits only).
    ``bwrap`` defaults to :func:`bubblewrap`, which raises
    :class:`SandboxUnavailable` when none can start. Under ``none`` nothing
    is contained and only rlimits apply.
    """
    for directory in (policy.workdir, policy.tmpdir, policy.home):
        directory.mkdir(mode=0o700, exist_ok=True)
    used: Bubblewrap | None = None
    cgroup = RunCgroup({})
    if policy.mode == "bwrap":
        used = bubblewrap("bwrap") if bwrap is None else bwrap
        if cgroups:
            cgroup = RunCgroup.create(policy.limits)
    try:
        enforcement = _enforcement(policy.limits, cgroup)
        covered = [name for name, how in enforcement.items() if how.startswith("cgroup")]
        head = launcher_args(cgroup.join_files, rlimits_for(policy.limits, covered))
        if used is not None:
            head += bwrap_args(policy, used)
        env = sandbox_environment(policy)
    except BaseException:
        cgroup.remove()
        raise
    return PreparedRun(
        policy, prefix=head, env=env, cgroup=cgroup, enforcement=enforcement, bwrap=used
    )
