"""A local Ray instance a command starts for itself; its end: all its processes at once.

``--executor ray`` without a cluster's address starts a Ray instance on
this machine (:meth:`LocalInstance.start`) and ends it with the command
(:meth:`LocalInstance.end`), whether the grading succeeded, failed, or was
stopped by a signal. What the instance made is known, so all of it goes:

- **Its processes, at once.** Those ``ray.init`` started (the GCS, the
  raylet and Ray's other processes are children of this one, found as the
  children it did not have before) and everything below them when the end
  begins — Ray's worker processes, the runs' bubblewraps, warm workers and
  rubrics, also a rubric that made a session of its own — are killed
  together with ``SIGKILL`` (each with the process group it leads), and
  waited for. Ray's own shutdown terminates them one after the other,
  giving each a second: 2 s of a stop on a loaded machine. Nothing waits
  on a rubric: a run in flight is not asked to end, it is killed.
- **What its workers left**: each worker process kept its runs'
  directories under a directory of its own in the temporary directory
  (``codegenie-node-PID-…``, :mod:`codegenie.eval._exec.node`), removed
  here once its process is gone; and the runs' cgroups
  (``codegenie-run-PID-…``) of the killed processes, emptied and removed.
- **Its session directory**: the instance keeps its sockets and logs in a
  directory made for it (``cg-ray-…``, under ``RAY_TMPDIR``, else
  ``TMPDIR``, else ``/tmp``, where Ray keeps its own), removed last.

First of all the driver lets go of Ray (``ray.shutdown``, with Ray's handle
on its node taken away, so that it terminates nothing itself): while the
instance still answers, that takes a fraction of a second; after its
processes are killed, the driver's disconnection waits out its timeouts on
the dead GCS and raylet (5 s of a stop, measured). The processes of the
instance are noted before, with their start times: those Ray ends once the
driver is gone still have their directories and cgroups removed.
A cluster the command joined is none of this: its nodes are
not the command's to end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
from typing import Any, Final, final

from codegenie.eval._exec.node import sweep_node_directories
from codegenie.eval._process import procfs
from codegenie.eval._sandbox.cgroups import remove_run_cgroups
from codegenie.eval.rubrics import remove_tree

__all__ = ("LocalInstance",)

#: What the session directory of an instance a command started is called.
TEMP_PREFIX: Final = "cg-ray-"
# How long the killed processes may take to be gone (one in an uninterruptible sleep, a
# slow disk) before the end goes on without them.
_GONE_WITHIN: Final = 10.0
# How many rounds of killing what forked while the last round killed.
_ROUNDS: Final = 10


@final
class LocalInstance:
    """A Ray instance on this machine, started by :meth:`start`, ended whole by :meth:`end`."""

    def __init__(self, ray: Any, temp_dir: str, roots: frozenset[int]) -> None:
        self.ray = ray
        self.temp_dir = temp_dir
        #: The processes ``ray.init`` started (children of this process).
        self.roots = roots
        #: The processes :meth:`end` killed (the roots and all below them).
        self.killed: set[int] = set()
        #: The processes of the instance when its end began, with their start times:
        #: Ray itself may end them once the driver has let go; their directories and
        #: cgroups are still removed, and one still running is killed (if its ID does
        #: not name a later process by then).
        self.members: dict[int, int | None] = {}

    @classmethod
    def start(cls, ray: Any, cpus: int, options: dict[str, Any]) -> LocalInstance:
        """Start an instance of ``cpus`` CPUs with ``ray.init``'s ``options``; return it.

        What ``ray.init`` raises propagates, once whatever it started is ended.
        """
        parent = _ray_temp_parent()
        temp_dir = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=parent)
        before = set(procfs.children())
        try:
            ray.init(address="local", num_cpus=cpus, _temp_dir=temp_dir, **options)
        except BaseException:
            cls(ray, temp_dir, frozenset(set(procfs.children()) - before)).end()
            raise
        return cls(ray, temp_dir, frozenset(set(procfs.children()) - before))

    def end(self) -> None:
        """Let Ray go; kill every process of the instance at once; remove what it left.

        Never raises but an interrupt, after the end is over: a second
        Ctrl-C does not cut it short.
        """
        interrupted: KeyboardInterrupt | None = None
        for step in (self._note, self._let_go, self._kill, self._sweep):
            while True:
                try:
                    # What a step could not do, the next one still does.
                    with contextlib.suppress(Exception):
                        step()
                except KeyboardInterrupt as exc:
                    interrupted = exc
                    continue
                break
        if interrupted is not None:
            raise interrupted

    def _kill(self) -> None:
        """Kill the instance's processes and everything below them, round after round."""
        for _ in range(_ROUNDS):
            found = [
                pid
                for root in self.roots
                for pid in (root, *procfs.descendants(root))
                if pid not in self.killed and procfs.running(pid)
            ]
            found += [
                pid
                for pid, start in self.members.items()
                if pid not in self.killed
                and pid not in found
                and start is not None
                and procfs.started(pid) == start
                and procfs.running(pid)
            ]
            found += [
                pid
                for killed in self.killed
                for pid in procfs.descendants(killed)
                if pid not in self.killed
            ]
            if not found:
                break
            for pid in found:
                _kill(pid)
            self.killed.update(found)
        deadline = time.monotonic() + _GONE_WITHIN
        unreaped = set(self.roots)
        while True:
            for root in list(unreaped):  # Ray's own children: reaped here (its Popen copes)
                try:
                    if os.waitpid(root, os.WNOHANG)[0]:
                        unreaped.discard(root)
                except ChildProcessError:
                    unreaped.discard(root)
            alive = unreaped or any(procfs.running(pid) for pid in self.killed)
            if not alive or time.monotonic() >= deadline:
                return
            time.sleep(0.01)

    def _note(self) -> None:
        """Note every process of the instance, before the driver lets go of it."""
        pids = {pid for root in self.roots for pid in (root, *procfs.descendants(root))}
        self.members = {pid: procfs.started(pid) for pid in pids}

    def _let_go(self) -> None:
        """Let the driver go of Ray while the instance still answers; leave its processes be.

        ``ray.shutdown`` disconnects the driver, then terminates the
        instance's processes one after the other, a second of grace each;
        after they are killed, its disconnection waits out its timeouts on
        the dead GCS and raylet (5 s of a stop). So the driver lets go
        first, with the processes left to :meth:`_kill`: Ray's handle on
        its node is taken from it before the call.
        """
        worker = getattr(getattr(self.ray, "_private", None), "worker", None)
        if worker is not None and getattr(worker, "_global_node", None) is not None:
            worker._global_node = None  # the processes are :meth:`_kill`'s, all at once
        self.ray.shutdown()

    def _sweep(self) -> None:
        """Remove the node directories and run cgroups of the killed processes; the session's."""
        ended = self.killed | set(self.members)
        sweep_node_directories(tempfile.gettempdir(), ended)
        remove_run_cgroups(ended)
        remove_tree(self.temp_dir)


def _ray_temp_parent() -> str:
    """Where Ray keeps an instance's directory: ``RAY_TMPDIR``, else ``TMPDIR``, else ``/tmp``."""
    for name in ("RAY_TMPDIR", "TMPDIR"):
        value = os.environ.get(name)
        if value and os.path.isdir(value) and (name == "RAY_TMPDIR" or sys.platform == "linux"):
            return value
    return "/tmp"  # noqa: S108 - Ray's own default, whatever tempfile would choose


def _kill(pid: int) -> None:
    """Kill ``pid`` and the process group it leads (if any); never raise."""
    for kill in (os.kill, os.killpg):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
