"""What a contained run sees, as one value: mounts, namespaces, limits, filter, environment.

A :class:`Confinement` is data, made once per run from its policy
(:func:`codegenie.eval._sandbox.confinement.confinement`) and rendered two
ways: as bubblewrap's arguments for a plain run
(:func:`codegenie.eval._sandbox.bwrap.render_mounts`) and as the setup a
warm worker's fork makes for each run (:mod:`codegenie.eval._sandbox.warm`). Every
fact of what a run sees is stated here, once: the namespaces, the host
name, the system directories, what of ``/proc`` is hidden, the scratch
file systems, the read-only root, the cgroups its first process joins, its
rlimits and the seccomp program every process of it runs under.

The facts that do not depend on the run (:data:`NAMESPACES`,
:data:`HOSTNAME`, :data:`PROC_MASKED`, :func:`system_mounts`, …) are
module constants, so that the bubblewrap probe starts its sandbox with the
same ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from codegenie.eval._sandbox.rlimits import Rlimit

__all__ = (
    "HOSTNAME",
    "NAMESPACES",
    "PROC",
    "PROC_HIDDEN",
    "PROC_MASKED",
    "SCRATCH",
    "Confinement",
    "Mount",
    "MountKind",
    "Namespace",
    "ProcView",
    "system_mounts",
)

#: The kinds of namespace a run may be given.
Namespace = Literal["user", "mount", "pid", "net", "ipc", "uts", "cgroup"]

#: Every namespace of a contained run is new: user, mount, PID, network (only a
#: loopback), IPC, UTS and cgroup (where the kernel has it).
NAMESPACES: Final[tuple[Namespace, ...]] = ("user", "mount", "pid", "net", "ipc", "uts", "cgroup")

#: The host name a run sees (its UTS namespace's).
HOSTNAME: Final = "sandbox"

#: What of the sandbox's ``/proc`` is hidden behind an empty file: the kernel's
#: keyrings (which are not namespaced; the seccomp filter already denies the
#: calls, and these list every key its user may view, the host's included).
PROC_MASKED: Final = ("/proc/keys", "/proc/key-users")

#: What of the sandbox's ``/proc`` is covered by an empty read-only directory:
#: the sandbox's PID 1, which belongs to the harness (see
#: :func:`codegenie.eval._sandbox.bwrap.system_args`).
PROC_HIDDEN: Final = ("/proc/1",)

#: The run's own, empty, memory-backed directories (each a new tmpfs).
SCRATCH: Final = ("/tmp", "/dev/shm")  # noqa: S108 - the sandbox's own, empty ones

# The top-level links or directories of a system: recreated as links where they
# are links into /usr (merged /usr), else bound read-only.
_SYSTEM_LINKS: Final = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

#: What a mount step does: bind a host path (read-only unless ``writable``),
#: make a link, a tmpfs, or make a mount read-only.
MountKind = Literal["bind", "symlink", "tmpfs", "remount-ro"]


@dataclass(frozen=True, slots=True)
class Mount:
    """One mount step at ``target``, inside the sandbox.

    ``bind``: ``source`` (a host path) at ``target``, read-only unless
    ``writable``; skipped where ``source`` does not exist when ``optional``.
    ``symlink``: a link at ``target`` to ``source``. ``tmpfs``: a new, empty
    tmpfs at ``target``, of at most ``size`` bytes when given.
    ``remount-ro``: the mount at ``target`` made read-only.
    """

    kind: MountKind
    target: str
    source: str = ""
    writable: bool = False
    optional: bool = False
    size: int | None = None


@dataclass(frozen=True, slots=True)
class ProcView:
    """A fresh ``/proc`` of the run's PID namespace, and what of it is out of reach.

    ``hidden``: each covered by an empty read-only directory;
    ``masked``: each covered by ``/dev/null`` (where it exists);
    ``read_only``: the whole of it made read-only afterwards.
    """

    hidden: tuple[str, ...] = PROC_HIDDEN
    masked: tuple[str, ...] = PROC_MASKED
    read_only: bool = True


#: The ``/proc`` of every contained run.
PROC: Final = ProcView()


def system_mounts() -> tuple[Mount, ...]:
    """Return the mounts any program needs to start: ``/usr``, and ``/bin``, ``/lib``… as here.

    On a merged-``/usr`` system ``/bin``, ``/sbin`` and ``/lib*`` are links
    into ``/usr`` and are recreated as links; where they are directories
    they are bound read-only.
    """
    mounts = [Mount("bind", "/usr", "/usr")]
    for name in _SYSTEM_LINKS:
        if os.path.islink(name):
            mounts.append(Mount("symlink", name, os.readlink(name)))
        elif os.path.isdir(name):
            mounts.append(Mount("bind", name, name))
    return tuple(mounts)


@dataclass(frozen=True, slots=True)
class Confinement:
    """One contained run: what it sees and where it starts, whichever way it is started.

    In the order they are made (a later mount inside an earlier one shows
    through it): ``system`` (:func:`system_mounts`), a fresh ``/proc``
    (``proc``), a minimal ``/dev`` (``dev``), the ``scratch`` tmpfs
    (``/tmp``, ``/dev/shm``), the ``files`` (optional read-only binds: the
    few ``/etc`` files), the ``binds`` (read-only directories and the run's
    directory read-write, shallow first), an empty read-only directory over
    each of ``hidden``, and last, when ``root_read_only``, the sandbox's
    root made read-only. ``namespaces`` are all new; ``hostname`` is the
    UTS namespace's; ``nested_userns`` whether a user namespace may be made
    inside (never, for a run). The run starts in ``cwd`` with exactly
    ``env``.

    Its limits: before anything of the run starts, its first process
    joins the cgroups whose join files are ``joins`` (writing ``0``, the
    writer, into each) and sets ``rlimits`` ((resource, soft, hard), for
    what no cgroup covers); every process of it then runs under the
    seccomp program ``seccomp`` (classic BPF, empty where none is loaded:
    the worker sandbox of warm runs, which loads each run's). The command
    is not part of it: a run's argv is its caller's.
    """

    system: tuple[Mount, ...]
    proc: ProcView
    dev: str
    scratch: tuple[Mount, ...]
    files: tuple[Mount, ...]
    binds: tuple[Mount, ...]
    hidden: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    joins: tuple[str, ...] = ()
    rlimits: tuple[Rlimit, ...] = ()
    seccomp: bytes = field(default=b"", repr=False)
    namespaces: tuple[Namespace, ...] = NAMESPACES
    hostname: str = HOSTNAME
    nested_userns: bool = False
    root_read_only: bool = True

    @property
    def scratch_size(self) -> int | None:
        """The size of the scratch file systems, or ``None`` where they are not sized."""
        sizes = {mount.size for mount in self.scratch}
        return sizes.pop() if len(sizes) == 1 else None
