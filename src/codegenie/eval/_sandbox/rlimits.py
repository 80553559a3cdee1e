"""Per-process resource limits (``setrlimit``): what a run gets where no cgroup covers a limit.

What the kernel does with each, measured on Linux 6.18 (see ADR-0004):

- ``RLIMIT_FSIZE`` applies to every write of every process, so it is a
  per-file limit for the whole run. A write stops exactly at the limit (a
  short write), the next one fails with ``EFBIG``, and the writer gets
  ``SIGXFSZ`` — which Python ignores (it raises ``OSError: [Errno 27] File
  too large``) and most other programs die of.
- ``RLIMIT_CPU`` is CPU seconds per process: ``SIGXCPU`` at the soft limit,
  ``SIGKILL`` at the hard one (set a second later).
- ``RLIMIT_AS`` is virtual memory per process: an allocation beyond it
  fails (Python raises ``MemoryError``). It over-counts (reserved, never
  touched address space) and does not add up a tree of processes: a
  fallback only.
- ``RLIMIT_NPROC`` counts every task (thread) of the *user* on the whole
  machine, in a new user namespace too (the kernel checks each level of the
  namespace hierarchy), and does not apply to root (real uid 0 is exempt).
  So for a non-root harness it is set to the user's task count now plus the
  run's ``processes``: a bound on a fork bomb, not an exact per-run count;
  as root it is not set.
- ``RLIMIT_CORE`` is 0: a crash does not write a core dump into the run's
  directory (or pipe one to the host's ``core_pattern`` handler).
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Iterable
from typing import Final

from codegenie.eval._sandbox.limits import LimitName, Limits

__all__ = ("RLIMIT_FLAGS", "Rlimit", "rlimits_for", "user_tasks")

#: (resource, soft, hard)
Rlimit = tuple[int, int, int]

#: ``prlimit``'s option for each resource that is set.
RLIMIT_FLAGS: Final[dict[int, str]] = {
    resource.RLIMIT_AS: "--as",
    resource.RLIMIT_CORE: "--core",
    resource.RLIMIT_CPU: "--cpu",
    resource.RLIMIT_FSIZE: "--fsize",
    resource.RLIMIT_NPROC: "--nproc",
}


def user_tasks(uid: int | None = None) -> int:
    """Return how many tasks (threads included) of real user ``uid`` run on this machine now."""
    wanted = str(os.getuid() if uid is None else uid)
    count = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as file:
                status = file.read().decode("ascii", "replace")
        except OSError:
            continue
        real_uid = threads = None
        for line in status.splitlines():
            if line.startswith("Uid:"):
                real_uid = line.split()[1]
            elif line.startswith("Threads:"):
                threads = line.split()[1]
        if real_uid == wanted and threads is not None and threads.isdigit():
            count += int(threads)
    return count


def _clamped(which: int, soft: int, hard: int) -> Rlimit:
    """``(which, soft, hard)`` within the harness's own hard limit, which cannot be raised."""
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:
        hard = current_hard if hard == resource.RLIM_INFINITY else min(hard, current_hard)
    if hard != resource.RLIM_INFINITY:
        soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
    return (which, soft, hard)


def rlimits_for(limits: Limits, covered: Iterable[LimitName]) -> list[Rlimit]:
    """Return the rlimits of a run with ``limits``, where cgroups already enforce ``covered``.

    Always ``RLIMIT_CORE`` 0; ``RLIMIT_FSIZE`` and ``RLIMIT_CPU`` whenever
    the limit is set (no cgroup enforces either); ``RLIMIT_AS`` and
    ``RLIMIT_NPROC`` only for a limit no cgroup covers, ``RLIMIT_NPROC``
    never as root (it would not apply).
    """
    done = set(covered)
    wanted: list[Rlimit] = [_clamped(resource.RLIMIT_CORE, 0, 0)]
    file_size = limits.file_size_bytes
    if file_size is not None:
        wanted.append(_clamped(resource.RLIMIT_FSIZE, file_size, file_size))
    if limits.cpu_time is not None:
        seconds = max(1, math.ceil(limits.cpu_time))
        wanted.append(_clamped(resource.RLIMIT_CPU, seconds, seconds + 1))
    memory = limits.memory_bytes
    if memory is not None and "memory" not in done:
        wanted.append(_clamped(resource.RLIMIT_AS, memory, memory))
    if limits.processes is not None and "processes" not in done and os.getuid() != 0:
        allowed = user_tasks() + limits.processes
        wanted.append(_clamped(resource.RLIMIT_NPROC, allowed, allowed))
    return wanted
