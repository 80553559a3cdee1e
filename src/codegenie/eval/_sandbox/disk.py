"""What a run writes to its directory, measured while it runs: the ``disk`` limits.

No kernel mechanism bounds what an unprivileged process writes to a
directory of an ordinary file system (quotas need root; bubblewrap cannot
give a tmpfs an inode limit), so the run's directory is measured: once
before the run (its copies, the baseline), every :data:`INTERVAL` seconds
while it runs (:class:`DiskWatch`; one thread of the process watches every
run), and once after. A run that added more than its ``disk`` limit (bytes,
as allocated on disk)
or its ``disk_files`` limit (files, directories and links) is stopped and
is an ``error`` naming the limit. Between two looks a run can write more
(what it writes in :data:`INTERVAL` seconds; no single file beyond the
``file-size`` limit): the limit bounds what is left to remove, which is
what a full disk or a 200,000-file clean-up would cost.

Every scan is a walk of the package's one walker (by descriptor, no path,
no recursion, whatever the depth, never following a link) and stops as soon
as the answer is known (past a limit).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Final, final

from codegenie.eval._sandbox.limits import Breach, Limits
from codegenie.eval._tree import NO_BOUNDS, TreeBeyondBounds, Walk

__all__ = ("INTERVAL", "DiskWatch", "Footprint", "measure")

#: Seconds between two looks at a running run's directory (at the least: a scan
#: that takes long is made less often, so that watching costs a small share of a CPU).
INTERVAL: Final = 0.2
# A scan may take this share of the time between two (a slow disk, a large tree).
_SHARE: Final = 0.1
# The longest pause between two looks, however slow a scan.
_LONGEST: Final = 2.0


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a directory holds: ``entries`` (files, directories, links…) and ``allocated`` bytes.

    ``complete`` is ``False`` when the scan stopped early, past a bound it was
    given (the figures are then at least what they say). ``largest_new`` is
    the largest regular file modified since the time the scan was given, and
    its size, if any was.
    """

    entries: int
    allocated: int
    complete: bool = True
    largest_new: tuple[str, int] | None = None


def measure(
    root: str,
    *,
    most_entries: int | None = None,
    most_bytes: int | None = None,
    since_ns: int | None = None,
) -> Footprint:
    """Return the footprint of the tree at ``root`` (``root`` itself not counted).

    Stops once more than ``most_entries`` entries or ``most_bytes`` bytes are
    seen (``complete=False``). ``since_ns``: also find the largest regular
    file modified since then. Entries that vanish while the scan runs, and
    directories it may not read, are passed over; a tree that changes under
    the walk so that it cannot climb back gives what was counted, not
    complete.

    The walk is the package's one (:class:`~codegenie.eval._tree.Walk`):
    by descriptor, never a path, never following a link, so a tree deeper
    than ``PATH_MAX`` is counted whole and no depth costs recursion or more
    than a few descriptors.
    """
    entries = allocated = 0
    largest: tuple[str, int] | None = None
    bounds = NO_BOUNDS if most_entries is None else replace(NO_BOUNDS, entries=most_entries)
    try:
        walk = Walk(root, bounds=bounds, follow=False, unreadable="skip")
    except OSError:
        return Footprint(0, 0)
    try:
        with walk:
            for entry in walk:
                entries += 1
                try:
                    info = entry.lstat()
                except OSError:
                    continue
                allocated += info.st_blocks * 512
                if since_ns is not None and stat.S_ISREG(info.st_mode):
                    newer = info.st_mtime_ns >= since_ns
                    if newer and (largest is None or info.st_size > largest[1]):
                        largest = (entry.path, info.st_size)
                if most_bytes is not None and allocated > most_bytes:
                    return Footprint(entries, allocated, complete=False, largest_new=largest)
    except TreeBeyondBounds:  # more entries than most_entries: at least one more
        assert most_entries is not None
        return Footprint(max(entries, most_entries + 1), allocated, False, largest)
    except OSError:
        return Footprint(entries, allocated, complete=False, largest_new=largest)
    return Footprint(entries, allocated, largest_new=largest)


def unnamed_files(pids: Iterable[int], device: int) -> Footprint:
    """Return the regular files on ``device`` that ``pids`` hold open and that have no name.

    A file unlinked while open takes its space until it is closed, and no
    look at a directory finds it. Each counts once, however many
    descriptors hold it. Seen through ``/proc/PID/fd``: every process's as
    root; only those of dumpable processes of the same user otherwise.
    """
    seen: set[int] = set()
    allocated = 0
    for pid in pids:
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for name in names:
            try:
                info = os.stat(f"/proc/{pid}/fd/{name}")
            except OSError:
                continue
            unnamed = stat.S_ISREG(info.st_mode) and info.st_nlink == 0
            if unnamed and info.st_dev == device and info.st_ino not in seen:
                seen.add(info.st_ino)
                allocated += info.st_blocks * 512
    return Footprint(len(seen), allocated)


@final
class DiskWatch:
    """The disk limits of one run: its baseline, a watch while it runs, the verdict after.

    Made by :meth:`start` once the run's copies are in place. While the run
    runs (:meth:`watch`), the process's one disk monitor (a thread shared by
    every run, started when there is a run to watch and ending when there is
    none) looks at the run's directory every :data:`INTERVAL` seconds or
    so; at a breach it records it and makes :attr:`wake_fd` readable, so
    that the supervisor stops the run. :meth:`close` ends the watch and
    closes the descriptors; idempotent.
    """

    def __init__(self, root: str, limits: Limits, baseline: Footprint) -> None:
        self.root: Final = root
        self.limits: Final = limits
        self.baseline: Final = baseline
        self.breach: Breach | None = None
        #: The run's processes, once it started (their files without a name count too).
        self.processes: Callable[[], Iterable[int]] | None = None
        try:
            self._device: int | None = os.stat(root).st_dev
        except OSError:
            self._device = None
        # Held while the monitor looks at this run, and while the watch is closed.
        self.lock: Final = threading.Lock()
        self.due = 0.0
        self._watched = False
        self._wake_read, self._wake_write = os.pipe()

    @classmethod
    def start(cls, root: str, limits: Limits) -> DiskWatch:
        """Measure ``root`` as the run's baseline; return the watch (not yet watching)."""
        return cls(root, limits, measure(root))

    @property
    def wake_fd(self) -> int:
        """Readable once a breach was found while the run ran."""
        return self._wake_read

    @property
    def active(self) -> bool:
        """Whether there is a disk limit to watch at all."""
        return self.limits.disk is not None or self.limits.disk_files is not None

    def watch(self) -> dict[int, Callable[[], bool]]:
        """Start looking while the run runs; return the descriptor to serve and its callback.

        The callback tells the supervisor to stop the run (``True``). Empty
        when there is no disk limit.
        """
        if not self.active or self._watched:
            return {}
        self._watched = True
        _MONITOR.add(self)
        return {self._wake_read: lambda: True}

    def check(self, *, since_ns: int | None = None) -> tuple[Breach | None, Footprint]:
        """Measure the directory now; return the breach it shows (or ``None``) and the footprint."""
        limits = self.limits
        most_entries = most_bytes = None
        if limits.disk_files is not None:
            most_entries = self.baseline.entries + limits.disk_files
        if limits.disk is not None and limits.disk_bytes is not None:
            most_bytes = self.baseline.allocated + limits.disk_bytes
        found = measure(
            self.root, most_entries=most_entries, most_bytes=most_bytes, since_ns=since_ns
        )
        if found.complete and self.processes is not None and self._device is not None:
            hidden = unnamed_files(self.processes(), self._device)
            found = Footprint(
                found.entries + hidden.entries,
                found.allocated + hidden.allocated,
                largest_new=found.largest_new,
            )
        breach = None
        if most_entries is not None and found.entries > most_entries:
            added = found.entries - self.baseline.entries
            breach = Breach(
                "disk-files",
                f"{limits.describe('disk-files')} exceeded",
                f"the run added more than {added:,} entries to its directory",
            )
        elif most_bytes is not None and found.allocated > most_bytes:
            added = (found.allocated - self.baseline.allocated) // (1024 * 1024)
            breach = Breach(
                "disk",
                f"{limits.describe('disk')} exceeded",
                f"the run added more than {added:,} MiB to its directory",
            )
        return breach, found

    def look(self) -> bool:
        """Look at the directory once (the monitor's call, under :attr:`lock`); whether it broke."""
        breach, _ = self.check()
        if breach is None:
            return False
        self.breach = breach
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"!")
        return True

    def close(self) -> None:
        """Stop watching and close the descriptors, once a look under way is over; idempotent.

        A ``KeyboardInterrupt`` meanwhile does not cut the wait short (the
        monitor writes to a descriptor that must not be closed, and maybe
        reused, under it); it is raised once the watch is closed.
        """
        _MONITOR.discard(self)
        interrupted: KeyboardInterrupt | None = None
        while True:
            try:
                self.lock.acquire()
            except KeyboardInterrupt as exc:
                interrupted = exc
                continue
            break
        try:
            for fd in (self._wake_read, self._wake_write):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._wake_read = self._wake_write = -1
        finally:
            self.lock.release()
        if interrupted is not None:
            raise interrupted


@final
class _Monitor:
    """The thread that watches every running run's directory: one per process, while there are runs.

    One thread for all runs rather than one per run: a run that lasts less
    than :data:`INTERVAL` (most do) costs a set insertion, not a thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: set[DiskWatch] = set()
        self._thread: threading.Thread | None = None

    def add(self, watch: DiskWatch) -> None:
        with self._lock:
            watch.due = time.monotonic() + INTERVAL
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="codegenie-disk", daemon=True
                )
                self._thread.start()

    def discard(self, watch: DiskWatch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._watches:
                    self._thread = None
                    return
                now = time.monotonic()
                due = [w for w in self._watches if w.due <= now]
                # A watch added meanwhile is due in INTERVAL at the latest.
                pause = min(INTERVAL, *(w.due - now for w in self._watches))
            for watch in due:
                with watch.lock:
                    if watch.wake_fd < 0:  # closed meanwhile
                        continue
                    began = time.monotonic()
                    broke = watch.look()
                    spent = time.monotonic() - began
                with self._lock:
                    if broke:
                        self._watches.discard(watch)
                    watch.due = time.monotonic() + min(max(INTERVAL, spent / _SHARE), _LONGEST)
            if not due:
                time.sleep(max(pause, 0.0))


_MONITOR: Final = _Monitor()
