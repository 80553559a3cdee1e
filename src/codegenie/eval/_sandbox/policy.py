"""What one sandboxed run may see and touch, and the bubblewrap arguments that say it.

A :class:`SandboxPolicy` is data: the mode, the interpreter, the task
class's directory (read-only), the run's directory (read-write, at the same
path as outside, so that ``CASE_DIR`` and ``CANDIDATE_DIR`` on the command
line stay valid), and the limits. :func:`bwrap_args` turns it into
bubblewrap's arguments. Everything not named is invisible: the user's home,
the repository, the rest of ``/etc``, other temporary directories.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from codegenie.eval._sandbox import confining
from codegenie.eval._sandbox.bwrap import Bubblewrap, isolation_args, system_args
from codegenie.eval._sandbox.limits import DEFAULT_LIMITS, Limits
from codegenie.eval._sandbox.packages import Installed, installed

__all__ = (
    "ETC_FILES",
    "Interpreter",
    "SandboxMode",
    "SandboxPolicy",
    "bwrap_args",
    "installed_packages",
    "interpreter_prefixes",
    "read_only_paths",
)

#: ``bwrap``: contained. ``none``: run as the harness itself runs, not contained.
SandboxMode = Literal["bwrap", "none"]

#: What of ``/etc`` is visible (read-only), when it exists: the dynamic
#: linker's cache, the time zone, user and group names (``getpwuid``), the
#: name-service configuration, the hosts file (``localhost``), the
#: ``alternatives`` links (``/usr/bin/awk`` points there on Debian) and the
#: public CA certificates. Not ``/etc/ssl/private``, ``/etc/shadow``,
#: credentials, or anything else.
ETC_FILES: Final = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
    "/etc/ca-certificates",
)

# Directories the interpreter's own prefixes never widen to: binding one of
# them would show the whole system, a home, or every temporary directory.
_TOO_WIDE: Final = frozenset({"/", "/home", "/root", "/tmp", "/var", "/etc", "/opt", "/usr"})  # noqa: S108 - never bound


@dataclass(frozen=True, slots=True)
class Interpreter:
    """The Python that runs rubrics, and the directories it needs to start and import.

    ``executable`` is the path the rubric is started with (a virtual
    environment's ``bin/python``, a link into its base installation);
    ``prefixes`` are the directories bound read-only for it: its prefixes
    (a virtual environment and its base, so ``pyvenv.cfg`` and the standard
    library are there) and its site-packages, each also where links lead
    (``realpath``). Nothing else of a home that holds one (pyenv under
    ``~/.pyenv``) is visible. Not included: the user's site-packages and
    the source trees of editable installs (``.pth`` files naming them
    find nothing inside; bind them with ``SandboxPolicy.read_only`` if a
    rubric needs them).

    ``version`` (``sys.version`` and the implementation's cache tag) and
    ``packages`` (a digest of what its site-packages directories hold: the
    names of the installed distributions, their versions among them, the
    ``.pth`` files and what they say, and the module files of each
    editable install's source: :mod:`codegenie.eval._sandbox.packages`)
    identify what runs: after a ``pip install -U`` of a package a rubric
    imports, or an edit of a module of an editable install, ``packages``
    differs, and no result of the earlier runs is served again.
    """

    executable: Path
    prefixes: tuple[Path, ...]
    version: str = ""
    packages: str = ""

    @classmethod
    def current(cls) -> Interpreter:
        """Return the running interpreter (``sys.executable``), as rubrics are started with it.

        Worked out once per ``sys.executable`` and process (it reads links
        and site-packages: a third of a millisecond, paid by every run
        otherwise).
        """
        return _interpreter(sys.executable)


@functools.lru_cache(maxsize=8)
def _interpreter(executable: str) -> Interpreter:
    found = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        *site.getsitepackages(),
    ]
    version = f"{sys.version} {sys.implementation.cache_tag}"
    packages = installed_packages().digest
    prefixes = interpreter_prefixes(executable, found)
    return Interpreter(Path(executable), prefixes, version, packages)


def interpreter_prefixes(executable: str, prefixes: Iterable[str]) -> tuple[Path, ...]:
    """Return what to bind for ``executable``: ``prefixes`` and its links' directories, resolved.

    Each directory on the way from ``executable`` through its links to the
    binary, and each of ``prefixes``; every one both as written (absolute)
    and with its links resolved; sorted, each once.
    """
    found = list(prefixes)
    hop = executable
    for _ in range(40):
        found.append(os.path.dirname(hop))
        if not os.path.islink(hop):
            break
        hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
    resolved = {os.path.realpath(p) for p in found} | {os.path.abspath(p) for p in found}
    return tuple(Path(p) for p in sorted(resolved))


@functools.lru_cache(maxsize=1)
def installed_packages() -> Installed:
    """Return what the running interpreter's site-packages hold, read once per process."""
    return installed(site.getsitepackages())


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """One run's sandbox: what it may read, where it may write, what it may use.

    ``run_dir`` is the run's own temporary directory: it holds the copies
    (``CASE_DIR``, ``CANDIDATE_DIR``), the working directory
    (:attr:`workdir`), ``TMPDIR`` (:attr:`tmpdir`) and ``HOME``
    (:attr:`home`), and is the only host directory the run can write.
    ``task_class_dir`` (the rubric's directory) is readable, not writable.
    ``read_only`` adds directories to read (an editable install's source);
    each must exist. ``hidden`` lists
    directories inside the readable ones that the run must not see (the task
    class's ``cases/``, which holds every case's known-good solution): each
    shows as an empty, read-only directory. ``interpreter`` defaults to the
    running one. Paths must be absolute.
    """

    mode: SandboxMode
    run_dir: Path
    task_class_dir: Path
    limits: Limits = DEFAULT_LIMITS
    interpreter: Interpreter = field(default_factory=Interpreter.current)
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in ("bwrap", "none"):
            msg = f"mode must be 'bwrap' or 'none', got {self.mode!r}"
            raise ValueError(msg)
        for path in (self.run_dir, self.task_class_dir, *self.read_only, *self.hidden):
            if not path.is_absolute():
                msg = f"sandbox paths must be absolute, got {str(path)!r}"
                raise ValueError(msg)

    @property
    def workdir(self) -> Path:
        """The rubric's working directory: ``run_dir/work``."""
        return self.run_dir / "work"

    @property
    def tmpdir(self) -> Path:
        """``TMPDIR`` of the run: ``run_dir/tmp``."""
        return self.run_dir / "tmp"

    @property
    def home(self) -> Path:
        """``HOME`` of the run: ``run_dir/home``."""
        return self.run_dir / "home"


def _outermost(paths: Iterable[str]) -> list[str]:
    """Return ``paths`` without those inside another of them, sorted."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def read_only_paths(policy: SandboxPolicy) -> list[str]:
    """Return the host directories bound read-only besides ``/usr`` and ``/etc``'s few files.

    The interpreter's prefixes (those under ``/usr`` are there already; one
    that would widen to ``/``, a home or ``/tmp`` is refused, so a
    ``sys.prefix`` of ``/`` never exposes the machine, nor one that holds
    the user's home all of it), the task class's
    directory and ``policy.read_only``; each realpath'd, nested ones
    dropped.
    """
    wanted: list[str] = []
    home = os.path.realpath(os.path.expanduser("~"))
    for prefix in policy.interpreter.prefixes:
        text = str(prefix)
        if text in _TOO_WIDE or text == "/usr" or text.startswith("/usr/"):
            continue
        if home == text or home.startswith(text.rstrip("/") + "/"):
            continue  # a prefix of $HOME would show all of it
        if os.path.isdir(text):
            wanted.append(text)
    for extra in (policy.task_class_dir, *policy.read_only):
        wanted += [str(extra), os.path.realpath(extra)]
    return [p for p in _outermost(wanted) if os.path.exists(p)]


def bwrap_args(
    policy: SandboxPolicy,
    bwrap: Bubblewrap,
    *,
    seccomp_fd: int | None = None,
    status_fd: int | None = None,
) -> list[str]:
    """Return bubblewrap's arguments for ``policy``, to go before the command.

    Mounts, in order (a later mount inside an earlier one shows through it):
    ``/usr`` and the ``/bin``, ``/lib`` links, ``/proc`` (without its PID 1
    and the keyrings: :func:`~codegenie.eval._sandbox.bwrap.system_args`),
    ``/dev``; a private ``/tmp`` and ``/dev/shm`` (tmpfs, each sized to the
    memory limit where bubblewrap can); the few ``/etc`` files of :data:`ETC_FILES`; the
    read-only directories of :func:`read_only_paths`; the run's directory
    read-write at its own path; an empty read-only
    directory over each of ``hidden``; and last, the sandbox's own root made
    read-only, so that a write anywhere but the run's directory, ``/tmp``
    and ``/dev/shm`` fails (``EROFS``) rather than landing in a scratch
    file system. The working directory is :attr:`SandboxPolicy.workdir`.

    ``seccomp_fd``: a descriptor the seccomp filter
    (:func:`~codegenie.eval._sandbox.seccomp.program`) is read from, for the
    run's every process; with it, the arguments end with the head of a
    confined run (:func:`~codegenie.eval._sandbox.confining.head`, the
    run's interpreter): bubblewrap leaves it
    :data:`~codegenie.eval._sandbox.confining.CAPABILITIES`, and it makes
    the device nodes read-only (devices still allowed), drops every
    capability and loads the filter before it execs the command. Without
    it (a warm worker's sandbox, which does the same for each of its runs),
    or where ``bwrap`` cannot seal (:attr:`Bubblewrap.seals_devices
    <codegenie.eval._sandbox.bwrap.Bubblewrap.seals_devices>`: bubblewrap
    loads the filter), they end in ``--``. ``status_fd``: a descriptor
    bubblewrap writes its JSON status to — the rubric's pid, then its exit
    code once it ended — from outside the sandbox, where nothing of the run
    can write.
    """
    confined = seccomp_fd is not None and bwrap.seals_devices
    args = [str(bwrap.path), *isolation_args(bwrap)]
    if confined:
        for name in confining.CAPABILITIES:
            args += ["--cap-add", name]
    elif seccomp_fd is not None:  # a bubblewrap that cannot seal: it loads the filter itself
        args += ["--seccomp", str(seccomp_fd)]
    if status_fd is not None:
        args += ["--json-status-fd", str(status_fd)]
    args += system_args()
    memory = policy.limits.memory_bytes
    # /tmp and /dev/shm are memory: each sized to the memory limit, where bubblewrap can,
    # so that they are bounded where no memory cgroup counts them (an unprivileged harness).
    for place in ("/tmp", "/dev/shm"):  # noqa: S108 - the sandbox's own, empty ones
        if memory is not None and bwrap.can_size_tmpfs:
            args += ["--size", str(memory)]
        args += ["--tmpfs", place]
    for name in ETC_FILES:
        args += ["--ro-bind-try", name, name]
    run_dir = str(policy.run_dir)
    binds = [(p, "--ro-bind") for p in read_only_paths(policy)]
    binds.append((run_dir, "--bind"))
    # Shallow first: a deeper bind must be made after the one that contains it.
    for path, kind in sorted(binds, key=lambda item: (item[0].count("/"), item[0])):
        args += [kind, path, path]
    for hidden in _outermost(
        str(path) for each in policy.hidden for path in (each, os.path.realpath(each))
    ):
        if os.path.isdir(hidden):  # an empty, read-only directory in its place
            args += ["--tmpfs", hidden, "--remount-ro", hidden]
    args += ["--remount-ro", "/", "--chdir", str(policy.workdir), "--"]
    if seccomp_fd is not None and confined:
        args += confining.head(str(policy.interpreter.executable), seccomp_fd)
    return args
