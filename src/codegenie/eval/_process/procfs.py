"""What ``/proc`` says about processes: a process's children, a session's members, who still runs.

Linux only. Where ``/proc`` cannot be read (another system, a hardened
mount) every function answers as if there were nothing to find: the callers
use these answers to find more processes to kill than a process group holds,
never fewer.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ("children", "running", "session_members", "threads")

_PROC: Final = "/proc"
# The states of a process that has ended: zombie (awaiting its reaper), dead.
_ENDED: Final = (b"Z", b"X")


def _read(path: str) -> bytes | None:
    """Return the contents of a small ``/proc`` file, or ``None`` if it cannot be read.

    Plain descriptors, no file object: the check's worker calls this once per
    slug, between two forks, where every object it touches costs a page fault.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # gone meanwhile, or not ours to read
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """Return the fields of ``/proc/PID/stat`` after the command name, or ``None`` if unreadable.

    Field 0 is the state, 1 the parent, 2 the process group, 3 the session.
    The command name (in parentheses) may hold spaces and parentheses, so the
    fields are counted from its last closing parenthesis.
    """
    line = _read(f"{_PROC}/{pid}/stat")
    if line is None:
        return None
    return line[line.rfind(b")") + 2 :].split()


def threads(pid: int | None = None) -> list[str]:
    """Return the thread IDs of ``pid`` (``None``: this process) as ``/proc`` lists them."""
    try:
        return os.listdir(f"{_PROC}/{'self' if pid is None else pid}/task")
    except OSError:
        return []


def children(pid: int | None = None, *, tasks: list[str] | None = None) -> list[int]:
    """Return the IDs of the children of ``pid`` (of all its threads), zombies included.

    ``None`` means this process. ``tasks``: its :func:`threads`, when the
    caller has just listed them.
    """
    found: list[int] = []
    where = f"{_PROC}/{'self' if pid is None else pid}/task"
    for task in threads(pid) if tasks is None else tasks:
        listed = _read(f"{where}/{task}/children")
        if listed is not None:  # else the thread ended meanwhile
            found += [int(child) for child in listed.split()]
    return found


def descendants(pid: int, *, most: int = 100_000) -> list[int]:
    """Return the processes below ``pid`` still attached to it (at most ``most`` of them)."""
    found: list[int] = []
    pending = children(pid)
    while pending and len(found) < most:
        child = pending.pop()
        found.append(child)
        pending += children(child)
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` exists and has not ended (a zombie awaiting its reaper has ended)."""
    fields = _stat_fields(pid)
    return fields is not None and bool(fields) and fields[0] not in _ENDED


def started(pid: int) -> int | None:
    """Return when ``pid`` started (clock ticks after boot), or ``None`` if it is gone.

    A process ID and its start time name one process: a later process that
    is given the same ID has another start time.
    """
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def session_members(sid: int) -> list[int]:
    """Return the running processes of session ``sid``, its leader ``sid`` excepted.

    This reads the status of every process of the machine, so it is for
    occasional use (once per run of a rubric), not once per slug of a check.
    """
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    wanted = str(sid).encode()
    found = []
    for name in names:
        if not name.isdigit() or int(name) == sid:
            continue
        fields = _stat_fields(name)
        if fields and len(fields) > 3 and fields[3] == wanted and fields[0] not in _ENDED:
            found.append(int(name))
    return found
