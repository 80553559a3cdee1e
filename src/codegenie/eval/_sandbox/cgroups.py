"""A control group per run: limits on the whole process tree, and what it used.

Where the harness may create cgroups, each run gets its own, joined by the
run's first process before it starts bubblewrap, so every process of the
run is in it whatever it does (``setsid``, double forks): ``memory`` (limit,
peak, out-of-memory kills) and ``pids`` (limit, refused forks) when the run
has those limits, and CPU time. A run without a memory or process limit gets
no cgroup for it. The CPU-time one is made whatever the limits: it is the
only measure of a sandboxed run's CPU time, since bubblewrap's first process
exits on the status its sandbox reports, without waiting for the sandbox's
PID 1, so ``wait4``'s rusage counts bubblewrap alone.

Joining: the run's first process (a single-threaded ``sh``) writes ``0`` —
"the writer" — into ``tasks`` (cgroup v1) or ``cgroup.procs`` (v2). In v1,
a thread that moves itself through ``tasks`` is moved without the kernel's
thread-group lock, whose taking waits for an RCU grace period (about 10 ms
a run on this machine, measured in ADR-0004); its process holds only that
thread, so the process moves whole. v2 has no ``tasks`` file for a domain
cgroup: there the join takes the lock.

Which hierarchy serves a controller is read from ``/proc/self/mountinfo``
and ``/proc/self/cgroup``:

- **cgroup v1** (a hierarchy per controller, as in many containers): the
  run's cgroup is made inside the harness's own cgroup of that hierarchy
  (so the limits the harness is under still apply), when that directory is
  writable (in practice: as root).
- **cgroup v2** (one unified hierarchy, systemd machines): the run's cgroup
  is made beside the harness's own — the harness's cgroup has processes, so
  by the "no internal processes" rule it cannot have children with
  controllers — when the parent enables ``memory``/``pids`` for its
  children and the harness may write there and move processes (root, or a
  delegated subtree such as a systemd user session).

Nothing is created where neither applies; the run then falls back to
rlimits (see :mod:`codegenie.eval._sandbox.preparation`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, final

from codegenie.eval._sandbox.limits import Limits

__all__ = (
    "Hierarchy",
    "RunCgroup",
    "discover",
    "parse_hierarchies",
    "remove_run_cgroups",
)

Controller = Literal["memory", "pids", "cpu"]
_CONTROLLERS: Final[tuple[Controller, ...]] = ("memory", "pids", "cpu")
# The v1 controller that accounts CPU time; in v2 every cgroup has cpu.stat.
_V1_NAME: Final[dict[Controller, str]] = {"memory": "memory", "pids": "pids", "cpu": "cpuacct"}
# How long removing a run's cgroup waits for its last processes to be gone.
_REMOVE_WITHIN: Final = 5.0
# The first and the longest pause between two attempts at removing it: a cgroup is
# often still busy for a fraction of a millisecond after its last process was reaped.
_REMOVE_PAUSES: Final = (0.0005, 0.01)


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Where a run's cgroup for some controllers is made.

    ``version`` is 1 or 2; ``parent`` the directory the run's cgroup is
    created in; ``controllers`` those of :data:`_CONTROLLERS` it serves.
    """

    version: Literal[1, 2]
    parent: Path
    controllers: frozenset[Controller]


def _unescape(text: str) -> str:
    """Decode mountinfo's octal escapes (a space is written backslash, 0, 4, 0)."""
    if "\\" not in text:
        return text
    out = bytearray()
    index = 0
    raw = text.encode("utf-8", "surrogateescape")
    while index < len(raw):
        chunk = raw[index + 1 : index + 4]
        if raw[index] == 0x5C and len(chunk) == 3 and all(0x30 <= c <= 0x37 for c in chunk):
            out.append(int(chunk, 8))
            index += 4
        else:
            out.append(raw[index])
            index += 1
    return out.decode("utf-8", "surrogateescape")


def _inside(mount: str, mount_root: str, own: str) -> str | None:
    """Return where cgroup ``own`` is, in a hierarchy mounted at ``mount`` from ``mount_root``."""
    root = mount_root.rstrip("/")
    if own != root and not own.startswith(root + "/"):
        return None  # our cgroup is not below what is mounted here
    return mount.rstrip("/") + own[len(root) :] if own != root else mount


def parse_hierarchies(mountinfo: str, self_cgroup: str) -> list[Hierarchy]:
    """Return the hierarchies a run's cgroup could be made in, from two ``/proc`` files' text.

    Pure: reads nothing, so tests feed it any machine's files. Whether the
    directories are writable is :func:`discover`'s business.
    """
    own_v1: dict[str, str] = {}
    own_v2: str | None = None
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, names, path = parts
        if parts[0] == "0" and not names:
            own_v2 = path
        for name in names.split(","):
            own_v1[name] = path
    found: list[Hierarchy] = []
    for line in mountinfo.splitlines():
        before, sep, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        mount_root, mount = _unescape(fields[3]), _unescape(fields[4])
        fstype, options = tail[0], set(tail[2].split(","))
        if fstype == "cgroup":
            served = frozenset(c for c in _CONTROLLERS if _V1_NAME[c] in options)
            own = next((own_v1[_V1_NAME[c]] for c in served if _V1_NAME[c] in own_v1), None)
            directory = None if own is None else _inside(mount, mount_root, own)
            if served and directory is not None:
                found.append(Hierarchy(1, Path(directory), served))
        elif fstype == "cgroup2" and own_v2 is not None:
            # Beside our own cgroup (a cgroup with processes cannot have children with
            # controllers); in the root cgroup, which may, below it.
            parent = own_v2 if own_v2 == "/" else own_v2.rsplit("/", 1)[0] or "/"
            directory = _inside(mount, mount_root, parent)
            if directory is not None:
                found.append(Hierarchy(2, Path(directory), frozenset(_CONTROLLERS)))
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _usable(hierarchy: Hierarchy) -> frozenset[Controller]:
    """Return the controllers of ``hierarchy`` a run's cgroup the harness may create can have."""
    parent = hierarchy.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        return frozenset()
    if hierarchy.version == 1:
        return hierarchy.controllers
    if not os.access(parent / "cgroup.procs", os.W_OK):
        return frozenset()
    enabled = set((_read(parent / "cgroup.subtree_control") or "").split())
    usable: set[Controller] = {"cpu"}  # cpu.stat is in every v2 cgroup
    for controller in ("memory", "pids"):
        if controller in enabled:
            usable.add(controller)
    return frozenset(usable)


def discover(
    mountinfo: str | None = None, self_cgroup: str | None = None
) -> dict[Controller, Hierarchy]:
    """Return which hierarchy makes a run's cgroup for each controller the harness may use.

    v1 hierarchies are preferred where a controller is in both (a hybrid
    machine binds a controller to one of them only, so this is rarely a
    choice). Empty when no cgroup can be made: not Linux, not writable.
    """
    if mountinfo is None or self_cgroup is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
            self_cgroup = Path("/proc/self/cgroup").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {}
    chosen: dict[Controller, Hierarchy] = {}
    for hierarchy in sorted(parse_hierarchies(mountinfo, self_cgroup), key=lambda h: h.version):
        for controller in _usable(hierarchy):
            chosen.setdefault(controller, hierarchy)
    return chosen


@final
class RunCgroup:
    """The cgroups of one run (one directory per hierarchy used), their limits and readings.

    Made by :meth:`create`; the run joins them through :attr:`join_files`;
    :meth:`remove` kills whatever is left in them and removes them. The
    readings (:meth:`oom_kills`, :meth:`refused_forks`, :meth:`peak_memory`,
    :meth:`cpu_time`) are ``None`` when the controller is not there.
    """

    def __init__(self, directories: dict[Controller, tuple[int, Path]]) -> None:
        self.directories = dict(directories)

    def __repr__(self) -> str:
        shown = ", ".join(f"{c}=v{v}:{p}" for c, (v, p) in self.directories.items())
        return f"RunCgroup({shown})"

    @classmethod
    def create(
        cls, limits: Limits, hierarchies: dict[Controller, Hierarchy] | None = None
    ) -> RunCgroup:
        """Make the run's cgroups and set ``limits`` in them; skip what cannot be made.

        ``memory`` for a ``memory`` limit, ``pids`` for a ``processes``
        limit, and ``cpu`` (the CPU time of the whole run) always. A
        controller whose directory cannot be made or whose limit cannot be
        written is left out (the caller falls back to an rlimit for it);
        never raises for that. An empty :class:`RunCgroup` means none.
        """
        chosen = discover() if hierarchies is None else hierarchies
        wanted = {
            "memory": limits.memory is not None,
            "pids": limits.processes is not None,
            "cpu": True,  # the only measure of a sandboxed run's CPU time (module docstring)
        }
        chosen = {c: h for c, h in chosen.items() if wanted[c]}
        name = f"codegenie-run-{os.getpid()}-{secrets.token_hex(4)}"
        made: dict[Path, int] = {}
        directories: dict[Controller, tuple[int, Path]] = {}
        for controller, hierarchy in chosen.items():
            directory = hierarchy.parent / name
            if directory not in made:
                try:
                    directory.mkdir(mode=0o755)
                except OSError:
                    continue
                made[directory] = hierarchy.version
            if _configure(controller, hierarchy.version, directory, limits):
                directories[controller] = (hierarchy.version, directory)
        for directory in made:
            if all(d != directory for _, d in directories.values()):
                with contextlib.suppress(OSError):
                    directory.rmdir()
        return cls(directories)

    @property
    def controllers(self) -> frozenset[Controller]:
        """The controllers this run's cgroups have."""
        return frozenset(self.directories)

    def version(self, controller: Controller) -> int | None:
        """Return the cgroup version serving ``controller`` for this run, or ``None``."""
        entry = self.directories.get(controller)
        return None if entry is None else entry[0]

    @property
    def join_files(self) -> tuple[Path, ...]:
        """The files the run's first process writes ``0`` into to join, one per directory.

        ``tasks`` in a v1 hierarchy (the writing thread moves, without the
        thread-group lock), ``cgroup.procs`` in v2.
        """
        seen = dict.fromkeys(
            d / ("tasks" if version == 1 else "cgroup.procs")
            for version, d in self.directories.values()
        )
        return tuple(seen)

    def _file(self, controller: Controller, v1: str, v2: str) -> str | None:
        entry = self.directories.get(controller)
        if entry is None:
            return None
        version, directory = entry
        return _read(directory / (v1 if version == 1 else v2))

    def oom_kills(self) -> int | None:
        """Return how many processes of the run the kernel killed for want of memory."""
        text = self._file("memory", "memory.oom_control", "memory.events")
        return None if text is None else _keyed(text, "oom_kill")

    def refused_forks(self) -> int | None:
        """Return how many forks (or new threads) of the run were refused at its process limit."""
        text = self._file("pids", "pids.events", "pids.events")
        return None if text is None else _keyed(text, "max")

    def peak_memory(self) -> int | None:
        """Return the most memory the run held at once, in bytes (page cache it caused included)."""
        text = self._file("memory", "memory.max_usage_in_bytes", "memory.peak")
        return int(text) if text is not None and text.strip().isdigit() else None

    def cpu_time(self) -> float | None:
        """Return the CPU time every process of the run used, in seconds."""
        entry = self.directories.get("cpu")
        if entry is None:
            return None
        if entry[0] == 1:
            text = self._file("cpu", "cpuacct.usage", "")
            return int(text) / 1e9 if text is not None and text.strip().isdigit() else None
        text = self._file("cpu", "", "cpu.stat")
        usec = None if text is None else _keyed(text, "usage_usec")
        return None if usec is None else usec / 1e6

    def processes(self) -> list[int] | None:
        """Return the pids of every process of the run (``None``: the run has no cgroup)."""
        for _, directory in self.directories.values():
            text = _read(directory / "cgroup.procs")
            if text is not None:
                return [int(pid) for pid in text.split() if pid.isdigit()]
        return None

    def remove(self) -> None:
        """Kill what is left in the run's cgroups and remove them; never raises.

        Under bubblewrap nothing is left (the PID namespace took it down);
        this is for a run whose first process was killed before it started
        bubblewrap, or a kernel that is slow to empty a cgroup.
        """
        for directory in dict.fromkeys(d for _, d in self.directories.values()):
            _empty_and_remove(directory)
        self.directories.clear()


def remove_run_cgroups(makers: Collection[int]) -> None:
    """Empty and remove the run cgroups made by the processes ``makers``, which have ended.

    A process killed outright while it made a run (a Ray worker process of
    a local instance that a command ended) never removed that run's
    cgroups; their names hold their maker's pid. Never raises.
    """
    if not makers:
        return
    for hierarchy in dict.fromkeys(discover().values()):
        for pid in makers:
            for directory in hierarchy.parent.glob(f"codegenie-run-{pid}-*"):
                _empty_and_remove(directory)


def _keyed(text: str, key: str) -> int | None:
    """Return the number after ``key`` in a flat-keyed cgroup file (``oom_kill 1``)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value, encoding="ascii")
    except OSError:
        return False
    return True


def _configure(controller: Controller, version: int, directory: Path, limits: Limits) -> bool:
    """Set ``controller``'s limit in the run's cgroup; whether the controller is usable."""
    if controller == "cpu":
        wanted = "cpuacct.usage" if version == 1 else "cpu.stat"
        return (directory / wanted).exists()
    if controller == "pids":
        processes = "max" if limits.processes is None else str(limits.processes)
        return _write(directory / "pids.max", processes)
    memory = limits.memory_bytes
    if version == 1:
        if memory is not None and not _write(directory / "memory.limit_in_bytes", str(memory)):
            return False
        if memory is not None and (directory / "memory.memsw.limit_in_bytes").exists():
            # With swap accounting, swap counts too: the limit is not escaped by swapping.
            _write(directory / "memory.memsw.limit_in_bytes", str(memory))
        return (directory / "memory.oom_control").exists()
    if memory is not None and not _write(directory / "memory.max", str(memory)):
        return False
    if (directory / "memory.swap.max").exists():
        _write(directory / "memory.swap.max", "0")
    # One out-of-memory kill ends the whole run, not just its largest process.
    _write(directory / "memory.oom.group", "1")
    return (directory / "memory.events").exists()


def _empty_and_remove(directory: Path) -> None:
    if (directory / "cgroup.kill").exists():
        _write(directory / "cgroup.kill", "1")
    deadline = time.monotonic() + _REMOVE_WITHIN
    pause, longest = _REMOVE_PAUSES
    while True:
        for pid in (_read(directory / "cgroup.procs") or "").split():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        try:
            directory.rmdir()
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() >= deadline:
                return  # left behind: empty cgroups cost nothing, and the name is unique
            time.sleep(pause)
            pause = min(pause * 2, longest)
        else:
            return
