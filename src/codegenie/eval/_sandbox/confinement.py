"""From a run's policy to its :class:`~codegenie.eval._sandbox.plan.Confinement`: every mount, once.

:func:`confinement` is the one place that says which mounts a contained run
has and in what order, its working directory and its environment; the
bubblewrap command line (:func:`codegenie.eval._sandbox.bwrap_run.bwrap_args`)
and a warm worker's setup of each run render what it returns.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from codegenie.eval._sandbox.env import sandbox_environment
from codegenie.eval._sandbox.plan import (
    PROC,
    SCRATCH,
    Confinement,
    Mount,
    system_mounts,
)
from codegenie.eval._sandbox.policy import ETC_FILES, SandboxPolicy, outermost, read_only_paths
from codegenie.eval._sandbox.rlimits import Rlimit

__all__ = ("confinement",)


def confinement(
    policy: SandboxPolicy,
    *,
    joins: Sequence[str | os.PathLike[str]] = (),
    rlimits: Sequence[Rlimit] = (),
    seccomp: bytes = b"",
) -> Confinement:
    """Return what ``policy``'s run sees, and how it is limited.

    The system's directories (:func:`~codegenie.eval._sandbox.plan.system_mounts`),
    a fresh ``/proc`` (:data:`~codegenie.eval._sandbox.plan.PROC`) and ``/dev``;
    a private ``/tmp`` and ``/dev/shm`` (tmpfs, each sized to the memory
    limit); the few ``/etc`` files of
    :data:`~codegenie.eval._sandbox.policy.ETC_FILES`, where they exist; the
    read-only directories of
    :func:`~codegenie.eval._sandbox.policy.read_only_paths` and the run's
    directory read-write at its own path, shallow first (a deeper bind is
    made after the one that contains it); an empty read-only directory over
    each of ``policy.hidden`` (as written and resolved) that is a
    directory; the root read-only. It starts in
    :attr:`SandboxPolicy.workdir` with :func:`~codegenie.eval._sandbox.env.sandbox_environment`.
    Its first process joins the cgroups of ``joins`` and sets ``rlimits``;
    every process of it runs under the seccomp program ``seccomp`` (the
    preparation of a run knows them: it made the cgroups).
    """
    memory = policy.limits.memory_bytes
    scratch = tuple(Mount("tmpfs", place, size=memory) for place in SCRATCH)
    files = tuple(Mount("bind", name, name, optional=True) for name in ETC_FILES)
    run_dir = str(policy.run_dir)
    wanted = [(path, False) for path in read_only_paths(policy)]
    wanted.append((run_dir, True))
    binds = tuple(
        Mount("bind", path, path, writable=writable)
        for path, writable in sorted(wanted, key=lambda item: (item[0].count("/"), item[0]))
    )
    hidden = tuple(
        path
        for path in outermost(
            str(path) for each in policy.hidden for path in (each, os.path.realpath(each))
        )
        if os.path.isdir(path)
    )
    return Confinement(
        system=system_mounts(),
        proc=PROC,
        dev="/dev",
        scratch=scratch,
        files=files,
        binds=binds,
        hidden=hidden,
        cwd=str(policy.workdir),
        env=sandbox_environment(policy),
        joins=tuple(os.fspath(each) for each in joins),
        rlimits=tuple(rlimits),
        seccomp=seccomp,
    )
